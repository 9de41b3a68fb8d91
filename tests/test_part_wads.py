"""Issue 37 item 15: `extract` and `verify` read an intact WAD whose first maps are in part
files beside it (a WAD too big for one file, mapgen/compile.write_wad) instead of calling
it damaged; a part that is missing or not the one built with is refused naming it, and an
output onto a part file is refused by the guard (commands/common.wad_files)."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from conftest import ROOT

ELMAN = os.path.join(ROOT, "circuits", "elman.dnet")


@pytest.fixture(scope="module")
def parted(tmp_path_factory):
    """elman over 3 maps, MAP01 and MAP02 each in a part file of their own."""
    from commands.common import build_maps
    from mapgen.compile import write_wad

    tmp = tmp_path_factory.mktemp("parts")
    net, maps, plan = build_maps(ELMAN, "3")
    write_wad(str(tmp / "e.wad"), maps, net, plan, part_bytes=len(maps[0].textmap))
    assert sorted(os.listdir(tmp)) == ["e.1.wad", "e.2.wad", "e.wad"]
    return tmp


def cli(*args):
    return subprocess.run([sys.executable, "build.py", *map(str, args)], cwd=ROOT,
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "VOODOO_QUIET": "1"})


def test_extract_reads_a_map_in_a_part_file(parted, tmp_path):
    p = cli("extract", parted / "e.wad", "--map", "MAP01", "-o", tmp_path / "m1.dnet")
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip().endswith("compiled again it builds the same machine"), p.stdout
    text = (tmp_path / "m1.dnet").read_text()   # MAP01's tile: h[0] from h.prev[1]
    assert "lines h_prev_1_ -> h[0]" in text and "output h[0]" in text, text
    p = cli("extract", parted / "e.wad")
    assert p.returncode == 1 and "holds 3 maps (MAP01, MAP02, MAP03); name one" in p.stderr


@pytest.mark.parametrize("name", ["MAP02", "MAP03"])
def test_verify_runs_a_map_in_a_part_file_and_in_the_wad(parted, name):
    p = cli("verify", parted / "e.wad", "--map", name, "--runs", "3")
    assert p.returncode == 0, p.stdout + p.stderr
    assert "engine: 3/3 EXACT" in p.stdout and "verify ok: 0 change(s), 0 error(s)" in p.stdout


def test_a_missing_or_foreign_part_is_named(parted, tmp_path):
    for f in os.listdir(parted):
        shutil.copy(parted / f, tmp_path / f)
    os.remove(tmp_path / "e.1.wad")
    p = cli("extract", tmp_path / "e.wad", "--map", "MAP01")
    assert p.returncode == 1 and "its map MAP01 is in e.1.wad, which is missing" in p.stderr
    shutil.copy(tmp_path / "e.2.wad", tmp_path / "e.1.wad")
    p = cli("verify", tmp_path / "e.wad", "--map", "MAP01", "--no-engine")
    assert p.returncode == 1 and "e.1.wad is not the part it was built with" in p.stderr
    assert "Traceback" not in p.stderr


def test_an_output_onto_a_part_file_is_refused(parted):
    before = (parted / "e.2.wad").read_bytes()
    p = cli("extract", parted / "e.wad", "--map", "MAP03", "-o", parted / "e.2.wad")
    assert p.returncode == 1 and "would overwrite the input" in p.stderr, p.stderr
    assert (parted / "e.2.wad").read_bytes() == before
