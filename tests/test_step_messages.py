"""Issue 37 item 14: how long a multi-step run is, said plainly (commands/eval.check_steps:
no `--steps 0: ... runs at most 10000 steps` for a run nobody gave a length, no "at most"
for -1), and `run --debug` over several maps refused with what --debug does there instead
of being silently dropped. All refused before anything is compiled or run."""
from __future__ import annotations

import contextlib
import io
import os

import pytest

from conftest import ROOT

C = os.path.join("circuits", "")


def said(argv: list[str]) -> tuple[int, str]:
    import build

    err = io.StringIO()
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            code = build.main(argv)
    finally:
        os.chdir(cwd)
    return code, err.getvalue()


@pytest.mark.parametrize("argv, message", [
    (["eval", C + "counter.dnet"], "circuits/counter.dnet runs open-ended and takes no "
     "inputs: give --steps N (1..10000); its done output may end it earlier\n"),
    (["run", C + "running_max.dnet", "--random", "0"], "circuits/running_max.dnet runs "
     "open-ended: give its inputs (--input once per step, or --random N)\n"),
    (["eval", C + "running_max.dnet"], "circuits/running_max.dnet runs open-ended: give its "
     "inputs (--input once per step)\n"),
    (["eval", C + "counter.dnet", "--steps", "-1"], "--steps -1: give 1..10000 steps "
     "(circuits/counter.dnet runs open-ended, at most 10000 steps)\n"),
    (["run", C + "counter.dnet", "--steps", "0"], "--steps 0: give 1..10000 steps "
     "(circuits/counter.dnet runs open-ended, at most 10000 steps)\n"),
    (["eval", C + "counter.dnet", "--steps", "10001"], "--steps 10001: give 1..10000 steps"),
])
def test_step_counts_are_said_plainly(argv, message):
    code, err = said(argv)
    assert code == 1 and err.startswith(message), err
    assert "at most" not in err.split("(")[0]


@pytest.mark.parametrize("argv, what", [
    (["run", C + "elman.dnet", "--random", "3", "--debug", "--tiles", "2"], "--tiles 2"),
    (["run", C + "mlp3.dnet", "-i", "1,2,3,0", "--debug", "--tiles", "3"], "--tiles 3"),
])
def test_debug_over_tiles_says_what_it_does(argv, what):
    code, err = said(argv)
    assert code == 1 and err.startswith(
        f"--debug reads back every light of one map, and {what}; over several maps only the "
        "values the maps hand on are read"), err
    assert "hint: run without --debug" in err


def test_debug_of_a_tiled_wad_is_refused_too(tmp_path):
    from commands.common import build_maps
    from mapgen.compile import write_wad

    net, maps, plan = build_maps(os.path.join(ROOT, C + "mlp3.dnet"), "2")
    write_wad(str(tmp_path / "m.wad"), maps, net, plan)
    code, err = said(["run", str(tmp_path / "m.wad"), "--random", "2", "--debug"])
    assert code == 1 and f"and {tmp_path / 'm.wad'} holds 2 maps; over several maps" in err, err
