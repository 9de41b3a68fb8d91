"""Compiling with the real acc, when one is installed (`--acc external`).

Owns finding acc ($ACC, else `acc` on PATH), running it by its command line
(`acc [-i DIR]... SOURCE OUTPUT`) on a copy of the source in a temporary directory (acc
writes acs.err beside its source: never beside the user's), giving it our own
zcommon.acs/zspecial.acs/zdefs.acs/zwvars.acs when the user has none (made from
acs/defs.py, so both compilers see the same specials and constants), and turning acc's
messages (acs.err, else its output) and exit status into our positioned diagnostics.
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


def _require_acc(acc: str | None) -> str:
    acc = acc or find_acc()
    if acc is None:
        raise AccNotFound("acc was not found: set $ACC to its path or put it on PATH, or "
                          "use --acc internal (our compiler, the default)")
    return acc


def _source_name(filename: str) -> str:
    """The name the copy of the source gets in acc's directory: the user's file name when
    it is a plain name (acc's messages then read naturally), else source.acs."""
    base = os.path.basename(filename)
    if not re.fullmatch(r"[A-Za-z0-9_.+-]{1,100}", base) or base.startswith("."):
        return "source.acs"
    return base if "." in base else base + ".acs"   # acc would add .acs itself


def compile_file_external(path: str, include_dirs=(), acc: str | None = None) -> bytes:
    """Compile the file `path` with acc; returns the lump or raises CompileError/AccNotFound.
    acc runs on a copy in a temporary directory (it writes acs.err beside its source), with
    the file's own directory first on the include path."""
    acc = _require_acc(acc)
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        reason = "no such file" if isinstance(e, FileNotFoundError) else (e.strerror or str(e))
        raise CompileError([Diagnostic(Pos(path), f"cannot read the file: {reason}")]) from None
    return _run_acc(acc, data, path, os.path.dirname(os.path.abspath(path)), include_dirs)


def compile_with_acc(source: str, filename: str = "<acs>", include_dirs=(),
                     acc: str | None = None) -> bytes:
    """Compile ACS source text with acc (the `--acc external` of `compile`, `run`,
    `museum`); `filename` names it in messages, #include files are looked for in
    `include_dirs`, then ours (not in the current directory, whose zcommon.acs could
    differ from the tables the map generator was written against)."""
    acc = _require_acc(acc)
    return _run_acc(acc, source.encode("utf-8"), filename, None, include_dirs)


def _run_acc(acc: str, data: bytes, shown: str, src_dir: str | None, include_dirs) -> bytes:
    with tempfile.TemporaryDirectory(prefix="voodoonet-acc-") as tmp:
        headers = os.path.join(tmp, "headers")
        work = os.path.join(tmp, "src")
        os.mkdir(headers)
        os.mkdir(work)
        for name, text in standard_headers().items():
            with open(os.path.join(headers, name), "w", encoding="utf-8") as f:
                f.write(text)
        name = _source_name(shown)
        source = os.path.join(work, name)
        with open(source, "wb") as f:
            f.write(data)
        out = os.path.join(tmp, "out.o")
        cmd = [acc]
        for d in ([src_dir] if src_dir else []) + [*include_dirs, headers]:
            # the user's headers win over ours
            cmd += ["-i", os.path.abspath(d)]
        cmd += [source, out]
        proc = _spawn(acc, cmd, tmp, shown)
        err_file = os.path.join(work, "acs.err")
        if proc.returncode != 0 or not os.path.isfile(out):
            raise CompileError(_failure(proc, err_file, {name: shown, source: shown}, shown))
        with open(out, "rb") as f:
            lump = f.read()
    if lump[:3] != b"ACS":
        raise CompileError([Diagnostic(Pos(shown), "acc's output is not a BEHAVIOR lump "
                                                    f"(it starts with {lump[:4]!r})")])
    return lump


def _spawn(acc: str, cmd: list[str], cwd: str, shown: str):
    try:
        return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, errors="replace",
                              timeout=ACC_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        message = f"acc did not finish in {ACC_TIMEOUT_S} s"
        raise CompileError([Diagnostic(Pos(shown), message)]) from None
    except OSError as e:
        raise AccNotFound(f"{acc}: cannot run acc: {e.strerror or e}") from None


def _failure(proc, err_file: str, rename: dict[str, str], shown: str) -> list[Diagnostic]:
    """acc's diagnostics: from acs.err (where acc writes every message), else from its
    output; a bare exit status or signal when it said nothing."""
    text = ""
    if os.path.isfile(err_file):
        with open(err_file, encoding="utf-8", errors="replace") as f:
            text = f.read()
    diags = parse_acc_errors(text, rename) if text.strip() else []
    if not diags:
        diags = parse_acc_errors((proc.stderr or "") + (proc.stdout or ""), rename)
    if diags:
        return diags
    if proc.returncode < 0:
        return [Diagnostic(Pos(shown), f"acc was killed by signal {-proc.returncode}")]
    if proc.returncode == 0:
        return [Diagnostic(Pos(shown), "acc exited 0 but wrote no output file")]
    return [Diagnostic(Pos(shown), f"acc failed (exit {proc.returncode})")]
