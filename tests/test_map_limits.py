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
