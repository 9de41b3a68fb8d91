"""ACS toolchain: our ACS compiler, a readable-ACS emitter, and WAD packing.

Public API:
    compile_source(text, filename="<acs>", include_dirs=()) -> bytes   BEHAVIOR lump
    compile_file(path, include_dirs=()) -> bytes
    acs.wad.write_wad / read_wad / MapLump     WAD container (omgifol)
    acs.emit.Program ...                       readable ACS source for map generation
    acs.external.compile_with_acc(...)         the real acc, when installed

The pipeline, one module per pass: parser (text -> AST, grammar/acs.lark) -> compiler
(names, checks, code) -> assembler (encoding, chunks). This module owns the loading of
source files: #include splicing, the source size bound, and the choice of encoding.
"""
from __future__ import annotations

import os
import sys

from dsl.diagnostics import CompileError, Diagnostic, Pos

# Sources above this size are refused up front: compiling takes ~0.1 s per 50 KB, and a
# map's scripts are far smaller (the 10,000-line benchmark is ~400 KB).
MAX_SOURCE_CHARS = 4 * 1024 * 1024
MAX_INCLUDE_DEPTH = 16

__all__ = ["compile_source", "compile_file", "CompileError"]


def _error(filename: str, line: int, col: int, message: str, hint: str = "") -> CompileError:
    return CompileError([Diagnostic(Pos(filename, line, col), message, hint)])


def _check_text(text: str, filename: str) -> None:
    if len(text) > MAX_SOURCE_CHARS:
        raise _error(filename, 1, 1, f"source is {len(text):,} characters; the limit is "
                                     f"{MAX_SOURCE_CHARS:,}",
                     "split the scripts over several files or maps")
    nul = text.find("\0")
    if nul >= 0:
        line = text.count("\n", 0, nul) + 1
        col = nul - (text.rfind("\n", 0, nul) + 1) + 1
        raise _error(filename, line, col, "the file contains a NUL byte; is it a binary file?",
                     "pass the .acs source, not a compiled lump")


def read_source(path: str, shown: str | None = None) -> str:
    """The text of an ACS file (UTF-8, or Latin-1 as old editors wrote), or a CompileError."""
    shown = shown or path
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_SOURCE_CHARS + 1)
    except OSError as e:
        raise _error(shown, 0, 0, f"cannot read the file: {e.strerror or e}") from None
    if len(data) > MAX_SOURCE_CHARS:
        raise _error(shown, 1, 1, f"source is larger than {MAX_SOURCE_CHARS:,} bytes",
                     "split the scripts over several files or maps")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("latin-1")


def _with_includes(err: CompileError, included: dict[str, tuple[Pos, ...]]) -> CompileError:
    """The error with, under each problem in an included file, the #include lines that
    brought that file in (innermost first), as a C compiler shows them."""
    if not any(d.pos.file in included for d in err.diagnostics):
        return err
    return CompileError([Diagnostic(d.pos, d.message, d.hint, d.severity, d.notes + tuple(
        f"included from {p}" for p in included.get(d.pos.file, ()))) for d in err.diagnostics])


def _load(text: str, filename: str, include_dirs, included: dict | None = None) -> list:
    """Parse `text` and splice in every #include (not the standard headers, which we
    provide). Iterative, with a depth bound, so include cycles end in an error. `included`
    receives, per included file name, the chain of #include positions that brought it in;
    an error inside an included file names them."""
    included = {} if included is None else included
    try:
        return _splice(text, filename, include_dirs, included)
    except CompileError as e:
        raise _with_includes(e, included) from None


def _splice(text: str, filename: str, include_dirs, included: dict) -> list:
    from . import parser
    from .defs import STANDARD_HEADERS

    _check_text(text, filename)
    out: list = []
    # stack of (iterator over items, directory, chain of included real paths)
    top = parser.parse(text, filename)
    if os.path.isfile(filename):
        base, chain = os.path.dirname(os.path.abspath(filename)), (os.path.abspath(filename),)
    else:
        base, chain = os.getcwd(), ()
    stack = [(iter(top), base, chain)]
    while stack:
        items, here, chain = stack[-1]
        item = next(items, None)
        if item is None:
            stack.pop()
            continue
        if getattr(item, "kind", None) != "include":
            out.append(item)
            continue
        name = item.value
        if os.path.basename(name).lower() in STANDARD_HEADERS:
            continue
        found = None
        for d in (here, *include_dirs):
            cand = os.path.join(d, name)
            if os.path.isfile(cand):
                found = os.path.abspath(cand)
                break
        if found is None:
            raise _error(item.file, item.line, item.col, f"cannot find include file '{name}'",
                         "searched " + ", ".join([here, *map(str, include_dirs)]))
        if found in chain or len(chain) >= MAX_INCLUDE_DEPTH:
            raise _error(item.file, item.line, item.col,
                         f"'{name}' includes itself (directly or through other files)"
                         if found in chain else f"includes nested deeper than {MAX_INCLUDE_DEPTH}",
                         "remove the circular #include")
        included.setdefault(name, (Pos(item.file, item.line, item.col),
                                   *included.get(item.file, ())))
        sub_text = read_source(found, name)
        _check_text(sub_text, name)
        sub = parser.parse(sub_text, name)
        stack.append((iter(sub), os.path.dirname(found), chain + (found,)))
    return out


def compile_source(text: str, filename: str = "<acs>", include_dirs=()) -> bytes:
    """Compile ACS source text to a BEHAVIOR lump (ACSe; ACSE when #nocompact is given).
    Raises CompileError with every problem found."""
    from .compiler import Compiler

    if not isinstance(text, str):
        raise TypeError("compile_source takes the source as str")
    included: dict = {}
    items = _load(text, filename, include_dirs, included)
    compact = not any(getattr(it, "kind", None) == "nocompact" for it in items)
    # The passes recurse once per nesting level, and nesting is bounded by MAX_NESTING;
    # make sure Python's own limit is not the tighter one.
    old_limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old_limit, 20000))
    try:
        return Compiler(compact).compile(items)
    except CompileError as e:
        raise _with_includes(e, included) from None
    finally:
        sys.setrecursionlimit(old_limit)


def compile_file(path: str, include_dirs=()) -> bytes:
    return compile_source(read_source(path), path, include_dirs)
