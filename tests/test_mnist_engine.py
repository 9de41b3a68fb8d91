"""MNIST in the engine, train-free: the checked-in small model on real held-out digits."""
import numpy as np
import pytest

from models.datasets import load_split
from models.quantize import load_mnist_small
from dsl.reference import evaluate
from mapgen.compile import write_wad
from engine.tiled import run_tiled
from mapgen.tiles import compile_tiles, plan_tiles


@pytest.fixture(scope="module")
def small():
    net, transform = load_mnist_small()
    split = load_split()
    pick = np.random.default_rng(0).permutation(len(split.test_labels))
    return net, transform, split, pick


def _run(tmp_path, net, X, n_tiles):
    tiles = plan_tiles(net, n_tiles=n_tiles)
    maps = compile_tiles(tiles, "MNIST small")
    wad = str(tmp_path / f"mnist_{n_tiles}.wad")
    write_wad(wad, maps)
    got, _ = run_tiled(wad, [m.manifest for m in maps], tiles, net, X.tolist(), workers=2,
                       chunk=10)
    return np.array(got), len(tiles)


def test_fifty_digits_every_output_exact(tmp_path, small):
    net, transform, split, pick = small
    X = transform(split.test_images[pick[:50]])
    labels = split.test_labels[pick[:50]].astype(int)
    ref = np.asarray(evaluate(net, X).last_outputs(), dtype=np.int64)
    got, tiles = _run(tmp_path, net, X, None)
    assert tiles == 1
    assert (got == ref).all()                      # all ten outputs of all 50 digits
    assert (got.argmax(1) == labels).mean() >= 0.8  # and they are digits it reads


@pytest.mark.parametrize("n", [2, 4])
def test_forced_tiles_give_the_same_outputs_as_one(tmp_path, small, n):
    net, transform, split, pick = small
    X = transform(split.test_images[pick[50:70]])
    one, _ = _run(tmp_path, net, X, 1)
    many, tiles = _run(tmp_path, net, X, n)
    assert tiles == n
    assert (many == one).all()
    assert (one == np.asarray(evaluate(net, X).last_outputs())).all()


def test_a_tiled_run_gets_one_engine_per_map():
    # An engine given two maps reloads one for every chunk (about 11 s for the CNN's maps),
    # so the default is one engine per map, even beyond the cores: at least 2, at most 8.
    from demos.mnist import default_workers

    assert [default_workers(n) for n in (1, 2, 3, 5, 8, 9, 40)] == [2, 2, 3, 5, 8, 8, 8]
