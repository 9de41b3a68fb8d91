"""Issue 37 items 6 and 20: a tiled WAD's manifest is checked whole against its maps and
its netlist before any engine starts (mapgen/wadcheck.check_tiled, mapgen/tiles.
check_wiring), so an edited one is a refusal naming the map, never a deadlock, a worker's
traceback, an internal error or a MISMATCH; and a recurrent net that reads the previous
step's value of an input (or of a fed-back input, or a prev of a prev) runs over tiles
(mapgen/tiles.SequenceCarry.value), EXACT in the engine."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from conftest import ROOT
from acs.wad import MapLump, WadError, read_wad, write_wad

ELMAN = os.path.join(ROOT, "circuits", "elman.dnet")
MLP3 = os.path.join(ROOT, "circuits", "mlp3.dnet")


@pytest.fixture(scope="module")
def wads(tmp_path_factory):
    """elman over 3 maps (one run of steps) and mlp3 over 2 (independent inferences)."""
    from commands.common import build_maps
    from mapgen.compile import write_wad as write_maps

    tmp = tmp_path_factory.mktemp("tiled")
    out = {}
    for name, path, tiles in (("elman", ELMAN, "3"), ("mlp3", MLP3, "2")):
        net, maps, plan = build_maps(path, tiles)
        out[name] = str(tmp / f"{name}.wad")
        write_maps(out[name], maps, net, plan)
    return out


def tampered(src: str, dst: str, edit) -> str:
    c = read_wad(src)
    lumps = dict(c.lumps)
    infos = json.loads(lumps["VNETINFO"])
    edit(infos)
    write_wad(dst, [MapLump(m.name, m.textmap, m.behavior, m.scripts, m.title) for m in c.maps],
              extra_lumps={"VNETINFO": json.dumps(infos).encode(),
                           "VNETLIST": lumps["VNETLIST"]})
    return dst


def put(m, **kw):
    def edit(infos):
        infos[m].update(kw)
    return edit


def drop(m, key):
    def edit(infos):
        del infos[m][key]
    return edit


def swap(a, b):
    def edit(infos):
        infos[a], infos[b] = infos[b], infos[a]
    return edit


def both(m, key, own, value):   # a tile list and the map's own list, edited alike
    return put(m, **{key: value, own: value})


EDITS = [
    # the variants: deadlocks on elman, tracebacks, KeyError or waits on mlp3
    ("elman", put("MAP02", tile_inputs=["nope"]), "MAP02: its tile_inputs (nope) are not"),
    ("elman", put("MAP02", tile_outputs=[]), "MAP02: its tile_outputs (none) are not"),
    ("elman", put("MAP01", tile_outputs=["h[1]"]), "MAP01: its tile_outputs (h[1]) are not"),
    ("elman", put("MAP03", tile_inputs=["x[0]", "x[1]", "h.prev[1]", "h.prev[0]"]),
     "MAP03: its tile_inputs"),
    ("mlp3", put("MAP02", tile_inputs=["nope"]), "MAP02: its tile_inputs (nope) are not"),
    ("mlp3", put("MAP02", tile_outputs=[]), "MAP02: its tile_outputs (none) are not"),
    ("mlp3", put("MAP01", tile_outputs=["h2[0]"]), "MAP01: its tile_outputs (h2[0]) are"),
    ("mlp3", put("MAP01", inference_tics=10**7), "MAP01.inference_tics = 10,000,000 tics"),
    ("mlp3", put("MAP02", init_tics=10**7), "MAP02.init_tics = 10,000,000 tics"),
    # manifests swapped: a refusal, not a MISMATCH
    ("mlp3", swap("MAP01", "MAP02"), "MAP01 takes h2[0], which only MAP02, a later map"),
    ("elman", swap("MAP01", "MAP02"), "MAP01 takes x[0], x[1], h.prev[2] by its manifest, "
     "but its scripts take x[0], x[1], h.prev[1]: the manifest is another map's"),
    # the wiring itself, with each map's own lists edited alike
    ("mlp3", both("MAP02", "tile_inputs", "inputs", ["h2[0]", "h2[1]", "h2[2]", "nope"]),
     "its tile_inputs name 'nope', which is not a value of the netlist"),
    ("mlp3", both("MAP02", "tile_inputs", "inputs", ["h2[0]", "h2[1]", "h2[2]", "h2[2]"]),
     "its tile_inputs name h2[2] twice"),
    ("mlp3", put("MAP02", input_ranges=[[0, 1]] * 4), "its input h2[0] takes 0..1, but the "
     "netlist's h2[0] is"),
    ("elman", both("MAP03", "tile_outputs", "all_outputs", ["h[0]"]),
     "MAP03: h[0] is computed by MAP01 too"),
    ("elman", both("MAP03", "tile_outputs", "all_outputs", []),
     "no map hands on the network's output h[2]"),
    ("mlp3", both("MAP01", "tile_outputs", "all_outputs", ["x[0]", "h2[1]", "h2[2]", "h2[3]"]),
     "MAP01: its tile_outputs name x[0], which no map computes"),
    ("elman", drop("MAP02", "tile_inputs"), "MAP02: tile_inputs and tile_outputs are missing"),
    # found by bench/fuzz_cli.py: an internal error (KeyError) before
    ("elman", drop("MAP01", "tile_outputs"), "MAP01: tile_inputs and tile_outputs are missing"),
]


@pytest.mark.parametrize("k", range(len(EDITS)))
def test_an_edited_tiled_manifest_is_refused_whole(wads, tmp_path, k):
    from mapgen.compile import load_wad

    name, edit, said = EDITS[k]
    bad = tampered(wads[name], str(tmp_path / "bad.wad"), edit)
    with pytest.raises(WadError) as e:
        load_wad(bad)
    assert said in str(e.value) and "VNETINFO lump is damaged" in str(e.value), str(e.value)


def test_the_refusal_comes_before_any_engine(wads, tmp_path):
    """build.py run of an edited WAD: one message and exit 1 at once (before: all threads
    waiting for a value no map hands on)."""
    bad = tampered(wads["elman"], str(tmp_path / "bad.wad"), put("MAP02", tile_inputs=["nope"]))
    t = time.monotonic()
    p = subprocess.run([sys.executable, "build.py", "run", bad, "--random", "4"], cwd=ROOT,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 1 and p.stderr.startswith(f"{bad}: the VNETINFO lump is damaged: "
                                                     "MAP02"), p.stderr
    assert "Traceback" not in p.stderr and time.monotonic() - t < 30


T1 = """network t1
steps open
input x : 0..3
neuron a : relu(s=1, max=3) = x
neuron b : relu(s=1, max=9) = prev(x) + a
output b
"""
# prev of a fed-back input, and prev of a prev, read in a map that does not feed it
T3 = """network t3
steps open
input c : 0..3
neuron y : relu(s=1, max=3) = c + 1 - 1
neuron z : relu(s=1, max=3) = y
neuron b : relu(s=1, max=9) = prev(c) + prev(prev(c)) + z
feedback c = z
output b, z
"""


@pytest.mark.parametrize("text, args, verdict", [
    (T1, ["--tiles", "2", "-i", "1", "-i", "2", "-i", "3"], "3/3 EXACT"),
    (T3, ["--tiles", "3", "--steps", "6", "-i", "2"], "6/6 EXACT")])
def test_prev_of_an_input_runs_over_tiles(tmp_path, text, args, verdict):
    net = tmp_path / "t.dnet"
    net.write_text(text)
    p = subprocess.run([sys.executable, "build.py", "run", str(net), "-o",
                        str(tmp_path / "t.wad"), *args], cwd=ROOT, capture_output=True,
                       text=True, timeout=180, env={**os.environ, "VOODOO_QUIET": "1"})
    assert p.returncode == 0 and p.stdout.strip().endswith(verdict), p.stdout + p.stderr
    from mapgen.compile import load_wad

    # the value crosses maps: the map reading prev takes it as an input, not its own lane's
    tiles = load_wad(str(tmp_path / "t.wad")).tiles
    assert len(tiles) == int(args[1]) and any(
        n in t.inputs for t in tiles for n in ("x.prev", "c.prev2"))   # prev(prev(c)) is c.prev2
