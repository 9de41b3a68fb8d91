"""`--acc external`: finding acc, our headers for it, and reading its error messages.

The tests that need the real acc skip when it is not installed (the only skips allowed).
Its interface (arguments, output file, messages on stderr) is also exercised with a small
stand-in program, so the plumbing is tested on every machine.
"""
from __future__ import annotations

import os
import stat
import subprocess
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


# A stand-in for acc that follows acc's documented command line, so the whole external path
# is tested on every machine (acc is in no package registry):
#   acc [-i DIR]... SOURCE [OUTPUT]        (OUTPUT defaults to SOURCE with .o)
# #include files are looked for beside SOURCE, then in each -i DIR in order. On errors it
# prints "**** ERROR ****" and, for each, 'file:line: message', '> source line' and '>   ^'
# to stderr, writes the same lines to acs.err beside SOURCE, and exits 1. The compiling is
# done by our own compiler, so what it writes is a real lump that runs in the engine.
# $STAND_IN_LOG: append the working directory and arguments; $STAND_IN_QUIET: nothing on
# stderr (the messages are then only in acs.err).
STAND_IN = r"""
import os, re, sys
sys.path.insert(0, ROOT)
import acs
from dsl.diagnostics import CompileError

def usage():
    sys.stderr.write("usage: acc [-i dir] source.acs [object.o]\n")
    sys.exit(1)

args, dirs, files = sys.argv[1:], [], []
while args:
    arg = args.pop(0)
    if arg.startswith("-"):
        if arg.lower() != "-i" or not args:
            usage()
        dirs.append(args.pop(0))
    else:
        files.append(arg)
if not 1 <= len(files) <= 2:
    usage()
src = files[0]
out = files[1] if len(files) == 2 else os.path.splitext(src)[0] + ".o"
if os.environ.get("STAND_IN_LOG"):
    with open(os.environ["STAND_IN_LOG"], "a") as log:
        listing = {d: sorted(os.listdir(d)) for d in dirs if os.path.isdir(d)}
        log.write(repr((os.getcwd(), sys.argv[1:], listing)) + "\n")
text = open(src, encoding="utf-8").read()
lines = text.splitlines()
errors = []
for n, line in enumerate(lines, 1):
    m = re.match(r'\s*#include\s+"([^"]+)"', line)
    if m and not any(os.path.isfile(os.path.join(d, m.group(1)))
                     for d in [os.path.dirname(src)] + dirs):
        errors.append((src, n, m.start(1) + 1, 'Couldn\'t find include file "%s".' % m.group(1)))
if not errors:
    try:
        lump = acs.compile_source(text, src, include_dirs=[os.path.dirname(src)] + dirs)
    except CompileError as e:
        errors = [(d.pos.file, d.pos.line, d.pos.col, d.message) for d in e.diagnostics]
if errors:
    report = 'Line %d in file "%s" ...\n' % (errors[0][1], errors[0][0])
    for file, line, col, message in errors:
        shown = lines[line - 1] if file == src and 0 < line <= len(lines) else ""
        report += "%s:%d: %s\n> %s\n>%s\n" % (file, line, message, shown, "^".rjust(col + 1))
    if not os.environ.get("STAND_IN_QUIET"):
        sys.stderr.write("\n**** ERROR ****\n" + report)
    with open(os.path.join(os.path.dirname(src), "acs.err"), "w") as f:
        f.write(report)
    sys.exit(1)
with open(out, "wb") as f:
    f.write(lump)
"""
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _script(tmp_path, name, body):
    """An executable Python program `name` in tmp_path."""
    exe = tmp_path / name
    exe.write_text(f"#!{sys.executable}\nROOT = {ROOT!r}\n{body}\n")
    exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
    return str(exe)


@pytest.fixture
def stand_in(tmp_path, monkeypatch):
    exe = _script(tmp_path, "acc", STAND_IN)
    monkeypatch.setenv("ACC", exe)
    monkeypatch.setenv("STAND_IN_LOG", str(tmp_path / "acc.log"))
    return exe


def acc_calls(tmp_path) -> list[tuple[str, list[str], dict]]:
    import ast

    with open(tmp_path / "acc.log") as f:
        return [ast.literal_eval(line) for line in f]


def test_external_plumbing_with_stand_in(stand_in, tmp_path):
    src = tmp_path / "ok.acs"
    src.write_text('#include "zcommon.acs"\nglobal int 1:g;\nscript 1 OPEN { g = 7; }\n')
    assert find_acc() == stand_in
    assert compile_file_external(str(src)) == acs.compile_file(str(src))
    [(cwd, argv, listing)] = acc_calls(tmp_path)
    # acc [-i DIR]... SOURCE OUTPUT: the source's own directory first, our headers last;
    # acc runs in a temporary directory on a copy of the source, never on the user's file.
    headers = argv[3]
    assert argv[:3] == ["-i", str(tmp_path), "-i"]
    assert listing[headers] == ["zcommon.acs", "zdefs.acs", "zspecial.acs", "zwvars.acs"]
    assert argv[4] == os.path.join(os.path.dirname(headers), "src", "ok.acs")
    assert argv[5] == os.path.join(os.path.dirname(headers), "out.o")
    assert cwd == os.path.dirname(headers) and not os.path.exists(cwd)   # cleaned up
    assert len(argv) == 6


def test_external_include_dirs_in_order(stand_in, tmp_path):
    inc1, inc2 = tmp_path / "inc1", tmp_path / "inc2"
    inc1.mkdir()
    inc2.mkdir()
    (inc2 / "values.acs").write_text("#define SEVEN 7\n")
    src = tmp_path / "main.acs"
    src.write_text('#include "values.acs"\nglobal int 1:g;\nscript 1 OPEN { g = SEVEN; }\n')
    lump = compile_file_external(str(src), include_dirs=[str(inc1), str(inc2)])
    assert lump == acs.compile_file(str(src), include_dirs=[str(inc2)])
    [(_, argv, _)] = acc_calls(tmp_path)
    assert argv[:6] == ["-i", str(tmp_path), "-i", str(inc1), "-i", str(inc2)]


def test_external_errors_become_our_diagnostics(stand_in, tmp_path):
    src = tmp_path / "bad.acs"
    src.write_text("script 1 OPEN\n{\n    x = 1;\n    Delay();\n}\n")
    with pytest.raises(CompileError) as info:
        compile_file_external(str(src))
    with pytest.raises(CompileError) as ours:
        acs.compile_file(str(src))
    # line and column come back through acc's 'file:line:' and caret lines
    got = [(str(d.pos), d.message) for d in info.value.diagnostics]
    assert got == [(str(d.pos), d.message + " (acc)") for d in ours.value.diagnostics]
    assert got[0] == (f"{src}:3:5", "undefined name 'x' (acc)")
    assert sorted(os.listdir(tmp_path)) == ["acc", "acc.log", "bad.acs"]   # no acs.err


def test_external_errors_read_from_acs_err(stand_in, tmp_path, monkeypatch):
    monkeypatch.setenv("STAND_IN_QUIET", "1")
    src = tmp_path / "bad.acs"
    src.write_text('#include "missing.acs"\nscript 1 OPEN { }\n')
    with pytest.raises(CompileError) as info:
        compile_file_external(str(src))
    assert [(str(d.pos), d.message) for d in info.value.diagnostics] == [
        (f"{src}:1:11", "Couldn't find include file \"missing.acs\". (acc)")]
    assert not (tmp_path / "acs.err").exists()


def build_py(*args, cwd):
    return subprocess.run([sys.executable, os.path.join(ROOT, "build.py"), *args],
                          capture_output=True, text=True, cwd=cwd)


@pytest.fixture
def own_tmpdir(tmp_path, monkeypatch):
    """$TMPDIR of the commands run, to see that they leave nothing behind."""
    d = tmp_path / "tmpdir"
    d.mkdir()
    monkeypatch.setenv("TMPDIR", str(d))
    return d


def test_cli_external_bad_file_leaves_nothing_beside_the_source(stand_in, tmp_path, own_tmpdir):
    work = tmp_path / "maps"
    work.mkdir()
    (work / "bad.acs").write_text("script 1 OPEN\n{\n    Delay();\n}\n")
    r = build_py("acs", "--acc", "external", str(work / "bad.acs"), cwd=str(work))
    assert (r.returncode, r.stdout) == (1, "")
    assert r.stderr == (f"{work / 'bad.acs'}:3:5: error: builtin 'Delay' takes 1 argument, "
                        "but 0 were given (acc)\n")
    assert os.listdir(work) == ["bad.acs"]          # no acs.err, no output
    assert os.listdir(own_tmpdir) == []             # acc's directory removed


def test_cli_external_writes_the_output(stand_in, tmp_path, own_tmpdir):
    (tmp_path / "inc").mkdir()
    (tmp_path / "inc" / "lib.acs").write_text("function int twice(int v) { return 2 * v; }\n")
    src = tmp_path / "door.acs"
    src.write_text('#include "zcommon.acs"\n#include "lib.acs"\n'
                   "global int 1:g;\nscript 1 OPEN { g = twice(21); }\n")
    r = build_py("acs", "--acc", "external", str(src), "-o", str(tmp_path / "door.o"),
                 "-i", str(tmp_path / "inc"), cwd=str(tmp_path))
    assert (r.returncode, r.stderr) == (0, "")
    lump = (tmp_path / "door.o").read_bytes()
    assert lump == acs.compile_file(str(src), include_dirs=[str(tmp_path / "inc")])
    assert r.stdout == f"{tmp_path / 'door.o'}: {len(lump)} bytes\n"
    assert os.listdir(own_tmpdir) == []


def test_compile_run_and_museum_with_external_acc(stand_in, tmp_path, own_tmpdir):
    """--acc external on the map commands (issue 15: they ended in an ImportError)."""
    xor = os.path.join(ROOT, "circuits", "xor.dnet")
    for acc in ("internal", "external"):
        r = build_py("compile", xor, "--acc", acc, "-o", str(tmp_path / f"xor-{acc}.wad"),
                     cwd=str(tmp_path))
        assert (r.returncode, r.stderr) == (0, "")
    # the stand-in compiles with our compiler: the same source gives the same WAD
    assert (tmp_path / "xor-external.wad").read_bytes() == \
        (tmp_path / "xor-internal.wad").read_bytes()
    r = build_py("run", xor, "--acc", "external", "--random", "4",
                 "-o", str(tmp_path / "run.wad"), cwd=str(tmp_path))
    assert (r.returncode, r.stderr, r.stdout.splitlines()[-1]) == (0, "", "4/4 EXACT")
    r = build_py("museum", "--acc", "external", "-o", str(tmp_path / "museum.wad"),
                 cwd=str(tmp_path))
    assert (r.returncode, r.stderr) == (0, "")
    calls = acc_calls(tmp_path)
    # generated source: only our headers on the include path, never the current directory
    assert [(len(argv), argv[0], os.path.basename(argv[2])) for _, argv, _ in calls] == \
        [(4, "-i", "xor.acs"), (4, "-i", "xor.acs"), (4, "-i", "museum.acs")]
    assert all(listing[argv[1]][0] == "zcommon.acs" for _, argv, listing in calls)
    assert os.listdir(own_tmpdir) == []


def test_compile_with_acc_failure_is_a_user_error(tmp_path, own_tmpdir):
    from acs.external import compile_with_acc

    acc = _script(tmp_path, "acc-fails", STAND_IN)
    with pytest.raises(CompileError) as info:
        compile_with_acc("script 1 OPEN { nothing(); }\n", "net.acs", acc=acc)
    assert [(str(d.pos), d.message) for d in info.value.diagnostics] == [
        ("net.acs:1:17", "unknown function or special 'nothing' (acc)")]
    assert os.listdir(own_tmpdir) == []


@pytest.mark.parametrize("body,message", [
    ("import os, signal; os.kill(os.getpid(), signal.SIGKILL)", "acc was killed by signal 9"),
    ("pass", "acc exited 0 but wrote no output file"),
    ("import sys; open(sys.argv[-1], 'wb').write(b'garbage')",
     "acc's output is not a BEHAVIOR lump (it starts with b'garb')"),
])
def test_acc_exit_statuses(tmp_path, body, message):
    acc = _script(tmp_path, "acc-odd", body)
    src = os.path.join(CORPUS, "01_open_globals.acs")
    with pytest.raises(CompileError) as info:
        compile_file_external(src, acc=acc)
    assert [(str(d.pos), d.message) for d in info.value.diagnostics] == [(src, message)]


needs_acc = pytest.mark.skipif(
    find_acc() is None,
    reason="NOT RUN: the real acc is not installed; set $ACC to its path (or put acc on "
           "PATH) to compare with it")


@needs_acc
@pytest.mark.parametrize("name", ["15_functions.acs", "19_multidim_arrays.acs", "14_switch.acs"])
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


# Corpus files written to compile with acc too, and whose checks state acc's behaviour:
# && and || evaluate both sides, local slots, long chains, radix literals.
ACC_BEHAVIOUR = ["06_compare_logic.acs", "57_acc_locals.acs", "58_long_chains.acs",
                 "59_radix_literals.acs"]


@needs_acc
@pytest.mark.parametrize("name", ACC_BEHAVIOUR)
def test_real_acc_behaves_as_our_corpus_says(name, tmp_path):
    from acs.testmap import room_textmap
    from acs.wad import MapLump, write_wad
    from engine.doom import Engine
    from test_acs_corpus import directives

    path = os.path.join(CORPUS, name)
    wad = str(tmp_path / "acc.wad")
    write_wad(wad, [MapLump("MAP01", room_textmap(), compile_file_external(path))])
    with Engine(wad) as engine:
        engine.advance(1)
        for kind, *args in directives(path):
            if kind == "puke":
                engine.puke(*(int(a) for a in args))
                engine.advance(1)
            elif kind == "expect":
                users = engine.users()
                want = {int(k): int(v) for k, v in (a.split("=") for a in args)}
                assert {k: users[k - 1] for k in want} == want


@needs_acc
def test_real_acc_builds_a_network_that_runs_exact(tmp_path):
    r = build_py("run", os.path.join(ROOT, "circuits", "xor.dnet"), "--acc", "external",
                 "--random", "4", "-o", str(tmp_path / "xor.wad"), cwd=str(tmp_path))
    assert (r.returncode, r.stdout.splitlines()[-1]) == (0, "4/4 EXACT")


# Issue 25 item 12: every demo built with `--acc external` (the brain level's episode script
# used to redefine loop variables and a script argument, which acc refuses), and what it
# computes in the engine against the reference where the demo checks that itself.
EXTERNAL_DEMOS = {
    "hello": (["hello"], "5/5 EXACT"),
    "museum": (["museum"], "the museum"),
    "mnist": (["mnist", "--small", "--samples", "20"], "engine==reference 20/20 EXACT"),
    "tictactoe": (["tictactoe", "--games", "1"], "O replies 3/3 EXACT"),
    "brainlevel mlp": (["brainlevel", "--policy", "mlp", "--episodes", "1", "--paused"],
                       "EXACT"),
    "brainlevel transformer": (["brainlevel", "--policy", "transformer"], "policy agreement"),
}


@needs_acc
@pytest.mark.parametrize("demo", list(EXTERNAL_DEMOS))
def test_every_demo_builds_with_the_real_acc(demo, tmp_path):
    args, want = EXTERNAL_DEMOS[demo]
    r = build_py(*args, "--acc", "external", "-o", str(tmp_path / "demo.wad"),
                 cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr[-2000:]
    assert want in r.stdout, r.stdout[-2000:]
