"""Compiled WADs kept by content: the same netlist, the same options and the same compiler
give the same WAD bytes (the build is deterministic), so a WAD built once is reused by
every later build that asks for it (the tests of one run, in every xdist worker;
bench/speed.py's runs).

The key is the SHA-256 of the netlist's JSON, the options, and the source of every module
that shapes a map (dsl/, mapgen/, acs/, demos/ and the zdbsp version through mapgen.nodes):
an edit to the compiler is a new key, never a stale map. Entries live in
`$VOODOO_CACHE/wads` (default ~/.cache/voodoonet/wads), each a WAD and a JSON of what its
builder wanted kept beside it. Off unless `$VOODOO_WAD_CACHE` names a directory (a chat
WAD is a hundred megabytes: a user's builds do not pile up): tests/conftest.py sets one
per test run, bench/speed.py one under ~/.cache/voodoonet. An entry is built under a lock
(one process builds, the others wait for it) in a temporary directory that is renamed.
"""
from __future__ import annotations

import fcntl
import glob
import hashlib
import json
import os
import shutil
import tempfile
from functools import lru_cache

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SOURCES = ("dsl", "mapgen", "acs", "demos", "models")


def cache_dir() -> str | None:
    return os.environ.get("VOODOO_WAD_CACHE") or None


@lru_cache(maxsize=1)
def compiler_digest() -> str:
    """The compiler's own source and the node builder's version, hashed once a process."""
    from .nodes import _version, zdbsp

    exe = zdbsp()
    h = hashlib.sha256((_version(exe) if exe else "no zdbsp").encode())
    for room in SOURCES:
        for path in sorted(glob.glob(os.path.join(ROOT, room, "**", "*.py"), recursive=True)):
            h.update(os.path.relpath(path, ROOT).encode())
            with open(path, "rb") as f:
                h.update(f.read())
    return h.hexdigest()


def key_of(net, **options) -> str:
    from dsl.jsonio import dumps

    h = hashlib.sha256(compiler_digest().encode())
    h.update(dumps(net).encode() if not isinstance(net, str) else net.encode())
    h.update(json.dumps(options, sort_keys=True, default=str).encode())
    return h.hexdigest()[:32]


def cached(key: str, build, into: str) -> dict:
    """The WAD of `key` at `into` (with its part files, chat.1.wad ...), and the JSON its
    builder kept; built by `build(path) -> dict` (writes the WAD at path, returns what to
    keep) when absent. The key covers into's file name, which a manifest's parts name."""
    d = cache_dir()
    if d is None:
        return build(into)
    name = os.path.basename(into)
    entry = os.path.join(d, hashlib.sha256(f"{key}/{name}".encode()).hexdigest()[:32])
    os.makedirs(d, exist_ok=True)
    with open(entry + ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)   # released when the file closes
        if not os.path.isfile(os.path.join(entry, "kept.json")):
            _build(entry, name, build, d)
    for path in sorted(glob.glob(os.path.join(entry, "*.wad"))):  # the parts too
        dest = os.path.join(os.path.dirname(into) or ".", os.path.basename(path))
        shutil.copyfile(path, dest + ".part")   # whole or not at all, as write_wad writes
        os.replace(dest + ".part", dest)
    with open(os.path.join(entry, "kept.json")) as f:
        return json.load(f)


def _build(entry: str, name: str, build, d: str) -> None:
    tmp = tempfile.mkdtemp(dir=d, prefix=".build-")
    try:
        kept = build(os.path.join(tmp, name))
        with open(os.path.join(tmp, "kept.json"), "w") as f:
            json.dump(kept, f)
        os.rename(tmp, entry)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
