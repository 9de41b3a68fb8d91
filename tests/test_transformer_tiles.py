"""The 2-layer, 8-token transformer of docs/transformer.md (the bench's L2 H2 T8 d8, random
weights, score caps calibrated) over tiles at door budget 1: one map cannot hold its
10,168 one-door sub-lanes (their ACS alone is beyond the compiler's limit), so it is
planned over several maps, each within the measured limits, and streamed through them in
the engine, every output equal to the reference."""
import numpy as np
import torch

from dsl.reference import evaluate
from engine.tiled import run_tiled
from mapgen import physics as P
from mapgen.circuit import lower
from mapgen.compile import write_wad
from mapgen.tiles import compile_tiles, estimate, plan_tiles
from models.transformer import Transformer, TransformerConfig, netlist


def two_layer_transformer():
    """bench/transformer.py's random_model(2, 2, 8, 8)."""
    cfg = TransformerConfig(tokens=8, in_hi=7, d_model=8, heads=2, layers=2, classes=8, qk=5,
                            s_qkv=32, attn_max=5)
    model = Transformer(cfg, seed=1)
    model.calibrate(torch.randint(0, 8, (256, 8, 1),
                                  generator=torch.Generator().manual_seed(2)))
    return netlist(model, "tf2")


def test_two_layer_transformer_exact_over_tiles_at_door_budget_1(tmp_path):
    torch.set_num_threads(1)
    net = two_layer_transformer()
    dolls = len(lower(net, door_budget=1).lanes)
    assert estimate(net, door_budget=1).dolls == dolls > P.TILE_DOLLS
    tiles = plan_tiles(net, door_budget=1)
    maps = compile_tiles(tiles, "tf2", door_budget=1)
    assert len(maps) > 1
    for m in maps:   # each map within what one map holds (and split at one door)
        assert len(m.circuit.lanes) <= P.TILE_DOLLS and len(m.acs) <= P.MAX_ACS_CHARS
        assert all(len(lane.doors) <= 1 for lane in m.circuit.lanes)
    wad = str(tmp_path / "tf2.wad")
    write_wad(wad, maps, net, tiles)
    X = np.random.default_rng(0).integers(0, 8, (6, 8)).tolist()
    got, _ = run_tiled(wad, [m.manifest for m in maps], tiles, net, X, workers=2, chunk=3)
    assert got == evaluate(net, X).last_outputs().tolist()
