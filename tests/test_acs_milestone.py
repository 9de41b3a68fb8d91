"""Milestone slice: compile ACS, pack it with a test map, run it in the engine, read USER globals."""
from __future__ import annotations

import acs
from acs.testmap import room_textmap
from acs.wad import MapLump, write_wad
from engine.doom import Engine

SOURCE = """
#include "zcommon.acs"
global int 1:opened;
global int 2:sum;
global int 3:light;
global int 4:ceiling;
int scale = 3;

script 1 OPEN
{
    opened = 1234;
    light = GetSectorLightLevel(1);
    ceiling = GetSectorCeilingZ(10, 0, 0) >> 16;
}

script 2 (int a, int b, int c)
{
    int i;
    sum = 0;
    for (i = 0; i < a; i++)
        sum += b * scale;
    if (c > 0) sum = -sum;
    Light_ChangeToValue(10, a + b + c);
    Ceiling_MoveToValue(10, 8000, 200, 0);
    Delay(1);
    light = GetSectorLightLevel(10);
    ceiling = GetSectorCeilingZ(10, 0, 0) >> 16;
    Print(s:"sum is ", d:sum);
}
"""


def test_compiled_script_sets_user_globals(tmp_path):
    lump = acs.compile_source(SOURCE, "milestone.acs")
    wad = tmp_path / "milestone.wad"
    write_wad(str(wad), [MapLump("MAP01", room_textmap(), lump, SOURCE, "Milestone")])
    with Engine(str(wad)) as e:
        e.advance(1)
        assert e.users()[:4] == [1234, 0, 160, 128]
        e.puke(2, 4, 5, 1)
        e.advance(4)
        assert e.users()[:4] == [1234, -60, 10, 200]
