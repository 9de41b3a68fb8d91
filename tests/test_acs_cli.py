"""`python build.py acs IN.acs -o OUT.o`: output, errors on stderr, exit codes, no half files."""
from __future__ import annotations

import os
import subprocess
import sys

import acs

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS = os.path.join(ROOT, "tests", "acs")


def build(*args, cwd=None):
    return subprocess.run([sys.executable, os.path.join(ROOT, "build.py"), "acs", *args],
                          capture_output=True, text=True, cwd=cwd or ROOT)


def test_compiles_a_corpus_file(tmp_path):
    src = os.path.join(CORPUS, "15_functions.acs")
    out = tmp_path / "x.o"
    r = build(src, "-o", str(out))
    assert (r.returncode, r.stderr) == (0, "")
    assert out.read_bytes() == acs.compile_file(src)
    assert r.stdout == f"{out}: {len(out.read_bytes())} bytes\n"


def test_default_output_name(tmp_path):
    src = tmp_path / "door.acs"
    src.write_text("script 1 OPEN { Delay(1); }\n")
    r = build(str(src))
    assert r.returncode == 0
    assert (tmp_path / "door.o").read_bytes() == acs.compile_file(str(src))


def test_errors_go_to_stderr_and_leave_no_output(tmp_path):
    src = tmp_path / "bad.acs"
    src.write_text("script 1 (void)\n{\n    undefined_thing = 1;\n    Delay();\n}\n")
    out = tmp_path / "bad.o"
    out.write_bytes(b"previous build")
    r = build(str(src), "-o", str(out))
    assert r.returncode == 1
    assert r.stdout == ""
    assert r.stderr == (
        f"{src}:3:5: error: undefined name 'undefined_thing'\n"
        "    hint: declare it first (int name;) or #define it\n"
        f"{src}:4:5: error: builtin 'Delay' takes 1 argument, but 0 were given\n"
        "    hint: Delay(arg1)\n")
    assert out.read_bytes() == b"previous build"
    assert sorted(os.listdir(tmp_path)) == ["bad.acs", "bad.o"]


def test_refuses_to_overwrite_the_source(tmp_path):
    src = tmp_path / "s.acs"
    src.write_text("script 1 OPEN { }\n")
    r = build(str(src), "-o", str(src))
    assert r.returncode == 1
    assert r.stderr == f"{src}: the output would overwrite the source; pass -o OUT.o\n"
    assert src.read_text() == "script 1 OPEN { }\n"


def test_missing_source(tmp_path):
    r = build(str(tmp_path / "nope.acs"), "-o", str(tmp_path / "x.o"))
    assert r.returncode == 1
    assert r.stderr == f"{tmp_path / 'nope.acs'}: error: cannot read the file: No such file or directory\n"


def test_external_without_acc_is_a_clear_error(tmp_path):
    env = dict(os.environ, ACC=str(tmp_path / "no-acc-here"))
    src = os.path.join(CORPUS, "01_open_globals.acs")
    r = subprocess.run([sys.executable, os.path.join(ROOT, "build.py"), "acs", src, "-o",
                        str(tmp_path / "x.o"), "--acc", "external"],
                       capture_output=True, text=True, cwd=ROOT, env=env)
    assert r.returncode == 1
    assert r.stderr == ("acc was not found: set $ACC to its path or put it on PATH, or use "
                        "--acc internal (our compiler, the default)\n")
    assert not (tmp_path / "x.o").exists()


def test_include_directory_option(tmp_path):
    inc = tmp_path / "lib"
    inc.mkdir()
    (inc / "consts.acs").write_text("#define ANSWER 42\n")
    src = tmp_path / "main.acs"
    src.write_text('#include "consts.acs"\nglobal int 1:g;\nscript 1 OPEN { g = ANSWER; }\n')
    r = build(str(src), "-o", str(tmp_path / "m.o"), "-i", str(inc))
    assert (r.returncode, r.stderr) == (0, "")


def test_unwritable_output(tmp_path):
    src = os.path.join(CORPUS, "01_open_globals.acs")
    out = tmp_path / "no-such-dir" / "x.o"
    r = build(src, "-o", str(out))
    assert r.returncode == 1
    assert r.stderr == (f"-o {out}: directory {out.parent} does not exist; create it first "
                        "or write elsewhere\n")
