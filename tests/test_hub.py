"""Hub play (issue 36, item 4; mapgen/hub.py, engine/hubplay.py): a tiled WAD built with
`--hub` is walked through map by map, the values crossing in ACS globals only.

A visitor steps on a preset pedal of MAP01, waits for the dolls, steps on the EXIT into
MAP02, where the dolls compute the outputs into the displays: in ViZDoom always, in GZDoom
with $GZDOOM. Every value MAP01 hands on (read from the hub array by a probe) and every
output's display must equal the integer reference. Under Python's runner the same WAD
runs as any tiled WAD (the hub scripts stay idle); the EXIT opens only once a map has
handed on; the hub's ACS only copies; the manifest checks refuse as before. The MNIST
CNN's hub is `build.py mnist --model cnn --hub` (README, run by tests/test_readme.py).
"""
from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from conftest import ROOT
from test_gzdoom_parity import GZDOOM, needs_gzdoom

MLP3 = os.path.join(ROOT, "circuits", "mlp3.dnet")
XOR = os.path.join(ROOT, "circuits", "xor.dnet")


def _build(path: str, out: str, tiles: int = 2, presets=None) -> None:
    from dsl import load
    from mapgen.compile import write_wad
    from mapgen.hub import compile_hub
    from mapgen.tiles import plan_tiles

    net = load(path)
    plan = plan_tiles(net, n_tiles=tiles)
    write_wad(out, compile_hub(net, plan, net.name, presets, workers=1), net, plan)


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    """mlp3 over 2 hub maps, read back as `build.py run` reads it."""
    from mapgen.compile import load_wad

    out = str(tmp_path_factory.mktemp("hub") / "mlp3_hub.wad")
    _build(MLP3, out)
    return load_wad(out)


def _cli(*args, cwd=None):
    env = {**os.environ, "VOODOO_QUIET": "1"}
    return subprocess.run([sys.executable, os.path.join(ROOT, "build.py"), *args], cwd=cwd,
                          env=env, capture_output=True, text=True, timeout=600)


def test_vizdoom_visitor_walks_the_hub_and_every_display_is_exact(hub):
    from engine import hubplay as H

    assert len(hub.infos) == 2 and len(hub.infos[0]["hub"]["presets"]) == 4
    for preset in range(4):
        records = H.visit_vizdoom(hub.path, hub.infos, preset)
        after = H.done_records(records, 2)
        assert [r.level for r in after] == [1, 2]
        assert H.check_visit(hub.net, hub.infos, preset, after) == []
        # what the test checks is there: MAP01 handed on values, MAP02 shows numbers
        assert H.handed(hub.infos, 0, after[0].slots)
        assert None not in H.shown(hub.infos, after[1].lights).values()


def test_check_visit_sees_a_wrong_value(hub):
    from engine import hubplay as H

    after = H.done_records(H.visit_vizdoom(hub.path, hub.infos, 1), 2)
    slot = hub.infos[0]["hub"]["slots_out"][0]
    after[0].slots[slot] += 1
    assert any("MAP01 handed on" in b for b in H.check_visit(hub.net, hub.infos, 1, after))
    after[1].lights[0] = 77    # a segment neither lit nor dark: no number shown
    assert any("display" in b for b in H.check_visit(hub.net, hub.infos, 1, after))


def test_exit_and_later_maps_wait_for_a_run(hub):
    """MAP01's EXIT before any pedal leaves nothing (the map stays, the ack is the ready
    one); MAP02 started alone (as Python's runner starts it) never runs by itself."""
    from engine.doom import Engine

    info1, info2 = hub.infos
    with Engine(hub.path, "MAP01") as e:
        e.advance(info1["init_tics"] + 4)
        e.command("warp {:g} {:g}".format(*info1["hub"]["exit"]))
        e.advance(40)   # an exit would end the episode here (EngineError)
        assert e.user(info1["ack_var"]) == -1
    with Engine(hub.path, "MAP02") as e:
        e.advance(info2["init_tics"] + info2["inference_tics"] + 40)
        assert e.user(info2["ack_var"]) == -1


def test_pythons_runner_runs_the_hub_wad_unchanged(hub):
    r = _cli("run", hub.path, "--input", "3,2,2,1", "--input", "0,3,1,2")
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.strip().splitlines()[-1] == "2/2 EXACT"


def test_mapinfo_chains_the_maps_without_intermission(hub):
    from acs.wad import MapLump, make_mapinfo, read_wad

    text = read_wad(hub.path).mapinfo
    blocks = text.split("map ")[1:]
    assert 'next = "MAP02"' in blocks[0] and 'next = "MAP01"' in blocks[1]
    assert all("nointermission" in b for b in blocks)
    assert "next" not in make_mapinfo([MapLump("MAP01", ""), MapLump("MAP02", "")])


def test_hub_acs_only_copies(hub):
    from acs.wad import read_wad
    from mapgen.hub import hub_violations

    for m in read_wad(hub.path).maps:
        assert hub_violations(m.scripts) == []
        assert re.search(r"inputs\[\d+\] = hub\[\d+\];", m.scripts)        # copies in
        assert re.search(r"hub\[\d+\] = GetSectorLightLevel\(\d+\);", m.scripts)  # and out
    for bad in ("hub[3] = hub[2] + 1;", "inputs[0] = hub[1] * 2;",
                "hub[1] = GetSectorLightLevel(3) + 1;", "hub[2] = inputs[0];",
                "if (hub[4] > 3) Exit_Normal(0);"):
        assert hub_violations(f"script 21000 OPEN\n{{\n    {bad}\n}}\n") == [bad], bad


def test_manifest_checks_refuse_a_hub_wad_as_any_tiled_one(hub, tmp_path):
    from acs.wad import WadError
    from mapgen.compile import load_wad
    from test_tiled_runs import put, tampered

    outs = hub.infos[0]["tile_outputs"]
    bad = tampered(hub.path, str(tmp_path / "bad.wad"),
                   put("MAP01", tile_outputs=outs[1:], all_outputs=outs[1:]))
    with pytest.raises(WadError, match="MAP02 takes"):
        load_wad(bad)


def test_same_inputs_same_bytes_and_presets(tmp_path):
    from mapgen.hub import Preset

    a, b = str(tmp_path / "a.wad"), str(tmp_path / "b.wad")
    presets = [Preset("one zero", [1, 0]), Preset("one one", [1, 1])]
    _build(XOR, a, presets=presets)
    _build(XOR, b, presets=presets)
    assert open(a, "rb").read() == open(b, "rb").read()
    from mapgen.compile import load_wad

    info = load_wad(a).infos[0]["hub"]
    assert [p["values"] for p in info["presets"]] == [[1, 0], [1, 1]]
    assert len(info["pedals"]) == 2


@pytest.mark.parametrize("args,says", [
    (["--hub"], "give --tiles N"),
    (["--tiles", "2", "--preset", "1,1,1,1"], "give --hub too"),
    (["--tiles", "2", "--hub", "--plain"], "without --plain"),
    (["--tiles", "2", "--hub", "--preset", "9,0,0,0"], "outside its range"),
    (["--tiles", "2", "--hub", "--preset", "1,2"], "2 values, but mlp3 takes 4"),
    (["--tiles", "2", "--hub", "--preset", "a,b"], "as integers"),
])
def test_compile_hub_refusals(args, says, tmp_path):
    r = _cli("compile", MLP3, "-o", str(tmp_path / "x.wad"), *args)
    assert r.returncode != 0 and says in r.stderr, r.stderr
    assert "Traceback" not in r.stderr and not os.path.exists(tmp_path / "x.wad")


def test_hub_refuses_state_across_steps(tmp_path):
    r = _cli("compile", os.path.join(ROOT, "circuits", "elman.dnet"), "--tiles", "2", "--hub",
             "-o", str(tmp_path / "x.wad"))
    assert r.returncode != 0 and "one step" in r.stderr and "Traceback" not in r.stderr


@needs_gzdoom
def test_gzdoom_visitor_walks_the_hub_and_every_display_is_exact(hub):
    from engine import hubplay as H

    for preset in (0, 3):
        records = H.visit_gzdoom(GZDOOM, hub.path, hub.infos, preset)
        after = H.done_records(records, 2)
        assert H.check_visit(hub.net, hub.infos, preset, after) == []
        assert None not in H.shown(hub.infos, after[1].lights).values()


@needs_gzdoom
def test_gzdoom_plays_the_cnn_hub_exactly(tmp_path):
    """The CNN's hub, walked in ViZDoom and then in GZDoom (whose flat vertex buffer its
    MAP02 once overflowed: docs/gzdoom.md, section 7): every value handed on and every
    logit equal to the reference in both, and both engines' displays the same."""
    r = _cli("mnist", "--model", "cnn", "--hub", "--digit", "3", "--gzdoom", GZDOOM,
             "-o", str(tmp_path / "mnist_cnn_hub.wad"))  # the README's name: one build a run
    assert r.returncode == 0, r.stderr[-3000:]
    last = r.stdout.strip().splitlines()[-1]
    assert re.match(r"engine==reference (\d+)/\1 EXACT; hub of 2 maps in ViZDoom, GZDoom;",
                    last), last
    shown = [re.search(r"the displays read (\[[^]]*\])", ln).group(1)
             for ln in r.stdout.splitlines() if ln.startswith(("ViZDoom:", "GZDoom:"))]
    assert len(shown) == 2 and shown[0] == shown[1]


@pytest.mark.parametrize("args,says", [
    (["--hub"], "--model cnn"),
    (["--model", "cnn", "--hub", "--digit", "12"], "choose a pedal 0..9"),
    (["--model", "cnn", "--hub", "--gzdoom", "/nonexistent/gzdoom"], "no such file"),
])
def test_mnist_hub_refusals(args, says, tmp_path):
    r = _cli("mnist", *args, "-o", str(tmp_path / "x.wad"))
    assert r.returncode != 0 and says in r.stderr, r.stderr
    assert "Traceback" not in r.stderr
