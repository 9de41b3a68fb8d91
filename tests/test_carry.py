"""mapgen/carry.py: long staircases cut into sub-lanes where the cost model finds a step
cheaper, within the map's room, exact in the engine; the compile report names the
critical path."""
from __future__ import annotations

import pytest

from dsl.parser import parse
from dsl.reference import evaluate
from engine.runner import MapRunner
from mapgen import carry
from mapgen.compile import compile_netlist, resource_report, write_wad

# a lookup of 40 levels over 0..80: one staircase of 39 doors, ridden in one phase
STAIRS = parse("""
    network stairs
    input x[2] : 0..40
    neuron a : lut(0..80, [""" + ", ".join(str(v // 2) for v in range(81)) + """]) = x[0] + x[1]
    neuron b : relu = x[0] - x[1]
    neuron y : identity = a + 2*b
    output y, a
""", "stairs.dnet")


@pytest.fixture(scope="module")
def both():
    return compile_netlist(STAIRS), compile_netlist(STAIRS, split=False)


def test_a_long_staircase_is_cut_and_the_step_is_shorter(both):
    cut, whole = both
    a = STAIRS.nodes[[n.name for n in STAIRS.nodes].index("a")].id
    pieces = [ln for ln in cut.circuit.lanes if ln.node == a]
    assert len(pieces) > 1 and len([ln for ln in whole.circuit.lanes if ln.node == a]) == 1
    assert sorted(d.threshold for ln in pieces for d in ln.doors) == \
        sorted(d.threshold for ln in whole.circuit.lanes if ln.node == a for d in ln.doors)
    assert cut.schedule.inference_tics < whole.schedule.inference_tics


def test_no_room_no_cut(monkeypatch):
    from mapgen import physics as P

    monkeypatch.setattr(P, "MAX_DOLLS", 4)   # as many dolls as the lanes already need
    m = compile_netlist(STAIRS)
    assert len(m.circuit.lanes) == len(compile_netlist(STAIRS, split=False).circuit.lanes)
    assert carry.room_for(m.circuit.net, m.circuit.lanes, len(m.circuit.lights)).pieces == 0


def test_sub_lanes_are_exact_in_the_engine(both, tmp_path):
    cut, _ = both
    wad = str(tmp_path / "stairs.wad")
    write_wad(wad, [cut], STAIRS)
    xs = [[0, 0], [40, 40], [40, 0], [0, 40], [17, 23], [39, 1], [20, 20], [3, 38]]
    want = evaluate(STAIRS, xs).last_outputs().tolist()
    with MapRunner(wad, cut.manifest) as r:
        assert [r.infer(x) for x in xs] == want


def test_the_report_names_the_critical_path(both):
    cut, whole = both
    text = resource_report(whole)
    line = next(ln for ln in text.splitlines() if "critical path" in ln)
    # a's lane (40 doors, read in phase 1) and the inputs' (41 levels) set the tics
    assert "phase 1: " in line and "(a: 40 doors over" in line, line
    assert "phase 0: " in line and "x[" in line, line
    assert "critical path" in resource_report(cut)


def test_the_wad_cache_gives_the_same_bytes_and_builds_once(tmp_path, monkeypatch):
    """mapgen/wadcache.py: a second build of the same netlist is a copy of the first (the
    build is not called again), byte for byte what a fresh build writes; another netlist
    or other options are another entry."""
    from mapgen import wadcache

    monkeypatch.setenv("VOODOO_WAD_CACHE", str(tmp_path / "cache"))
    calls = []

    def make(path):
        calls.append(path)
        write_wad(path, [compile_netlist(STAIRS, split=False)], STAIRS)
        return {"made": len(calls)}

    key = wadcache.key_of(STAIRS, split=False)
    a, b = tmp_path / "a" / "s.wad", tmp_path / "b" / "s.wad"
    a.parent.mkdir(), b.parent.mkdir()
    assert wadcache.cached(key, make, str(a)) == {"made": 1}
    assert wadcache.cached(key, make, str(b)) == {"made": 1} and len(calls) == 1
    fresh = tmp_path / "fresh.wad"
    write_wad(str(fresh), [compile_netlist(STAIRS, split=False)], STAIRS)
    assert a.read_bytes() == b.read_bytes() == fresh.read_bytes()
    assert wadcache.key_of(STAIRS, split=True) != key
    monkeypatch.delenv("VOODOO_WAD_CACHE")
    assert wadcache.cached(key, make, str(tmp_path / "off.wad")) == {"made": 2}


def test_a_lane_of_a_thousand_doors_fits_and_is_exact(tmp_path):
    """Issue 37 item 21: a staircase of 1000 doors (docs/dnet.md's limit) was refused by
    the map's extent (about 420 fitted); cut into sub-lanes it fits and runs exact."""
    net = parse("network wide\ninput x : 0..1000\nneuron a : relu(s=1, max=1000) = x\n"
                "output a\n", "wide.dnet")
    m = compile_netlist(net)
    x0, y0, x1, y1 = m.layout.model.extent()
    assert x1 - x0 < 65536 and y1 - y0 < 65536
    assert sum(len(ln.doors) for ln in m.circuit.lanes if ln.source[0] == "light") == 1000
    wad = str(tmp_path / "wide.wad")
    write_wad(wad, [m], net)
    xs = [[0], [1], [999], [1000], [500], [777]]
    with MapRunner(wad, m.manifest) as r:
        assert [r.infer(x) for x in xs] == xs
