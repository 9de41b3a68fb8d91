"""Small maps for measuring engine facts: a room for the player, closed test sectors,
lanes with doors, and ACS, packed and started in ViZDoom."""
import os

from acs import compile_source
from acs.wad import MapLump, write_wad
from engine.doom import Engine
from mapgen.udmf import MapModel, Sector

HEADER = '#include "zcommon.acs"\n' + "".join(f"global int {k}:g{k};\n" for k in range(1, 61))


def room(m: MapModel, x0=-1024, y0=-1024) -> int:
    """A room for the player, away from everything else; returns its sector."""
    return m.rect_sector(x0, y0, x0 + 256, y0 + 256, Sector(0, 128, 160))


def start(tmp_path, m: MapModel, acs: str, name="t.wad", **kw) -> Engine:
    path = os.path.join(str(tmp_path), name)
    write_wad(path, [MapLump("MAP01", m.textmap(), compile_source(HEADER + acs, "t.acs"))])
    return Engine(path, **kw)
