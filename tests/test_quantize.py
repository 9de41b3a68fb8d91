"""Training and quantisation (models/quantize.py): the input transform, the integer netlist
against an independent NumPy forward pass, determinism, the trained-weight cache, engine
budgets, and the checked-in small model."""
import re

import numpy as np
import pytest

import torch  # a pinned requirement: its absence must fail, not skip

from dsl.diagnostics import VoodooError  # noqa: E402
from models.datasets import load_split  # noqa: E402
from dsl.parser import parse_file  # noqa: E402
from models.quantize import (SMALL, SMALL_PATH, Config, IntMLP, InputTransform, build,  # noqa: E402
                          check_engine_fit, engine_cost, load_mnist_small, shift_images,
                          train)
from dsl.reference import evaluate  # noqa: E402

# A few epochs only: these tests check exactness and plumbing, not accuracy.
QUICK = Config(crop=4, pool=2, levels=3, hidden=12, weight_bits=5, clamp=15, epochs=2,
               qat_epochs=1, name="quick")


@pytest.fixture(scope="module")
def split():
    return load_split()


@pytest.fixture(scope="module")
def quick(split):
    return train(QUICK, split.train_images, split.train_labels)


def numpy_forward(x, w1, b1, s, L, w2, b2):
    """The scheme of docs/mnist.md written out again, independently of IntMLP.forward."""
    x = np.asarray(x, dtype=np.int64)
    h = np.empty((len(x), len(b1)), dtype=np.int64)
    for j in range(len(b1)):
        acc = x @ w1[j] + b1[j]
        h[:, j] = np.minimum(np.maximum(np.floor_divide(acc, s), 0), L)
    return np.stack([h @ w2[k] + b2[k] for k in range(len(b2))], axis=1)


# ------------------------------------------------------------------------ input transform
def test_input_transform_exact_values():
    t = InputTransform(crop=0, pool=2, levels=3)
    img = np.zeros((28, 28), dtype=np.uint8)
    assert t(img).shape == (196,) and not t(img).any()
    img[:] = 255
    assert (t(img) == 3).all()
    img = np.zeros((28, 28), dtype=np.uint8)
    img[0, 0] = img[0, 1] = 255            # block 0 mean 127.5: 1.5 levels -> rounds up to 2
    img[0, 2] = 255                        # block 1 mean 63.75: 0.75 -> 1
    img[0, 4] = 84                         # block 2 mean 21: 0.247 -> 0
    img[27, 26:28] = 170; img[26, 26] = 170  # last block mean 127.5 -> 2  # noqa: E702
    v = t(img)
    assert v[:4].tolist() == [2, 1, 0, 0] and v[-1] == 2 and v.sum() == 5
    c = InputTransform(crop=4, pool=2, levels=7)
    img = np.zeros((2, 28, 28), dtype=np.uint8)
    img[1, 4:6, 4:6] = 255                 # the first block after cropping
    img[1, 3, 3] = 255                     # cropped away
    assert c(img).shape == (2, 100) and c(img)[1].tolist() == [7] + [0] * 99
    with pytest.raises(VoodooError, match="28x28"):
        t(np.zeros((3, 27, 28), dtype=np.uint8))
    with pytest.raises(VoodooError, match="uint8"):
        t(np.full((28, 28), 300))


def test_shift_moves_every_image_by_at_most_r():
    rng = np.random.default_rng(0)
    imgs = np.zeros((50, 28, 28), dtype=np.uint8)
    imgs[:, 14, 14] = 200
    out = shift_images(imgs, 1, rng)
    ys, xs = np.nonzero(out[:, :, :] == 200)[1:]
    assert len(ys) == 50 and set(ys) <= {13, 14, 15} and set(xs) <= {13, 14, 15}
    assert len(set(zip(ys, xs))) > 3
    assert shift_images(imgs, 0, rng) is imgs


# ---------------------------------------------------------------------- integer exactness
def test_quantised_netlist_equals_numpy(quick, split):
    m = quick.model
    assert m.w1.shape == (12, 100) and m.w2.shape == (10, 12)
    assert np.abs(m.w1).max() <= QUICK.wmax and np.abs(m.w2).max() <= QUICK.wmax
    net, text = m.to_netlist("quick"), m.to_dnet("quick")
    x = InputTransform.of(QUICK)(split.test_images)
    ours = evaluate(net, x).last_outputs().astype(np.int64)
    theirs = numpy_forward(x, m.w1, m.b1, m.s, m.L, m.w2, m.b2)
    assert ours.shape == (2000, 10)
    assert np.array_equal(ours, theirs)
    assert np.array_equal(m.forward(x), theirs)
    # The hidden values saturate on some digits and are zero on others: L and s are live.
    h = np.clip((x @ m.w1.T + m.b1) // m.s, 0, None)
    assert (h > m.L).any() and (h == 0).any()
    assert f"relu(s={m.s}, max=15)" in text


def test_training_is_deterministic(quick, split):
    again = train(QUICK, split.train_images, split.train_labels)
    for k, v in quick.model.arrays().items():
        assert np.array_equal(v, again.model.arrays()[k]), k
    other = train(Config(**{**QUICK.__dict__, "seed": 1}), split.train_images,
                  split.train_labels)
    assert not np.array_equal(other.model.w1, quick.model.w1)


def test_build_caches_trained_weights(tmp_path, monkeypatch, split):
    monkeypatch.setenv("VOODOO_CACHE", str(tmp_path))
    first = build(QUICK, progress=False, split=split)
    assert len(list(tmp_path.glob("quick-*.npz"))) == 1
    import models.quantize as q

    def no_training(*a, **k):
        raise AssertionError("trained again despite the cache")

    monkeypatch.setattr(q, "train", no_training)
    second = build(QUICK, progress=False, split=split)
    assert second.text == first.text
    assert (second.float_acc, second.int_acc) == (first.float_acc, first.int_acc)
    # A different hyper-parameter is a different cache entry.
    with pytest.raises(AssertionError, match="trained again"):
        build(Config(**{**QUICK.__dict__, "clamp": 7}), progress=False, split=split)
    x = first.transform(split.test_images)
    out = evaluate(first.net, x).last_outputs().astype(np.int64)
    assert first.int_acc == float((out.argmax(1) == split.test_labels).mean())
    # The text (what --write-small saves) is the same network as the netlist.
    from dsl.parser import parse

    assert np.array_equal(evaluate(parse(first.text), x).last_outputs(), out)
    assert first.text.startswith("# quick: an integer MLP")


# ---------------------------------------------------------------------------- budgets
def test_small_model_fits_and_matches_the_lowering():
    net, _ = load_mnist_small()
    cost = check_engine_fit(net)
    assert cost.acc_lo >= -30000 and cost.acc_hi <= 30000
    from mapgen.circuit import lower

    circuit = lower(net, split=False)   # the estimate counts one lane per staircase
    assert cost.dolls == len(circuit.lanes)
    assert cost.doors == sum(len(l.doors) for l in circuit.lanes)
    assert cost.lines == sum(len(d.adds) for l in circuit.lanes for d in l.doors)


def test_too_large_models_fail_the_check(quick):
    m = quick.model
    big = IntMLP(m.w1 * 2000, m.b1, m.s, m.L, m.w2, m.b2, m.levels)
    net = big.to_netlist("big")
    with pytest.raises(VoodooError) as e:
        check_engine_fit(net)
    assert "accumulator of 'h1[" in str(e.value) and "does not fit the engine" in str(e.value)
    fine = m.to_netlist("fine")
    cost = check_engine_fit(fine)
    with pytest.raises(VoodooError, match="weighted lines >"):
        check_engine_fit(fine, max_lines=cost.lines - 1)
    with pytest.raises(VoodooError, match="dolls >"):
        check_engine_fit(fine, max_dolls=cost.dolls - 1)
    wide = IntMLP(m.w1, m.b1, m.s, 31, m.w2, m.b2, m.levels)
    with pytest.raises(VoodooError, match="clamps at 31 > 15"):
        check_engine_fit(wide.to_netlist("wide"))
    deep = IntMLP(m.w1, m.b1, m.s, m.L, m.w2, m.b2, 15)
    with pytest.raises(VoodooError, match="has 16 levels > 8"):
        check_engine_fit(deep.to_netlist("deep"))


def test_engine_cost_counts_by_hand():
    """A 2-input, 2-hidden net: lines = doors x (consumers + 1 value light)."""
    from dsl.parser import parse

    net = parse("""
        input x[2] : 0..3
        neuron h[2] : relu(s=2, max=3)
        lines x -> h dense [[1, 1], [0, 1]]
        neuron o[3] : identity
        lines h -> o dense [[1, 0], [1, 1], [0, -1]]
        output o
    """)
    cost = engine_cost(net)
    # x[0]: 3 doors x (1 + 1); x[1]: 3 x (2 + 1); h[0] acc 0..6: doors at 2,4,6 x (2 + 1);
    # h[1] acc 0..3: a door at 2 only (4 > 3) x (2 + 1).
    assert (cost.dolls, cost.doors, cost.lines) == (4, 10, 6 + 9 + 9 + 3)
    # h[0] reaches 0..6; o[2] = -h[1] reaches -1..0.
    assert (cost.acc_lo, cost.acc_hi) == (-1, 6) and cost.widest == "h[0]"
    chain = parse("""
        input x[2] : 0..3
        neuron h[2] : identity
        lines x -> h dense [[1, 1], [0, 1]]
        neuron o : relu(s=2, max=3) = h[0] - h[1]
        output o
    """)
    with pytest.raises(VoodooError, match="'o' reads an identity neuron"):
        engine_cost(chain)


# ---------------------------------------------------------------------------- small model
def test_small_model_accuracy_is_the_recorded_one(split):
    net, transform = load_mnist_small()
    header = open(SMALL_PATH).read(2000)
    rec = re.search(r"float ([\d.]+)%, integer ([\d.]+)%", header)
    assert rec, "circuits/mnist_small.dnet lost its accuracy header"
    assert transform == InputTransform.of(SMALL)
    assert len(net.inputs) == SMALL.n_inputs == 100
    x = transform(split.test_images)
    out = evaluate(net, x).last_outputs().astype(np.int64)
    acc = 100 * float((out.argmax(1) == split.test_labels).mean())
    assert f"{acc:.2f}" == rec.group(2)
    assert acc >= 88.0


def test_small_model_file_is_a_few_kb():
    import os

    assert os.path.getsize(SMALL_PATH) < 12_000
    assert parse_file(SMALL_PATH).name == "mnist_small"
