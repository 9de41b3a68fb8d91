"""Lowering the operations written directly in .dnet: `neuron y : select(c, a, b)` and kin.

Owns the operations a .dnet file may use as a neuron's gate (MACROS), their argument
checks with positions, and their expansion into ordinary neurons when the netlist is
built: `NetBuilder.build` calls `expand` once every name is declared, which walks the
nodes in dependency order, computes each node's proven range (the same functions
dsl/ranges.py uses) and lowers each operation with the recipes of dsl/construct.py, the
ones the graph API uses. The operation's neuron becomes an identity of its parts, so the
name the user wrote keeps its value; the parts are named `NAME__role`.
"""
from __future__ import annotations

import re

from .construct import Affine, Recipes, Refused, value_range
from .diagnostics import Pos
from .ir import PREV_SUFFIX, Identity, Input, Prev, Product

# name: (how it is written, what it needs)
MACROS = {
    "select": "select(c, a, b): a if the 0/1 value c is 1, else b",
    "switch": "switch(i, a, b, ...) or switch(i, [v0, v1, ...]): the i-th value",
    "equals": "equals(x, [c0, c1, ...]): 1 if every x[k] == c[k]",
    "lt": "lt(a, b): 1 if a < b", "le": "le(a, b): 1 if a <= b", "eq": "eq(a, b): 1 if a == b",
    "min": "min(a, b, ...)", "max": "max(a, b, ...)",
    "argmax": "argmax(a, b, ...): the index of the largest (ties: the first)",
    "clamp": "clamp(x, LO..HI)",
    "and": "and(a, b, ...) of 0/1 values", "or": "or(a, b, ...) of 0/1 values",
    "xor": "xor(a, b, ...) of 0/1 values: their parity", "not": "not(a): 1 - a of a 0/1 value",
    "delay": "delay(x, K): x as it was K steps earlier (needs steps)",
}


class _Emitter:
    """Makes the parts of one operation through the NetBuilder, ranging each one."""

    def __init__(self, b, ranges: dict[int, tuple[int, int]], owner: str, pos: Pos):
        self.b, self.ranges, self.owner, self.pos = b, ranges, owner, pos
        self.steps = b.steps

    def node_range(self, key: int) -> tuple[int, int]:
        return self.ranges[key]

    def _name(self, role: str) -> str:
        # An element of a vector of operations (maxpool's m[3]) names its parts m_3__role.
        owner = re.sub(r"\[(\d+)\]$", r"_\1", self.owner)
        base = f"{owner}__{re.sub(r'[^a-z0-9]+', '_', role.lower()).strip('_')}"
        name, k = base, 1
        while name in self.b.groups:
            k += 1
            name = f"{base}{k}"
        return name

    def new_neuron(self, gate, value: Affine, role: str) -> int:
        (nid,) = self.b.declare(self._name(role), None, gate, self.pos)
        for src, w in value.terms:
            self.b.add_line(src, nid, w, self.pos)
        if value.const:
            self.b.add_bias(nid, value.const, self.pos)
        self.ranges[nid] = value_range(gate, Recipes(self).range(value), self.steps)
        return nid

    def new_prev(self, src: int, init: int) -> int:
        """prev of one node: a scalar's hidden prev vector (an element of a vector is copied
        into a scalar identity first, so that no other element gets a prev node)."""
        if not self.b.scalar[self.b.nodes[src].group]:
            src = self.new_neuron(Identity(), Affine.of(src), "delay in")
        group = self.b.nodes[src].group
        (pid,) = self.b.resolve_vector(group + PREV_SUFFIX, None, None, self.pos)
        if self.b.inits.get(src, (0, None))[0] != init:
            self.b.set_init(src, init, self.pos)
        lo, hi = self.ranges[src]
        self.ranges[pid] = (min(lo, init), max(hi, init))
        return pid

    def new_product(self, a: int, b: int, role: str) -> int:
        (nid,) = self.b.declare(self._name(role), None, Product(a, b), self.pos)
        corners = [x * y for x in self.ranges[a] for y in self.ranges[b]]
        self.ranges[nid] = (min(corners), max(corners))
        return nid


def resolve(b, kind: str, args: list, pos: Pos):
    """Check the arguments of one operation; returns (operands, extras) or None after an
    error. Operands are node ids or constant Affines; extras are the lists / ranges / counts."""
    usage = MACROS[kind]
    if any(key is not None for key, _, _ in args):
        b.error(pos, f"{kind} takes positional arguments only", f"write {usage}")
        return None

    def operand(value, apos):
        if isinstance(value, int):
            return Affine.constant(value)
        if isinstance(value, tuple) and isinstance(value[0], str):
            return b.resolve(value[0], value[1], apos)
        b.error(apos, f"{kind}: expected a name or a number here", f"write {usage}")
        return None

    vals = [v for _, v, _ in args]
    bad = lambda: b.error(pos, f"{kind} needs different arguments", f"write {usage}")  # noqa: E731
    if kind == "equals":
        if len(args) != 2 or not isinstance(vals[1], list) or not (
                isinstance(vals[0], tuple) and isinstance(vals[0][0], str)):
            return bad()
        name, idx = vals[0]
        ids = b.resolve_vector(name, idx, None, args[0][2], single=idx is not None)
        return None if ids is None else (ids, vals[1])
    if kind == "clamp":
        if len(args) != 2 or not (isinstance(vals[1], tuple) and isinstance(vals[1][0], int)):
            return bad()
        x = operand(vals[0], args[0][2])
        return None if x is None else ([x], vals[1])
    if kind == "delay":
        if len(args) not in (1, 2) or (len(args) == 2 and not isinstance(vals[1], int)):
            return bad()
        x = operand(vals[0], args[0][2])
        return None if x is None else ([x], vals[1] if len(args) == 2 else 1)
    if kind == "switch" and len(args) == 2 and isinstance(vals[1], list):
        i = operand(vals[0], args[0][2])
        return None if i is None else ([i], vals[1])
    arity = {"select": (3, 3), "lt": (2, 2), "le": (2, 2), "eq": (2, 2), "not": (1, 1),
             "switch": (2, 99), "argmax": (2, 99)}.get(kind, (1, 99))
    if not arity[0] <= len(args) <= arity[1]:
        return bad()
    ops = [operand(v, apos) for _, v, apos in args]
    return None if any(o is None for o in ops) else (ops, None)


def _lower(r: Recipes, kind: str, ops: list, extra):
    if kind == "equals":
        return r.equals(ops, extra)
    if kind == "clamp":
        return r.clamp(ops[0], *extra)
    if kind == "delay":
        return r.delay(ops[0], extra)
    if kind == "switch":
        return r.switch(ops[0], extra if extra is not None else ops[1:])
    if kind == "argmax":
        return sum((k * bit for k, bit in enumerate(r.argmax(ops))), Affine())
    simple = {"select": r.select, "lt": r.lt, "le": r.le, "eq": r.eq, "and": r.and_,
              "or": r.or_, "xor": r.xor, "not": r.not_,
              "min": lambda *v: r.reduce(r.min2, list(v)),
              "max": lambda *v: r.reduce(r.max2, list(v))}
    return simple[kind](*ops)


def expand(b) -> None:
    """Lower every pending operation of a NetBuilder in place (see the module docstring).

    An operation whose operands depend on a previous step's value (prev nodes) needs that
    value's range, which depends on what the operations make: the lowering is tried on a
    copy of the builder, from the first step's ranges up, until the prev ranges settle
    (dsl/ranges.py then proves the same ranges for the netlist, and build checks that)."""
    resolved = {}
    for nid, kind, args, pos in b._pending_macros:
        got = resolve(b, kind, args, pos)
        if got is not None:
            resolved[nid] = (kind, got, pos)
            b._macro_deps[nid] = [o for o in got[0] if not isinstance(o, Affine)]
    known = len(b.diag.items)
    order = b._topological_order()
    if len(b.diag.items) > known:  # a cycle: there is no order to lower in
        return
    assumed = _prev_fixpoint(b, resolved, order)
    b.macro_prev_ranges = assumed if _reads_prev(b, resolved, order) else {}
    _lower_all(b, resolved, order, assumed)


def _tainted(b, order: list[int]) -> set[int]:
    """The nodes that depend, within their step, on a prev node (prev nodes included)."""
    tainted: set[int] = set()
    for nid in order:
        if isinstance(b.nodes[nid].gate, Prev) or any(s in tainted for s in b._sources(nid)):
            tainted.add(nid)
    return tainted


def _in_loops(b, order: list[int]) -> set[int]:
    """Nodes on a recurrence: they depend on a prev node within their step and a prev
    node reads them (or what they feed) at the next step."""
    feeds = {n.gate.src for n in b.nodes if isinstance(n.gate, Prev)}
    for nid in reversed(order):
        if nid in feeds:
            feeds.update(b._sources(nid))
    return _tainted(b, order) & feeds


def _bound(r: Recipes, kind: str, ops: list, extra) -> tuple[int, int] | None:
    """The values an operation can take by its meaning, whatever its parts' intervals."""
    if kind == "argmax":
        return 0, len(ops) - 1
    if kind in ("max", "min", "select", "switch"):
        vals = ops[1:] if kind in ("select", "switch") else ops
        rs = [r.range(v) for v in vals] if extra is None else [(v, v) for v in extra]
        pick = max if kind == "max" else min
        if kind in ("max", "min"):
            return pick(lo for lo, _ in rs), pick(hi for _, hi in rs)
        return min(lo for lo, _ in rs), max(hi for _, hi in rs)
    return None


# Rounds of the trial lowerings that look for the prev ranges operations may rely on.
PREV_ROUNDS = 32


def _prev_fixpoint(b, resolved: dict, order: list[int]) -> dict[int, tuple[int, int]]:
    import copy

    prevs = [n for n in b.nodes if isinstance(n.gate, Prev)]
    init = {p.id: b.inits.get(p.gate.src, (0, None))[0] for p in prevs}
    assumed = {p.id: (init[p.id], init[p.id]) for p in prevs}
    if not _reads_prev(b, resolved, order):
        return assumed  # no operation's constants depend on them
    # A recurrence without a `steps` statement is open (NetBuilder.build).
    open_ = b.open or b._steps_pos is None
    rounds = PREV_ROUNDS if open_ else min(PREV_ROUNDS, b.steps - 1)
    for _ in range(rounds):
        trial = copy.deepcopy(b)
        ranges = _lower_all(trial, resolved, order, assumed)
        grown = {p.id: (min(init[p.id], ranges[p.gate.src][0]),
                        max(init[p.id], ranges[p.gate.src][1])) for p in prevs}
        if grown == assumed:
            break
        assumed = grown
    else:
        if open_ or rounds < b.steps - 1:
            p = next(p for p in prevs if grown[p.id] != assumed[p.id])
            src = b.nodes[p.gate.src]
            b.error(src.pos, f"the range of '{src.name}' keeps growing from step to step "
                             f"({grown[p.id][0]}..{grown[p.id][1]} after {rounds}), and an "
                             "operation reads its previous value",
                    "clamp it (clamp(x, LO..HI), or a relu with max=...) so operations on "
                    "prev(...) can be built")
    return assumed


def _reads_prev(b, resolved: dict, order: list[int]) -> bool:
    """Does any operation depend, within its step, on a prev node?"""
    tainted = _tainted(b, order)
    return any(nid in tainted for nid in resolved)


def _lower_all(b, resolved: dict, order: list[int], assumed: dict) -> dict:
    """Lower the operations in dependency order; returns every node's estimated range."""
    ranges: dict[int, tuple[int, int]] = {}
    loops = _in_loops(b, order) if assumed else set()
    for nid in order:
        node = b.nodes[nid]
        if nid in resolved:
            kind, (ops, extra), pos = resolved[nid]
            r = Recipes(_Emitter(b, ranges, node.name, pos))
            ops = [o if isinstance(o, Affine) else Affine.of(o) for o in ops]
            try:
                value = _lower(r, kind, ops, extra)
                # On a recurrence the parts' intervals would grow from step to step
                # (max(x, prev(m)) = prev(m) + relu(x - prev(m)) looks like it adds up):
                # a clamp to the operation's own bounds lets the ranges settle.
                bound = _bound(r, kind, ops, extra) if nid in loops else None
                if bound and not bound[0] <= r.range(value)[0] <= r.range(value)[1] <= bound[1]:
                    value = r.clamp(value, *bound)
            except Refused as e:
                b.error(pos, f"{kind}: {e.message}", e.hint)
                ranges[nid] = (0, 0)
                continue
            for src, w in value.terms:
                node.weights[src] = w
                node.line_pos[src] = pos
            node.bias = value.const
            ranges[nid] = r.range(value)
        elif isinstance(node.gate, Input):
            ranges[nid] = (node.gate.lo, node.gate.hi)
        elif isinstance(node.gate, Prev):
            ranges[nid] = assumed[nid]
        elif isinstance(node.gate, Product):
            corners = [x * y for x in ranges[node.gate.a] for y in ranges[node.gate.b]]
            ranges[nid] = (min(corners), max(corners))
        else:
            acc = Recipes(_Emitter(b, ranges, node.name, node.pos)).range(
                Affine(tuple(node.weights.items()), node.bias))
            ranges[nid] = value_range(node.gate, acc, b.steps)
    return ranges
