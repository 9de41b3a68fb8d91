"""Raw WAD lumps in, raw WAD lumps out: how modding rewrites a map inside someone's WAD.

acs/wad.py writes WADs the compiler builds; a modder's WAD holds lumps we know nothing
about (DECORATE, textures, sounds) in an order that matters (markers), so they are copied
through verbatim here, in their order, with only the lumps we change replaced. Written to a
temporary file and renamed, so a reader never sees half a WAD.
"""
from __future__ import annotations

import struct

from acs.wad import read_wad
from dsl.util import atomic_output


def read_lumps(path: str) -> list[tuple[str, bytes]]:
    return list(read_wad(path).lumps)


def write_lumps(path: str, lumps: list[tuple[str, bytes]], kind: bytes = b"PWAD") -> None:
    data = bytearray()
    directory = bytearray()
    offset = 12
    for name, body in lumps:
        directory += struct.pack("<ii8s", offset if body else 0, len(body),
                                 name.encode("ascii")[:8])
        data += body
        offset += len(body)
    header = struct.pack("<4sii", kind, len(lumps), 12 + len(data))
    with atomic_output(path, ".wad") as tmp:
        with open(tmp, "wb") as f:
            f.write(header + bytes(data) + bytes(directory))


def map_span(lumps: list[tuple[str, bytes]], map_name: str) -> tuple[int, int] | None:
    """(index of the map's marker, index past its last lump), or None."""
    for i, (name, _) in enumerate(lumps):
        if name == map_name and i + 1 < len(lumps) and lumps[i + 1][0] in (
                "TEXTMAP", "THINGS"):
            j = i + 1
            if lumps[j][0] == "TEXTMAP":
                while j < len(lumps) and lumps[j][0] != "ENDMAP":
                    j += 1
                return i, j + 1
            while j < len(lumps) and lumps[j][0] in _BINARY_MAP_LUMPS:
                j += 1
            return i, j
    return None


_BINARY_MAP_LUMPS = {"THINGS", "LINEDEFS", "SIDEDEFS", "VERTEXES", "SEGS", "SSECTORS", "NODES",
                     "SECTORS", "REJECT", "BLOCKMAP", "BEHAVIOR", "SCRIPTS", "GL_VERT",
                     "GL_SEGS", "GL_SSECT", "GL_NODES", "GL_PVS"}


def replace_textmap(lumps, map_name: str, text: str) -> list[tuple[str, bytes]]:
    """The lumps with one UDMF map's TEXTMAP replaced (and its now stale nodes dropped)."""
    span = map_span(lumps, map_name)
    if span is None:
        raise KeyError(map_name)
    i, j = span
    group = [(n, text.encode("utf-8") if n == "TEXTMAP" else b)
             for n, b in lumps[i:j] if n != "ZNODES"]
    return lumps[:i] + group + lumps[j:]
