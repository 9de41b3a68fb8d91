"""The README is the spec of the command line: every `python build.py ...` line in its
command blocks runs here as a user would type it (through a shell, so globs expand), in a
temporary directory, with the exit status and the documented last line checked.

Sizes are made small where a command takes one (`mnist --samples 20 --small`), and default
outputs go to the temporary directory ($VOODOO_WADS), so nothing is written into the
checkout. A command added to the README must also get its expected last line in EXPECT, or
this test fails.
"""
from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import time

import pytest

from conftest import ROOT

README = os.path.join(ROOT, "README.md")

# subcommand -> regex the last line of stdout must match ("" = exit 0 is enough)
EXPECT = {
    "--help": r"^\s+\w+\s+",
    "check": r"^(\d+)/\1 netlist\(s\) ok$",
    "eval": r"",
    "compile": r"",
    "run": r"^(\d+)/\1 EXACT$",
    "render": r"",
    "hello": r"^5/5 EXACT$",
    "museum": r"",
    "mnist": r"^engine==reference (\d+)/\1 EXACT;",
    "tictactoe": r"^O replies (\d+)/\1 EXACT; games \d+, O lost 0; tics per move \d+; dolls \d+$",
    "acs": r"",
    "extract": r"compiled again it builds the same machine$",
    "verify": r"^verify ok: 0 change\(s\), 0 error\(s\), engine exact$",
    "embed": r"^embedded: \d+ input\(s\) and \d+ output\(s\) wired$",
    # --json ends with the JSON's closing brace, --onnx/--torch -o with what was written
    "export": r"^(\}|wrote \S+: (ONNX opset \d+|torch module)\b.*)$",
    "import": r"^(wrote \S+: network '\w+', \d+ inputs -> \d+ outputs, \d+ neurons|"
              r"(\d+)/\2 EXACT against (onnxruntime|qonnx))$",
    "chat": r"^tokens (\d+)/\1 EXACT\b",
    "brainlevel": r"^decisions (\d+)/\1 EXACT; paused won \d+/\d+; live won \d+/\d+; "
                  r"tics per decision \d+ \([\d.]+ s game time\); dolls \d+$",
}
# Extra checks on the whole output for some commands.
CONTAINS = {
    "museum --screenshot": ["EXACT  (7)", "EXACT  (7 after MUTATE reads as 1)"],
}


def _blocks(text: str) -> list[str]:
    """Lines of the README's code blocks: fenced, or indented by four spaces after a blank
    line (Markdown's indented code)."""
    lines, out, fenced, prev_blank = text.splitlines(), [], False, True
    for line in lines:
        if line.strip().startswith("```"):
            fenced = not fenced
            continue
        if fenced or (line.startswith("    ") and (prev_blank or out and out[-1] is not None)):
            out.append(line.strip())
        else:
            out.append(None) if out and out[-1] is not None else None
        prev_blank = not line.strip()
    return [l for l in out if l]


def readme_commands() -> list[str]:
    cmds = []
    for line in _blocks(open(README, encoding="utf-8").read()):
        if line.startswith("python build.py"):
            cmds.append(re.sub(r"\s+#.*$", "", line))
    return list(dict.fromkeys(cmds))   # a command shown twice (a section repeats it) runs once


def _small(cmd: str) -> str:
    """The same command at a test's size."""
    if " mnist" in cmd and "--model cnn" in cmd:  # checked in: no training either way
        cmd = re.sub(r"--samples \d+", "--samples 20", cmd)
    elif " mnist" in cmd:
        cmd = re.sub(r"--samples \d+", "", cmd) + " --samples 20 --small"
    if " chat" in cmd:  # a sample of the run's first steps: a step is ~1,200 tics
        cmd += " --max-steps 4"
    if " brainlevel" in cmd:
        cmd = re.sub(r"--episodes \d+", "--episodes 1", cmd)
    return cmd


def test_readme_lists_commands():
    cmds = readme_commands()
    assert len(cmds) >= 8, cmds
    assert any(c.startswith("python build.py hello") for c in cmds)


@pytest.mark.parametrize("cmd", readme_commands())
def test_readme_command(cmd, tmp_path):
    # A line may chain commands (`compile ... && extract ...`): the last one is checked.
    subs = re.findall(r"python build\.py\s+(\S+)", cmd)
    sub = subs[-1] if subs else "--help"
    assert sub in EXPECT, f"README command `{cmd}`: add its documented last line to EXPECT"
    os.symlink(os.path.join(ROOT, "circuits"), tmp_path / "circuits")
    os.symlink(os.path.join(ROOT, "tests"), tmp_path / "tests")  # checked-in models
    os.mkdir(tmp_path / "wads")
    (tmp_path / "script.acs").write_text('#include "zcommon.acs"\nscript 1 OPEN { Print(s:"hi"); }\n')
    env = {**os.environ, "VOODOO_QUIET": "1", "VOODOO_WADS": str(tmp_path / "wads")}
    line = _small(cmd).replace("python build.py",
                               f"{shlex.quote(sys.executable)} {shlex.quote(os.path.join(ROOT, 'build.py'))}")
    start = time.time()
    r = subprocess.run(["bash", "-c", line], cwd=tmp_path, env=env, capture_output=True,
                       text=True, timeout=900)
    assert r.returncode == 0, f"`{cmd}` exited {r.returncode}:\n{r.stdout[-2000:]}\n{r.stderr[-3000:]}"
    out = r.stdout.strip().splitlines()
    assert out, f"`{cmd}` printed nothing"
    if EXPECT[sub]:
        assert re.search(EXPECT[sub], out[-1]), f"`{cmd}` ended with {out[-1]!r}"
    for key, needles in CONTAINS.items():
        if cmd.startswith(f"python build.py {key}"):
            for n in needles:
                assert n in r.stdout, f"`{cmd}`: {n!r} missing from\n{r.stdout}"
    # Nothing of the command's output may land in the checkout.
    assert not _written_since(start), f"`{cmd}` wrote into the checkout: {_written_since(start)}"


def _written_since(t: float) -> list[str]:
    found = []
    for top in (ROOT, os.path.join(ROOT, "wads"), os.path.join(ROOT, "circuits")):
        for name in os.listdir(top):
            p = os.path.join(top, name)
            if os.path.isfile(p) and os.path.getmtime(p) > t:
                found.append(p)
    return found


def readme_python_snippets() -> list[str]:
    """The README's Python snippets: indented code blocks whose first line imports."""
    snippets, block = [], []
    for line in open(README, encoding="utf-8").read().splitlines() + [""]:
        if line.startswith("    "):
            block.append(line[4:])
            continue
        if block and block[0].startswith(("import ", "from ")):
            snippets.append("\n".join(block))
        block = []
    return snippets


def test_readme_has_a_python_snippet():
    assert readme_python_snippets(), "the README shows how to use the Gymnasium environment"


@pytest.mark.parametrize("code", readme_python_snippets())
def test_readme_python_snippet(code, tmp_path):
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = {**os.environ, "VOODOO_QUIET": "1", "VOODOO_WADS": str(tmp_path), "TMPDIR": str(tmp),
           "PYTHONPATH": ROOT + os.pathsep + os.environ.get("PYTHONPATH", "")}
    r = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, f"README snippet failed:\n{code}\n{r.stderr[-3000:]}"
    # the snippet never calls close(): its temporary directories go at exit all the same
    assert not [f for f in os.listdir(tmp) if f.startswith("voodoonet-")], os.listdir(tmp)
