"""Issue 25 items 9-11: embed refuses what would make a machine compute wrong values, with
the wiring file's line (two outputs in one sector, a `set` outside its input's range, a
line wired twice), refuses a second circuit in a map that holds one, and names the host
map's thing, sector or script when its numbers leave no room for the circuit's."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from conftest import ROOT
from dsl.diagnostics import VoodooError
from modding.embed import EmbedError, embed
from modding.textmap import parse_textmap

PEDALS = os.path.join(ROOT, "circuits", "pedals.dnet")


def _my_way_home() -> str:
    import vizdoom

    return os.path.join(os.path.dirname(vizdoom.__file__), "scenarios", "my_way_home.wad")


def _embed(tmp_path, wiring: str, into: str | None = None):
    w = tmp_path / "w.wiring"
    w.write_text("# the pedals\n" + wiring)
    return embed(PEDALS, into or _my_way_home(), "MAP01", str(w), str(tmp_path / "o.wad"))


# -- item 9 ------------------------------------------------------------------------------------
@pytest.mark.parametrize("wiring, where, message", [
    ("output lamp = light sector 0\noutput maj = light sector 0\n", 3,
     "sector 0 is already driven by output lamp ("),
    ("output lamp = light sector 0\noutput maj = floor sector 4 0\n", 3,
     "sector 0 is already driven by output lamp"),
    ("output lamp = light sector 0 0\n", 2, "sector 0 is listed twice for output lamp"),
    ("input s[0] = set 7 sector 3\noutput lamp = light sector 0\n", 2,
     "set 7: s[0] takes 0..1"),
    ("input s[0] = set -1 sector 3\noutput lamp = light sector 0\n", 2,
     "set -1: s[0] takes 0..1"),
    ("input s[0] = set 99999999999999999999 sector 3\n", 2,
     "set 999999999999... (20 digits) is beyond any input's range"),
    ("input s[0] = set " + "9" * 5000 + " sector 3\n", 2, "set 999999999999... (5000 digits)"),
])
def test_wirings_that_would_compute_wrong_values_are_refused(tmp_path, wiring, where, message):
    with pytest.raises(VoodooError) as e:
        _embed(tmp_path, wiring)
    assert f"w.wiring:{where}: error: {message}" in str(e.value), str(e.value)
    assert "hint:" in str(e.value)
    assert not (tmp_path / "o.wad").exists()


def test_a_line_wired_to_two_inputs_is_refused(tmp_path):
    from acs import compile_source
    from acs.testmap import room_textmap
    from acs.wad import MapLump, write_wad

    wad = str(tmp_path / "room.wad")
    write_wad(wad, [MapLump("MAP01", room_textmap(), compile_source("script 1 OPEN {}"))])
    with pytest.raises(VoodooError) as e:
        _embed(tmp_path, "input s[0] = toggle use line 0\ninput s[1] = toggle use line 0\n",
               into=wad)
    assert "w.wiring:3: error: line 0 already drives s[0] (" in str(e.value), str(e.value)


# -- item 10 -----------------------------------------------------------------------------------
def test_a_map_that_already_holds_a_circuit_is_refused(tmp_path):
    first = _embed(tmp_path, "output lamp = light sector 0\n")
    again = tmp_path / "again.wad"
    os.replace(first.path, again)
    with pytest.raises(EmbedError) as e:
        _embed(tmp_path, "output maj = floor sector 12\n", into=str(again))
    assert str(e.value).startswith(f"{again}: the WAD already holds a VoodooNet circuit "
                                   "(its VNETLIB library)"), str(e.value)
    assert not (tmp_path / "o.wad").exists()


def test_a_compiled_map_is_no_host_either(tmp_path):
    wad = tmp_path / "xor.wad"
    subprocess.run([sys.executable, "build.py", "compile", os.path.join(ROOT, "circuits",
                    "xor.dnet"), "-o", str(wad)], cwd=ROOT, check=True, capture_output=True)
    with pytest.raises(EmbedError, match="already holds a VoodooNet circuit \\(its VNETINFO"):
        _embed(tmp_path, "output lamp = light sector 0\n", into=str(wad))


# -- item 11 -----------------------------------------------------------------------------------
def _host(tmp_path, edit=None, script: int = 1) -> str:
    from acs import compile_source
    from acs.testmap import room_textmap
    from acs.wad import MapLump, write_wad

    tm = parse_textmap(room_textmap())
    if edit:
        edit(tm)
    wad = str(tmp_path / "host.wad")
    write_wad(wad, [MapLump("MAP01", tm.text(), compile_source(f"script {script} OPEN {{ }}"))])
    return wad


@pytest.mark.parametrize("edit, script, who, fix", [
    (lambda tm: tm.things[0].update(id=2**31 - 10), 1, "thing 0 (id 2147483638)",
     "renumber thing 0 (and any other tag, line id or thing id of 65500 or more) below 65500"),
    (lambda tm: tm.sectors[0].update(id=65535), 1, "sector 0 (tag 65535)",
     "renumber sector 0 (and any other tag, line id or thing id of 65500 or more) below 65500"),
    (None, 32700, "script 32700",
     "renumber script 32700 (and any other script number of 31000 or more) below 31000"),
])
def test_host_numbers_that_leave_no_room_name_the_host(tmp_path, edit, script, who, fix):
    wad = _host(tmp_path, edit, script)
    with pytest.raises(EmbedError) as e:
        _embed(tmp_path, "output lamp = light sector 0\n", into=wad)
    shown = str(e.value)
    assert shown.startswith(f"{wad}:MAP01: {who} leaves no room for the circuit"), shown
    assert f"hint: {fix} in your map" in shown, shown
    assert "pedals" not in shown and len(shown.splitlines()) == 2
    assert not (tmp_path / "o.wad").exists()


def test_the_room_the_hint_names_is_enough(tmp_path):
    """Renumbered as the hint says, the same host takes the circuit."""
    wad = _host(tmp_path, None, 30999)
    e = _embed(tmp_path, "output lamp = light sector 0\n", into=wad)
    assert e.info["infer_script"] == 31002
