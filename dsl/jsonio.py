"""The JSON form of the netlist IR, for tools that emit netlists (docs/dnet.md, "JSON form").

    {"format": "voodoonet.netlist", "version": 1, "name": "xor", "steps": 1,
     "vectors": [{"name": "a", "size": null, "gate": {"kind": "input", "lo": 0, "hi": 1}},
                 {"name": "h", "size": 2, "gate": {"kind": "step", "t": 1}}, ...],
     "lines": [["a", "h[0]", 1], ...],          # source element, destination element, weight
     "bias": {"h[0]": -1},
     "outputs": ["y"]}

A recurrent netlist also has `"steps": "open"` (or an integer), prev vectors
`{"name": "h.prev", "size": 2, "gate": {"kind": "prev", "of": "h", "init": [0, 1]}}` (the
value of h at the previous step; a scalar's init is one integer), `"feedback": {"x":
"y"}` (input element <- node element) and `"done": "d"`.

Loading goes through the same NetBuilder as the .dnet parser, so the checks and messages
are the same; positions name the JSON path (`vectors[3].gate`) since JSON has no columns
to speak of once parsed.
"""
from __future__ import annotations

import json
import re

from .diagnostics import CompileError, Diagnostic, Pos, did_you_mean
from .builder import NetBuilder, make_gate
from .ir import (INT_LIMIT, Identity, Input, Lut, Netlist, Prev, Product, Relu, Spike, Step,
                 canonical_name, prev_name)

FORMAT = "voodoonet.netlist"
VERSION = 1
# fullmatch, never `$`: `$` also matches before a trailing newline ("zz\n").
# The network's name becomes a file name: plain. Vector names may hold dots: the hidden
# products of a*b and dot(u, v) terms (DST.mul0, DST.dot1).
_NET_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,99}")
_SEGMENT = r"[A-Za-z_][A-Za-z0-9_]{0,99}"
_NAME = re.compile(rf"{_SEGMENT}(?:\.{_SEGMENT}){{0,8}}")
_ELEMENT = re.compile(rf"({_SEGMENT}(?:\.{_SEGMENT}){{0,8}})(?:\[([0-9]{{1,9}})\])?")
_SLICE = re.compile(rf"({_SEGMENT}(?:\.{_SEGMENT}){{0,8}})\[([0-9]*):([0-9]*)\]")
MAX_DIGITS = 18  # as in .dnet: no valid weight, bias or bound is longer

# The schema of the JSON form: the keys each object may have. Types and values are checked
# where they are read (below, and by the NetBuilder), each error naming its JSON path.
TOP_KEYS = {"format", "version", "name", "steps", "vectors", "lines", "bias", "outputs",
            "feedback", "done", "convs"}
# A convolution or pool between two vectors (dsl/conv.py): its lines are not listed.
CONV_KEYS = {"kind", "from", "to", "in", "out", "kernel", "stride", "pad", "weights"}
_SLICE = re.compile(rf"({_SEGMENT}(?:\.{_SEGMENT}){{0,8}})(?:\[([0-9]{{1,9}}):([0-9]{{1,9}})\])?")
VECTOR_KEYS = {"name", "size", "gate"}
GATE_KEYS = {"input": {"lo", "hi"}, "identity": set(), "relu": {"s", "max"}, "step": {"t"},
             "lut": {"lo", "table"}, "product": {"a", "b"},
             "spike": {"threshold", "leak", "reset", "init"}, "prev": {"of", "init"}}


CONV_HINT = ('[{"kind": "conv", "from": "x", "to": "h", "in": [1, 12, 12], "out": 8, '
             '"kernel": 4, "stride": 2, "pad": 1, "weights": [[...], ...]}]')


class _TooLarge(str):
    """A JSON integer literal too long to be any valid value (kept as text: converting a
    5,000-digit literal is what Python refuses)."""


def _parse_int(text: str):
    return _TooLarge(text) if len(text.lstrip("-").lstrip("0")) > MAX_DIGITS else int(text)


def gate_to_json(gate, net: Netlist | None = None) -> dict:
    if isinstance(gate, Input):
        return {"kind": "input", "lo": gate.lo, "hi": gate.hi}
    if isinstance(gate, Identity):
        return {"kind": "identity"}
    if isinstance(gate, Relu):
        return {"kind": "relu", "s": gate.s, "max": gate.L}
    if isinstance(gate, Step):
        return {"kind": "step", "t": gate.t}
    if isinstance(gate, Lut):
        return {"kind": "lut", "lo": gate.lo, "table": list(gate.table)}
    if isinstance(gate, Product):
        return {"kind": "product", "a": net.nodes[gate.a].name, "b": net.nodes[gate.b].name}
    if isinstance(gate, Spike):
        return {"kind": "spike", "threshold": gate.threshold, "leak": gate.leak,
                "reset": "subtract" if gate.reset is None else gate.reset, "init": gate.init}
    if isinstance(gate, Prev):
        return {"kind": "prev", "of": net.nodes[gate.src].group, "init": gate.init}
    raise TypeError(gate)


def to_json(net: Netlist) -> dict:
    vectors = []
    for g, ids in net.groups.items():
        first = net.nodes[ids[0]]
        gate = gate_to_json(first.gate, net)
        if isinstance(first.gate, Product) and first.index is not None:
            # A product vector: element i multiplies a[i] by b[i].
            gate = {"kind": "product", "a": [net.nodes[net.nodes[i].gate.a].name for i in ids],
                    "b": [net.nodes[net.nodes[i].gate.b].name for i in ids]}
        if isinstance(first.gate, Prev) and first.index is not None:
            gate["init"] = [net.nodes[i].gate.init for i in ids]
        if isinstance(first.gate, Relu) and len({net.nodes[i].gate.L for i in ids}) > 1:
            # A relu written without max clamps each element at its own reachable top.
            gate["max"] = [net.nodes[i].gate.L for i in ids]
        vectors.append({"name": g, "size": None if first.index is None else len(ids),
                        "gate": gate})
    from .conv import covered

    convs, in_conv = covered(net)
    lines = [[net.nodes[s].name, n.name, w] for n in net.nodes for s, w in n.weights.items()
             if (s, n.id) not in in_conv]
    bias = {n.name: n.bias for n in net.nodes if n.bias}
    doc = {"format": FORMAT, "version": VERSION, "name": net.name,
           "steps": "open" if net.open else net.steps,
           "vectors": vectors, "lines": lines, "bias": bias,
           "outputs": [net.nodes[o].name for o in net.outputs]}
    if net.feedback:
        doc["feedback"] = {net.nodes[x].name: net.nodes[y].name for x, y in net.feedback.items()}
    if net.done is not None:
        doc["done"] = net.nodes[net.done].name
    if convs:
        doc["convs"] = [conv_to_json(rec, net.groups) for rec in convs]
    return doc


def conv_to_json(rec, groups) -> dict:
    c = rec.conv
    out = {"kind": c.kind, "from": rec.ref("src", groups), "to": rec.ref("dst", groups),
           **c.params()}
    if c.kind == "conv":
        out["weights"] = c.rows()
    return out


def dumps(net: Netlist) -> str:
    return json.dumps(to_json(net), indent=1)


def load_file(path: str) -> Netlist:
    from .parser import read_text

    return loads(read_text(path), path)


def loads(text: str, filename: str = "<json>") -> Netlist:
    try:
        doc = json.loads(text, parse_int=_parse_int)
    except json.JSONDecodeError as e:
        raise CompileError([Diagnostic(Pos(filename, e.lineno, e.colno),
                                       f"invalid JSON: {e.msg}", "check the JSON syntax")]) from None
    except RecursionError:
        raise CompileError([Diagnostic(Pos(filename, 1, 1), "JSON nested too deeply",
                                       "a netlist is at most a few levels deep")]) from None
    return from_json(doc, filename)


def check_schema(doc, filename: str) -> None:
    """Unknown keys, numbers too large to read, unsafe names and the wrong container
    types, all reported at once with their JSON paths, before anything is built."""
    out: list[Diagnostic] = []

    def bad(path: str, msg: str, hint: str) -> None:
        out.append(Diagnostic(Pos(f"{filename}:{path}" if path else filename), msg, hint))

    def keys(obj, allowed: set, path: str) -> None:
        for key in obj:
            if key not in allowed:
                close = did_you_mean(str(key), sorted(allowed))
                bad(f"{path}.{key}" if path else str(key)[:40], f"unknown key {str(key)[:40]!r}",
                    close or f"allowed here: {', '.join(sorted(allowed)) or 'only kind'}")

    def large(doc) -> None:  # iterative: JSON may nest as deep as its parser allows
        todo = [(doc, "")]
        while todo and len(out) < 100:
            value, path = todo.pop()
            if isinstance(value, _TooLarge):
                bad(path, f"number {value[:12]}... ({len(value)} digits) is too large",
                    "weights, biases and bounds are 32-bit integers")
            elif isinstance(value, list):
                todo.extend((v, f"{path}[{k}]") for k, v in reversed(list(enumerate(value))))
            elif isinstance(value, dict):
                todo.extend((v, f"{path}.{k}" if path else str(k))
                            for k, v in reversed(list(value.items())))

    keys(doc, TOP_KEYS, "")
    name = doc.get("name")
    if name is not None and not (isinstance(name, str) and _NET_NAME.fullmatch(name)):
        bad("name", f"network name {str(name)[:40]!r} is not a name",
            "letters, digits and _, not starting with a digit (it names the WAD file)")
    for key, kind, hint in (("lines", list, '[["x[0]", "h[1]", -2]]'), ("bias", dict, '{"h[0]": -1}'),
                            ("outputs", list, '["y"]'), ("convs", list, CONV_HINT)):
        if key in doc and not isinstance(doc[key], kind):
            bad(key, f"{key} must be {'a list' if kind is list else 'an object'}", hint)
    for k, c in enumerate(doc["convs"] if isinstance(doc.get("convs"), list) else []):
        if isinstance(c, dict):
            keys(c, CONV_KEYS, f"convs[{k}]")
    vectors = doc.get("vectors")
    for k, v in enumerate(vectors if isinstance(vectors, list) else []):
        if not isinstance(v, dict):
            continue
        keys(v, VECTOR_KEYS, f"vectors[{k}]")
        g = v.get("gate")
        kind = g.get("kind") if isinstance(g, dict) else None
        if isinstance(kind, str) and kind in GATE_KEYS:
            keys(g, GATE_KEYS[g["kind"]] | {"kind"}, f"vectors[{k}].gate")
        elif isinstance(g, dict) and "kind" in g:
            bad(f"vectors[{k}].gate.kind", f"unknown gate {str(g['kind'])[:40]!r}",
                did_you_mean(str(g["kind"]), sorted(GATE_KEYS)) or
                f"gates are {', '.join(sorted(GATE_KEYS))}")
    large(doc)
    if out:
        raise CompileError(out)


def from_json(doc, filename: str = "<json>") -> Netlist:
    """A validated Netlist from the JSON form (already parsed into Python objects); every
    problem is reported with its JSON path, all at once."""
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise CompileError([Diagnostic(Pos(filename), f"not a {FORMAT} document",
                                       f'the top level needs "format": "{FORMAT}"')])
    if doc.get("version") != VERSION:
        raise CompileError([Diagnostic(Pos(filename), f"unsupported version {doc.get('version')!r}",
                                       f"this tool reads version {VERSION}")])
    check_schema(doc, filename)
    r = _Reader(filename)
    r.b.name = doc.get("name") or ""
    steps = doc.get("steps", 1)
    if _is_int(steps):
        r.b.set_steps(steps, r.at("steps"))
    elif steps == "open":
        r.b.set_open(r.at("steps"))
    else:
        r.bad("steps", 'steps must be an integer or "open"', '"steps": 1')
    vectors = doc.get("vectors")
    if not isinstance(vectors, list):
        raise CompileError([Diagnostic(r.at("vectors"), "missing list of vectors",
                                       '"vectors": [{"name": ..., "size": ..., "gate": ...}]')])
    r.refuse_oversized(vectors)
    for k, v in enumerate(vectors):
        r.vector(v, f"vectors[{k}]")
    r.declare_products()
    r.declare_prevs()
    r.lines(doc.get("lines") or [])
    r.convs(doc.get("convs") or [])
    r.biases(doc.get("bias", {}))
    r.outputs(doc.get("outputs", []))
    r.recurrence(doc)
    return r.b.build()


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


class _Reader:
    """Drives a NetBuilder from the parts of a JSON netlist, naming JSON paths in errors."""

    def __init__(self, filename: str):
        self.filename = filename
        self.b = NetBuilder(filename)
        self.products: list = []   # declared after every vector: operands may come later
        self.prevs: list = []      # (vector, path): prev vectors, once what they read is known

    def refuse_oversized(self, vectors: list) -> None:
        """NetBuilder.refuse_oversized over the declared sizes, before any is built."""
        lanes = inputs = 0
        for v in vectors:
            g = v.get("gate") if isinstance(v, dict) else None
            size = v.get("size") if isinstance(v, dict) else None
            kind = g.get("kind") if isinstance(g, dict) else None
            n = size if _is_int(size) and size > 0 else 1
            if kind == "input":
                inputs += n
            if kind not in ("identity", "product"):
                lanes += n
        self.b.refuse_oversized(lanes, inputs, self.at("vectors"))

    def at(self, path: str) -> Pos:
        return Pos(f"{self.filename}:{path}")

    def bad(self, path: str, msg: str, hint: str) -> None:
        self.b.error(self.at(path), msg, hint)

    def element(self, ref, path: str):
        m = _ELEMENT.fullmatch(ref) if isinstance(ref, str) else None
        if not m and isinstance(ref, str) and _SLICE.fullmatch(ref):
            # The JSON form spells every element out (its operations are lowered already).
            name, lo = _SLICE.fullmatch(ref).group(1, 2)
            self.bad(path, f"{ref!r} is a slice; the JSON form names one element here",
                     f'list the elements ("{name}[{lo or 0}]", ...); a product vector takes '
                     'lists: "a": ["x[0]", "x[1]"], "b": [...]')
            return None
        if not m:
            self.bad(path, f"bad element reference {ref!r}", 'write "x[3]" or "y"')
            return None
        return m.group(1), None if m.group(2) is None else int(m.group(2)), self.at(path)

    def vector(self, v, path: str) -> None:
        bad = self.bad
        if not isinstance(v, dict) or not isinstance(v.get("name"), str) \
                or not _NAME.fullmatch(v["name"]):
            bad(path, "a vector needs a name", '{"name": "h", "size": 16, "gate": {...}}')
            return
        size = v.get("size")
        if size is not None and not _is_int(size):
            bad(path + ".size", "size must be an integer or null", '"size": 16')
            return
        g = v.get("gate")
        if not isinstance(g, dict) or not isinstance(g.get("kind"), str):
            bad(path + ".gate", "a vector needs a gate", '"gate": {"kind": "relu", "s": 4}')
            return
        kind, gpos = g["kind"], self.at(path + ".gate")
        if kind == "input":
            lo, hi = g.get("lo"), g.get("hi")
            if not (_is_int(lo) and _is_int(hi)):
                bad(path + ".gate", "an input needs integer lo and hi",
                    '{"kind": "input", "lo": 0, "hi": 3}')
                return
            self.b.declare_input(v["name"], size, lo, hi, gpos)
        elif kind == "product":
            self.product(v["name"], g, size, path, gpos)
        elif kind == "prev":  # in place when what it reads is declared (a dump's order)
            if isinstance(g.get("of"), str) and g["of"] in self.b.groups:
                self.prev_vector(v, path)
            else:
                self.prevs.append((v, path))
        else:
            each = g.get("max") if kind == "relu" and isinstance(g.get("max"), list) else None
            args = self.gate_args({k: x for k, x in g.items() if k != "max"} if each else g,
                                  kind, path, gpos)
            if args is None:
                return
            gate = make_gate(self.b, kind, args, gpos)
            if gate is not None:
                ids = self.b.declare(v["name"], size, gate, gpos)
                if each is not None:
                    self.relu_maxima(ids, gate, each, path + ".gate.max")

    def relu_maxima(self, ids: list[int], gate: Relu, maxima: list, path: str) -> None:
        """"max": [...]: one clamp per element of a relu vector (what a relu written
        without max gets, element by element, from the ranges)."""
        if len(maxima) != len(ids) or not all(_is_int(m) and 0 <= m <= INT_LIMIT
                                              for m in maxima):
            self.bad(path, f"max is an integer, or a list of {len(ids)} integers in "
                           f"0..{INT_LIMIT}, one per element", '"max": [3, 15]')
            return
        for nid, m in zip(ids, maxima):
            self.b.nodes[nid].gate = Relu(gate.s, m)

    def gate_args(self, g: dict, kind: str, path: str, gpos: Pos):
        """A gate's fields as make_gate's (keyword, value, Pos) arguments."""
        if kind == "lut":
            lo, table = g.get("lo"), g.get("table")
            if not _is_int(lo) or not isinstance(table, list) or not table \
                    or not all(_is_int(t) for t in table):
                self.bad(path + ".gate", "a lut needs an integer lo and a table of integers",
                         '{"kind": "lut", "lo": -2, "table": [0, 0, 1, 4, 4]}')
                return None
            return [(None, (lo, lo + len(table) - 1), gpos), (None, table, gpos)]
        args = []
        for key, value in g.items():
            if key == "kind" or (key == "max" and value is None):
                continue
            if key == "reset" and value == "subtract":
                value = ("subtract", None)
            elif not _is_int(value):
                self.bad(f"{path}.gate.{key}", f"{key} must be an integer", f'"{key}": 1')
                continue
            args.append((key, value, gpos))
        return args

    def product(self, name: str, g: dict, size, path: str, gpos: Pos) -> None:
        """Declared in place when its operands are already declared (as in every document
        `dumps` writes, so that a round trip keeps the node order), else after every vector."""
        if size is not None:
            pairs = _product_vector(g, size, path, self.element, self.bad)
            if pairs is None:
                return
            ids = [(self.b.resolve_quiet(*x), self.b.resolve_quiet(*y)) for x, y in pairs]
            if all(i is not None and j is not None for i, j in ids):
                self.b.declare_pairs(name, ids, gpos)
            else:
                self.products.append((name, pairs, None, gpos))
            return
        a = self.element(g.get("a"), path + ".gate.a")
        c = self.element(g.get("b"), path + ".gate.b")
        if a is None or c is None:
            return
        if self.b.resolve_quiet(*a) is not None and self.b.resolve_quiet(*c) is not None:
            self.b.declare_product(name, a, c, gpos)
        else:
            self.products.append((name, a, c, gpos))

    def declare_products(self) -> None:
        b = self.b
        for name, a, c, gpos in self.products:
            if c is None:  # a product vector: resolve its operand lists element by element
                ids = [(b.resolve(*x), b.resolve(*y)) for x, y in a]
                if all(i is not None and j is not None for i, j in ids):
                    b.declare_pairs(name, ids, gpos)
                continue
            b.declare_product(name, a, c, gpos)

    def declare_prevs(self) -> None:
        """A prev vector is the builder's hidden vector of prev(OF): it must be named
        OF.prev and have OF's size; its init sets what prev(OF) reads at the first step."""
        for v, path in self.prevs:
            self.prev_vector(v, path)

    def prev_vector(self, v: dict, path: str) -> None:
        """One prev vector: the builder makes it on first use; here its init is set."""
        g, size = v["gate"], v.get("size")
        of = g.get("of")
        if not isinstance(of, str) or canonical_name(v["name"]) != prev_name(of):
            self.bad(path + ".gate.of", f"prev vector {v['name']!r} must read the vector "
                                        "its name is the prev vector of",
                     '{"name": "h.prev", "gate": {"kind": "prev", "of": "h"}} or '
                     '{"name": "h.prev2", "gate": {"kind": "prev", "of": "h.prev"}}')
            return
        of = canonical_name(of)
        ids = self.b.resolve_vector(of, None, None, self.at(path + ".gate.of"))
        if ids is None:
            return
        if (size is None) != self.b.scalar[of] or (size is not None and size != len(ids)):
            self.bad(path + ".size", f"prev vector {v['name']!r} has size {size}, but "
                                     f"{of!r} has {None if self.b.scalar[of] else len(ids)}",
                     "give it the size of the vector it reads")
            return
        # Made here, and read: the JSON form spells init on the whole prev vector.
        self.b.resolve_vector(v["name"], None, None, self.at(path))
        init = g.get("init", 0)
        inits = init if isinstance(init, list) else [init] * len(ids)
        if len(inits) != len(ids) or not all(_is_int(i) for i in inits):
            self.bad(path + ".gate.init", "init is an integer, or a list of one per "
                                          "element", '"init": [0, 1]')
            return
        for src, value in zip(ids, inits):
            if value:
                self.b.set_init(src, value, self.at(path + ".gate.init"))

    def recurrence(self, doc: dict) -> None:
        fb = doc.get("feedback", {})
        if not isinstance(fb, dict):
            self.bad("feedback", "feedback must be an object", '{"x": "y"}')
            fb = {}
        for x, y in fb.items():
            a, c = self.element(x, f"feedback.{x}"), self.element(y, f"feedback.{x}")
            if a is not None and c is not None:
                ia, ic = self.b.resolve(*a), self.b.resolve(*c)
                if ia is not None and ic is not None:
                    self.b.add_feedback([ia], [ic], self.at(f"feedback.{x}"))
        if "done" in doc:
            d = self.element(doc["done"], "done")
            di = None if d is None else self.b.resolve(*d)
            if di is not None:
                self.b.set_done([di], self.at("done"))

    def lines(self, lines) -> None:
        for k, line in enumerate(lines):
            path = f"lines[{k}]"
            if not (isinstance(line, list) and len(line) == 3 and _is_int(line[2])):
                self.bad(path, "a line is [source, destination, weight]", '["x[0]", "h[1]", -2]')
                continue
            s, d = self.element(line[0], path), self.element(line[1], path)
            if s is None or d is None:
                continue
            si, di = self.b.resolve(*s), self.b.resolve(*d)
            if si is not None and di is not None:
                self.b.add_line(si, di, line[2], self.at(path))

    def vector_ref(self, ref, path: str) -> list[int] | None:
        """NAME (a whole vector) or NAME[a:b] (a slice) as node ids."""
        m = _SLICE.fullmatch(ref) if isinstance(ref, str) else None
        if not m:
            self.bad(path, f"bad vector reference {str(ref)[:40]!r}", 'write "x" or "x[0:16]"')
            return None
        start, stop = (None, None) if m.group(2) is None else (int(m.group(2)), int(m.group(3)))
        return self.b.resolve_vector(m.group(1), start, stop, self.at(path))

    def convs(self, convs) -> None:
        """Convolutions and pools: {"kind": "conv", "from": "x", "to": "h", "in": [C, H, W],
        "out": O, "kernel": K, "stride": S, "pad": P, "weights": [[...], ...]}."""
        from . import conv

        for k, c in enumerate(convs):
            path = f"convs[{k}]"
            if not isinstance(c, dict) or c.get("kind") not in conv.KINDS:
                self.bad(path + (".kind" if isinstance(c, dict) else ""),
                         "a conv entry needs a kind: conv or avgpool", CONV_HINT)
                continue
            src = self.vector_ref(c.get("from"), path + ".from")
            dst = self.vector_ref(c.get("to"), path + ".to")
            if src is None or dst is None:
                continue
            weights = c.get("weights")
            if weights is not None and not (isinstance(weights, list) and all(
                    isinstance(r, list) and all(_is_int(w) for w in r) for r in weights)):
                self.bad(path + ".weights", "weights must be a list of rows of integers",
                         '"weights": [[1, 0, -1], [2, 1, 0]]')
                continue
            params = {key: v for key, v in c.items() if key in ("in", "out", "kernel",
                                                                 "stride", "pad")}
            try:
                got = conv.make(c["kind"], params, weights)
                conv.check_sizes(got, len(src), len(dst))
            except conv.ShapeError as e:
                self.bad(path + (f".{e.key}" if e.key else ""), e.message, e.hint)
                continue
            self.b.add_conv(got, src, dst, self.at(path))

    def biases(self, bias) -> None:
        if not isinstance(bias, dict):
            self.bad("bias", "bias must be an object", '{"h[0]": -1}')
            return
        for name, value in bias.items():
            path = f"bias.{name}"
            d = self.element(name, path)
            if d is None:
                continue
            if not _is_int(value):
                self.bad(path, "a bias must be an integer", f'"{name}": 1')
                continue
            di = self.b.resolve(*d)
            if di is not None:
                self.b.add_bias(di, value, self.at(path))

    def outputs(self, outputs) -> None:
        if not isinstance(outputs, list):
            self.bad("outputs", "outputs must be a list", '["y"]')
            return
        for k, o in enumerate(outputs):
            d = self.element(o, f"outputs[{k}]")
            if d is not None:
                oi = self.b.resolve(*d)
                if oi is not None:
                    self.b.add_output(oi, self.at(f"outputs[{k}]"))


def _product_vector(g: dict, size: int, path: str, element, bad):
    """The operand lists of a product vector: {"a": [...], "b": [...]}, one per element."""
    a, c = g.get("a"), g.get("b")
    if not (isinstance(a, list) and isinstance(c, list) and len(a) == len(c) == size):
        bad(path + ".gate", f"a product is a scalar unless a and b are lists: a product "
                            f"vector of size {size} needs lists a and b of {size} elements", '{"kind": "product", "a": ["x[0]", "x[1]"], '
                            '"b": ["y[0]", "y[1]"]}')
        return None
    pairs = [(element(x, f"{path}.gate.a[{i}]"), element(y, f"{path}.gate.b[{i}]"))
             for i, (x, y) in enumerate(zip(a, c))]
    return None if any(x is None or y is None for x, y in pairs) else pairs
