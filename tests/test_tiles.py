"""Tiling: tiles carry values by name only, and 1, 2 or 4 tiles compute the same outputs."""
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import ROOT
from dsl import load
from dsl.random_net import mlp
from dsl.reference import evaluate
from mapgen.tiles import carry, plan_tiles


def ref_tile(tile, inputs):
    return evaluate(tile.net, [inputs]).last_outputs()[0].tolist()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10**6), st.lists(st.integers(1, 6), min_size=2, max_size=4),
       st.sampled_from([1, 2, 3, 4, 6]))
def test_tiles_compute_what_the_network_does(seed, sizes, n):
    net = mlp(seed, sizes, in_range=(0, 3), gates=("relu", "step", "lut"), out_gate="relu")
    computed = sum(1 for x in net.nodes if not x.is_input)
    if n > computed:
        return
    tiles = plan_tiles(net, n_tiles=n)
    assert len(tiles) == n
    assert sorted(c for t in tiles for c in t.computes) == sorted(
        x.name for x in net.nodes if not x.is_input)
    rng = np.random.default_rng(seed)
    for _ in range(5):
        x = [int(v) for v in rng.integers(0, 4, size=len(net.inputs))]
        assert carry(tiles, x, net, ref_tile) == evaluate(net, [x]).last_outputs()[0].tolist()


def test_budget_split_and_merge():
    net = load(os.path.join(ROOT, "circuits", "hello.dnet"))
    assert len(plan_tiles(net)) == 1               # it fits one map
    tiles = plan_tiles(net, max_dolls=20)           # it does not any more
    assert len(tiles) > 1
    for t in tiles:
        assert len(t.net.inputs) + sum(1 for n in t.net.nodes if not n.is_input
                                       and n.gate.kind != "identity") <= 20 or \
            len(t.computes) == 1


def _columns(n: int) -> str:
    """n columns x[j] -> a[j] -> b[j] -> c[j], each a[j] a value of 301 levels: a lane of
    300 doors (about 2,400 lines) in any other map that reads it."""
    ones, hundreds = ", ".join(["1"] * n), ", ".join(["100"] * n)
    return (f"network columns\ninput x[{n}] : 0..3\n"
            f"neuron a[{n}] : relu(s=1, max=300)\nlines x -> a diag [{hundreds}]\n"
            f"neuron b[{n}] : relu(s=3, max=100)\nlines a -> b diag [{ones}]\n"
            f"neuron c[{n}] : relu(s=2, max=50)\nlines b -> c diag [{ones}]\noutput c\n")


def test_a_value_s_readers_follow_it_into_its_map():
    """Placed level by level, the a's fill the first maps and every b reads its a from
    another one (6 maps at 30,000 linedefs a map); the planner keeps each column in one
    map: no a crosses, and 3 maps, the fewest that hold its 88,000 linedefs."""
    from dsl.parser import parse
    from mapgen.tiles import MapBudget, compare, estimate

    net = parse(_columns(24), "columns.dnet")
    budget = MapBudget(lines=30_000)
    tiles = plan_tiles(net, budget=budget)
    assert estimate(net).linedefs > 2 * budget.lines and len(tiles) == 3
    assert not [name for t in tiles for name in t.inputs if name.startswith("a[")]
    assert all(estimate(t.net).linedefs <= budget.lines for t in tiles)
    assert dict(compare(net, budget))["lane depth"].split()[0] == "6"
    x = list(range(4)) * 6
    assert carry(tiles, x, net, ref_tile) == evaluate(net, [x]).last_outputs()[0].tolist()


def test_too_many_tiles_is_a_clear_error():
    from dsl.diagnostics import VoodooError
    net = load(os.path.join(ROOT, "circuits", "xor.dnet"))
    with pytest.raises(VoodooError, match="cannot make 9 tiles out of 3 computed nodes"):
        plan_tiles(net, n_tiles=9)


@pytest.mark.parametrize("n", [1, 2, 4])
def test_forced_tiles_in_the_engine_match_one_map(tmp_path, n):
    """The same network over 1, 2 and 4 maps, run in two engine processes: all exact."""
    from mapgen.compile import write_wad
    from engine.tiled import run_tiled
    from mapgen.tiles import compile_tiles

    net = load(os.path.join(ROOT, "circuits", "mlp3.dnet"))
    tiles = plan_tiles(net, n_tiles=n)
    maps = compile_tiles(tiles, "mlp3")
    wad = str(tmp_path / f"mlp3_{n}.wad")
    write_wad(wad, maps)
    rng = np.random.default_rng(n)
    X = rng.integers(0, 4, size=(12, 4)).tolist()
    got, tics = run_tiled(wad, [m.manifest for m in maps], tiles, net, X, workers=2, chunk=4,
                          pipeline=False)
    assert got == evaluate(net, X).last_outputs().tolist()
    assert tics == len(X) * sum(m.manifest["inference_tics"] + 1 for m in maps)
    # Pipelined: each chunk of 4 enters one per beat, and the pipeline drains after it.
    got, tics = run_tiled(wad, [m.manifest for m in maps], tiles, net, X, workers=2, chunk=4)
    assert got == evaluate(net, X).last_outputs().tolist()
    pipes = [m.manifest["pipeline"] for m in maps]
    assert tics == 3 * sum(_batched_tics(4 + max(p["lags"]), p) for p in pipes)


def _batched_tics(beats: int, p: dict) -> int:
    """Engine tics of `beats` beats sent in batches of p["batch"]: each batch a puke tic,
    then its beats batch_period apart, the last one beat_tics long."""
    k = max(1, p["batch"])
    return sum(1 + (min(k, beats - b) - 1) * p["batch_period"] + p["beat_tics"]
               for b in range(0, beats, k))


@pytest.mark.parametrize("n, loads", [(1, []), (2, ["MAP02", "MAP01", "MAP02"])])
def test_run_chunk_loads_a_map_only_when_it_must(tmp_path, n, loads):
    """An engine keeps its map and runner between chunks (loading the trained MNIST map
    again took 0.74 s per chunk): a one-map WAD is never reloaded, a two-map WAD only when
    the next tile is on the other map; every output stays exact."""
    from engine.doom import Engine
    from engine.tiled import run_chunk
    from mapgen.compile import write_wad
    from mapgen.tiles import compile_tiles

    net = load(os.path.join(ROOT, "circuits", "mlp3.dnet"))
    tiles = plan_tiles(net, n_tiles=n)
    maps = compile_tiles(tiles, "mlp3")
    wad = str(tmp_path / "m.wad")
    write_wad(wad, maps)
    X = np.random.default_rng(3).integers(0, 4, size=(8, 4)).tolist()
    names_in = [net.nodes[i].name for i in net.inputs]
    names_out = [net.nodes[o].name for o in net.outputs]
    io = [(t.inputs, t.outputs) for t in tiles]
    got, runners = [], {}
    with Engine(wad, "MAP01") as engine:
        load_map, seen = engine.change_map, []
        engine.change_map = lambda name: (seen.append(name), load_map(name))[1]
        for part in (X[:4], X[4:]):
            chunk = [(i, dict(zip(names_in, x))) for i, x in enumerate(part)]
            done = run_chunk(engine, wad, [m.manifest for m in maps], io, chunk, True, runners)
            got += [[values[name] for name in names_out] for _, values, _ in done]
    assert seen == loads
    assert got == evaluate(net, X).last_outputs().tolist()


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10**6), st.lists(st.integers(1, 7), min_size=2, max_size=4),
       st.integers(4, 40), st.integers(2, 12), st.sampled_from([None, 1, 2]))
def test_auto_tiles_keep_every_map_in_budget(seed, sizes, dolls, inputs, door_budget):
    """--tiles auto with a small budget: a plan whenever every node fits a map of its own,
    each tile's map (as the compiler lowers it) within the budget, identities rebuilt where
    they are read, and the tiles compute the network."""
    from dsl.diagnostics import VoodooError
    from mapgen.circuit import lower
    from mapgen.tiles import MapBudget

    net = mlp(seed, sizes, in_range=(0, 3), gates=("relu", "step", "lut", "identity"),
              out_gate="identity")
    budget = MapBudget(dolls=dolls, inputs=inputs)
    try:
        tiles = plan_tiles(net, door_budget=door_budget, budget=budget)
    except VoodooError as e:
        assert "no tile plan can hold" in str(e) or "too many to hand" in str(e)
        return
    for t in tiles:
        # the planner's count: one lane per staircase (the compiler may then cut sub-lanes
        # within the room a map has, mapgen/carry.py: test_map_limits checks that room)
        assert len(lower(t.net, door_budget=door_budget, split=False).lanes) <= dolls
        assert len(t.inputs) <= inputs
        assert not any(n.is_input and n.name in t.computes for n in t.net.nodes)
    rng = np.random.default_rng(seed)
    for _ in range(4):
        x = [int(v) for v in rng.integers(0, 4, size=len(net.inputs))]
        assert carry(tiles, x, net, ref_tile) == evaluate(net, [x]).last_outputs()[0].tolist()


def test_tiles_with_a_door_budget_in_the_engine(tmp_path):
    """`run --tiles 2 --door-budget 1` (the two options together): every output exact."""
    import subprocess
    import sys

    r = subprocess.run([sys.executable, os.path.join(ROOT, "build.py"), "run",
                        os.path.join(ROOT, "circuits", "mlp3.dnet"), "--tiles", "2",
                        "--door-budget", "1", "--random", "6", "-o", str(tmp_path / "m.wad")],
                       capture_output=True, text=True, env={**os.environ, "VOODOO_QUIET": "1"})
    assert r.returncode == 0 and "2 map(s)" in r.stdout and "6/6 EXACT" in r.stdout, r.stderr


def _carried_by_reference(tiles, net, seq):
    """carry_sequence with each tile's map stood in for by the reference: step t of tile k
    is its netlist run over every step so far (so it keeps its own state, as its map does)."""
    from mapgen.tiles import carry_sequence

    history = [[] for _ in tiles]

    def run_tile(k, ins, t, fed):
        sub = tiles[k].net
        history[k].append([None if fed and i in sub.feedback else v
                           for i, v in zip(sub.inputs, ins)])
        res = evaluate(sub, [history[k]])
        return [int(res.value[0, t, o]) for o in sub.outputs]

    fed_here = [{t.net.nodes[i].name for i in t.net.feedback} for t in tiles]
    return carry_sequence(tiles, seq, net, run_tile, fed_here)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10**6), st.sampled_from([None, 2, 3]), st.sampled_from([None, 1]),
       st.booleans())
def test_recurrent_tiles_carry_state_and_prev_values(seed, n, budget, feedback):
    """Recurrent cells (prev chains, an identity readout, a fed-back input) over forced or
    budgeted tiles, with or without one-door sub-lanes: every value any map hands on is
    the network's at every step (prev values kept in their node's map or carried)."""
    from dsl.diagnostics import VoodooError
    from dsl.random_net import recurrent
    from dsl.sequence import random_sequence
    from mapgen.tiles import estimate

    net = recurrent(seed, n_hidden=4, feedback=feedback)
    if n:
        tiles = plan_tiles(net, n_tiles=n, door_budget=budget)
    else:   # a budget of a third of the map, or the least that holds its largest node
        dolls = estimate(net, budget).dolls // 3
        while True:
            try:
                tiles = plan_tiles(net, door_budget=budget, max_dolls=dolls)
                break
            except VoodooError:
                dolls += 1
    seq = random_sequence(net, 12, seed)
    ref = evaluate(net, [seq])
    steps = _carried_by_reference(tiles, net, seq)
    assert len(steps) == len(seq)
    for t, values in enumerate(steps):
        for nd in net.nodes:
            if values.get(nd.name) is not None:
                assert values[nd.name] == int(ref.value[0, t, nd.id]), (t, nd.name)
        assert [values[net.nodes[o].name] for o in net.outputs] == \
            [int(ref.value[0, t, o]) for o in net.outputs]


def _lookup_net() -> str:
    """A token embedding: 8 lookups of one character (45 values) into values spread over
    -325..485, handed to a second map, where every element is read with its own weights."""
    rng = np.random.default_rng(21)
    tables = [[int(v) for v in rng.integers(-325, 486, size=45)] for _ in range(8)]
    for t in tables:
        t[0], t[1] = -325, 485   # the full range: 810 integers, 45 levels
    lines = ["network tok", "input c : 0..44", "input k[8] : 0..2"]
    for j, t in enumerate(tables):
        lines.append(f"neuron e{j} : lut(0..44, [{', '.join(map(str, t))}]) = c")
    lines.append("neuron y[3] : relu(s=16, max=200)")
    for j in range(8):
        lines.append(f"lines e{j} -> y dense [[{j % 3 + 1}], [{-(j % 2) - 1}], [{2 - j % 4}]]")
    lines += ["lines k -> y dense [" + ", ".join(["[1, 2, 3, 4, 5, 6, 7, 8]"] * 3) + "]",
              "bias y = [1600, 1700, 1800]", "output y"]
    return "\n".join(lines) + "\n"


def test_a_lookup_is_handed_with_a_door_per_level(tmp_path):
    """A lookup's value crosses maps on a lane with a door per value it can take (45), not
    per integer of its range (810: a lane of ~50,000 units, wider than a map holds); the
    two maps in the engine equal the reference for every character."""
    from dsl.parser import parse
    from engine.tiled import run_tiled
    from mapgen.circuit import staircase
    from mapgen.compile import write_wad
    from mapgen.tiles import compile_tiles

    net = parse(_lookup_net(), "tok.dnet")
    tiles = plan_tiles(net, n_tiles=2)
    t2 = tiles[1].net
    handed = [t2.nodes[i] for i in t2.inputs if t2.nodes[i].name.startswith("e")]
    assert len(handed) == 8
    for n in handed:
        g = n.gate
        assert (g.lo, g.hi) == (-325, 485) and 2 < len(g.levels) <= 45
        base, doors = staircase(g, g.lo, g.hi)
        assert base == -325 and len(doors) == len(g.levels) - 1
        assert sum(d for _, d in doors) == 810
    maps = compile_tiles(tiles, "tok")
    wad = str(tmp_path / "tok.wad")
    write_wad(wad, maps)
    rng = np.random.default_rng(3)
    X = [[c] + [int(v) for v in rng.integers(0, 3, size=8)] for c in range(45)]
    got, _ = run_tiled(wad, [m.manifest for m in maps], tiles, net, X, workers=2, chunk=15,
                       pipeline=False)
    assert got == evaluate(net, X).last_outputs().tolist()


def test_a_plan_keeps_every_map_within_the_engines_width():
    """A lane is as long as the value it climbs to (a ramp stair of 56 units per 12 of
    rise): 550 relu lanes climbing to 2,400 in 20 doors are ~11,000 units each, one climbing
    to 4,800 ~22,000, and one map of them all would be wider than the engine's coordinates
    (its lanes' columns, longest first, about 41,000 units) though its lines fit. The planner splits them by width, and each tile's
    lanes, in the columns its map falls back to, fit the width it was planned for."""
    from dsl.parser import parse
    from mapgen import layout
    from mapgen import physics as P
    from mapgen.circuit import lower
    from mapgen.tiles import MapBudget, estimate

    n = 550
    net = parse(f"network long\ninput x[{n}] : 0..3\nneuron a[{n}] : relu(s=120, max=20)\n"
                f"lines x -> a diag [{', '.join(['800'] * n)}]\n"
                f"neuron b : relu(s=480, max=10)\nlines x[0:1] -> b all 1600\n"
                f"output a\noutput b\n", "long.dnet")
    budget = MapBudget()
    whole = estimate(net)
    assert whole.width > budget.width and whole.linedefs < budget.lines   # width binds
    tiles = plan_tiles(net, budget=budget)
    assert len(tiles) == 2
    for t in tiles:
        # the planner's lengths are the conveyor geometry's (ramps of stairs): an upper
        # bound for gliding lanes, which rise in one step
        cost, circuit = estimate(t.net), lower(t.net, carry="conveyor")
        assert cost.width <= budget.width
        glide = layout.place_lanes(lower(t.net))
        assert max(g.x0 + g.length for g in glide) <= cost.width
        packed = layout._columns_by_length(circuit, 0.0, 0.0, P.LANE_WIDTH + P.LANE_GAP,
                                           layout.lanes_per_column())
        assert max(g.length for g in packed) > 10_000
        assert max(g.x0 + g.length for g in packed) <= cost.width
        placed = layout.place_lanes(circuit)
        assert max(g.x0 + g.length for g in placed) <= P.COORD_MAX - layout.COLUMN_GAP
    x = [k % 4 for k in range(n)]
    assert carry(tiles, x, net, ref_tile) == evaluate(net, [x]).last_outputs()[0].tolist()
