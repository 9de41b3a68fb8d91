"""WAD packing and checking: text maps with their BEHAVIOR, ACS source and MAPINFO.

Owns the container format of what we ship: each map is a group MAPxx, TEXTMAP, BEHAVIOR,
SCRIPTS (the ACS source, which the engine skips inside a text map's group), ENDMAP, and
one MAPINFO lump names every map. Writing goes through omgifol, into a temporary file in
the destination's directory that replaces the destination only when complete, so a
reader never sees half a WAD. `read_wad` checks a WAD's structure and reports a corrupt or
truncated file as a VoodooError naming the file and the problem.
"""
from __future__ import annotations

import os
import re
import struct
from dataclasses import dataclass

from dsl.diagnostics import VoodooError
from dsl.util import atomic_output

_MAP_NAME = re.compile(r"^[A-Z][A-Z0-9_]{0,7}$")
# Lumps the engine accepts inside a text map's group (others are skipped by it too).
_MAP_LUMPS = {"TEXTMAP", "ZNODES", "BLOCKMAP", "REJECT", "DIALOGUE", "BEHAVIOR", "SCRIPTS",
              "ENDMAP"}


class WadError(VoodooError):
    """A WAD that cannot be written as asked, or read back as a valid WAD."""


@dataclass(frozen=True)
class MapLump:
    """One text map: `name` like "MAP01", UDMF `textmap`, compiled `behavior` (or None),
    ACS `scripts` source kept in the WAD for modders (or None), MAPINFO `title`, and its
    `nodes` built ahead (a ZNODES lump: mapgen/nodes.py; None: the engine builds them),
    and for hub play (mapgen/hub.py) the map its exit leads to, `next`."""
    name: str
    textmap: str
    behavior: bytes | None = None
    scripts: str | None = None
    title: str | None = None
    nodes: bytes | None = None
    next: str | None = None


@dataclass(frozen=True)
class WadContents:
    kind: str                          # "PWAD" or "IWAD"
    lumps: list[tuple[str, bytes]]     # every lump in directory order
    maps: list[MapLump]
    mapinfo: str | None


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


_MAPINFO_MAP = re.compile(r'^\s*map\s+(\S+)\s+"((?:[^"\\]|\\.)*)"', re.I | re.M)


def mapinfo_titles(text: str) -> dict[str, str]:
    """Map name -> title from the `map NAME "title"` lines of a MAPINFO."""
    return {m.group(1).upper(): re.sub(r"\\(.)", r"\1", m.group(2))
            for m in _MAPINFO_MAP.finditer(text)}


PLAYER_CLASS = "VoodooPlayer"
DEFAULT_STEP = 24   # the Doom player's MaxStepHeight


def player_class(step_height: int) -> str:
    """DECORATE for the player class of a WAD whose lanes rise in single steps: Doom's
    player, stepping up `step_height` (voodoo dolls are the player's class)."""
    return (f"// The player class of this WAD (MAPINFO gameinfo): Doom's player, stepping up\n"
            f"// {step_height} units so that voodoo dolls climb a lane's rises at lane speed.\n"
            f"actor {PLAYER_CLASS} : DoomPlayer\n{{\n    MaxStepHeight {step_height}\n}}\n")


def make_mapinfo(maps: list[MapLump], step_height: int = DEFAULT_STEP) -> str:
    """A MAPINFO in the brace format ZDoom 2.8 reads: one `map` block per map, and the
    player class when the dolls step higher than Doom's player (`player_class`). A map
    with a `next` (hub play) names it and skips the intermission, whose tally would wait
    for a key between two maps of one network."""
    out = []
    if step_height > DEFAULT_STEP:
        out.append(f'gameinfo\n{{\n    playerclasses = "{PLAYER_CLASS}"\n}}\n')
    for m in maps:
        # Name the sky: without it, sky ceilings draw as a missing-texture checkerboard.
        hub = "" if m.next is None else f"    next = {_quote(m.next)}\n    nointermission\n"
        out.append(f"map {m.name} {_quote(m.title or m.name)}\n{{\n    sky1 = \"SKY1\", 0\n"
                   f"{hub}}}\n")
    return "\n".join(out)


def _check_maps(path: str, maps) -> None:
    seen = set()
    for m in maps:
        if not isinstance(m, MapLump):
            raise WadError(f"{path}: expected MapLump entries, got {type(m).__name__}")
        if not _MAP_NAME.match(m.name):
            raise WadError(f"{path}: map name '{m.name}' is not a lump name (up to 8 of "
                           "A-Z 0-9 _, starting with a letter, e.g. MAP01)")
        if m.name in seen:
            raise WadError(f"{path}: map '{m.name}' appears twice")
        seen.add(m.name)
        if m.behavior is not None and m.behavior[:3] != b"ACS":
            raise WadError(f"{path}: BEHAVIOR of {m.name} is not a compiled ACS lump")


def map_group(m: MapLump):
    """One UDMF map's lumps as an omgifol group: TEXTMAP, BEHAVIOR and SCRIPTS when it has
    them, between the header and ENDMAP."""
    import omg

    group = omg.NameGroup()
    group["_HEADER_"] = omg.Lump(b"")
    group["TEXTMAP"] = omg.Lump(m.textmap.encode("utf-8"))
    if m.nodes is not None:
        group["ZNODES"] = omg.Lump(bytes(m.nodes))
    if m.behavior is not None:
        group["BEHAVIOR"] = omg.Lump(bytes(m.behavior))
    if m.scripts is not None:
        group["SCRIPTS"] = omg.Lump(m.scripts.encode("utf-8"))
    group["ENDMAP"] = omg.Lump(b"")
    return group


def write_wad(path: str, maps: list[MapLump], mapinfo: str | None = None,
              extra_lumps: dict[str, bytes] | None = None,
              step_height: int = DEFAULT_STEP) -> None:
    """Write a PWAD holding `maps` (in order) and a MAPINFO lump (`mapinfo` verbatim, or
    one made from the maps' titles and `step_height`, with a DECORATE lump declaring the
    player class when it is above Doom's), then `extra_lumps` (name -> data, in order).
    Same inputs give the same bytes."""
    import omg

    maps = list(maps)
    if not maps:
        raise WadError(f"{path}: a WAD needs at least one map")
    _check_maps(path, maps)
    wad = omg.WAD()
    text = mapinfo if mapinfo is not None else make_mapinfo(maps, step_height)
    wad.data["MAPINFO"] = omg.Lump(text.encode("utf-8"))
    if mapinfo is None and step_height > DEFAULT_STEP:
        wad.data["DECORATE"] = omg.Lump(player_class(step_height).encode("utf-8"))
    for name, data in (extra_lumps or {}).items():
        wad.data[name] = omg.Lump(bytes(data))
    for m in maps:
        wad.udmfmaps[m.name] = map_group(m)
    with atomic_output(path, ".wad") as tmp:
        os.remove(tmp)   # omgifol creates the file itself
        wad.to_file(tmp)


def read_wad(path: str) -> WadContents:
    """Read and check a WAD: magic, directory inside the file, every lump inside the file,
    map groups complete (a TEXTMAP map ends with ENDMAP)."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise WadError(f"{path}: cannot read the WAD: {e.strerror or e}") from None
    if len(data) < 12:
        raise WadError(f"{path}: not a WAD: the file is {len(data)} bytes, shorter than the "
                       "12-byte header")
    magic, count, dir_ofs = struct.unpack_from("<4sii", data, 0)
    if magic not in (b"PWAD", b"IWAD"):
        raise WadError(f"{path}: not a WAD: it starts with {magic!r}, not PWAD or IWAD")
    if count < 0 or dir_ofs < 12 or dir_ofs + 16 * count > len(data):
        raise WadError(f"{path}: corrupt or truncated WAD: the directory ({count} entries at "
                       f"offset {dir_ofs}) does not fit in the file's {len(data)} bytes")
    lumps = []
    for i in range(count):
        ofs, size, raw = struct.unpack_from("<ii8s", data, dir_ofs + 16 * i)
        name = raw.split(b"\0", 1)[0].decode("latin-1")
        if size < 0 or ofs < 0 or (size and ofs + size > len(data)):
            raise WadError(f"{path}: corrupt or truncated WAD: lump {i} '{name}' "
                           f"({size} bytes at offset {ofs}) lies outside the file")
        lumps.append((name, data[ofs:ofs + size]))
    maps, mapinfo = [], None
    i = 0
    while i < len(lumps):
        name, body = lumps[i]
        if name == "MAPINFO":
            mapinfo = body.decode("utf-8", "replace")
        if i + 1 < len(lumps) and lumps[i + 1][0] == "TEXTMAP":
            j = i + 2
            parts = {"TEXTMAP": lumps[i + 1][1]}
            while j < len(lumps) and lumps[j][0] != "ENDMAP":
                if lumps[j][0] not in _MAP_LUMPS:
                    raise WadError(f"{path}: map {name}: unexpected lump '{lumps[j][0]}' "
                                   "before ENDMAP")
                parts[lumps[j][0]] = lumps[j][1]
                j += 1
            if j >= len(lumps):
                raise WadError(f"{path}: map {name} has no ENDMAP: the map group is "
                               "truncated")
            scripts = parts.get("SCRIPTS")
            maps.append(MapLump(name, parts["TEXTMAP"].decode("utf-8", "replace"),
                                parts.get("BEHAVIOR"),
                                scripts.decode("utf-8", "replace") if scripts is not None
                                else None, None, parts.get("ZNODES")))
            i = j + 1
            continue
        i += 1
    if mapinfo is not None:
        titles = mapinfo_titles(mapinfo)
        maps = [MapLump(m.name, m.textmap, m.behavior, m.scripts, titles.get(m.name), m.nodes)
                for m in maps]
    return WadContents(magic.decode(), lumps, maps, mapinfo)
