"""The ACS syntax tree: plain node classes built by acs/parser.py and read by acs/compiler.py.

Every node carries `line` and `col` of the token that best names it (the operator of a
binary expression, the keyword of a statement, the name of a call) and `depth`, the height
of its subtree in the levels the compiler recurses through, computed bottom-up while
parsing so that the compiler can refuse absurdly deep input before any recursive pass
runs. Top-level items also carry the file they came
from (an `#include` splices items of another file).
"""
from __future__ import annotations


class Node:
    __slots__ = ("line", "col", "depth")

    def __repr__(self) -> str:  # for debugging only
        fields = ", ".join(f"{k}={getattr(self, k)!r}" for k in self.__slots__
                           if k not in ("line", "col", "depth"))
        return f"{type(self).__name__}({fields})"


def children(node) -> list:
    """The Node children of `node` (through lists and the tuples of print items)."""
    out = []
    for name in type(node).__slots__:
        v = getattr(node, name, None)
        if isinstance(v, Node):
            out.append(v)
        elif isinstance(v, (list, tuple)):
            for x in v:
                if isinstance(x, Node):
                    out.append(x)
                elif isinstance(x, tuple):
                    out += [y for y in x if isinstance(y, Node)]
    return out


def deepest(node, limit: int):
    """A node at nesting level `limit` on the deepest path below `node` (iterative). A
    step to a child as deep as its parent (a left-deep chain's spine) is not a level."""
    level = 0
    while level < limit:
        kids = children(node)
        if not kids:
            break
        child = max(kids, key=lambda k: k.depth)
        if child.depth < node.depth:
            level += 1
        node = child
    return node


def _depth(*children) -> int:
    d = 0
    for c in children:
        if c is not None and c.depth > d:
            d = c.depth
    return d + 1


def _depth_list(items) -> int:
    d = 0
    for c in items:
        if c is not None and c.depth > d:
            d = c.depth
    return d + 1


# ---- expressions -------------------------------------------------------------------------------
class Expr(Node):
    __slots__ = ("_const",)   # cached constant value (see Compiler.fold); _UNSET until folded


_UNSET = object()


class Num(Expr):
    __slots__ = ("value",)

    def __init__(self, value: int, line: int, col: int):
        self.value, self.line, self.col, self.depth = value, line, col, 1
        self._const = _UNSET


class Str(Expr):
    __slots__ = ("text",)

    def __init__(self, text: str, line: int, col: int):
        self.text, self.line, self.col, self.depth = text, line, col, 1
        self._const = _UNSET


class Name(Expr):
    __slots__ = ("name",)

    def __init__(self, name: str, line: int, col: int):
        self.name, self.line, self.col, self.depth = name, line, col, 1
        self._const = _UNSET


class Call(Expr):
    __slots__ = ("name", "args", "const_args")

    def __init__(self, name: str, args: list, const_args: bool, line: int, col: int):
        self.name, self.args, self.const_args = name, args, const_args
        self.line, self.col, self.depth = line, col, _depth_list(args)
        self._const = _UNSET


class PrintCall(Expr):
    """Print/PrintBold/Log/HudMessage/HudMessageBold/StrParam: `items` are (kind, expr, line,
    col) for `s:`/`d:`... parts; `opts` the expressions after `;` (HudMessage's layout)."""
    __slots__ = ("func", "items", "opts")

    def __init__(self, func: str, items: list, opts: list, line: int, col: int):
        self.func, self.items, self.opts = func, items, opts
        self.line, self.col = line, col
        self.depth = _depth_list([it[1] for it in items] + opts)
        self._const = _UNSET


class Unary(Expr):
    __slots__ = ("op", "operand")

    def __init__(self, op: str, operand: Expr, line: int, col: int):
        self.op, self.operand, self.line, self.col = op, operand, line, col
        self.depth = operand.depth + 1
        self._const = _UNSET


class Binary(Expr):
    """`left op right`. The compiler walks a left-deep chain (`a + b + ... + z`) in a
    loop, so the left operand does not add a level: depth counts only real nesting."""
    __slots__ = ("op", "left", "right")

    def __init__(self, op: str, left: Expr, right: Expr, line: int, col: int):
        self.op, self.left, self.right, self.line, self.col = op, left, right, line, col
        self.depth = max(left.depth, right.depth + 1)
        self._const = _UNSET


class Ternary(Expr):
    __slots__ = ("cond", "then", "other")

    def __init__(self, cond: Expr, then: Expr, other: Expr, line: int, col: int):
        self.cond, self.then, self.other, self.line, self.col = cond, then, other, line, col
        self.depth = _depth(cond, then, other)
        self._const = _UNSET


class Assign(Expr):
    """`target op value` with op one of = += -= *= /= %= <<= >>= &= |= ^=."""
    __slots__ = ("op", "target", "value")

    def __init__(self, op: str, target: Expr, value: Expr, line: int, col: int):
        self.op, self.target, self.value, self.line, self.col = op, target, value, line, col
        self.depth = _depth(target, value)
        self._const = _UNSET


class IncDec(Expr):
    __slots__ = ("op", "target", "prefix")

    def __init__(self, op: str, target: Expr, prefix: bool, line: int, col: int):
        self.op, self.target, self.prefix, self.line, self.col = op, target, prefix, line, col
        self.depth = target.depth + 1
        self._const = _UNSET


class Index(Expr):
    __slots__ = ("base", "index")

    def __init__(self, base: Expr, index: Expr, line: int, col: int):
        self.base, self.index, self.line, self.col = base, index, line, col
        self.depth = _depth(base, index)
        self._const = _UNSET


# ---- declarations --------------------------------------------------------------------------------
class VarItem(Node):
    """One declarator: `[N:]name[dims...] [= init]`; `dims` holds an Expr or None per `[]`;
    `init` is an Expr, an InitList, or None."""
    __slots__ = ("number", "name", "dims", "init")

    def __init__(self, number, name, dims, init, line, col):
        self.number, self.name, self.dims, self.init = number, name, dims, init
        self.line, self.col = line, col
        self.depth = _depth_list(list(dims) + [init])


class InitList(Node):
    __slots__ = ("items",)

    def __init__(self, items, line, col):
        self.items, self.line, self.col = items, line, col
        self.depth = _depth_list(items)


class VarDecl(Node):
    """`[storage] type item, item;` at top level (storage None, 'global', 'world', 'static')
    or inside a body (storage None)."""
    __slots__ = ("storage", "type", "items", "file")

    def __init__(self, storage, type_, items, line, col):
        self.storage, self.type, self.items, self.line, self.col = storage, type_, items, line, col
        self.depth = _depth_list(items)
        self.file = ""


# ---- statements -----------------------------------------------------------------------------
class Block(Node):
    __slots__ = ("stmts", "end")   # end: (line, col) of the closing brace

    def __init__(self, stmts, line, col, end=(0, 0)):
        self.stmts, self.line, self.col, self.end = stmts, line, col, end
        self.depth = _depth_list(stmts)


class ExprStmt(Node):
    __slots__ = ("expr",)

    def __init__(self, expr, line, col):
        self.expr, self.line, self.col, self.depth = expr, line, col, expr.depth + 1


class If(Node):
    __slots__ = ("cond", "then", "other")

    def __init__(self, cond, then, other, line, col):
        self.cond, self.then, self.other, self.line, self.col = cond, then, other, line, col
        self.depth = _depth(cond, then, other)


class While(Node):
    """while/until loops (`until` negates the test)."""
    __slots__ = ("cond", "body", "until")

    def __init__(self, cond, body, until, line, col):
        self.cond, self.body, self.until, self.line, self.col = cond, body, until, line, col
        self.depth = _depth(cond, body)


class DoWhile(Node):
    __slots__ = ("body", "cond", "until")

    def __init__(self, body, cond, until, line, col):
        self.body, self.cond, self.until, self.line, self.col = body, cond, until, line, col
        self.depth = _depth(cond, body)


class For(Node):
    """`init` is a VarDecl, a list of Expr, or None; `step` a list of Expr."""
    __slots__ = ("init", "cond", "step", "body")

    def __init__(self, init, cond, step, body, line, col):
        self.init, self.cond, self.step, self.body = init, cond, step, body
        self.line, self.col = line, col
        parts = [cond, body] + list(step)
        if isinstance(init, list):
            parts += init
        else:
            parts.append(init)
        self.depth = _depth_list(parts)


class Case(Node):
    """A `case EXPR:` label (expr) or `default:` (expr None) inside a switch body."""
    __slots__ = ("expr",)

    def __init__(self, expr, line, col):
        self.expr, self.line, self.col = expr, line, col
        self.depth = 1 if expr is None else expr.depth + 1


class Switch(Node):
    __slots__ = ("expr", "body")   # body: statements and Case labels in source order

    def __init__(self, expr, body, line, col):
        self.expr, self.body, self.line, self.col = expr, body, line, col
        self.depth = _depth_list([expr] + body)


class Jump(Node):
    """break / continue / terminate / suspend / restart / return [expr]: `kind` says which."""
    __slots__ = ("kind", "value")

    def __init__(self, kind, value, line, col):
        self.kind, self.value, self.line, self.col = kind, value, line, col
        self.depth = 1 if value is None else value.depth + 1


class Empty(Node):
    __slots__ = ()

    def __init__(self, line, col):
        self.line, self.col, self.depth = line, col, 1


# ---- top level -----------------------------------------------------------------------------------
class Param(Node):
    __slots__ = ("type", "name")

    def __init__(self, type_, name, line, col):
        self.type, self.name, self.line, self.col, self.depth = type_, name, line, col, 1


class Script(Node):
    """`ident` is an int, a define name (str, resolved later) or a Str (named script)."""
    __slots__ = ("ident", "ident_line", "ident_col", "params", "flags", "body", "file")

    def __init__(self, ident, ident_pos, params, flags, body, line, col):
        self.ident, self.params, self.flags, self.body = ident, params, flags, body
        self.ident_line, self.ident_col = ident_pos
        self.line, self.col = line, col
        self.depth = body.depth + 1
        self.file = ""


class Function(Node):
    __slots__ = ("rettype", "name", "params", "body", "file")

    def __init__(self, rettype, name, params, body, line, col):
        self.rettype, self.name, self.params, self.body = rettype, name, params, body
        self.line, self.col = line, col
        self.depth = body.depth + 1
        self.file = ""


class Directive(Node):
    """#include / #import / #library / #define / #nocompact / #encryptstrings ...:
    `kind` is the directive without '#', lower case; `name`/`value` as it takes."""
    __slots__ = ("kind", "name", "value", "file")

    def __init__(self, kind, name, value, line, col):
        self.kind, self.name, self.value, self.line, self.col = kind, name, value, line, col
        self.depth = 1 if value is None or not isinstance(value, Node) else value.depth + 1
        self.file = ""


class SpecialDecl(Node):
    """`special N:name(min[, max]), ...;` : items are (number, name, min, max, line, col)."""
    __slots__ = ("items", "file")

    def __init__(self, items, line, col):
        self.items, self.line, self.col, self.depth = items, line, col, 1
        self.file = ""
