"""Nodes built ahead: a map's BSP from a real node builder (zdbsp), written into the WAD.

A UDMF map without nodes makes the engine build them at every load: the chat map took
15.5 s of ViZDoom's CPU to load that way and 3.8 s with the ZNODES lump that Debian's
`zdbsp` builds once (docs/physics.md, "What a tic costs"). This module runs zdbsp on a map's
TEXTMAP and keeps only its ZNODES lump: the map's own TEXTMAP stays byte for byte what the
compiler wrote (zdbsp rewrites the text in its own format, with the same objects in the same
order, which `build_nodes` checks by counting them), so modders and the map's readers see
the same text with nodes or without.

zdbsp's output is a function of the TEXTMAP, so nodes are cached by the TEXTMAP's SHA-256
(and zdbsp's version) in $VOODOO_CACHE or ~/.cache/voodoonet: the suite and the demos build
the same maps many times. Without zdbsp on PATH maps are written without nodes, the engine
builds them as before, and the first map written says so once.
"""
from __future__ import annotations

import functools
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile

from . import physics as P

_warned = False
_BLOCKS = ("vertex", "linedef", "sidedef", "sector", "thing")


class NodeError(RuntimeError):
    """zdbsp ran but its output does not fit the map (never expected: a bug to report)."""


def zdbsp() -> str | None:
    """The node builder's path, or None ($VOODOO_ZDBSP overrides, "" disables)."""
    env = os.environ.get("VOODOO_ZDBSP")
    if env is not None:
        return env or None
    return shutil.which("zdbsp")


@functools.lru_cache(maxsize=None)
def _version(exe: str) -> str:
    out = subprocess.run([exe, "-V"], capture_output=True, text=True, timeout=30)
    return (out.stdout + out.stderr).strip().splitlines()[0] if (out.stdout + out.stderr) \
        else "unknown"


def cache_dir() -> str:
    return os.environ.get("VOODOO_CACHE") or os.path.join(
        os.path.expanduser("~"), ".cache", "voodoonet")


def build_nodes(textmap: str) -> bytes | None:
    """The ZNODES lump (GL nodes, compressed) zdbsp builds for `textmap`, or None when zdbsp
    is not installed (said once, on stderr)."""
    global _warned
    exe = zdbsp()
    if exe is None:
        if not _warned:
            _warned = True
            print("note: zdbsp is not installed: maps are written without nodes, and the "
                  "engine builds them at every load (slower for big maps; install the Debian "
                  "package zdbsp, as `make demo` does)", file=sys.stderr)
        return None
    data = textmap.encode("utf-8")
    key = hashlib.sha256(data + b"\0" + _version(exe).encode()).hexdigest()
    cached = os.path.join(cache_dir(), "nodes", key[:2], key + ".znodes")
    try:
        with open(cached, "rb") as f:
            return f.read()
    except OSError:
        pass
    nodes = _run(exe, data)
    _store(cached, nodes)
    return nodes


def _run(exe: str, textmap: bytes) -> bytes:
    from acs.wad import MapLump, read_wad, write_wad

    with tempfile.TemporaryDirectory(prefix="voodoonet-nodes-") as work:
        src, out = os.path.join(work, "in.wad"), os.path.join(work, "out.wad")
        write_wad(src, [MapLump("MAP01", textmap.decode("utf-8"))])
        # -q: keep every sector and side (zdbsp would prune unused ones and renumber).
        run = subprocess.run([exe, "-q", "-t", "-X", "-z", "-o", out, src],
                             capture_output=True, text=True)
        if run.returncode != 0 or not os.path.exists(out):
            raise NodeError(f"zdbsp failed ({run.returncode}): "
                            f"{(run.stderr or run.stdout).strip()[-400:]}")
        with open(out, "rb") as f:
            raw = f.read()
        built = read_wad(out).maps[0]
    theirs = built.textmap.encode("utf-8")
    for kind in _BLOCKS:  # same objects, same order: the nodes index the map's own lists
        ours_n = len(re.findall(rb"(?m)^" + kind.encode() + rb" \{", textmap))
        theirs_n = len(re.findall(rb"(?m)^" + kind.encode() + rb"\s*\n?\{", theirs))
        if ours_n != theirs_n:
            raise NodeError(f"zdbsp wrote {theirs_n} {kind}s where the map has {ours_n}")
    nodes = built.nodes
    if not nodes or nodes[:4] not in (b"ZGL2", b"ZGLN", b"ZGL3", b"ZNOD", b"XGL2", b"XGLN",
                                      b"XGL3", b"XNOD"):
        raise NodeError(f"zdbsp wrote no ZNODES lump ({len(raw)} bytes of WAD)")
    return nodes


def _store(path: str, nodes: bytes) -> None:
    """Into the cache atomically; a cache that cannot be written is only slower."""
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), suffix=".tmp")
        with os.fdopen(fd, "wb") as f:
            f.write(nodes)
        os.replace(tmp, path)
    except OSError:
        pass


def gl_flat_vertices(nodes: bytes, line_sectors) -> int:
    """The vertices GZDoom puts in its flat vertex buffer (P.GZDOOM_BUFFER) for a map whose ZNODES lump
    (compressed GL nodes: ZGLN, ZGL2 or ZGL3) is `nodes`; `line_sectors[i]` is linedef i's
    (front sector, back sector or -1). Counted as CreateVBO does: 2 planes x, for each
    sector, the distinct first vertices of the segs of its subsectors of 3 segs or more."""
    import zlib

    import numpy as np

    magic, raw = nodes[:4], zlib.decompress(nodes[4:])
    if magic not in (b"ZGLN", b"ZGL2", b"ZGL3"):
        raise NodeError(f"not compressed GL nodes: {magic!r}")
    org, new = np.frombuffer(raw, "<u4", 2, 0)
    o = 8 + int(new) * 8
    nsub = int(np.frombuffer(raw, "<u4", 1, o)[0])
    counts = np.frombuffer(raw, "<u4", nsub, o + 4).astype(np.int64)
    o += 4 + 4 * nsub
    nseg = int(np.frombuffer(raw, "<u4", 1, o)[0])
    line_t = "<u2" if magic == b"ZGLN" else "<u4"
    segs = np.frombuffer(raw, np.dtype([("v1", "<u4"), ("partner", "<u4"), ("line", line_t),
                                        ("side", "u1")]), nseg, o + 4)
    sectors = np.asarray(line_sectors, dtype=np.int64).reshape(-1, 2)
    mini = segs["line"] == np.iinfo(line_t).max
    line = np.where(mini, 0, segs["line"]).astype(np.int64)
    sec = np.where(mini, -1, sectors[line, np.minimum(segs["side"], 1)])
    sub = np.repeat(np.arange(nsub), counts)
    # a subsector's sector: that of any of its segs along a line (they all agree)
    starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
    sub_sec = np.maximum.reduceat(sec, starts) if nsub else sec[:0]
    keep = (counts[sub] >= 3) & (sub_sec[sub] >= 0)
    pairs = sub_sec[sub[keep]] * (int(org) + int(new) + 1) + segs["v1"][keep].astype(np.int64)
    return flat_count(pairs)


def flat_count(pairs) -> int:
    """GZDoom's flat vertices from the (sector, vertex) keys of a map, repeats allowed:
    the reserved ones, then each distinct key once for the floor and once for the ceiling
    (sorts `pairs` in place)."""
    import numpy as np

    pairs.sort()
    distinct = int(len(pairs) > 0) + int(np.count_nonzero(np.diff(pairs)))
    return P.GZDOOM_RESERVED + 2 * distinct
