"""`--acc external`: finding acc, our headers for it, and reading its error messages.

The tests that need the real acc skip when it is not installed (the only skips allowed).
Its interface (arguments, output file, messages on stderr) is also exercised with a small
stand-in program, so the plumbing is tested on every machine.
"""
from __future__ import annotations

import os
import stat
import sys

import pytest

import acs
from acs.external import (AccNotFound, compile_file_external, find_acc, parse_acc_errors,
                          standard_headers)
from dsl.diagnostics import CompileError

CORPUS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "acs")

ACC_GCC_OUTPUT = """
**** ERROR ****
Line 3 in file "door.acs" ...
door.acs:3: Missing semicolon.
> Delay(1)
>        ^
door.acs:7: x : Identifier has not been declared.
> x = 1
>  ^
"""

ACC_VCC_OUTPUT = """**** ERROR ****
Line 12 in file "maps/a.acs" ...
maps/a.acs(12) : error 0042: Incorrect number of special arguments.
"""


def test_parse_gcc_style_errors_with_columns():
    diags = parse_acc_errors(ACC_GCC_OUTPUT, {"door.acs": "maps/door.acs"})
    assert [(str(d.pos), d.message) for d in diags] == [
        ("maps/door.acs:3:8", "Missing semicolon. (acc)"),
        ("maps/door.acs:7:2", "x : Identifier has not been declared. (acc)")]


def test_parse_vcc_style_errors():
    diags = parse_acc_errors(ACC_VCC_OUTPUT)
    assert [(str(d.pos), d.message) for d in diags] == [
        ("maps/a.acs:12", "Incorrect number of special arguments. (acc)")]


def test_unpositioned_acc_output_is_still_reported():
    diags = parse_acc_errors("\n**** ERROR ****\nCouldn't open file.\n")
    assert [(str(d.pos), d.message) for d in diags] == [("acc", "Couldn't open file.")]


def test_our_headers_compile_with_our_compiler_and_agree_with_builtins():
    h = standard_headers()
    assert sorted(h) == ["zcommon.acs", "zdefs.acs", "zspecial.acs", "zwvars.acs"]
    # Compile the header text itself (not as the standard names, which we skip).
    src = h["zspecial.acs"] + h["zdefs.acs"] + \
        "global int 1:g;\nscript 1 OPEN { Light_ChangeToValue(1, CR_RED); g = HUDMSG_LOG; }\n"
    assert acs.compile_source(src) == acs.compile_source(
        "global int 1:g;\nscript 1 OPEN { Light_ChangeToValue(1, CR_RED); g = HUDMSG_LOG; }\n")


def test_acc_not_found(monkeypatch, tmp_path):
    monkeypatch.setenv("ACC", str(tmp_path / "missing-acc"))
    assert find_acc() is None
    with pytest.raises(AccNotFound):
        compile_file_external(os.path.join(CORPUS, "01_open_globals.acs"))


STAND_IN = r'''# A stand-in with acc's command line: acc [-i DIR]... SOURCE OUTPUT.
import os, sys
args = sys.argv[1:]
dirs = []
while args and args[0] == "-i":
    dirs.append(args[1]); args = args[2:]
src, out = args
text = open(src).read()
if "BROKEN" in text:
    line = text[:text.index("BROKEN")].count("\n") + 1
    sys.stderr.write('\n**** ERROR ****\nLine %d in file "%s" ...\n%s:%d: Invalid statement.\n'
                     % (line, src, src, line))
    sys.exit(1)
assert any(os.path.isfile(os.path.join(d, "zcommon.acs")) for d in dirs), dirs
open(out, "wb").write(b"ACSe" + b"STAND-IN")
'''


def _script(tmp_path, name, body):
    """An executable Python program `name` in tmp_path."""
    exe = tmp_path / name
    exe.write_text(f"#!{sys.executable}\n{body}\n")
    exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
    return str(exe)


@pytest.fixture
def stand_in(tmp_path, monkeypatch):
    exe = _script(tmp_path, "acc", STAND_IN)
    monkeypatch.setenv("ACC", exe)
    return exe


def test_external_plumbing_with_stand_in(stand_in, tmp_path):
    src = tmp_path / "ok.acs"
    src.write_text('#include "zcommon.acs"\nscript 1 OPEN { }\n')
    assert find_acc() == stand_in
    assert compile_file_external(str(src)) == b"ACSeSTAND-IN"


def test_external_errors_become_our_diagnostics(stand_in, tmp_path):
    src = tmp_path / "bad.acs"
    src.write_text("script 1 OPEN\n{\n    BROKEN\n}\n")
    with pytest.raises(CompileError) as info:
        compile_file_external(str(src))
    assert [(str(d.pos), d.message) for d in info.value.diagnostics] == [
        (f"{src}:3", "Invalid statement. (acc)")]


needs_acc = pytest.mark.skipif(find_acc() is None,
                               reason="acc (the external ACS compiler) is not installed")


@needs_acc
@pytest.mark.parametrize("name", ["15_functions.acs", "18_map_arrays.acs", "14_switch.acs"])
def test_real_acc_compiles_corpus(name):
    assert compile_file_external(os.path.join(CORPUS, name))[:3] == b"ACS"


@needs_acc
def test_real_acc_reports_errors_with_positions(tmp_path):
    src = tmp_path / "bad.acs"
    src.write_text("script 1 (void)\n{\n    Delay(1)\n}\n")
    with pytest.raises(CompileError) as info:
        compile_file_external(str(src))
    assert info.value.diagnostics[0].pos.file == str(src)


def test_acc_failing_without_messages(tmp_path):
    acc = _script(tmp_path, "acc-silent", "import sys; sys.exit(3)")
    src = os.path.join(CORPUS, "01_open_globals.acs")
    with pytest.raises(CompileError) as info:
        compile_file_external(src, acc=acc)
    assert [(str(d.pos), d.message) for d in info.value.diagnostics] == [
        (src, "acc failed (exit 3)")]


def test_acc_that_cannot_run(tmp_path):
    acc = tmp_path / "not-executable"
    acc.write_text("not a program")
    with pytest.raises(AccNotFound) as info:
        compile_file_external(os.path.join(CORPUS, "01_open_globals.acs"), acc=str(acc))
    assert str(info.value) == f"{acc}: cannot run acc: Permission denied"


def test_acc_that_hangs(tmp_path, monkeypatch):
    import acs.external as ext

    monkeypatch.setattr(ext, "ACC_TIMEOUT_S", 1)
    acc = _script(tmp_path, "acc-hang", "import time; time.sleep(30)")
    src = os.path.join(CORPUS, "01_open_globals.acs")
    with pytest.raises(CompileError) as info:
        compile_file_external(src, acc=acc)
    assert [(str(d.pos), d.message) for d in info.value.diagnostics] == [
        (src, "acc did not finish in 1 s")]


def test_external_missing_source(tmp_path, stand_in):
    with pytest.raises(CompileError) as info:
        compile_file_external(str(tmp_path / "gone.acs"))
    assert [(str(d.pos), d.message) for d in info.value.diagnostics] == [
        (str(tmp_path / "gone.acs"), "cannot read the file: no such file")]
