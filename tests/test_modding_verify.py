"""`verify` on edited maps: each static check fired by an edit made to a built TEXTMAP, the
diff of a rewired line, and an edited map run in the engine against its extracted netlist."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from conftest import ROOT
from dsl import load
from mapgen.compile import compile_netlist, write_wad
from modding.machine import from_map
from modding.textmap import parse_textmap
from modding.verify import verify_map
from modding.wadio import read_lumps, replace_textmap, write_lumps


def _built(tmp_path, name="neuron"):
    net = load(os.path.join(ROOT, "circuits", f"{name}.dnet"))
    m = compile_netlist(net)
    wad = str(tmp_path / f"{name}.wad")
    write_wad(wad, [m], net)
    return wad, parse_textmap(m.textmap), m


@pytest.fixture
def whole(monkeypatch):
    """Lanes left whole (no room for sub-lanes, mapgen/carry.py: the compiler and verify's
    own lowering alike): a lane of several doors, as the edits below need."""
    from mapgen import carry

    monkeypatch.setattr(carry, "room_for", lambda *a, **k: carry.Room(0))


def _edited(tmp_path, wad, tm, name="edited.wad"):
    out = str(tmp_path / name)
    write_lumps(out, replace_textmap(read_lumps(wad), "MAP01", tm.text()))
    return out


def _errors(path, check):
    rep = verify_map(path, engine=False)
    found = [f.message for f in rep.errors if f.check == check]
    assert found, f"no {check} error; got {[f.message for f in rep.errors]}"
    return found


def _lanes(tm, m):
    return from_map(tm, m.behavior).lanes


def _h_lanes(tm, m):
    """The lanes reading h (phase 1), most doors first: a lane may be split into sub-lanes
    that ride side by side (mapgen.carry), each with some of its doors."""
    return sorted((l for l in _lanes(tm, m) if l.source[0] == "light"),
                  key=lambda l: -len(l.doors))


def _h(tm, m):
    return _h_lanes(tm, m)[0]


def _move_lines(tm, lines, dx=0.0, dy=0.0):
    """Give these lines vertices of their own, moved by (dx, dy)."""
    for i in lines:
        ln = tm.linedefs[i]
        for key in ("v1", "v2"):
            x, y = tm.xy(ln[key])
            tm.vertices.append({"x": x + dx, "y": y + dy})
            ln[key] = len(tm.vertices) - 1


def _sector_lines(tm, sector):
    return [i for i in range(len(tm.linedefs))
            if sector in (tm.side_sector(i, "front"), tm.side_sector(i, "back"))
            and tm.side_sector(i, "front") != tm.side_sector(i, "back")]


def test_unedited_map_has_no_changes_and_no_errors(tmp_path):
    wad, _, _ = _built(tmp_path)
    rep = verify_map(wad, engine=False)
    assert rep.changes == [] and rep.errors == [] and rep.ok


def test_rewired_line_is_a_readable_diff_and_runs_exact(tmp_path):
    """xor: the line h_and -> y turned from subtracting into adding, then run in the engine
    against the extracted netlist (which now says y = h_or + h_and)."""
    wad, tm, m = _built(tmp_path, "xor")
    y = next(t for t, l in from_map(tm, m.behavior).lights.items() if l.name == "y")
    k = next(i for i, ln in enumerate(tm.linedefs)
             if ln.get("special") == 111 and ln.get("arg0") == y)
    tm.linedefs[k]["special"] = 110
    rep = verify_map(_edited(tmp_path, wad, tm), runs=4)
    assert rep.changes == ["line h_and -> y: -1 -> +1"]
    assert rep.errors == [] and rep.exact is True, rep.engine


def test_museum_mutation_diff(tmp_path):
    from demos.museum import MUTATE_LINE_ID, build

    mm = build()
    wad = str(tmp_path / "museum.wad")
    write_wad(wad, [mm.compiled], mm.net)
    tm = parse_textmap(mm.compiled.textmap)
    line = next(ln for ln in tm.linedefs if ln.get("id") == MUTATE_LINE_ID)
    line["special"] = 111
    rep = verify_map(_edited(tmp_path, wad, tm), engine=False)
    assert rep.changes == ["line digit7 -> show_a: +1 -> -1"]
    assert rep.errors == []


def test_door_moved_off_its_landing(tmp_path, whole):
    wad, tm, m = _built(tmp_path)
    door = _h(tm, m).doors[1].sector
    _move_lines(tm, _sector_lines(tm, door), dy=4000)
    msg = _errors(_edited(tmp_path, wad, tm), "geometry")
    assert any(f"sector {door} at" in e and "moved off its landing" in e for e in msg), msg


def test_two_movers_on_one_plane_in_one_tic(tmp_path):
    wad, tm, m = _built(tmp_path)
    lanes = _lanes(tm, m)
    door = lanes[0].doors[0].sector
    tm.sectors[door]["moreids"] = f"{tm.sectors[door].get('moreids', '')} {lanes[1].door_tag}"
    msg = _errors(_edited(tmp_path, wad, tm), "schedule")
    assert any(f"sector {door} at" in e and "two movers on one plane" in e for e in msg), msg


def test_line_moved_out_of_its_lane(tmp_path):
    wad, tm, m = _built(tmp_path)
    line = _h(tm, m).doors[0].line_index[1]
    _move_lines(tm, [line], dy=100)
    msg = _errors(_edited(tmp_path, wad, tm), "geometry")
    assert any(f"line {line} at" in e and "moved out of a lane" in e for e in msg), msg


def test_line_too_close_to_the_next_door(tmp_path, whole):
    wad, tm, m = _built(tmp_path)
    lane = _h(tm, m)
    line = lane.doors[0].line_index[1]
    nxt = next(s for s in lane.segments if s.sector == lane.doors[1].sector)
    _move_lines(tm, [line], dx=nxt.x0 - 6 - tm.line_ends(line)[0][0])
    msg = _errors(_edited(tmp_path, wad, tm), "geometry")
    assert any(f"line {line} at" in e and "may not cross it" in e for e in msg), msg


def test_rise_too_high(tmp_path, whole):
    wad, tm, m = _built(tmp_path)
    seg = _h(tm, m).segments[5]
    tm.sectors[seg.sector]["heightfloor"] += 30
    msg = _errors(_edited(tmp_path, wad, tm), "geometry")
    assert any(f"sector {seg.sector} at" in e and "rises" in e for e in msg), msg


def test_lane_too_long_for_its_phase(tmp_path):
    """The end wall and the lane's last line moved 3,000 units on: the doll needs longer to
    cross that line than its phase gives."""
    wad, tm, m = _built(tmp_path)
    lane = _h(tm, m)
    end = lane.segments[-1]
    last = max(lane.lines, key=lambda ln: ln[1])[0]
    for k in ("v1", "v2"):
        tm.vertices[tm.linedefs[last][k]]["x"] += end.x1 + 2900 - max(lane.lines, key=lambda ln: ln[1])[1]
    east = [i for i in _sector_lines(tm, end.sector) + [
        i for i in range(len(tm.linedefs)) if tm.side_sector(i, "front") == end.sector]
        if all(p[0] == end.x1 for p in tm.line_ends(i))]
    for v in {tm.linedefs[i][k] for i in east for k in ("v1", "v2")}:
        tm.vertices[v]["x"] = end.x1 + 3000
    msg = _errors(_edited(tmp_path, wad, tm), "schedule")
    assert any("needs" in e and "phase 1 gives" in e for e in msg), msg


def test_doll_no_longer_on_its_pad(tmp_path):
    wad, tm, m = _built(tmp_path)
    pad = _lanes(tm, m)[0].segments[1]
    west = {tm.linedefs[i][k] for i in range(len(tm.linedefs)) for k in ("v1", "v2")
            if all(p[0] == pad.x0 for p in tm.line_ends(i))
            and pad.sector in (tm.side_sector(i, "front"), tm.side_sector(i, "back"))}
    for v in west:
        tm.vertices[v]["x"] = pad.x0 + 40
    msg = _errors(_edited(tmp_path, wad, tm), "schedule")
    assert any("not with its whole box on its pad" in e for e in msg), msg


def test_door_too_far_for_its_mover(tmp_path):
    wad, tm, m = _built(tmp_path)
    door = _h(tm, m).doors[-1].sector   # the last door, so thresholds still rise
    tm.sectors[door]["heightfloor"] = 1000
    msg = _errors(_edited(tmp_path, wad, tm), "schedule")
    assert any("more than the" in e and "tics phase 1 waits" in e for e in msg), msg


def test_lane_reads_a_light_still_being_added_to(tmp_path):
    """A line of h's lane (phase 1) retargeted at h's own accumulator (read in phase 1)."""
    wad, tm, m = _built(tmp_path)
    lane = _h(tm, m)
    tm.linedefs[lane.doors[0].line_index[1]]["arg0"] = lane.source[1]
    msg = _errors(_edited(tmp_path, wad, tm), "schedule")
    assert any("still adds to it" in e for e in msg), msg


def test_light_out_of_range(tmp_path):
    wad, tm, m = _built(tmp_path)
    for door in [d for l in _h_lanes(tm, m) for d in l.doors]:  # h -> y weighs 10000
        tm.linedefs[door.line_index[1]]["arg1"] = 10000               # (4 doors: 40000)
    msg = _errors(_edited(tmp_path, wad, tm), "ranges")
    assert any("light of y can reach" in e and "sector" in e for e in msg), msg


def test_plane_out_of_range(tmp_path):
    wad, tm, m = _built(tmp_path)
    seg = _lanes(tm, m)[0].segments[0]
    tm.sectors[seg.sector]["heightceiling"] = 40000
    msg = _errors(_edited(tmp_path, wad, tm), "ranges")
    assert any(f"sector {seg.sector} at" in e and "heightceiling 40000" in e for e in msg), msg


def test_vertex_out_of_coordinates(tmp_path):
    wad, tm, m = _built(tmp_path)
    tm.vertices[0]["x"] = 40000.0
    msg = _errors(_edited(tmp_path, wad, tm), "budgets")
    assert any("vertex 0 at (40000" in e for e in msg), msg


def test_inconsistent_weight_is_a_netlist_error(tmp_path, whole):
    """One door of h's lane adds 4 to y, the others 3: no single weight says that."""
    wad, tm, m = _built(tmp_path)
    lane = _h(tm, m)
    tm.linedefs[lane.doors[1].line_index[1]]["arg1"] = 4
    msg = _errors(_edited(tmp_path, wad, tm), "netlist")
    assert any("one connection has one weight" in e for e in msg), msg


def test_verify_command_exit_codes(tmp_path):
    wad, tm, m = _built(tmp_path)
    tm.vertices[0]["x"] = 40000.0
    bad = _edited(tmp_path, wad, tm)
    r = subprocess.run([sys.executable, os.path.join(ROOT, "build.py"), "verify", bad],
                       capture_output=True, text=True)
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert r.stdout.strip().splitlines()[-1].startswith("verify FAILED")
    assert "engine: not run: the map has errors" in r.stdout


def test_tiled_wad_is_verified_map_by_map(tmp_path):
    from mapgen.tiles import compile_tiles, plan_tiles

    net = load(os.path.join(ROOT, "circuits", "hello.dnet"))
    tiles = plan_tiles(net, n_tiles=2)
    wad = str(tmp_path / "tiled.wad")
    write_wad(wad, compile_tiles(tiles, "hello"), net, tiles)
    for name in ("MAP01", "MAP02"):
        rep = verify_map(wad, name, engine=False)
        assert rep.changes == [] and rep.errors == [], (name, rep.changes, rep.errors)
    with pytest.raises(Exception) as e:
        verify_map(wad)
    assert "name one with --map" in str(e.value)
