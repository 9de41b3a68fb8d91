"""Every script of the corpus tests/acs/*.acs compiles and does what its `//!` lines say.

A corpus file states its own checks, run in order after the map's first tic:
    //! puke N [a b c d]     start script N with args, then run 1 tic
    //! tics N               run N tics
    //! expect K=V ...       USER K (ACS global K) equals V, exactly
    //! sector I floor=F ceiling=C   the engine's sector I has these plane heights
All corpus files are maps of one WAD (MAP01, MAP02, ...) and share one engine per test
worker, which switches maps (a few ms) instead of starting again (~0.25 s).
"""
from __future__ import annotations

import glob
import os

import pytest

import acs
from acs.testmap import room_textmap
from acs.wad import MapLump, write_wad
from engine.doom import Engine

CORPUS_DIR = os.path.join(os.path.dirname(__file__), "acs")
FILES = sorted(glob.glob(os.path.join(CORPUS_DIR, "*.acs")))
MAP_OF = {path: f"MAP{i + 1:02d}" for i, path in enumerate(FILES)}


def directives(path: str) -> list[list[str]]:
    with open(path, encoding="utf-8") as f:
        return [line[3:].split() for line in f if line.startswith("//!")]


def test_corpus_is_big_enough():
    assert len(FILES) >= 40
    assert len(FILES) <= 99   # MAP01..MAP99


COMPILE_ERRORS: dict[str, acs.CompileError] = {}


@pytest.fixture(scope="module")
def engine(tmp_path_factory):
    maps = []
    for path in FILES:
        with open(path, encoding="utf-8") as f:
            source = f.read()
        try:
            lump = acs.compile_file(path)
        except acs.CompileError as e:   # reported by that file's own test
            COMPILE_ERRORS[path] = e
            continue
        maps.append(MapLump(MAP_OF[path], room_textmap(), lump, source,
                            os.path.basename(path)))
    wad = tmp_path_factory.mktemp("corpus") / "corpus.wad"
    write_wad(str(wad), maps)
    with Engine(str(wad), sectors=True) as e:
        yield e


@pytest.mark.parametrize("path", FILES, ids=[os.path.basename(p) for p in FILES])
def test_corpus_script(engine, path):
    steps = directives(path)
    assert any(s[0] == "expect" for s in steps), f"{path} checks nothing"
    if path in COMPILE_ERRORS:
        raise COMPILE_ERRORS[path]
    engine.change_map(MAP_OF[path])
    engine.advance(1)
    for step in steps:
        kind, args = step[0], step[1:]
        if kind == "puke":
            engine.puke(*(int(a) for a in args))
            engine.advance(1)
        elif kind == "tics":
            engine.advance(int(args[0]))
        elif kind == "expect":
            users = engine.users()
            want = {int(k): int(v) for k, v in (a.split("=") for a in args)}
            got = {k: users[k - 1] for k in want}
            assert got == want, f"after {' '.join(step)}"
        elif kind == "sector":
            sec = engine.sectors()[int(args[0])]
            want = {k: int(v) for k, v in (a.split("=") for a in args[1:])}
            got = {"floor": sec.floor, "ceiling": sec.ceiling}
            assert {k: got[k] for k in want} == want, f"sector {args[0]}"
        else:
            raise AssertionError(f"{path}: unknown directive //! {kind}")
