"""Inputs wanted late (issue 34): with circuit.lower's late_inputs an input lane rides in
the phase before its first reader's, the manifest says by which tic of the step each input
script must start (input_slots, input_need), and MapRunner asks for each input only then,
so a map of a streamed run starts its step before the values it reads last are handed on.
Every output, and every light after every step, equal to the reference in the engine."""
import os

import pytest

from dsl.lower import lower_products
from dsl.parser import parse
from dsl.reference import evaluate
from dsl.sequence import random_sequence, reference_run
from engine.runner import MapRunner, result_labels
from mapgen.compile import compile_netlist, load_wad, write_wad

# Inputs read at several depths: x[0], x[1] by a (phase 1), y[0] and x[2] by b (phase 2),
# y[1] only by d (phase 4; c is a lookup of b alone). Over two maps the second wants a,
# handed on by the first, late.
NET = """
network late
steps open
input x[3] : 0..3
input y[2] : 0..5
neuron a : relu(s=1, max=6) = x[0] + x[1] - prev(c) + 1
neuron b : relu(s=1, max=9) = a + y[0] - x[2]
neuron c : lut(0..9, [3, 1, 4, 1, 5, 9, 2, 6, 5, 3]) = b
neuron d : step(t=3) = c - y[1] + prev(d) - a
output c, d
"""


@pytest.fixture(scope="module")
def late_map(tmp_path_factory):
    net = parse(NET)
    m = compile_netlist(net, late_inputs=True)
    wad = str(tmp_path_factory.mktemp("late") / "late.wad")
    write_wad(wad, [m], net)
    return net, m, wad


def _phases(m) -> dict[str, set[int]]:
    names = {n.id: n.name for n in m.circuit.net.nodes}
    out: dict[str, set[int]] = {}
    for g in m.layout.lanes:
        out.setdefault(names[g.lane.node], set()).add(g.lane.phase)
    return out


def _need(info: dict) -> dict[int, int]:
    return {i: t for slots, t in zip(info["input_slots"], info["input_need"]) for i in slots}


def test_an_input_lane_rides_in_the_phase_before_its_first_reader(late_map):
    net, m, _ = late_map
    ph = _phases(m)
    assert [ph[n] for n in ("a", "b", "c", "d")] == [{1}, {2}, {3}, {4}]
    assert ph["x[0]"] == ph["x[1]"] == {0}
    assert ph["x[2]"] == ph["y[0]"] == {1} and ph["y[1]"] == {3}
    # a late input is due in the tic the inference script writes its doors; the first
    # phase's with the step (tic 0)
    first_write: dict[int, int] = {}
    for tic, tag in m.schedule.writes:
        first_write.setdefault(tag, tic)
    need = _need(m.manifest)
    assert sorted(need) == list(range(len(net.inputs)))
    for i, t in need.items():
        lanes = [g for g in m.layout.lanes if g.lane.source == ("input", i)]
        w = min(first_write[g.lane.door_tag] for g in lanes)
        assert t == (w if w > 1 else 0)
        assert (t > 0) == (i >= 2)   # x[2], y[0], y[1] (inputs 2, 3, 4) are wanted late
    assert m.schedule.pipeline is None   # a beat's inputs would be the next beat's
    # Without late_inputs every input rides first, four a script in declaration order.
    early = compile_netlist(net)
    assert "input_need" not in early.manifest and "input_slots" not in early.manifest
    assert all(_phases(early)[f"{v}[{k}]"] == {0} for v, n in (("x", 3), ("y", 2))
               for k in range(n))


class _Clock:
    """A runner's engine that counts the tics it has run: when each input was asked for."""

    def __init__(self, engine):
        self.engine, self.tic = engine, 0

    def advance(self, tics: int = 1, action=None) -> None:
        self.engine.advance(tics, action)
        self.tic += max(0, tics)

    def step(self, calls, tics: int):
        vals = self.engine.step(calls, tics)
        self.tic += tics
        return vals

    def __getattr__(self, name):
        return getattr(self.engine, name)


def test_the_runner_asks_for_each_input_when_the_map_wants_it(late_map):
    """Thirty steps: each input asked for at its tic of the step and not before, every
    output (handed on mid-step and returned) and every light after the step exact."""
    net, _, wad = late_map
    info = load_wad(wad).infos[0]
    need = _need(info)
    assert any(need.values())
    seq = random_sequence(net, 30, 5)
    res, _ = reference_run(net, seq)
    lowered = lower_products(net)
    low = evaluate(lowered, [seq])
    with MapRunner(wad, info) as r:
        clock = r.engine = _Clock(r.engine)
        for t, x in enumerate(seq):
            start, asked, handed = clock.tic, {}, {}

            def get(i, x=x, start=start, asked=asked):
                asked[i] = clock.tic - start
                return x[i]

            out = r.infer(get, first=t == 0, hand=handed.update)
            assert asked == need, t
            want = [int(res.value[0, t, o]) for o in net.outputs]
            assert out == want and [handed[n] for n in info["all_outputs"]] == want, t
            got, ref = r.read_all(), result_labels(lowered, low, t)
            assert got == {k: ref[k] for k in got}, t


def test_an_input_sent_a_tic_late_is_not_read(late_map):
    """The tic is tight: input scripts started a tic after their input_need leave the
    doors their phase writes on the step before's inputs, and the map computes wrong."""
    net, _, wad = late_map
    info = dict(load_wad(wad).infos[0])
    info["input_need"] = [t + 1 if t else 0 for t in info["input_need"]]
    seq = random_sequence(net, 12, 5)
    res, _ = reference_run(net, seq)
    wrong = 0
    with MapRunner(wad, info) as r:
        for t, x in enumerate(seq):
            out = r.infer(lambda i, x=x: x[i], first=t == 0, hand=lambda values: None)
            wrong += out != [int(res.value[0, t, o]) for o in net.outputs]
    assert wrong > 0


class _Gone(Exception):
    pass


def test_an_input_that_never_comes_still_ends_the_step(late_map):
    """A run that stops while a map waits for a late input (its producer ended the run):
    the map finishes its step before the error goes on, so the next run finds it between
    steps and is exact."""
    net, _, wad = late_map
    info = load_wad(wad).infos[0]
    need = _need(info)
    seq = random_sequence(net, 6, 9)
    res, _ = reference_run(net, seq)

    def gone(i):
        if need[i]:
            raise _Gone
        return seq[0][i]

    with MapRunner(wad, info) as r:
        with pytest.raises(_Gone):
            r.infer(gone, first=True, hand=lambda values: None)
        for t, x in enumerate(seq):
            assert r.infer(x, first=t == 0, hand=lambda values: None) == \
                [int(res.value[0, t, o]) for o in net.outputs], t


def test_tiles_whose_inputs_ride_late_stream_exact(tmp_path):
    """Over two maps streamed (engine/tiled.stream_sequence): maps start their steps on
    the inputs of their first phases and ask for the rest as they ride; every output and
    every value crossing maps exact at every step."""
    from engine.tiled import run_sequence
    from mapgen.tiles import compile_tiles, plan_tiles

    net = parse(NET)
    tiles = plan_tiles(net, n_tiles=2)
    path = os.path.join(str(tmp_path), "late2.wad")
    write_wad(path, compile_tiles(tiles, net.name, late_inputs=True, workers=1), net, tiles)
    lw = load_wad(path)
    assert any(any(info.get("input_need", [])) for info in lw.infos)
    got = run_sequence(lw.path, lw.infos, lw.tiles, net, random_sequence(net, 30, 2))
    assert len(got) == 30 and all(c.exact for c in got), \
        next(c.first_divergence or c for c in got if not c.exact)
    _check_chain(lw.infos)


def _check_chain(infos) -> None:
    """engine.tiled.step_chain on two maps, against the count by hand: the second map may
    run tic n once each value it wants by then is there, a tic after the first hands it."""
    from engine.tiled import step_chain

    first, second = infos
    hand = {lab[len("value:"):]: t for b, t in zip(first["read_batches"], first["hand_on"])
            for lab in b["labels"]}
    need = _need(second)
    waits = {name: hand[name] + 1 - need[i] for i, name in enumerate(second["inputs"])
             if name in hand}
    assert "a" in waits and need[second["inputs"].index("a")] > 0   # a is wanted late
    held = max(waits, key=waits.get)
    tics, path = step_chain(infos)
    assert tics == max(first["inference_tics"], waits[held] + second["inference_tics"])
    assert [(p.map, p.source, p.value) for p in path] == [(1, 0, held)]


def test_extract_reads_a_late_map_back_as_the_same_machine(late_map, tmp_path):
    """modding/extract: the inputs by the index their scripts store them at, the lanes'
    late phases; compiled again (late, as the map says), the very machine; verify runs it."""
    import build
    from modding.extract import extract_wad

    _, _, wad = late_map
    ex = extract_wad(wad)
    assert ex.same_machine, ex.verdict
    assert [ex.net.nodes[i].name for i in ex.net.inputs] == \
        ["x[0]", "x[1]", "x[2]", "y[0]", "y[1]"]
    assert build.main(["verify", wad, "--runs", "12"]) == 0


@pytest.mark.parametrize("need", ["x", [0], [0, 0, 0, 0], [-1, 0, 0], [0, 0, 10 ** 6], [0, 1.5, 0]])
def test_a_damaged_input_need_is_refused_before_the_engine(late_map, tmp_path, need):
    import json

    from acs.wad import WadError
    from modding.wadio import read_lumps, write_lumps

    _, m, wad = late_map
    assert len(m.manifest["input_need"]) == 3
    lumps = read_lumps(wad)
    info = json.loads(dict(lumps)["VNETINFO"])
    info["MAP01"]["input_need"] = need
    bad = str(tmp_path / "bad.wad")
    write_lumps(bad, [(n, json.dumps(info).encode() if n == "VNETINFO" else b)
                      for n, b in lumps])
    with pytest.raises(WadError, match="MAP01.input_need must give each input script a tic"):
        load_wad(bad)


def test_build_py_run_over_tiles_takes_a_multi_step_netlists_inputs_late(tmp_path):
    """`build.py run --tiles 2` of a multi-step netlist builds maps whose inputs ride late
    (commands/common.build_maps) and streams them exact; a feed-forward one keeps its inputs
    first, for its pipelined beat."""
    import subprocess
    import sys

    from conftest import ROOT

    src, wad = tmp_path / "late.dnet", tmp_path / "late.wad"
    src.write_text(NET)
    p = subprocess.run([sys.executable, "build.py", "run", str(src), "-o", str(wad),
                        "--tiles", "2", "--steps", "8", "--random", "8"], cwd=ROOT,
                       capture_output=True, text=True, timeout=300,
                       env={**os.environ, "VOODOO_QUIET": "1"})
    assert p.returncode == 0 and p.stdout.strip().endswith("8/8 EXACT"), p.stdout + p.stderr
    infos = load_wad(str(wad)).infos
    assert any(any(info.get("input_need", [])) for info in infos)
    assert all(info["pipeline"] is None for info in infos)
