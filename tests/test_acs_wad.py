"""WAD packing: lump order, MAPINFO, determinism, atomic writes, and checking bad WADs."""
from __future__ import annotations

import os
import struct

import pytest

import acs
import acs.wad as wadmod
from acs.testmap import room_textmap
from acs.wad import MapLump, WadError, read_wad, write_wad
from engine.doom import Engine

SRC = "global int 1:level; global int 2:ran;\n" \
      "script 1 OPEN { level = GetLevelInfo(LEVELINFO_LEVELNUM); ran = 1; }\n"


def two_maps():
    lump = acs.compile_source(SRC)
    return [MapLump("MAP01", room_textmap(), lump, SRC, 'First "room"'),
            MapLump("MAP02", room_textmap(1), None, None, "Second")]


def test_lump_order_and_round_trip(tmp_path):
    path = str(tmp_path / "two.wad")
    maps = two_maps()
    write_wad(path, maps)
    back = read_wad(path)
    assert back.kind == "PWAD"
    assert [name for name, _ in back.lumps] == [
        "MAPINFO", "MAP01", "TEXTMAP", "BEHAVIOR", "SCRIPTS", "ENDMAP",
        "MAP02", "TEXTMAP", "ENDMAP"]
    assert back.maps == maps
    assert back.mapinfo == ('map MAP01 "First \\"room\\""\n{\n    sky1 = "SKY1", 0\n}\n\n'
                            'map MAP02 "Second"\n{\n    sky1 = "SKY1", 0\n}\n')


def test_same_inputs_give_identical_bytes(tmp_path):
    a, b = tmp_path / "a.wad", tmp_path / "b.wad"
    write_wad(str(a), two_maps())
    write_wad(str(b), two_maps())
    assert a.read_bytes() == b.read_bytes()


def test_engine_runs_map_with_scripts_lump_and_reads_our_mapinfo(tmp_path):
    path = str(tmp_path / "info.wad")
    mapinfo = 'map MAP01 "Custom"\n{\n    levelnum = 42\n}\n'
    write_wad(path, two_maps(), mapinfo=mapinfo)
    assert read_wad(path).maps[0].title == "Custom"
    with Engine(path) as e:
        e.advance(1)
        assert e.users()[:2] == [42, 1]


def test_engine_loads_generated_mapinfo(tmp_path):
    path = str(tmp_path / "gen.wad")
    write_wad(path, two_maps())
    with Engine(path) as e:
        e.advance(1)
        assert e.users()[1] == 1
        e.change_map("MAP02")    # the second map, no BEHAVIOR: nothing runs
        e.advance(1)
        assert e.users()[:2] == [0, 0]


def test_failed_write_leaves_the_old_file_and_no_temp(tmp_path, monkeypatch):
    path = tmp_path / "keep.wad"
    path.write_bytes(b"old contents")
    import omg

    def boom(self, filename):
        with open(filename, "wb") as f:
            f.write(b"PWAD half")
        raise OSError("disk full")

    monkeypatch.setattr(omg.WAD, "to_file", boom)
    with pytest.raises(OSError, match="disk full"):
        write_wad(str(path), two_maps())
    assert path.read_bytes() == b"old contents"
    assert sorted(os.listdir(tmp_path)) == ["keep.wad"]


@pytest.mark.parametrize("maps,message", [
    ([], "a WAD needs at least one map"),
    ([MapLump("map01", "")], "map name 'map01' is not a lump name (up to 8 of A-Z 0-9 _, "
                             "starting with a letter, e.g. MAP01)"),
    ([MapLump("MAP01", ""), MapLump("MAP01", "")], "map 'MAP01' appears twice"),
    ([MapLump("MAP01", "", b"garbage")], "BEHAVIOR of MAP01 is not a compiled ACS lump"),
])
def test_write_refuses_bad_maps(tmp_path, maps, message):
    path = tmp_path / "bad.wad"
    with pytest.raises(WadError) as info:
        write_wad(str(path), maps)
    assert str(info.value) == f"{path}: {message}"
    assert not path.exists()


def _wad(lumps, magic=b"PWAD"):
    """A WAD built by hand, to damage on purpose."""
    body, directory, ofs = b"", b"", 12
    for name, data in lumps:
        directory += struct.pack("<ii8s", ofs, len(data), name.encode())
        body += data
        ofs += len(data)
    return magic + struct.pack("<ii", len(lumps), 12 + len(body)) + body + directory


def test_hand_built_wad_reads(tmp_path):
    path = tmp_path / "ok.wad"
    path.write_bytes(_wad([("MAP01", b""), ("TEXTMAP", b"x"), ("ENDMAP", b"")]))
    assert read_wad(str(path)).maps == [MapLump("MAP01", "x")]


@pytest.mark.parametrize("data,message", [
    (b"PWA", "not a WAD: the file is 3 bytes, shorter than the 12-byte header"),
    (b"ZIP!" + bytes(8), "not a WAD: it starts with b'ZIP!', not PWAD or IWAD"),
    (_wad([("MAP01", b""), ("TEXTMAP", b"x"), ("ENDMAP", b"")])[:-20],
     "corrupt or truncated WAD: the directory (3 entries at offset 13) does not fit in "
     "the file's 41 bytes"),
    (b"PWAD" + struct.pack("<ii", 1, 12) + struct.pack("<ii8s", 12, 999, b"BIG"),
     "corrupt or truncated WAD: lump 0 'BIG' (999 bytes at offset 12) lies outside the file"),
    (_wad([("MAP01", b""), ("TEXTMAP", b"x")]),
     "map MAP01 has no ENDMAP: the map group is truncated"),
    (_wad([("MAP01", b""), ("TEXTMAP", b"x"), ("PLAYPAL", b"p"), ("ENDMAP", b"")]),
     "map MAP01: unexpected lump 'PLAYPAL' before ENDMAP"),
])
def test_read_reports_damaged_wads(tmp_path, data, message):
    path = tmp_path / "damaged.wad"
    path.write_bytes(data)
    with pytest.raises(WadError) as info:
        read_wad(str(path))
    assert str(info.value) == f"{path}: {message}"


def test_read_reports_missing_file(tmp_path):
    path = tmp_path / "nowhere.wad"
    with pytest.raises(WadError) as info:
        read_wad(str(path))
    assert str(info.value) == f"{path}: cannot read the WAD: No such file or directory"


def test_truncating_a_written_wad_is_detected(tmp_path):
    path = tmp_path / "cut.wad"
    write_wad(str(path), two_maps())
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(WadError, match="corrupt or truncated WAD"):
        read_wad(str(path))
