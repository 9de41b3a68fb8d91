"""The graph API: write a program in Python, get the netlist that computes it (no training).

    from dsl.graph import Graph
    g = Graph("maxsel")
    a, b = g.input("a", 0, 7), g.input("b", 0, 7)
    c = g.lt(a, b)                       # 1 if a < b: one step neuron
    g.output(g.select(c, b, a), "big")   # two relu neurons; B from the proven ranges
    net = g.build()                      # a validated Netlist (dsl/ir.py)
    print(g.to_dnet())                   # the same netlist as readable .dnet

Owns the graph (declared inputs, the neurons operations made, the names the user gave)
and writing it as .dnet text; `build()` parses that text, so a graph and its .dnet are the
same netlist by construction. How each operation becomes neurons lives in dsl/construct.py
(shared with the operations written directly in .dnet). Values are `Affine`: sums, scaling
and constants cost nothing; every other operation adds neurons whose ranges dsl/ranges.py
proves, and is refused (`GraphError`) when they do not prove it exact. docs/graph.md.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from .construct import Affine, Recipes, Refused, lift, value_range
from .diagnostics import VoodooError
from .ir import INT_LIMIT, MAX_STEPS, PREV_SUFFIX, Identity, Input, Lut, Prev, Product, Relu, \
    Spike, Step

Value = Affine
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class GraphError(VoodooError):
    pass


def _pair(v) -> list[int]:
    """A kernel, stride or pad: one number for both sides, or (height, width)."""
    if isinstance(v, (list, tuple)):
        return [int(a) for a in v]
    return [int(v), int(v)]


@dataclass
class _Node:
    name: str            # "x[3]" for a vector element
    group: str
    index: int | None
    gate: object
    value: Affine        # the weighted sum (keys are node ids); unused for inputs, products
    range: tuple[int, int]
    generated: bool      # named by the graph (may be renamed by the user)


class Graph:
    """A program under construction. Every operation returns an `Affine` value."""

    def __init__(self, name: str = "graph", steps: int | str = 1):
        self._check_name(name, "network")
        self.network = name
        if steps != "open" and not (isinstance(steps, int) and 1 <= steps <= MAX_STEPS):
            raise GraphError(f"graph '{name}': steps {steps!r}\n    hint: give 1..{MAX_STEPS} "
                             "or 'open'")
        self.open = steps == "open"
        self.steps = MAX_STEPS if self.open else steps
        # Recurrence: prev node -> what it reads (a node id, or the name of a state whose
        # value is named later); fed-back inputs; the done node.
        self._prev_of: dict[int, int | str] = {}
        self._feedback: list[tuple[int, int]] = []
        self._done: int | None = None
        self.nodes: list[_Node] = []
        self.groups: dict[str, list[int]] = {}
        self.outputs: list[int] = []
        self._auto = 0
        self.ops = Recipes(self)
        self.convs: dict[str, object] = {}   # vector name -> its dsl.conv.ConvLines

    # -- the emitter dsl/construct.py builds with -------------------------------------------
    def node_range(self, key: int) -> tuple[int, int]:
        return self.nodes[key].range

    def new_neuron(self, gate, value: Affine, role: str) -> int:
        acc = self.ops.range(value)
        return self._add(self._fresh(role), None, gate, value, value_range(gate, acc, self.steps))

    def new_product(self, a: int, b: int, role: str) -> int:
        ra, rb = self.nodes[a].range, self.nodes[b].range
        corners = [x * y for x in ra for y in rb]
        return self._add(self._fresh(role), None, Product(a, b), Affine(),
                         (min(corners), max(corners)))

    def new_prev(self, key: int, init: int) -> int:
        """A node holding node `key`'s value of the previous step (`init` at the first)."""
        lo, hi = self.nodes[key].range
        if self.nodes[key].index is not None:  # one element: copy it out of its vector
            key = self.new_neuron(Identity(), Affine.of(key), "delay in")
        for p, src in self._prev_of.items():
            if src == key:
                return p
        nid = self._add(self._fresh("prev"), None, Prev(key, init), Affine(),
                        (min(lo, init), max(hi, init)))
        self._prev_of[nid] = key
        return nid

    def _fresh(self, role: str) -> str:
        self._auto += 1
        return f"{re.sub(r'[^a-z0-9]+', '_', role.lower()).strip('_') or 'n'}_{self._auto}"

    def _add(self, name, index, gate, value, rng, group=None, generated=True) -> int:
        if max(abs(rng[0]), abs(rng[1])) > INT_LIMIT:
            raise GraphError(f"graph '{self.network}': '{name}' reaches {rng[0]}..{rng[1]}, "
                             "beyond 32-bit integers\n    hint: narrow its operands")
        group = group or name
        nid = len(self.nodes)
        self.nodes.append(_Node(name if index is None else f"{group}[{index}]", group, index,
                                gate, value, rng, generated))
        self.groups.setdefault(group, []).append(nid)
        return nid

    def _check_name(self, name: str, what: str) -> None:
        if not isinstance(name, str) or not _NAME.match(name):
            raise GraphError(f"{what} name {name!r} is not a name\n    hint: use letters, "
                             "digits and '_', starting with a letter or '_'")

    def _declare(self, name: str) -> None:
        self._check_name(name, "node")
        if name in self.groups:
            raise GraphError(f"graph '{self.network}': the name '{name}' is already used\n"
                             "    hint: give each input and named value its own name")

    # -- declarations ----------------------------------------------------------------------
    def input(self, name: str, lo: int, hi: int) -> Affine:
        self._declare(name)
        if lo > hi:
            raise GraphError(f"input '{name}': range {lo}..{hi} is empty\n    hint: write {hi}..{lo}")
        return Affine.of(self._add(name, None, Input(lo, hi), Affine(), (lo, hi), generated=False))

    def inputs(self, name: str, n: int, lo: int, hi: int) -> list[Affine]:
        self._declare(name)
        if lo > hi:
            raise GraphError(f"input '{name}': range {lo}..{hi} is empty\n    hint: write {hi}..{lo}")
        return [Affine.of(self._add(name, i, Input(lo, hi), Affine(), (lo, hi), group=name,
                                    generated=False)) for i in range(n)]

    def state(self, name: str, lo: int, hi: int, init: int = 0) -> Affine:
        """prev(name): the value that `g.name(value, name)` gives at the previous step
        (`init` at the first). lo..hi bounds it at every step: operations on it are built
        for that range, and build() checks the proven range lies within it."""
        return self.states(name, None, lo, hi, init)

    def states(self, name: str, n: int | None, lo: int, hi: int, init=0):
        """A vector of n states (see state); init is one value or one per element."""
        self._check_name(name, "state")
        inits = list(init) if isinstance(init, (list, tuple)) else [init] * (n or 1)
        if lo > hi or len(inits) != (n or 1) or not all(lo <= v <= hi for v in inits):
            raise GraphError(f"state '{name}': range {lo}..{hi} with init {init}\n    hint: "
                             "give lo <= init <= hi, one init per element")
        out = []
        for i in range(n or 1):
            nid = self._add(f"{name}{PREV_SUFFIX}", None if n is None else i, Prev(-1, inits[i]),
                            Affine(), (lo, hi), group=f"{name}{PREV_SUFFIX}", generated=False)
            self._prev_of[nid] = name if n is None else f"{name}[{i}]"
            out.append(Affine.of(nid))
        return out[0] if n is None else out

    def _saturate(self, value, name: str):
        """The value of state `name` (or of its elements), clamped to the state's range
        where the proven range is wider."""
        bounds = {src: self.nodes[p].range for p, src in self._prev_of.items()
                  if isinstance(src, str) and src.split("[")[0] == name}
        if not bounds:
            return value
        vals = value if isinstance(value, (list, tuple)) else [value]
        out = []
        for i, v in enumerate(vals):
            lo, hi = bounds.get(name if not isinstance(value, (list, tuple)) else f"{name}[{i}]",
                                (None, None))
            r = self.ops.range(lift(v))
            out.append(v if lo is None or lo <= r[0] <= r[1] <= hi else self.clamp(v, lo, hi))
        return out if isinstance(value, (list, tuple)) else out[0]

    def feedback(self, inputs, values) -> None:
        """Input(s) that take these values of the previous step whenever a run gives none."""
        xs = inputs if isinstance(inputs, (list, tuple)) else [inputs]
        ys = values if isinstance(values, (list, tuple)) else [values]
        for x, y in zip(xs, ys, strict=True):
            self._feedback.append((self._one(x), self._one(lift(y))))

    def done(self, value) -> None:
        """The 0/1 node that ends a run after the first step it is 1."""
        self._done = self._one(lift(value))

    def _one(self, v: Affine) -> int:
        if len(v.terms) == 1 and v.terms[0][1] == 1 and v.const == 0:
            return v.terms[0][0]
        raise GraphError(f"graph '{self.network}': a sum of nodes here\n    hint: name it "
                         "with g.name(value, 'y') first")

    def name(self, value, name: str):
        """Give a value (or a list of values, as a vector) a name; returns it as a node.
        Naming a state's value (see state) stores it: beyond the state's range it is
        clamped (saturates), so that the range holds at every step."""
        self._declare(name)
        value = self._saturate(value, name)
        if isinstance(value, (list, tuple)):
            vals = [lift(v) for v in value]
            keys = [self._own(v) for v in vals]
            gates = {repr(self.nodes[k].gate) for k in keys if k is not None}
            if None not in keys and len(set(keys)) == len(keys) and len(gates) == 1:
                for i, k in enumerate(keys):  # rename the neurons themselves
                    self._rename(k, name, i)
                self.groups[name] = keys
                return [Affine.of(k) for k in keys]
            return [Affine.of(self._add(name, i, Identity(), v, self.ops.range(v), group=name,
                                        generated=False)) for i, v in enumerate(vals)]
        v = lift(value)
        k = self._own(v)
        if k is not None:
            self._rename(k, name, None)
            self.groups[name] = [k]
            return Affine.of(k)
        return Affine.of(self._add(name, None, Identity(), v, self.ops.range(v), generated=False))

    def _own(self, v: Affine):
        """The generated neuron v is exactly, if any."""
        if len(v.terms) == 1 and v.terms[0][1] == 1 and v.const == 0:
            k = v.terms[0][0]
            if self.nodes[k].generated and k not in self._prev_of:
                return k
        return None

    def _rename(self, k: int, group: str, index) -> None:
        node = self.nodes[k]
        self.groups.pop(node.group, None)
        node.group, node.index, node.generated = group, index, False
        node.name = group if index is None else f"{group}[{index}]"

    def output(self, value, name: str | None = None):
        """Mark a value (or a list) as an output, naming it (needed unless it is a node)."""
        if name is not None:
            value = self.name(value, name)
        for v in (value if isinstance(value, (list, tuple)) else [value]):
            v = lift(v)
            if not (len(v.terms) == 1 and v.terms[0][1] == 1 and v.const == 0):
                raise GraphError(f"graph '{self.network}': an output that is a sum needs a name\n"
                                 "    hint: g.output(value, 'y')")
            self.outputs.append(v.terms[0][0])
        return value

    def range(self, value) -> tuple[int, int]:
        """The proven range of a value."""
        return self.ops.range(lift(value))

    # -- operations: dsl/construct.py, refusals become GraphError -----------------------------
    def _op(self, fn, *args, **kw):
        try:
            return fn(*args, **kw)
        except Refused as e:
            raise GraphError(f"graph '{self.network}': {e.message}"
                             + (f"\n    hint: {e.hint}" if e.hint else "")) from None

    def add(self, a, b):
        return lift(a) + lift(b)

    def sub(self, a, b):
        return lift(a) - lift(b)

    def scale(self, a, k: int):
        return lift(a) * k

    def lt(self, a, b):
        return self._op(self.ops.lt, a, b)

    def le(self, a, b):
        return self._op(self.ops.le, a, b)

    def eq(self, a, b):
        return self._op(self.ops.eq, a, b)

    def equals(self, xs, consts):
        return self._op(self.ops.equals, list(xs), list(consts))

    def select(self, c, a, b):
        return self._op(self.ops.select, c, a, b)

    def switch(self, index, values):
        return self._op(self.ops.switch, index, list(values))

    def and_(self, *bits):
        return self._op(self.ops.and_, *bits)

    def or_(self, *bits):
        return self._op(self.ops.or_, *bits)

    def not_(self, bit):
        return self._op(self.ops.not_, bit)

    def xor(self, *bits):
        return self._op(self.ops.xor, *bits)

    def lookup(self, fn, *args):
        return self._op(self.ops.lookup, fn, *args)

    def min(self, *values):
        return self._op(self.ops.reduce, self.ops.min2, list(values))

    def max(self, *values):
        return self._op(self.ops.reduce, self.ops.max2, list(values))

    def argmax(self, values, gate=None):
        """A one-hot list: 1 at the largest value (ties: the lowest index); all 0 if the
        optional 0/1 `gate` is 0."""
        return self._op(self.ops.argmax, list(values), gate)

    def clamp(self, x, lo: int, hi: int):
        return self._op(self.ops.clamp, x, lo, hi)

    def product(self, a, b):
        return self._op(self.ops.product, a, b)

    def delay(self, x, k: int = 1):
        return self._op(self.ops.delay, x, k)

    def step(self, x, t: int):
        return self._op(self.ops.step, lift(x), t, "step")

    def relu(self, x, cap: int | None = None):
        return self._op(self.ops.relu, lift(x), "relu", cap)

    # -- convolutions and pools (dsl/conv.py) ------------------------------------------------
    def conv2d(self, x, shape, weight, bias=None, stride=1, pad=0, s: int | None = None,
               cap: int | None = None, name: str | None = None) -> list[Affine]:
        """A 2-D convolution of the vector `x` read as an image of `shape` (C, H, W):
        `weight` holds integers of shape (out, C, kh, kw) (torch.nn.Conv2d's), `bias` one
        per output channel. The result is a neuron vector (out, OH, OW), flattened channel
        by channel: identity, or relu(s=s, max=cap) when `s` is given. Written as one
        `lines ... conv(...)` statement (docs/dnet.md, "Convolutions and pooling")."""
        import numpy as np

        w = np.asarray(weight)
        if w.ndim != 4 or w.shape[1] != (tuple(shape) + (0,))[0]:
            raise GraphError(f"graph '{self.network}': conv2d weight has shape {w.shape}; it "
                             f"needs (out, {tuple(shape)[0] if shape else 'C'}, kh, kw)\n"
                             "    hint: the layout of torch.nn.Conv2d.weight")
        params = {"in": [int(v) for v in shape], "out": int(w.shape[0]),
                  "kernel": [int(w.shape[2]), int(w.shape[3])], "stride": _pair(stride),
                  "pad": _pair(pad)}
        rows = [[int(v) for v in row] for row in w.reshape(w.shape[0], -1).tolist()]
        per = [0] * w.shape[0] if bias is None else [int(b) for b in np.asarray(bias).ravel()]
        if len(per) != w.shape[0]:
            raise GraphError(f"graph '{self.network}': conv2d has {w.shape[0]} output channels "
                             f"but {len(per)} biases\n    hint: one bias per output channel")
        gate = Identity() if s is None else Relu(s, cap)
        return self._shaped("conv", x, params, rows, gate, per, name)

    def avgpool(self, x, shape, kernel, stride=None, pad=0, name: str | None = None
                ) -> list[Affine]:
        """The sum of each window of `x` read as an image of `shape` (C, H, W), channel by
        channel: identity neurons (free in a map: they ride on their readers' lines);
        divide where it matters. stride defaults to the kernel."""
        params = {"in": [int(v) for v in shape], "kernel": _pair(kernel),
                  "stride": _pair(kernel if stride is None else stride), "pad": _pair(pad)}
        return self._shaped("avgpool", x, params, None, Identity(), None, name)

    def maxpool(self, x, shape, kernel, stride=None, pad=0) -> list[Affine]:
        """The largest value of each window of `x` read as an image of `shape` (C, H, W):
        one g.max per window (its relu neurons, docs/graph.md)."""
        from . import conv

        vals = [lift(v) for v in x]
        c = self._checked_conv("maxpool", {"in": [int(v) for v in shape], "kernel": _pair(kernel),
                                           "stride": _pair(kernel if stride is None else stride),
                                           "pad": _pair(pad)}, None, len(vals))
        return [self.max(*[vals[i] for i, _ in win]) for win in conv.windows(c)]

    def _checked_conv(self, kind: str, params: dict, rows, n_src: int):
        from . import conv

        try:
            c = conv.make(kind, params, rows)
            conv.check_sizes(c, n_src, None)
        except conv.ShapeError as e:
            raise GraphError(f"graph '{self.network}': {e.message}\n    hint: {e.hint}") from None
        return c

    def _shaped(self, kind: str, x, params: dict, rows, gate, per_channel, name) -> list[Affine]:
        """The neuron vector of a conv or avgpool over the nodes of x, recorded so that
        to_dnet writes the convolution, not its lines."""
        from . import conv

        group, start, ids = self._image(x)
        c = self._checked_conv(kind, params, rows, len(ids))
        if name is None:
            name = self._fresh(kind)
        self._declare(name)
        out, plane = c.out_shape, c.out_shape.height * c.out_shape.width
        sums: list[dict] = [{} for _ in range(out.size)]
        for i, j, w in conv.lines_of(c):
            sums[j][ids[i]] = w
        made = []
        for j, terms in enumerate(sums):
            value = Affine(tuple(terms.items()), per_channel[j // plane] if per_channel else 0)
            acc = self.ops.range(value)
            made.append(self._add(name, j, gate, value, value_range(gate, acc, self.steps),
                                  group=name, generated=False))
        self.convs[name] = conv.ConvLines(c, group, start, name, 0)
        return [Affine.of(k) for k in made]

    def _image(self, x) -> tuple[str, int, list[int]]:
        """(vector, first element, node ids) of x when it is consecutive elements of one
        vector; otherwise x is named first (identity neurons: free in a map)."""
        vals = [lift(v) for v in x]
        keys = [v.terms[0][0] if len(v.terms) == 1 and v.terms[0][1] == 1 and v.const == 0
                else None for v in vals]
        if keys and None not in keys:
            first = self.nodes[keys[0]]
            members = self.groups.get(first.group, [])
            start = members.index(keys[0]) if keys[0] in members else -1
            if start >= 0 and members[start:start + len(keys)] == keys:
                return first.group, start, keys
        named = self.name(vals, self._fresh("image"))
        return self._image(named)

    # -- output -------------------------------------------------------------------------------
    def to_dnet(self) -> str:
        """The graph as .dnet text, with the names the user gave."""
        if not self.outputs:
            raise GraphError(f"graph '{self.network}' has no output\n    hint: g.output(value, 'y')")
        out = [f"# generated by dsl/graph.py from the graph '{self.network}'",
               f"network {self.network}"]
        if self.open:
            out.append("steps open")
        elif self.steps != 1:
            out.append(f"steps {self.steps}")
        done = set()
        for nid, n in enumerate(self.nodes):
            if n.group in done:
                continue
            done.add(n.group)
            if isinstance(n.gate, Prev):
                out += self._prev_lines(nid)
                continue
            ids = self.groups[n.group]
            size = "" if n.index is None else f"[{len(ids)}]"
            if isinstance(n.gate, Input):
                out.append(f"input {n.group}{size} : {n.gate.lo}..{n.gate.hi}")
                continue
            gate = self._gate_text(n.gate)
            if n.index is None:
                body = self._sum_text(n.value)
                out.append(f"neuron {n.name} : {gate}" + (f" = {body}" if body else ""))
                continue
            out.append(f"neuron {n.group}{size} : {gate}")
            out += (self._conv_lines(n.group, ids) if n.group in self.convs
                    else self._vector_lines(n.group, ids))
        names = []
        for o in self.outputs:
            names.append(self._ref(o))
        out.append("output " + ", ".join(names))
        out += [f"feedback {self.nodes[x].name} = {self._ref(y)}" for x, y in self._feedback]
        if self._done is not None:
            out.append(f"done {self._ref(self._done)}")
        return "\n".join(out) + "\n"

    def _target(self, nid: int) -> str:
        """What prev node nid reads, by name (a state's name must have been given)."""
        src = self._prev_of[nid]
        if isinstance(src, int):
            return self._ref(src)
        group = src.split("[")[0]
        if group not in self.groups:
            raise GraphError(f"graph '{self.network}': state '{group}' is never given its "
                             f"value\n    hint: g.name(value, '{group}')")
        return src

    def _ref(self, nid: int) -> str:
        """How the .dnet text names a node: prev(h[2]) for a previous step's value (a
        delay's chain of them walked, not recursed: it may be thousands long)."""
        depth = 0
        while nid in self._prev_of and isinstance(self._prev_of[nid], int):
            nid, depth = self._prev_of[nid], depth + 1
        base = f"prev({self._target(nid)})" if nid in self._prev_of else self.nodes[nid].name
        return "prev(" * depth + base + ")" * depth

    def _prev_lines(self, nid: int) -> list[str]:
        init = self.nodes[nid].gate.init
        return [f"init {self._target(nid)} = {init}"] if init else [f"# prev({self._target(nid)})"]

    def _vector_lines(self, group: str, ids: list[int]) -> list[str]:
        """A vector's sums: one sparse statement per source vector, one bias list."""
        by_source: dict[str, list[str]] = {}
        for i, k in enumerate(ids):
            for src, w in self.nodes[k].value.terms:
                s = self.nodes[src]
                vec = self._ref(src).split("[")[0] + (")" if src in self._prev_of
                                                      and s.index is not None else "")
                by_source.setdefault(vec, []).append(f"{s.index or 0} -> {i} : {w}")
        out = [f"lines {src} -> {group} sparse {{ {', '.join(entries)} }}"
               for src, entries in by_source.items()]
        bias = [self.nodes[k].value.const for k in ids]
        if any(bias):
            out.append(f"bias {group} = [{', '.join(map(str, bias))}]")
        return out

    def _conv_lines(self, group: str, ids: list[int]) -> list[str]:
        """A convolution's vector: its one lines statement and its biases."""
        rec = self.convs[group]
        c = rec.conv
        src = rec.ref("src", self.groups)
        out = [f"lines {src} -> {group} {c.text()}" + (
            " [\n" + "".join(f"  [{', '.join(map(str, r))}],\n" for r in c.rows()) + "]"
            if c.kind == "conv" else "")]
        bias = [self.nodes[k].value.const for k in ids]
        if any(bias):
            out.append(f"bias {group} = [{', '.join(map(str, bias))}]")
        return out

    def _sum_text(self, v: Affine) -> str:
        parts = []
        for src, w in v.terms:
            ref = self._ref(src)
            term = ref if abs(w) == 1 else f"{abs(w)}*{ref}"
            parts.append(("- " if w < 0 else "+ ") + term)
        if v.const:
            parts.append(("- " if v.const < 0 else "+ ") + str(abs(v.const)))
        text = " ".join(parts)
        return text[2:] if text.startswith("+ ") else text.replace("- ", "-", 1)

    def _gate_text(self, g) -> str:
        if isinstance(g, Identity):
            return "identity"
        if isinstance(g, Step):
            return f"step(t={g.t})"
        if isinstance(g, Relu):
            return f"relu(s={g.s}, max={g.L})" if g.L is not None else f"relu(s={g.s})"
        if isinstance(g, Lut):
            return f"lut({g.lo}..{g.hi}, [{', '.join(map(str, g.table))}])"
        if isinstance(g, Spike):
            reset = "subtract" if g.reset is None else g.reset
            return f"spike(threshold={g.threshold}, leak={g.leak}, reset={reset}, init={g.init})"
        if isinstance(g, Product):
            return f"product({self._ref(g.a)}, {self._ref(g.b)})"
        raise TypeError(g)

    def build(self):
        """The Netlist, through the .dnet front end (so it is exactly what to_dnet() says)."""
        from .parser import parse

        net = parse(self.to_dnet(), f"<graph {self.network}>")
        for nid, src in self._prev_of.items():
            if isinstance(src, str):  # a state: its range was promised
                r, (lo, hi) = net.value_range[net.by_name(self.nodes[nid].name).id], \
                    self.nodes[nid].range
                if not lo <= r.lo <= r.hi <= hi:
                    raise GraphError(f"graph '{self.network}': state '{src}' ranges over {r}, "
                                     f"beyond its declared {lo}..{hi}\n    hint: clamp it, or "
                                     "declare the wider range")
        return net

    def node_name(self, value) -> str:
        """The netlist name of a value that is one node."""
        v = lift(value)
        if len(v.terms) == 1 and v.terms[0][1] == 1 and v.const == 0:
            return self.nodes[v.terms[0][0]].name
        raise GraphError("this value is a sum of nodes, not one node; name it with g.name()")
