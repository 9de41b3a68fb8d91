"""A small Python model of an ACS program that prints as readable, commented ACS source.

Owns how generated ACS looks: 4-space indentation, `//` comment blocks above scripts and
declarations, one statement per line, blank lines where the generator asks for them. The
output is plain ACS that our compiler and acc both accept. The map generator wraps this in
a restricted layer; this module stays general.

    prog = Program(comment="digit museum: readback scripts")
    prog.define("DOOR_SPEED", 8000)
    prog.global_var(1, "out0", comment="USER1: logit of class 0")
    s = prog.script(1, args=["int v"], comment="neuron h3: copy accumulator light to door")
    s.call("Ceiling_MoveToValue", 12, "DOOR_SPEED", "v", 0)
    with s.while_("v > 0") as body:
        body.assign("v", 1, op="-=")
        body.delay(1)
    text = prog.source()

Expressions are given as Python ints (printed as numbers), strings (ACS expression text
written as is: names, calls, operators), `Str("text")` for a string literal or
`Fixed(1.5)` for a fixed-point literal.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

INDENT = "    "
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_KEYWORDS = {
    "script", "function", "int", "str", "bool", "void", "global", "world", "static", "if",
    "else", "while", "until", "do", "for", "switch", "case", "default", "break", "continue",
    "return", "terminate", "suspend", "restart", "const", "special", "print", "printbold",
    "log", "hudmessage", "hudmessagebold", "strparam", "open", "enter", "net",
}
_TYPES = {"int", "str", "bool"}
_SCRIPT_KINDS = {"closed": "", "open": "OPEN", "enter": "ENTER", "respawn": "RESPAWN",
                 "death": "DEATH", "return": "RETURN", "lightning": "LIGHTNING",
                 "unloading": "UNLOADING", "disconnect": "DISCONNECT"}


@dataclass(frozen=True)
class Str:
    """A string literal; quotes and backslashes are escaped when printed."""
    text: str

    def __str__(self) -> str:
        return '"' + self.text.replace("\\", "\\\\").replace('"', '\\"') + '"'


@dataclass(frozen=True)
class Fixed:
    """A fixed-point literal (value * 65536 in the engine), printed with a decimal point."""
    value: float

    def __str__(self) -> str:
        text = repr(float(self.value))
        if "e" in text or "n" in text:
            raise ValueError(f"fixed-point value {self.value!r} cannot be written in ACS")
        return text


def expr(value) -> str:
    """ACS text of an expression argument."""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int):
        if not -(1 << 31) <= value < (1 << 32):
            raise ValueError(f"{value} does not fit in a 32-bit ACS integer")
        return str(value)
    if isinstance(value, (Str, Fixed)):
        return str(value)
    if isinstance(value, str):
        if not value.strip() or "\n" in value:
            raise ValueError(f"expression text must be one non-empty line: {value!r}")
        return value
    raise TypeError(f"cannot write {type(value).__name__} as an ACS expression")


def check_name(name: str) -> str:
    if not _NAME.match(name) or name.lower() in _KEYWORDS:
        raise ValueError(f"'{name}' is not a usable ACS name")
    return name


def _comment_lines(text: str | None, indent: str) -> list[str]:
    if not text:
        return []
    return [f"{indent}// {line}".rstrip() for line in text.splitlines()]


# ---- statements -------------------------------------------------------------------------------------
class Block:
    """A list of statements; nested blocks come from the if_/while_/for_/... builders."""

    def __init__(self) -> None:
        self.items: list = []

    # simple statements
    def stmt(self, text: str, comment: str | None = None) -> "Block":
        """A raw statement (without the ';'), for anything the builders do not cover."""
        self.items.append(("stmt", expr(text) + ";", comment))
        return self

    def call(self, name: str, *args, comment: str | None = None) -> "Block":
        text = f"{check_name(name)}({', '.join(expr(a) for a in args)})"
        self.items.append(("stmt", text + ";", comment))
        return self

    def assign(self, target: str, value, op: str = "=", comment: str | None = None) -> "Block":
        if op not in ("=", "+=", "-=", "*=", "/=", "%=", "<<=", ">>=", "&=", "|=", "^="):
            raise ValueError(f"unknown assignment operator {op!r}")
        self.items.append(("stmt", f"{expr(target)} {op} {expr(value)};", comment))
        return self

    def declare(self, name: str, value=None, type: str = "int",
                comment: str | None = None) -> "Block":
        if type not in _TYPES:
            raise ValueError(f"unknown ACS type {type!r}")
        init = "" if value is None else f" = {expr(value)}"
        self.items.append(("stmt", f"{type} {check_name(name)}{init};", comment))
        return self

    def delay(self, tics, comment: str | None = None) -> "Block":
        return self.call("Delay", tics, comment=comment)

    def print_(self, *items, bold: bool = False, comment: str | None = None) -> "Block":
        """Print(s:..., d:...): items are (kind, value) pairs like ("s", Str("x"))."""
        parts = []
        for kind, value in items:
            if kind not in ("s", "d", "i", "c", "f", "x", "b", "n"):
                raise ValueError(f"unknown print item kind {kind!r}")
            parts.append(f"{kind}:{expr(value)}")
        fn = "PrintBold" if bold else "Print"
        self.items.append(("stmt", f"{fn}({', '.join(parts)});", comment))
        return self

    def return_(self, value=None) -> "Block":
        self.items.append(("stmt", "return;" if value is None else f"return {expr(value)};",
                           None))
        return self

    def terminate(self) -> "Block":
        self.items.append(("stmt", "terminate;", None))
        return self

    def break_(self) -> "Block":
        self.items.append(("stmt", "break;", None))
        return self

    def continue_(self) -> "Block":
        self.items.append(("stmt", "continue;", None))
        return self

    def comment(self, text: str) -> "Block":
        self.items.append(("comment", text, None))
        return self

    def blank(self) -> "Block":
        self.items.append(("blank", None, None))
        return self

    # compound statements: each returns the inner block (usable with `with`)
    def _nested(self, head: str, comment: str | None, tail: str = "") -> "_Nested":
        inner = _Nested()
        self.items.append(("block", head, comment, inner, tail))
        return inner

    def if_(self, cond, comment: str | None = None) -> "If":
        node = If(expr(cond))
        self.items.append(("if", node, comment))
        return node

    def while_(self, cond, comment: str | None = None) -> "_Nested":
        return self._nested(f"while ({expr(cond)})", comment)

    def until_(self, cond, comment: str | None = None) -> "_Nested":
        return self._nested(f"until ({expr(cond)})", comment)

    def do_while(self, cond, comment: str | None = None) -> "_Nested":
        return self._nested("do", comment, tail=f" while ({expr(cond)});")

    def for_(self, init: str, cond, step: str, comment: str | None = None) -> "_Nested":
        return self._nested(f"for ({init}; {expr(cond)}; {step})", comment)

    def switch(self, value, comment: str | None = None) -> "Switch":
        node = Switch(expr(value))
        self.items.append(("switch", node, comment))
        return node

    # printing
    def lines(self, depth: int) -> list[str]:
        pad = INDENT * depth
        out: list[str] = []
        for item in self.items:
            kind = item[0]
            if kind == "stmt":
                out += _comment_lines(item[2], pad)
                out.append(pad + item[1])
            elif kind == "comment":
                out += _comment_lines(item[1], pad)
            elif kind == "blank":
                out.append("")
            elif kind == "block":
                _, head, comment, inner, tail = item
                out += _comment_lines(comment, pad)
                out.append(pad + head)
                out.append(pad + "{")
                out += inner.lines(depth + 1)
                out.append(pad + "}" + tail)
            elif kind == "if":
                out += _comment_lines(item[2], pad)
                out += item[1].lines(depth)
            elif kind == "switch":
                out += _comment_lines(item[2], pad)
                out += item[1].lines(depth)
        return out


class _Nested(Block):
    def __enter__(self) -> "Block":
        return self

    def __exit__(self, *exc) -> None:
        return None


class If:
    """`if (cond) {then} [else {orelse}]`; `with block.if_(c) as then:` fills `then`."""

    def __init__(self, cond: str):
        self.cond = cond
        self.then = _Nested()
        self.orelse: _Nested | None = None

    def __enter__(self) -> Block:
        return self.then

    def __exit__(self, *exc) -> None:
        return None

    def else_(self) -> _Nested:
        if self.orelse is None:
            self.orelse = _Nested()
        return self.orelse

    def lines(self, depth: int) -> list[str]:
        pad = INDENT * depth
        out = [f"{pad}if ({self.cond})", pad + "{"] + self.then.lines(depth + 1) + [pad + "}"]
        if self.orelse is not None:
            out += [pad + "else", pad + "{"] + self.orelse.lines(depth + 1) + [pad + "}"]
        return out


class Switch:
    """`switch (value) { case N: ... }`: `case(n)` / `default()` return the case's block;
    a case block should end with break_() unless it means to fall through."""

    def __init__(self, value: str):
        self.value = value
        self.cases: list[tuple[str, _Nested]] = []

    def case(self, value) -> _Nested:
        block = _Nested()
        self.cases.append((f"case {expr(value)}:", block))
        return block

    def default(self) -> _Nested:
        block = _Nested()
        self.cases.append(("default:", block))
        return block

    def lines(self, depth: int) -> list[str]:
        pad = INDENT * depth
        out = [f"{pad}switch ({self.value})", pad + "{"]
        for label, block in self.cases:
            out.append(pad + INDENT + label)
            out += block.lines(depth + 2)
        out.append(pad + "}")
        return out


# ---- top level -----------------------------------------------------------------------------------
@dataclass
class Script(Block):
    number: int | str = 1
    kind: str = "closed"
    args: list[str] = field(default_factory=list)
    net: bool = False
    comment: str | None = None

    def __post_init__(self) -> None:
        Block.__init__(self)
        if isinstance(self.number, int):
            if not 1 <= self.number <= 32767:
                raise ValueError(f"script number {self.number} is out of range 1..32767")
        elif not _NAME.match(self.number):
            raise ValueError(f"script number must be an int or a #define'd name: "
                             f"{self.number!r}")
        if self.kind not in _SCRIPT_KINDS:
            raise ValueError(f"unknown script kind {self.kind!r}")
        if len(self.args) > 4:
            raise ValueError("a script takes at most 4 arguments")
        if self.kind not in ("closed", "disconnect") and self.args:
            raise ValueError(f"{self.kind} scripts take no arguments")
        for a in self.args:
            _param(a)

    def header(self) -> str:
        params = ", ".join(self.args) if self.args else "void"
        kind = _SCRIPT_KINDS[self.kind]
        if kind and not self.args:
            head = f"script {self.number} {kind}"
        else:
            head = f"script {self.number} ({params})" + (f" {kind}" if kind else "")
        return head + (" NET" if self.net else "")


@dataclass
class Function(Block):
    name: str = "f"
    returns: str = "void"
    params: list[str] = field(default_factory=list)
    comment: str | None = None

    def __post_init__(self) -> None:
        Block.__init__(self)
        check_name(self.name)
        if self.returns not in _TYPES | {"void"}:
            raise ValueError(f"unknown return type {self.returns!r}")
        for p in self.params:
            _param(p)

    def header(self) -> str:
        params = ", ".join(self.params) if self.params else "void"
        return f"function {self.returns} {self.name}({params})"


def _param(text: str) -> None:
    parts = text.split()
    if len(parts) != 2 or parts[0] not in _TYPES:
        raise ValueError(f"a parameter is 'int name' (or str/bool): {text!r}")
    check_name(parts[1])


@dataclass
class _Decl:
    text: str
    comment: str | None


class Program:
    def __init__(self, comment: str | None = None, includes=("zcommon.acs",)):
        self.comment = comment
        self.includes = list(includes)
        self.defines: list[_Decl] = []
        self.variables: list[_Decl] = []
        self.units: list = []        # scripts and functions in the order they were added
        self._names: set[str] = set()
        self._numbers: set = set()

    def _new_name(self, name: str) -> str:
        check_name(name)
        if name.lower() in self._names:
            raise ValueError(f"'{name}' is declared twice")
        self._names.add(name.lower())
        return name

    def include(self, name: str) -> None:
        if '"' in name or "\n" in name:
            raise ValueError(f"bad include file name {name!r}")
        self.includes.append(name)

    def define(self, name: str, value, comment: str | None = None) -> None:
        self.defines.append(_Decl(f"#define {self._new_name(name)} {expr(value)}", comment))

    def global_var(self, index: int, name: str, type: str = "int", array: bool = False,
                   comment: str | None = None) -> None:
        self._scoped("global", 64, index, name, type, array, comment)

    def world_var(self, index: int, name: str, type: str = "int", array: bool = False,
                  comment: str | None = None) -> None:
        self._scoped("world", 256, index, name, type, array, comment)

    def _scoped(self, scope, limit, index, name, type, array, comment) -> None:
        if not 0 <= index < limit:
            raise ValueError(f"{scope} variable index {index} is out of range 0..{limit - 1}")
        if type not in _TYPES:
            raise ValueError(f"unknown ACS type {type!r}")
        suffix = "[]" if array else ""
        self.variables.append(_Decl(f"{scope} {type} {index}:{self._new_name(name)}{suffix};",
                                    comment))

    def map_var(self, name: str, value=None, type: str = "int", size: int | None = None,
                values=None, comment: str | None = None) -> None:
        """`int name [= value];` or a map array `int name[size] [= {values}];`."""
        if type not in _TYPES:
            raise ValueError(f"unknown ACS type {type!r}")
        text = f"{type} {self._new_name(name)}"
        if size is not None or values is not None:
            if value is not None:
                raise ValueError("an array takes `values`, not `value`")
            text += f"[{size if size is not None else ''}]"
            if values is not None:
                text += " = {" + ", ".join(expr(v) for v in values) + "}"
        elif value is not None:
            text += f" = {expr(value)}"
        self.variables.append(_Decl(text + ";", comment))

    def script(self, number: int | str, kind: str = "closed", args=(), net: bool = False,
               comment: str | None = None) -> Script:
        if number in self._numbers:
            raise ValueError(f"script {number} is defined twice")
        self._numbers.add(number)
        s = Script(number, kind, list(args), net, comment)
        self.units.append(s)
        return s

    def function(self, name: str, returns: str = "void", params=(),
                 comment: str | None = None) -> Function:
        f = Function(self._new_name(name), returns, list(params), comment)
        self.units.append(f)
        return f

    def source(self) -> str:
        out: list[str] = _comment_lines(self.comment, "")
        if out:
            out.append("")
        for inc in self.includes:
            out.append(f'#include "{inc}"')
        if self.includes:
            out.append("")
        for group in (self.defines, self.variables):
            for d in group:
                out += _comment_lines(d.comment, "")
                out.append(d.text)
            if group:
                out.append("")
        for unit in self.units:
            out += _comment_lines(unit.comment, "")
            out.append(unit.header())
            out.append("{")
            out += unit.lines(1)
            out.append("}")
            out.append("")
        while out and out[-1] == "":
            out.pop()
        return "\n".join(out) + "\n"
