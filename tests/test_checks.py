"""Each static check, fired on purpose by a map that breaks it (and nothing is written)."""
import os
import subprocess
import sys

import pytest

from conftest import NEEDS_TILES, ROOT
from dsl.diagnostics import CompileError
from dsl.parser import parse
from mapgen import checks
from mapgen import physics as P
from mapgen.circuit import lower
from mapgen.compile import compile_netlist
from mapgen.layout import build_layout
from mapgen.program import plan


def _layout(src, **kw):
    lay = build_layout(lower(parse(src, "bad.dnet"), **kw))
    return lay, plan(lay)


GOOD = "input x[2] : 0..3\nneuron h : relu(s=2, max=3) = x[0] - x[1] + 4\nneuron o : identity = 3*h\noutput o"


def test_good_map_passes_every_check():
    lay, sched = _layout(GOOD)
    checks.run_all(lay, sched)


def test_zero_length_line_is_refused():
    """ViZDoom crashes loading a map with a zero-length linedef: it never gets written."""
    lay, sched = _layout(GOOD)
    lay.model.wall((96, 32), (96, 32), 0)
    with pytest.raises(CompileError, match=r"1 linedef\(s\) of zero length, the first is line "
                                           rf"{len(lay.model.lines) - 1} at \(96, 32\)"):
        checks.run_all(lay, sched)


def test_light_overflow_names_the_neuron():
    with pytest.raises(CompileError) as ei:
        compile_netlist(parse("input x[2] : 0..100\nneuron big : identity = 300*x[0] + 90*x[1]\n"
                              "output big", "bad.dnet"))
    msg = str(ei.value)
    assert "bad.dnet:2:8: error: the acc light of 'big' can reach 0..39000" in msg
    assert "hint:" in msg


def test_plane_range():
    with pytest.raises(CompileError) as ei:
        compile_netlist(parse("input x : 0..1\nneuron s : step(t=-32760) = -32767*x\noutput s",
                              "bad.dnet"))
    assert "bad.dnet:2:8: error: the doors of 's' need plane heights -32816.." in str(ei.value)


def test_lane_door_budget():
    with pytest.raises(CompileError) as ei:
        compile_netlist(parse("input x : -30000..0\nneuron o : identity = x\noutput o", "w.dnet"))
    assert "w.dnet:1:7: error: 'x' needs a lane of more than 1000 doors" in str(ei.value)


def test_geometry_rise_and_short_landing():
    # Lanes with ramp stairs (steep lanes climb each rise in one step: lanes.step_height).
    lay, sched = _layout(GOOD, steep=False)
    g = lay.lanes[-1]
    door = next(s for s in g.segments if s.kind == "door")
    door.floor += 30
    landing = next(s for s in g.segments if s.kind == "landing")
    landing.x1 = landing.x0 + 20
    msgs = [d.message for d in checks.check_geometry(lay)]
    assert any("a rise of" in m and "more than the 12 a doll climbs at lane speed" in m
               for m in msgs)
    assert any("landing 0 is 20 units long" in m for m in msgs)
    assert any("the floor drops" in m for m in msgs)


def test_two_moves_on_one_plane_in_one_tic():
    lay, sched = _layout(GOOD)
    sched.writes.append(sched.writes[0])
    msgs = [d.message for d in checks.check_schedule(lay, sched)]
    assert any("two plane moves for the doors of" in m and "drops the second one silently" in m
               for m in msgs)


def test_phase_too_short_for_its_dolls():
    lay, sched = _layout(GOOD, split=False)   # whole staircases: rides of several tics
    sched.phases[-1].run_tics = 2
    msgs = [d.message for d in checks.check_schedule(lay, sched)]
    assert any("could still be in a door when that door moves" in m for m in msgs)


def test_a_sector_with_too_many_sides_is_refused(monkeypatch):
    """ViZDoom segfaults loading a sector bordered by more than 32,767 lines (measured with
    square holes cut into one room: 32,004 sides load, 33,204 do not): such a map is
    refused, naming the sector (here the most crowded one of a small map, the limit
    lowered below it)."""
    from collections import Counter

    from mapgen import physics

    lay, sched = _layout(GOOD)
    m = lay.model
    count = Counter(s for line in m.lines for s in {m.sides[line.front].sector} |
                    ({m.sides[line.back].sector} if line.back >= 0 else set()))
    (sec, n), = count.most_common(1)
    monkeypatch.setattr(physics, "MAX_SECTOR_LINES", n - 1)
    msgs = [d.message for d in checks.check_budgets(lay) if "border one sector" in d.message]
    what = m.sectors[sec].comment or f"sector {sec}"
    assert msgs == [f"{n:,} lines border one sector ({what}); the engine loads at most "
                    f"{n - 1:,}"]


def test_map_extent(monkeypatch):
    from mapgen import physics

    monkeypatch.setattr(physics, "COORD_MAX", 1000)
    with pytest.raises(CompileError) as ei:
        compile_netlist(parse(GOOD, "wide.dnet"))
    assert f"wide.dnet:1:7: error: the map spans x 0..{physics.SCROLL_LINE_LENGTH}" in str(ei.value)
    assert "outside the engine's -32768..1000" in str(ei.value) and "tiles" in str(ei.value)


def test_a_spiking_map_too_wide_names_its_widest_lanes():
    """Issue 25 item 4: the refusal points at the neuron with the longest lane and names
    the longest lanes (a spiking netlist cannot be tiled, so they are what to narrow)."""
    src = ("network wide\nsteps 3\ninput x[2] : 0..300\n"
           "neuron s0 : spike(threshold=900, leak=600, reset=0)\n"
           "neuron s1 : spike(threshold=2, leak=1, reset=0)\n"
           "lines x -> s0 dense [[3, 3]]\nlines x -> s1 dense [[1, 1]]\noutput s0, s1\n")
    with pytest.raises(CompileError) as ei:
        compile_netlist(parse(src, "wide.dnet"))
    shown = str(ei.value)
    assert "wide.dnet:4:8: error: the map spans x 0..36192" in shown, shown
    # the inputs' lanes are cut into short sub-lanes (mapgen/carry.py); a spiking neuron's
    # leak lane stays whole, and it is what to narrow
    assert ("the longest lanes: 's0 (leak)' 36,192 units (600 doors, values 0..2099), "
            "'x[0]' ") in shown, shown
    assert "split the network over several maps (tiles)" in shown, shown


def test_doll_budget(monkeypatch):
    monkeypatch.setattr(checks, "MAX_DOLLS", 2)
    lay, sched = _layout(GOOD)
    msgs = [d.message for d in checks.check_budgets(lay)]
    assert msgs == [f"{len(lay.lanes)} dolls in one map; the budget is 2"] and len(lay.lanes) > 2


def test_cli_compile_refuses_and_writes_nothing(tmp_path):
    bad = tmp_path / "big.dnet"
    bad.write_text("input x[2] : 0..100\nneuron big : identity = 300*x[0] + 90*x[1]\noutput big\n")
    out = tmp_path / "big.wad"
    r = subprocess.run([sys.executable, os.path.join(ROOT, "build.py"), "compile", str(bad),
                        "-o", str(out)], capture_output=True, text=True)
    assert r.returncode == 1
    assert "big.dnet:2:8: error: the acc light of 'big'" in r.stderr
    assert "Traceback" not in r.stderr
    assert not out.exists() and os.listdir(tmp_path) == ["big.dnet"]


def test_line_near_a_stop_point_is_refused():
    """Issue 15 item 21: engines stop a blocked doll up to one movement substep apart
    (GZDoom 1009.6, ViZDoom 1005.6), so a line within STOP_CLEARANCE of a point where a doll
    can rest would be counted by one engine and not by the other."""
    lay, sched = _layout(GOOD, split=False)   # a lane of several doors
    assert checks.check_stop_clearance(lay) == []
    g = next(g for g in lay.lanes if any(s.kind == "door" for s in g.segments)
             and len(g.lines) > 1)
    face = next(s for s in g.segments if s.kind == "door" and s.door == 1).x0
    contact = face - P.DOLL_RADIUS
    i = next(i for i, (x, *_) in enumerate(g.lines) if x < face and x > face - 64)
    x, special, a0, a1 = g.lines[i]
    g.lines[i] = (contact - P.STOP_CLEARANCE, special, a0, a1)  # exactly at the limit: fine
    assert checks.check_stop_clearance(lay) == []
    g.lines[i] = (contact - 4, special, a0, a1)                # inside the engines' band
    msgs = [d.message for d in checks.check_stop_clearance(lay)]
    assert len(msgs) == 1 and "is 4 units from door 1's face" in msgs[0], msgs
    with pytest.raises(CompileError, match="from door 1's face"):
        checks.run_all(lay, sched)
    g.lines[i] = (g.segments[-1].x1 - P.DOLL_RADIUS + 3, special, a0, a1)  # past the end wall
    assert "from the lane's end wall" in checks.check_stop_clearance(lay)[0].message
    g.lines[i] = (g.start[0] - 10, special, a0, a1)
    assert "from its parking point" in checks.check_stop_clearance(lay)[0].message


# (a circuit too big for one map is laid out only to be refused: its tiles are the maps)
@pytest.mark.parametrize("path", sorted(f for f in os.listdir(os.path.join(ROOT, "circuits"))
                                         if f.endswith((".dnet", ".json"))
                                         and f not in NEEDS_TILES))
def test_every_circuit_keeps_lines_clear_of_stop_points(path):
    from dsl import load

    lay = build_layout(lower(load(os.path.join(ROOT, "circuits", path))))
    assert checks.check_stop_clearance(lay) == []
    # The tightest line is exactly what physics.py promises, not less.
    gap = min(abs(lx - x) for g in lay.lanes for lx, *_ in g.lines
              for x, _ in checks.stop_points(g))
    assert gap >= P.STOP_CLEARANCE


RNN = ("input x : 0..3\ninput n : 0..7\nfeedback n = h\n"
       "neuron h : relu(s=1, max=7) = x + prev(h) - n + 2\ninit h = 5\noutput h\n")


def _carry_problems(sched_edit):
    import dataclasses

    lay, sched = _layout(RNN)
    assert not checks.check_carries(lay, sched)
    sched.carries = sched_edit(sched.carries, dataclasses.replace)
    return " | ".join(d.message for d in checks.check_carries(lay, sched))


def test_carries_must_come_before_the_reset():
    out = _carry_problems(lambda cs, rep: [rep(c, order=1) for c in cs])
    assert "copied at tic 1 after the lights are reset" in out


def test_each_prev_and_fed_lane_gets_exactly_one_carry():
    assert "get 0 carried copies per step; they need 1" in _carry_problems(lambda cs, _: cs[1:])
    assert "get 2 carried copies" in _carry_problems(lambda cs, _: cs + cs[:1])


def test_carries_land_before_their_doll_rides():
    out = _carry_problems(lambda cs, rep: [rep(c, tic=c.tic + 5) for c in cs])
    assert "after its doll is released" in out


def test_carries_read_their_node_light():
    out = _carry_problems(lambda cs, rep: [rep(c, light=c.light + 1) for c in cs])
    assert "are copied from light" in out


def test_an_init_beyond_a_light_is_refused():
    """The begin script sets the light a prev lane reads to the init: it must fit a light
    (a lane over such a range is refused long before; the check guards the bus itself)."""
    from dsl.ir import Prev

    lay, sched = _layout(RNN)
    node = next(n for n in lay.circuit.net.nodes if isinstance(n.gate, Prev))
    node.gate = Prev(node.gate.src, 40000)
    out = " | ".join(d.message for d in checks.check_carries(lay, sched))
    assert "init 40000 of 'h' does not fit a light" in out
