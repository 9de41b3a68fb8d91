"""Compiling with the real acc, when one is installed (`--acc external`).

Owns finding acc ($ACC, else `acc` on PATH), running it in a temporary directory, giving it
our own zcommon.acs/zspecial.acs/zdefs.acs/zwvars.acs when the user has none (made from
acs/defs.py, so both compilers see the same specials and constants), and turning acc's
error output into our positioned diagnostics.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile

from dsl.diagnostics import CompileError, Diagnostic, Pos, VoodooError

from .defs import CONSTANTS, SPECIALS

ACC_TIMEOUT_S = 120


class AccNotFound(VoodooError):
    pass


def find_acc() -> str | None:
    """The acc executable: $ACC if set (a path or a name on PATH), else `acc` on PATH."""
    env = os.environ.get("ACC")
    if env:
        if os.path.isfile(env) and os.access(env, os.X_OK):
            return os.path.abspath(env)
        return shutil.which(env)
    return shutil.which("acc")


def standard_headers() -> dict[str, str]:
    """Our zcommon.acs and the files it includes, for an acc that has none beside it."""
    items = sorted(SPECIALS.values(), key=lambda s: (s.number < 0, abs(s.number)))
    decl = ",\n".join(f"    {s.number}:{s.name}({s.min_args}"
                      + (f",{s.max_args})" if s.max_args != s.min_args else ")")
                      for s in items)
    defines = "\n".join(f"#define {name.upper():<32} {value if value >= 0 else hex(value & 0xFFFFFFFF)}"
                        for name, value in CONSTANTS.items())
    return {
        "zcommon.acs": "// Made by VoodooNet (acs/external.py) from its own tables.\n"
                       '#include "zspecial.acs"\n#include "zdefs.acs"\n#include "zwvars.acs"\n',
        "zspecial.acs": f"special\n{decl};\n",
        "zdefs.acs": defines + "\n",
        "zwvars.acs": "// no world variables\n",
    }


_GCC = re.compile(r"^(?P<file>.+?):(?P<line>\d+): (?P<msg>.*)$")
_VCC = re.compile(r"^(?P<file>.+?)\((?P<line>\d+)\) : (?:error \d+: )?(?P<msg>.*)$")


def parse_acc_errors(output: str, rename: dict[str, str] | None = None) -> list[Diagnostic]:
    """acc's messages ('file:line: text' or 'file(line) : error N: text', each possibly
    followed by '> source' and '>   ^' lines giving the column) as Diagnostics."""
    rename = rename or {}
    diags: list[Diagnostic] = []
    lines = output.splitlines()
    i = 0
    while i < len(lines):
        text = lines[i]
        m = _GCC.match(text) or _VCC.match(text)
        if m is None or text.startswith(">"):
            i += 1
            continue
        col = 0
        if i + 2 < len(lines) and lines[i + 1].startswith(">") and lines[i + 2].startswith(">") \
                and lines[i + 2].rstrip().endswith("^"):
            # acc prints the source after "> " and the caret after ">": the caret's index
            # minus one is the 1-based column it sits under.
            col = len(lines[i + 2].rstrip()) - 2
            i += 2
        name = m.group("file")
        name = rename.get(os.path.basename(name), rename.get(name, name))
        diags.append(Diagnostic(Pos(name, int(m.group("line")), col),
                                m.group("msg").strip() + " (acc)"))
        i += 1
    if not diags and output.strip():
        message = next((ln.strip() for ln in lines
                        if ln.strip() and "ERROR" not in ln and not ln.startswith("Line ")),
                       output.strip().splitlines()[0])
        diags.append(Diagnostic(Pos("acc"), message))
    return diags


def compile_file_external(path: str, include_dirs=(), acc: str | None = None) -> bytes:
    """Compile `path` with acc; returns the lump or raises CompileError/AccNotFound."""
    acc = acc or find_acc()
    if acc is None:
        raise AccNotFound("acc was not found: set $ACC to its path or put it on PATH, or "
                          "use --acc internal (our compiler, the default)")
    if not os.path.isfile(path):
        raise CompileError([Diagnostic(Pos(path), "cannot read the file: no such file")])
    src_dir = os.path.dirname(os.path.abspath(path))
    with tempfile.TemporaryDirectory(prefix="voodoonet-acc-") as tmp:
        headers = os.path.join(tmp, "headers")
        os.mkdir(headers)
        for name, text in standard_headers().items():
            with open(os.path.join(headers, name), "w", encoding="utf-8") as f:
                f.write(text)
        out = os.path.join(tmp, "out.o")
        cmd = [acc]
        for d in (src_dir, *include_dirs, headers):   # the user's headers win over ours
            cmd += ["-i", os.path.abspath(d)]
        cmd += [os.path.abspath(path), out]
        try:
            proc = subprocess.run(cmd, cwd=tmp, capture_output=True, text=True,
                                  errors="replace", timeout=ACC_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise CompileError([Diagnostic(Pos(path), f"acc did not finish in {ACC_TIMEOUT_S} s")]) \
                from None
        except OSError as e:
            raise AccNotFound(f"{acc}: cannot run acc: {e.strerror or e}") from None
        output = (proc.stderr or "") + (proc.stdout or "")
        if proc.returncode != 0 or not os.path.isfile(out):
            diags = parse_acc_errors(output, {os.path.basename(path): path})
            if not diags:
                diags = [Diagnostic(Pos(path), f"acc failed (exit {proc.returncode})")]
            raise CompileError(diags)
        with open(out, "rb") as f:
            return f.read()
