"""Issue 15, the map compiler's refusals: every oversized lane (a gate's, an input's, a
spiking membrane's leak) is a positioned diagnostic, collected with the others, early, and
hints never suggest what cannot work."""
import os
import subprocess
import sys

import pytest

from conftest import ROOT
from dsl.diagnostics import CompileError
from dsl.parser import parse
from mapgen import checks, circuit
from mapgen.circuit import lower
from mapgen.compile import compile_netlist
from mapgen.layout import build_layout

KERR0 = "network kerr0\ninput a : 0..2000\nneuron h : relu(s=1, max=2000) = a\noutput h\n"


def cli(*args, cwd=None):
    return subprocess.run([sys.executable, os.path.join(ROOT, "build.py"), *args], cwd=cwd,
                          capture_output=True, text=True, env={**os.environ, "VOODOO_QUIET": "1"})


def test_oversized_lane_read_by_a_gated_neuron_is_a_diagnostic(tmp_path):
    """Item 9: `compile` printed `internal error: KeyError: 0`; now both oversized lanes are
    reported with their positions, nothing is written, and `check` (which validates the
    netlist language, not the map limits) still passes the file."""
    src = tmp_path / "kerr0.dnet"
    src.write_text(KERR0)
    wad = tmp_path / "k.wad"
    r = cli("compile", str(src), "-o", str(wad))
    assert r.returncode == 1 and "internal error" not in r.stderr, r.stderr
    assert f"{src}:2:7: error: 'a' needs a lane of more than 1000 doors (values 0..2000)" \
        in r.stderr
    assert f"{src}:3:8: error: 'h' needs a lane of more than 1000 doors" in r.stderr
    assert not wad.exists() and os.listdir(tmp_path) == ["kerr0.dnet"]
    r = cli("check", str(src))
    assert r.returncode == 0 and "compile" in cli("check", "--help").stdout


def test_huge_leak_is_refused_before_its_staircase_is_built(monkeypatch):
    """Items 24/25: leak 32767 with a reset of 32767 is refused with the lane door budget
    message, without building a 32768-entry leak table (it took 25 s and more)."""
    built = []
    real = circuit.staircase
    monkeypatch.setattr(circuit, "staircase",
                        lambda g, lo, hi: built.append(hi - lo) or real(g, lo, hi))
    net = parse("steps 3\ninput x : 0..1\n"
                "neuron s : spike(threshold=1, leak=32767, reset=32767) = x\noutput s\n",
                "leak.dnet")
    assert net.state_range[net.by_name("s").id].hi == 32767
    with pytest.raises(CompileError) as ei:
        lower(net)
    assert "leak.dnet:3:8: error: 's' needs a leak lane of more than 1000 doors " \
           "(values 0..32767)" in str(ei.value)
    assert max(built) <= 32767 and len(built) <= 2  # the input's and the fire lane only


def test_light_check_sees_a_reset_above_the_integration_range():
    """Item 24: spike(threshold=1, leak=40000, reset=40000) slipped past the light check."""
    net = parse("steps 2\ninput x : 0..1\n"
                "neuron s : spike(threshold=1, leak=2, reset=40000) = x\noutput s\n", "r.dnet")
    assert net.state_range[net.by_name("s").id].hi == 40000
    with pytest.raises(CompileError) as ei:
        compile_netlist(net)
    assert "the membrane light of 's' can reach" in str(ei.value)


SPIKING = "steps 4\ninput x[2] : 0..1\nneuron s : spike(threshold=2, leak=1) = x[0] + x[1]\n" \
          "output s"


def test_budget_hints_suggest_tiling_a_multi_step_netlist_too(monkeypatch):
    """Each map keeps its own state (membranes, prev doors), so a spiking netlist too big
    for one map is told to tile, like any other."""
    monkeypatch.setattr(checks, "MAX_DOLLS", 1)
    for src in (SPIKING, SPIKING.replace("steps 4", "steps 1")):
        lay = build_layout(lower(parse(src, "spk.dnet")))
        hints = [d.hint for d in checks.check_budgets(lay)]
        assert hints and all("tiles" in h for h in hints)


def test_a_spiking_netlist_tiles(tmp_path):
    from acs.wad import read_wad

    src = tmp_path / "spk.dnet"
    src.write_text(SPIKING.replace("neuron s :", "neuron t : step(t=1) = x[0]\nneuron s :")
                   .replace("output s", "output s, t"))
    r = cli("compile", str(src), "--tiles", "2", "-o", str(tmp_path / "s.wad"))
    assert r.returncode == 0, r.stderr
    assert len(read_wad(str(tmp_path / "s.wad")).maps) == 2


# ------------------------------------------------------------------ issue 22: measured limits
def test_a_netlist_too_large_for_any_wad_is_refused_before_it_is_built(monkeypatch, tmp_path):
    """`input x[1000000]` took minutes and gigabytes to elaborate before anything was said:
    its size is read off the declarations first, and no node is ever built."""
    from dsl import builder
    from dsl.jsonio import loads

    def no(*a, **k):
        raise AssertionError("elaborated")
    monkeypatch.setattr(builder.NetBuilder, "declare", no)
    with pytest.raises(CompileError) as ei:
        parse("input x[1000000] : 0..1\noutput x\n", "big.dnet")
    msg = str(ei.value)
    assert "big.dnet:1:7: error: the network declares 1,000,000 lanes" in msg
    assert "more than a WAD holds (2 GiB)" in msg and "at most 524,287" in msg
    doc = '{"format": "voodoonet.netlist", "version": 1, "vectors": [{"name": "x", ' \
          '"size": 400000, "gate": {"kind": "input", "lo": 0, "hi": 1}}, {"name": "h", ' \
          '"size": 200000, "gate": {"kind": "relu"}}], "outputs": ["h"]}'
    with pytest.raises(CompileError, match="declares 600,000 lanes"):
        loads(doc, "big.json")
    src = tmp_path / "big.dnet"
    src.write_text("input x[1000000] : 0..1\noutput x\n")
    r = cli("check", str(src))
    assert r.returncode == 1 and "declares 1,000,000 lanes" in r.stderr, r.stderr


def test_the_lane_bytes_bound_is_below_what_a_lane_costs():
    """MIN_LANE_WAD_BYTES must stay a lower bound of what the compiler writes for its
    smallest lanes (a 0..1 input, a one-door step), or the refusal above would be wrong."""
    from dsl.builder import MIN_LANE_WAD_BYTES

    def textmap(src):
        return len(compile_netlist(parse(src, "lane.dnet")).textmap)

    inputs = "input x[{}] : 0..1\nneuron h : identity\nlines x -> h all 1\noutput h\n"
    steps = "input x : 0..1\nneuron h[{}] : step(t=1)\nlines x -> h all 1\noutput h\n"
    for form in (inputs, steps):
        assert textmap(form.format(3)) - textmap(form.format(2)) >= MIN_LANE_WAD_BYTES


def test_seven_hundred_script_starts_a_tic_and_not_one_more(tmp_path):
    """physics.MAX_SCRIPT_STARTS, measured: 700 `puke`s of a 4-argument script in one tic
    run; 701 crash ViZDoom (each is a 20-byte network command for the next tic)."""
    from engine.doom import Engine, EngineError
    from mapgen import physics as P
    from mapgen.compile import write_wad

    net = parse("input x[4] : 0..3\nneuron h : identity = x[0]\noutput h\n", "p.dnet")
    wad = str(tmp_path / "p.wad")
    write_wad(wad, [compile_netlist(net)], net)
    call = (10, 10**9, 10**9, 10**9, 10**9)
    with Engine(wad) as e:
        e.advance(30)
        e.puke_many([call] * P.MAX_SCRIPT_STARTS)
        e.advance(2)
        assert e.user(60) == -1
    with Engine(wad) as e:
        e.advance(30)
        e.puke_many([call] * (P.MAX_SCRIPT_STARTS + 1))
        with pytest.raises(EngineError, match="SIGSEGV|crash"):
            e.advance(2)


def test_a_map_with_more_inputs_than_one_tic_takes_is_refused(monkeypatch):
    from mapgen import physics as P
    from mapgen import program

    net = parse("input x[12] : 0..1\nneuron h : identity\nlines x -> h all 1\noutput h\n",
                "wide.dnet")
    monkeypatch.setattr(P, "MAX_SCRIPT_STARTS", 7)   # 3 input scripts and the beat: fine
    cm = compile_netlist(net)
    assert cm.manifest["pipeline"]["batch"] == 2      # 2 beats x 3 queue scripts + 1 = 7
    assert program.batch_size(cm.layout, cm.schedule) * 3 + 1 <= 7
    monkeypatch.setattr(P, "MAX_SCRIPT_STARTS", 3)
    with pytest.raises(CompileError) as ei:
        compile_netlist(net)
    assert "12 inputs take 3 input scripts in one tic; the engine starts at most 3 scripts" \
        in str(ei.value) and "tiles" in str(ei.value)


def test_a_sector_bordered_by_too_many_lines_is_refused(monkeypatch):
    """ViZDoom crashes loading a sector bordered by 32,768 lines (bench/map_limits.py):
    the hall of lights borders 4 per light."""
    from mapgen import physics as P

    from dsl import load

    monkeypatch.setattr(P, "MAX_SECTOR_LINES", 100)   # hello has 50 lights
    with pytest.raises(CompileError) as ei:
        compile_netlist(load(os.path.join(ROOT, "circuits", "hello.dnet")))
    assert "lines border one sector (hall of lights" in str(ei.value)


@pytest.mark.parametrize("name, budget", [("hello", None), ("mnist_small", None),
                                          ("transformer", 1), ("softmax", None)])
def test_the_planners_estimates_cover_the_compiled_maps(name, budget):
    """What the planner expects a map to cost (mapgen.tiles.estimate, acs_bound) is never
    below what the compiler writes: dolls and lights exactly, sectors, linedefs, ACS
    characters, every lane's length and the map's width as upper bounds."""
    from dsl import load
    from mapgen import layout
    from mapgen import physics as P
    from mapgen.tiles import acs_bound, estimate

    net = load(os.path.join(ROOT, "circuits", f"{name}.dnet"))
    # The planner counts one lane per staircase; the compiler may then cut lanes into
    # sub-lanes (mapgen/carry.py), only within the room a map has left.
    split = compile_netlist(net, door_budget=budget)
    assert len(split.circuit.lanes) <= P.TILE_DOLLS
    assert len(split.layout.model.lines) <= P.MAX_LINES * 9 // 10
    assert len(split.layout.model.sectors) <= P.MAX_SECTORS * 9 // 10
    cm = compile_netlist(net, door_budget=budget, split=False)
    c, m = cm.circuit, cm.layout.model
    bound = acs_bound(len(c.lanes), len(c.lights), len(c.net.inputs), len(c.net.outputs),
                      max(len(n.name) for n in c.net.nodes))
    assert len(cm.acs) <= bound
    cost = estimate(net, budget)
    assert (cost.dolls, cost.lights) == (len(c.lanes), len(c.lights))
    assert len(m.sectors) <= cost.sectors + len(c.lights) + 3
    assert len(m.lines) <= cost.linedefs
    lengths = [g.length for g in cm.layout.lanes]
    assert max(lengths) <= cost.longest and sum(lengths) <= cost.lane_length
    # the layout a map falls back to when nothing else fits within its width
    packed = layout._columns_by_length(c, 0.0, 0.0, P.LANE_WIDTH + P.LANE_GAP,
                                       layout.lanes_per_column())
    assert max(g.x0 + g.length for g in packed) <= cost.width


def test_a_node_no_map_can_hold_is_named(tmp_path):
    """A relu reading more values than one map takes inputs: no plan exists; said at once,
    with the node's position, by the planner and by `compile --tiles auto`."""
    from dsl.diagnostics import VoodooError
    from mapgen.tiles import plan_tiles

    text = "input x[3000] : 0..1\nneuron h : relu(s=3000, max=1)\nlines x -> h all 1\noutput h\n"
    with pytest.raises(VoodooError) as ei:
        plan_tiles(parse(text, "wide.dnet"))
    assert "wide.dnet:2:8: error: no tile plan can hold 'h'" in str(ei.value)
    assert "3,000 inputs, more than the 2,796 one map takes" in str(ei.value)
    src = tmp_path / "wide.dnet"
    src.write_text(text)
    r = cli("compile", str(src), "--tiles", "auto", "-o", str(tmp_path / "w.wad"))
    assert r.returncode == 1 and "no tile plan can hold 'h'" in r.stderr
    assert not (tmp_path / "w.wad").exists()
