"""The .dnet front end: text -> Lark tree -> NetBuilder calls -> validated Netlist.

Owns reading .dnet files (any bytes: garbage and huge inputs become positioned errors, never
tracebacks) and turning syntax errors into `file:line:col` diagnostics with a hint. The
grammar is grammar/dnet.lark; meaning and validation live in dsl/ir.py.

Declarations are processed before connections, so a file may use a name before the line
that declares it.
"""
from __future__ import annotations

import os

from lark import Lark, Token, Tree
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken

from .diagnostics import CompileError, Diagnostic, Pos, did_you_mean
from .builder import NetBuilder, make_gate
from .ir import Identity, Netlist, prev_name
from .macros import MACROS
from . import conv

MAX_BYTES = 64 * 1024 * 1024
MAX_DIGITS = 18  # beyond this a literal cannot be a valid weight, bias or bound anyway
MAX_POOL_WINDOW = 99  # the max operation takes at most 99 operands

_PARSER: Lark | None = None

_TOKEN_NAMES = {
    "NAME": "a name", "INT": "a number", "SIGN": "'+' or '-'", "LSQB": "'['", "RSQB": "']'",
    "LPAR": "'('", "RPAR": "')'", "COLON": "':'", "COMMA": "','", "EQUAL": "'='",
    "LBRACE": "'{'", "RBRACE": "'}'", "STAR": "'*'", "__ANON_0": "'->'", "__ANON_1": "'..'",
    "$END": "end of file",
}


def _parser() -> Lark:
    global _PARSER
    if _PARSER is None:
        here = os.path.dirname(os.path.abspath(__file__))
        _PARSER = Lark.open(os.path.join(here, "..", "grammar", "dnet.lark"), parser="lalr",
                            propagate_positions=True, maybe_placeholders=True)
    return _PARSER


def read_text(path: str) -> str:
    """A netlist file's text: a regular file of at most MAX_BYTES (a device or a FIFO would
    read forever), UTF-8 with or without a byte-order mark."""
    import stat

    try:
        info = os.stat(path)
        if not stat.S_ISREG(info.st_mode):
            what = "a directory" if stat.S_ISDIR(info.st_mode) else "not a regular file"
            raise CompileError([Diagnostic(Pos(path), what,
                                           "give the path of a .dnet or .json file")])
        size = info.st_size
        if size > MAX_BYTES:
            raise CompileError([Diagnostic(Pos(path), f"file is {size} bytes",
                                           f"a netlist file holds at most {MAX_BYTES} bytes")])
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise CompileError([Diagnostic(Pos(path), f"cannot read file: {e.strerror}",
                                       "check the path")]) from None
    return data.decode("utf-8-sig", errors="replace")


def parse_file(path: str) -> Netlist:
    return parse(read_text(path), path)


def parse(text: str, filename: str = "<dnet>") -> Netlist:
    tree = _syntax(text, filename)
    return _Elaborator(filename).run(tree)


def _syntax(text: str, filename: str) -> Tree:
    try:
        return _parser().parse(text)
    except UnexpectedInput as e:
        raise CompileError([_syntax_diagnostic(e, text, filename)]) from None


def _describe_char(ch: str) -> str:
    if ch == "\ufffd":
        return "a byte that is not UTF-8 text"
    if ch.isprintable() and not ch.isspace():
        return f"character '{ch}'"
    return f"character {ch!r}"


def _syntax_diagnostic(e: UnexpectedInput, text: str, filename: str) -> Diagnostic:
    line, col = getattr(e, "line", 0) or 0, getattr(e, "column", 0) or 0
    if isinstance(e, UnexpectedCharacters):
        ch = text[e.pos_in_stream] if e.pos_in_stream < len(text) else "?"
        return Diagnostic(Pos(filename, line, col), f"unexpected {_describe_char(ch)}",
                          "a .dnet file holds statements like 'input x[2] : 0..1' "
                          "(see docs/dnet.md)")
    if isinstance(e, UnexpectedEOF):
        return Diagnostic(_end_pos(text, filename), "unexpected end of file",
                          "a statement is unfinished")
    if isinstance(e, UnexpectedToken):
        tok = e.token
        expected = sorted(_TOKEN_NAMES.get(t, repr(t.strip('"').lower())) for t in e.expected)
        what = "end of file" if tok.type == "$END" else f"'{_clip(str(tok))}'"
        if tok.type == "$END":
            end = _end_pos(text, filename)
            line, col = end.line, end.col
        hint = "expected " + ", ".join(expected[:8]) + (" ..." if len(expected) > 8 else "")
        return Diagnostic(Pos(filename, line, col), f"unexpected {what}", hint)
    return Diagnostic(Pos(filename, line, col), "syntax error", str(e).splitlines()[0])


def _end_pos(text: str, filename: str) -> Pos:
    """Just after the last character that is not white space, counting lines as the lexer
    does (by '\n' only: str.splitlines also splits at form feeds and other separators)."""
    end = len(text.rstrip())
    start = text.rfind("\n", 0, end) + 1
    return Pos(filename, text.count("\n", 0, end) + 1, end - start + 1)


def _clip(s: str, n: int = 30) -> str:
    s = s.replace("\n", "\\n")
    return s if len(s) <= n else s[:n] + "..."


class _Elaborator:
    """Walks the parse tree and drives a NetBuilder."""

    def __init__(self, filename: str):
        self.file = filename
        self.b = NetBuilder(filename)
        self.tables: dict[str, tuple[list, Pos]] = {}   # name -> (lut arguments, where)
        self.pools: list = []   # maxpool neurons, resolved once everything is declared

    def pos(self, item) -> Pos:
        if isinstance(item, Token):
            return Pos(self.file, item.line or 0, item.column or 0)
        meta = item.meta
        return Pos(self.file, getattr(meta, "line", 0), getattr(meta, "column", 0))

    def int(self, tok: Token, sign: Token | None = None) -> int:
        text = str(tok)
        if len(text.lstrip("0")) > MAX_DIGITS:
            self.b.error(self.pos(tok), f"number {_clip(text, 20)} is too large",
                         "weights, biases and bounds are 32-bit integers")
            return 0
        v = int(text)
        return -v if sign is not None and str(sign) == "-" else v

    def signed(self, t: Tree) -> int:
        sign, num = t.children
        return self.int(num, sign)

    def run(self, tree: Tree) -> Netlist:
        stmts = [s for s in tree.children if s.data != "table_stmt"]
        for s in tree.children:  # named tables first: gates may use them before their line
            if s.data == "table_stmt":
                self.table_stmt(s)
        decl_kinds = ("input_stmt", "neuron_stmt", "network_stmt", "steps_stmt")
        lanes, inputs, biggest = _declared_lanes(stmts)
        self.b.refuse_oversized(lanes, inputs, self.pos(biggest) if biggest else
                                Pos(self.file, 1, 1))
        inline: list = []
        later: list = []  # (statement index, callable): connections in source order
        for k, s in enumerate(stmts):
            if s.data in decl_kinds:
                before = len(inline)
                getattr(self, s.data)(s, inline)
                if len(inline) > before:
                    ids, sum_tree = inline[-1]
                    later.append((k, lambda ids=ids, t=sum_tree: self.inline_sum(ids, t)))
            else:
                later.append((k, lambda s=s: getattr(self, s.data)(s)))
        for _, action in later:
            action()
        for action in self.pools:  # maxpool windows: every vector is declared by now
            action()
        return self.b.build()

    # -- declarations --------------------------------------------------------------------------
    def network_stmt(self, t: Tree, _inline) -> None:
        self.b.name = str(t.children[0])

    def steps_stmt(self, t: Tree, _inline) -> None:
        tok = t.children[0]
        if tok.type == "OPEN":
            self.b.set_open(self.pos(t))
        else:
            self.b.set_steps(self.int(tok), self.pos(t))

    def decl(self, t: Tree) -> tuple[str, int | None]:
        name, size = t.children
        return str(name), (None if size is None else self.int(size))

    def input_stmt(self, t: Tree, _inline) -> None:
        decl, rng = t.children
        name, size = self.decl(decl)
        lo, hi = (self.signed(c) for c in rng.children)
        self.b.declare_input(name, size, lo, hi, self.pos(decl))

    def neuron_stmt(self, t: Tree, inline) -> None:
        decl, gate_tree, sum_tree = t.children
        name, size = self.decl(decl)
        gname_tok, gargs = gate_tree.children
        gname = str(gname_tok)
        args = [] if gargs is None else [self.arg(a) for a in gargs.children if a is not None]
        if gname == "maxpool":
            self.maxpool_neuron(name, size, args, gate_tree, sum_tree, decl)
            return
        if gname in MACROS:  # an operation (select, equals, ...): dsl/macros.py lowers it
            self.macro_neuron(name, size, gname, args, gate_tree, sum_tree, decl)
            return
        if gname == "lut":
            args = self.named_table(args, self.pos(gate_tree))
        gate = make_gate(self.b, gname, args, self.pos(gate_tree))
        if isinstance(gate, tuple):  # a product: operands resolved after all declarations
            _, a, b = gate
            if size is None and any(isinstance(r[1], tuple) for r in (a, b)):
                self.b.error(self.pos(decl), "a product of slices is a vector",
                             f"declare it as 'neuron {name}[N] : product(a[i:j], b[k:l])'")
                return
            if sum_tree is not None:
                self.b.error(self.pos(sum_tree), "a product neuron takes no weighted sum",
                             "feed the product into another neuron instead")
            self.b.declare_product(name, a, b, self.pos(decl), size)
            return
        if gate is None:
            gate = Identity()  # placeholder so later references do not cascade into errors
        ids = self.b.declare(name, size, gate, self.pos(decl))
        if sum_tree is not None and ids:
            if size is not None:
                self.b.error(self.pos(sum_tree), "an inline sum needs a scalar neuron",
                             f"use 'lines ... -> {name}' statements for a vector")
                return
            inline.append((ids, sum_tree))

    def macro_neuron(self, name, size, kind, args, gate_tree, sum_tree, decl) -> None:
        if size is not None:
            self.b.error(self.pos(decl), f"the result of {kind} is a scalar",
                         f"declare it as 'neuron {name} : {MACROS[kind].split(':')[0]}'")
            return
        if sum_tree is not None:
            self.b.error(self.pos(sum_tree), f"{kind} takes its operands as arguments, not a "
                                             "weighted sum", f"write {MACROS[kind]}")
        self.b.declare_macro(name, kind, args, self.pos(gate_tree), self.pos(decl))

    def arg(self, a: Tree):
        if a.data == "named_arg":
            key, value = a.children
            return str(key), self.value(value), self.pos(key)
        return None, self.value(a.children[0]), self.pos(a)

    def value(self, v):
        if isinstance(v, Token):  # a bare NAME collapsed by ?value
            return (str(v), None)
        if v.data == "signed":
            return self.signed(v)
        if v.data == "range":
            return tuple(self.signed(c) for c in v.children)
        if v.data == "list":
            return [self.signed(c) for c in v.children if c is not None]
        if v.data in ("ref", "prev_ref"):
            return self.ref(v)
        if v.data == "slice_ref":
            name, lo, hi = v.children
            return (str(name), ("slice", None if lo is None else self.int(lo),
                                None if hi is None else self.int(hi)))
        if v.data == "prev_value":  # prev(x[a:b]): the same selection of x's prev vector
            depth, inner = _unnest(v, "prev_value")
            got = self.value(inner)
            if not (isinstance(got, tuple) and isinstance(got[0], str)):
                self.b.error(self.pos(v), "prev of something that is not a value",
                             "write prev(x), prev(x[2]) or prev(x[0:2]) of a declared name")
                return 0
            return (prev_name(got[0], depth), got[1])
        raise AssertionError(v.data)

    def ref(self, r: Tree) -> tuple[str, int | None]:
        """(vector name, index or None) of `x`, `x[3]` or `prev(...)` of one: prev(h[3]) is
        element 3 of the hidden vector h.prev, which the builder makes on first use."""
        depth, r = _unnest(r, "prev_ref")
        name, idx = r.children
        return prev_name(str(name), depth), None if idx is None else self.int(idx)

    # -- connections ----------------------------------------------------------------------------
    def vref(self, t: Tree) -> list[int] | None:
        depth, t = _unnest(t, "vref_prev")
        name = prev_name(str(t.children[0]), depth)
        if t.data == "vref_all":
            return self.b.resolve_vector(name, None, None, self.pos(t))
        if t.data == "vref_one":
            return self.b.resolve_vector(name, self.int(t.children[1]), None, self.pos(t),
                                         single=True)
        start, stop = t.children[1], t.children[2]
        return self.b.resolve_vector(name, None if start is None else self.int(start),
                                     None if stop is None else self.int(stop), self.pos(t))

    def lines_stmt(self, t: Tree) -> None:
        src_t, dst_t, body = t.children
        src, dst = self.vref(src_t), self.vref(dst_t)
        if src is None or dst is None:
            return
        kind = body.data
        pos = self.pos(body)
        if kind == "shaped":
            self.shaped_lines(src, dst, body.children[0])
        elif kind == "dense":
            rows = [r for r in body.children[0].children if r is not None]
            if len(rows) != len(dst):
                self.b.error(pos, f"dense matrix has {len(rows)} rows but the destination "
                                  f"has {len(dst)} neurons",
                             "write one row per destination neuron, one column per source")
                return
            for r, (row, d) in enumerate(zip(rows, dst)):
                vals = [self.signed(c) for c in row.children if c is not None]
                if len(vals) != len(src):
                    self.b.error(self.pos(row), f"row {r} has {len(vals)} weights but the "
                                                f"source has {len(src)} elements",
                                 "one column per source element")
                    continue
                for s, w in zip(src, vals):
                    self.b.add_line(s, d, w, self.pos(row))
        elif kind == "sparse":
            for e in body.children:
                if e is None:
                    continue
                i, j = self.int(e.children[0]), self.int(e.children[1])
                w = self.signed(e.children[2])
                epos = self.pos(e)
                ok = True
                if not 0 <= i < len(src):
                    self.b.error(epos, f"source index {i} is out of range (size {len(src)})",
                                 f"use 0..{len(src) - 1}")
                    ok = False
                if not 0 <= j < len(dst):
                    self.b.error(epos, f"destination index {j} is out of range "
                                       f"(size {len(dst)})", f"use 0..{len(dst) - 1}")
                    ok = False
                if ok:
                    self.b.add_line(src[i], dst[j], w, epos)
        elif kind == "diag":
            vals = [self.signed(c) for c in body.children[0].children if c is not None]
            if not (len(src) == len(dst) == len(vals)):
                self.b.error(pos, f"diag needs equal sizes: source {len(src)}, destination "
                                  f"{len(dst)}, weights {len(vals)}",
                             "diag connects source[i] to destination[i] with weight i")
                return
            for s, d, w in zip(src, dst, vals):
                self.b.add_line(s, d, w, pos)
        elif kind == "all":
            w = self.signed(body.children[0])
            for d in dst:
                for s in src:
                    self.b.add_line(s, d, w, pos)

    def bias_stmt(self, t: Tree) -> None:
        dst_t, val = t.children
        dst = self.vref(dst_t)
        if dst is None:
            return
        pos = self.pos(val)
        if val.data == "list":
            vals = [self.signed(c) for c in val.children if c is not None]
            if len(vals) != len(dst):
                self.b.error(pos, f"bias has {len(vals)} values but the destination has "
                                  f"{len(dst)} neurons", "one value per neuron, or a single number")
                return
        else:
            vals = [self.signed(val)] * len(dst)
        for d, v in zip(dst, vals):
            self.b.add_bias(d, v, pos)

    def init_stmt(self, t: Tree) -> None:
        """init h = 3 / init h = [..]: what prev(h) reads at the first step."""
        dst_t, val = t.children
        dst = self.vref(dst_t)
        if dst is None:
            return
        pos = self.pos(val)
        vals = [self.signed(c) for c in val.children if c is not None] \
            if val.data == "list" else [self.signed(val)] * len(dst)
        if len(vals) != len(dst):
            self.b.error(pos, f"init has {len(vals)} values but '{self.b.nodes[dst[0]].group}' "
                              f"has {len(dst)} elements", "one value per element, or a single "
                                                          "number for all")
            return
        for d, v in zip(dst, vals):
            self.b.set_init(d, v, pos)

    def feedback_stmt(self, t: Tree) -> None:
        ins, srcs = self.vref(t.children[0]), self.vref(t.children[1])
        if ins is not None and srcs is not None:
            self.b.add_feedback(ins, srcs, self.pos(t))

    def done_stmt(self, t: Tree) -> None:
        ids = self.vref(t.children[0])
        if ids is not None:
            self.b.set_done(ids, self.pos(t))

    def output_stmt(self, t: Tree) -> None:
        for v in t.children:
            ids = self.vref(v)
            for i in ids or []:
                self.b.add_output(i, self.pos(v))

    def inline_sum(self, node_ids: list[int], t: Tree) -> None:
        dst = node_ids[0]
        first, *rest = t.children
        terms = []
        sign0, term0 = first.children
        terms.append((sign0, term0))
        for k in range(0, len(rest), 2):
            terms.append((rest[k], rest[k + 1]))
        for sign, term in terms:
            neg = sign is not None and str(sign) == "-"
            pos = self.pos(term) if isinstance(term, Tree) else self.pos(term)
            if term.data in ("mul", "call"):
                self.product_term(dst, term, -1 if neg else 1, pos)
                continue
            if term.data == "constant":
                v = self.int(term.children[0])
                self.b.add_bias(dst, -v if neg else v, pos)
                continue
            if term.data == "scaled":
                w = self.int(term.children[0])
                ref = term.children[1]
            else:
                w = 1
                ref = term.children[0]
            name, idx = self.ref(ref)
            src = self.b.resolve(name, idx, self.pos(ref))
            if src is not None:
                self.b.add_line(src, dst, -w if neg else w, pos)

    # -- convolutions and pools (dsl/conv.py; docs/dnet.md, "Convolutions and pooling") -------
    def shape_params(self, kind: str, args: list, pos: Pos):
        """{name: int or list} of a conv / pool's parameters and {name: Pos}, or None."""
        params, where = {}, {}
        for key, value, apos in args:
            if key is None:
                self.b.error(apos, f"{kind} takes named parameters", f"write {conv.USAGE[kind]}")
                return None
            if key in params:
                self.b.error(apos, f"parameter '{key}' is given twice", "give it once")
                return None
            if not (isinstance(value, int) or isinstance(value, list)):
                self.b.error(apos, f"{kind}: '{key}' must be a number or a list of numbers",
                             f"write {conv.USAGE[kind]}")
                return None
            params[key], where[key] = value, apos
        return params, where

    def make_conv(self, kind: str, args: list, rows, pos: Pos, n_src: int, n_dst: int | None):
        """A checked conv.Conv, or None after a positioned error."""
        got = self.shape_params(kind, args, pos)
        if got is None:
            return None
        params, where = got
        try:
            c = conv.make(kind, params, rows)
            conv.check_sizes(c, n_src, n_dst)
        except conv.ShapeError as e:
            self.b.error(where.get(e.key, pos), e.message, e.hint)
            return None
        return c

    def shaped_lines(self, src: list[int], dst: list[int], body: Tree) -> None:
        """lines SRC -> DST conv(...) [[...]] or avgpool(...)."""
        name_tok, gargs, matrix = body.children
        kind, pos = str(name_tok), self.pos(name_tok)
        if kind not in conv.KINDS:
            hint = did_you_mean(kind, (*conv.KINDS, "dense", "sparse", "diag", "all"))
            self.b.error(pos, f"unknown lines form '{kind}'", hint or
                         "lines take dense, sparse, diag, all, conv(...) or avgpool(...)")
            return
        args = [] if gargs is None else [self.arg(a) for a in gargs.children if a is not None]
        rows = None if matrix is None else [
            [self.signed(c) for c in row.children if c is not None]
            for row in matrix.children if row is not None]
        c = self.make_conv(kind, args, rows, pos, len(src), len(dst))
        if c is not None:
            self.b.add_conv(c, src, dst, pos)

    def maxpool_neuron(self, name, size, args, gate_tree, sum_tree, decl) -> None:
        """neuron DST[N] : maxpool(SRC, in=[C, H, W], kernel=K, stride=S, pad=P)."""
        gpos = self.pos(gate_tree)
        if sum_tree is not None:
            self.b.error(self.pos(sum_tree), "maxpool takes no weighted sum",
                         f"write {conv.USAGE['maxpool']}")
        ids = self.b.declare_maxpool(name, size, self.pos(decl))
        if not args or args[0][0] is not None or not isinstance(args[0][1], tuple) \
                or not isinstance(args[0][1][0], str):
            self.b.error(gpos, "maxpool needs its source first", f"write {conv.USAGE['maxpool']}")
            return
        (ref, sel), rpos = args[0][1], args[0][2]
        self.pools.append(lambda: self.maxpool_windows(ids, size, ref, sel, rpos, args[1:], gpos))

    def maxpool_windows(self, ids, size, ref, sel, rpos, args, gpos) -> None:
        if isinstance(sel, tuple):
            src = self.b.resolve_vector(ref, sel[1], sel[2], rpos)
        else:
            src = self.b.resolve_vector(ref, sel, None, rpos, single=sel is not None)
        if src is None or not ids:
            return
        c = self.make_conv("maxpool", args, None, gpos, len(src), len(ids))
        if c is None:
            return
        area = c.kernel[0] * c.kernel[1]
        if area > MAX_POOL_WINDOW:
            self.b.error(gpos, f"maxpool: a window of {area} elements is too large",
                         f"a maxpool window holds at most {MAX_POOL_WINDOW} elements")
            return
        self.b.set_maxpool(ids, c, src, gpos)

    # -- vector-level forms (docs/dnet.md, "Vector forms") ------------------------------------
    def table_stmt(self, t: Tree) -> None:
        name_tok, gate_tree = t.children
        name, pos = str(name_tok), self.pos(name_tok)
        gname_tok, gargs = gate_tree.children
        if str(gname_tok) != "lut":
            self.b.error(self.pos(gate_tree), f"table '{name}' must be a lut",
                         "write table NAME = lut(LO..HI, [v_LO, ..., v_HI])")
            return
        if name in self.tables:
            self.b.error(pos, f"table '{name}' is already defined at {self.tables[name][1]}",
                         "give each table its own name")
            return
        args = [] if gargs is None else [self.arg(a) for a in gargs.children if a is not None]
        self.tables[name] = (args, pos)

    def named_table(self, args: list, pos: Pos) -> list:
        """lut(NAME) is the lut of `table NAME = lut(...)`; anything else is left alone."""
        if len(args) != 1 or args[0][0] is not None or not isinstance(args[0][1], tuple) \
                or not isinstance(args[0][1][0], str) or args[0][1][1] is not None:
            return args
        name = args[0][1][0]
        if name not in self.tables:
            self.b.error(args[0][2], f"unknown table '{name}'",
                         did_you_mean(name, self.tables)
                         or "define it with 'table NAME = lut(LO..HI, [...])'")
            return [(None, (0, 0), pos), (None, [0], pos)]  # no cascade of errors
        return self.tables[name][0]

    def product_term(self, dst: int, term: Tree, sign: int, pos: Pos) -> None:
        """a*b or dot(u, v) in a sum: hidden product nodes DST.mulK / DST.dotK[i], each added
        to DST with the term's weight (names with a dot cannot clash with written names)."""
        scale, *rest = term.children
        w = sign * (1 if scale is None else self.int(scale))
        dname = self.b.nodes[dst].name
        k = sum(1 for g in self.b.groups if g.startswith(dname + "."))
        if term.data == "mul":
            a, b = ((*self.ref(r), self.pos(r)) for r in rest)
            for nid in self.b.declare_product(f"{dname}.mul{k}", a, b, pos):
                self.b.add_line(nid, dst, w, pos)
            return
        fname, *vrefs = rest
        vrefs = [v for v in vrefs if v is not None]
        if str(fname) != "dot" or len(vrefs) != 2:
            self.b.error(self.pos(fname), f"unknown function '{fname}' with {len(vrefs)} "
                         "arguments", "a sum may use dot(u, v) of two equal-size vectors")
            return
        u, v = self.vref(vrefs[0]), self.vref(vrefs[1])
        if u is None or v is None:
            return
        if len(u) != len(v):
            self.b.error(pos, f"dot of vectors of different sizes ({len(u)} and {len(v)})",
                         "give both operands the same number of elements")
            return
        for nid in self.b.declare_pairs(f"{dname}.dot{k}", list(zip(u, v)), pos):
            self.b.add_line(nid, dst, w, pos)


def _unnest(t: Tree, kind: str) -> tuple[int, Tree]:
    """prev(prev(...x...)) nested K deep: (K, the tree of x), without recursion (a file
    may nest them thousands deep)."""
    depth = 0
    while isinstance(t, Tree) and t.data == kind:
        depth += 1
        t = t.children[0]
    return depth, t


def _declared_lanes(stmts) -> tuple[int, int, object]:
    """(inputs and gated neuron elements, inputs, the largest such declaration) that the
    declarations ask for, read off the tree before anything is built
    (NetBuilder.refuse_oversized)."""
    lanes = inputs = most = 0
    biggest = None
    for s in stmts:
        if s.data not in ("input_stmt", "neuron_stmt"):
            continue
        size = s.children[0].children[1]
        n = 1 if size is None or len(str(size)) > MAX_DIGITS else int(str(size))
        if s.data == "input_stmt":
            inputs += n
        elif str(s.children[1].children[0]) in ("identity", "product"):
            continue
        lanes += n
        if n > most:
            most, biggest = n, s.children[0]
    return lanes, inputs, biggest
