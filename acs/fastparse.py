"""Machine-written ACS, parsed fast: one real parse per shape of line.

The map compiler writes ACS of tens of thousands of statements that differ only in their
numbers (mapgen/program.py's bus operations), and the LALR parser spends most of a big
map's compile time on them. Here every line is reduced to its *shape* (its integer
literals taken out); the real parser (acs/parser.py) parses each shape once, with
placeholder numbers, and every line of that shape gets a copy of that tree with its own
numbers put back. The trees are the real parser's, so the compiler makes the same
BEHAVIOR of them (tests/test_acs_fastparse.py compares the two, byte for byte, on
compiled maps).

Only the layout the map compiler writes is taken: one statement or a few per line,
`// ...` comments at a line's end, `{` and `}` on lines of their own after a `script` or
`if (...)` header, `#include "zcommon.acs"`, top-level declarations one per line. Any
other line (a string, a brace elsewhere, a comment mark inside code...) hands the whole
source to the real parser: `parse` never guesses.
"""
from __future__ import annotations

import re

from . import ast as A

_NUM = re.compile(r"(?<![\w.])\d+(?![\w.])")
_BASE = 900_000_001    # placeholders: the k-th number of a shape is _BASE + k
_STANDARD = '#include "zcommon.acs"'


class NotGenerated(Exception):
    """A line this parser does not take: the caller parses the source the usual way."""


class _Shapes:
    """Shape -> its parsed tree (statements of a dummy script, or a top-level item)."""

    def __init__(self) -> None:
        self.stmts: dict[str, list] = {}
        self.items: dict[str, object] = {}
        self.headers: dict[str, object] = {}

    @staticmethod
    def split(code: str) -> tuple[str, list[int]]:
        nums = [int(m) for m in _NUM.findall(code)]
        k = iter(range(len(nums)))
        shape = _NUM.sub(lambda m: str(_BASE + next(k)), code)
        return shape, nums

    def statements(self, code: str) -> list:
        shape, nums = self.split(code)
        tree = self.stmts.get(shape)
        if tree is None:
            tree = self.stmts[shape] = _parse_one(f"script 1 (void)\n{{\n{shape}\n}}\n"
                                                  )[0].body.stmts
        return [_clone(s, nums) for s in tree]

    def item(self, code: str):
        shape, nums = self.split(code)
        tree = self.items.get(shape)
        if tree is None:
            parsed = _parse_one(shape + "\n")
            if len(parsed) != 1:
                raise NotGenerated(code)
            tree = self.items[shape] = parsed[0]
        return _clone(tree, nums)

    def header(self, code: str):
        """A `script ...` or `if (...)` line, parsed with an empty body."""
        shape, nums = self.split(code)
        tree = self.headers.get(shape)
        if tree is None:
            if code.startswith("script"):
                tree = _parse_one(shape + " {}\n")[0]
            else:
                tree = _parse_one(f"script 1 (void)\n{{\n{shape} {{}}\n}}\n")[0].body.stmts[0]
            self.headers[shape] = tree
        return _clone(tree, nums)


def _parse_one(text: str) -> list:
    from .parser import parse as real_parse

    return real_parse(text, "<shape>")


_SLOTS: dict[type, tuple[str, ...]] = {}


def _slots(cls) -> tuple[str, ...]:
    if cls not in _SLOTS:
        _SLOTS[cls] = tuple(s for c in cls.__mro__ for s in getattr(c, "__slots__", ()))
    return _SLOTS[cls]


def _clone(node, nums: list[int]):
    """A copy of a template tree with each placeholder number replaced by its number."""
    if isinstance(node, list):
        return [_clone(x, nums) for x in node]
    if isinstance(node, tuple):
        return tuple(_clone(x, nums) for x in node)
    if not isinstance(node, A.Node):
        if isinstance(node, int) and not isinstance(node, bool) and node >= _BASE \
                and node - _BASE < len(nums):
            return nums[node - _BASE]
        return node
    new = object.__new__(type(node))
    for name in _slots(type(node)):
        if hasattr(node, name):
            setattr(new, name, _clone(getattr(node, name), nums))
    return new


def parse(text: str) -> list:
    """The top-level items of generated ACS text (as acs/__init__._load returns them:
    standard headers left out), or NotGenerated."""
    shapes = _Shapes()
    items: list = []
    stack: list[tuple[object, list, int]] = []   # (header tree, statements, line)
    header = None
    for lineno, raw in enumerate(text.splitlines(), 1):
        code = raw.split("//", 1)[0].strip()
        if not code:
            continue
        if '"' in code:
            if code == _STANDARD and not stack:
                continue
            raise NotGenerated(raw)
        if code == "{":
            if header is None:
                raise NotGenerated(raw)
            stack.append((header, [], lineno))
            header = None
        elif code == "}":
            if header is not None or not stack:
                raise NotGenerated(raw)
            head, stmts, line = stack.pop()
            node = _close(head, stmts, line)
            (stack[-1][1] if stack else items).append(node)
        elif header is not None:
            raise NotGenerated(raw)
        elif code.startswith("if (") and code.endswith("}") and stack:   # one whole line
            stack[-1][1].extend(_at(s, lineno) for s in shapes.statements(code))
        elif "{" in code or "}" in code:
            raise NotGenerated(raw)
        elif code.startswith("script ") or code.startswith("if ("):
            header = _at(shapes.header(code), lineno)
        elif not stack:
            items.append(_at(shapes.item(code), lineno))
        else:
            stack[-1][1].extend(_at(s, lineno) for s in shapes.statements(code))
    if stack or header is not None:
        raise NotGenerated("an unclosed block")
    return items


def _close(head, stmts: list, line: int):
    """A script or an if with its block, built as the real parser builds them (depths)."""
    body = A.Block(stmts, line, 1)
    if isinstance(head, A.Script):
        s = A.Script(head.ident, (head.ident_line, head.ident_col), head.params, head.flags,
                     body, head.line, head.col)
        return s
    if isinstance(head, A.If) and head.other is None:
        return A.If(head.cond, body, None, head.line, head.col)
    raise NotGenerated(f"a block after {type(head).__name__}")


def _at(node, line: int):
    """The node with its line (and its subtree's) set to `line`: messages name it."""
    todo = [node]
    while todo:
        n = todo.pop()
        if isinstance(n, A.Node):
            n.line = line
            if isinstance(n, A.Script):
                n.ident_line = line
            todo += A.children(n)
    return node


def compile_generated(source: str, filename: str) -> bytes:
    """BEHAVIOR of machine-written ACS: this parser's trees when it takes every line,
    else the usual compile (acs.compile_source), which is also what reports any error."""
    import sys

    from . import _check_text, compile_source
    from .compiler import Compiler

    try:
        _check_text(source, filename)
        items = parse(source)
    except NotGenerated:
        return compile_source(source, filename)
    except Exception:   # whatever the real parser says of a shape, it says it in full
        return compile_source(source, filename)
    compact = not any(getattr(it, "kind", None) == "nocompact" for it in items)
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old, 20000))
    try:
        return Compiler(compact).compile(items)
    finally:
        sys.setrecursionlimit(old)
