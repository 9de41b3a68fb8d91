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

from .construct import Affine, Recipes, Refused, spread, value_range
from .diagnostics import Pos
from .ir import INT_LIMIT, Identity, Input, Prev, Product, prev_name

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
        """prev of one node: a scalar's hidden prev vector, shared with the prev(x) written
        in the file or another delay when it reads the same first value; else (and for an
        element of a vector, so that no other element gets a prev node) of a copy of the
        value into an identity of its own."""
        b = self.b
        scalar = b.scalar[b.nodes[src].group]
        first = b.inits.get(src, (0, None))[0]
        written = src in b.inits or prev_name(b.nodes[src].group) in b.groups
        if not scalar or (written and first != init):
            src = self.new_neuron(Identity(), Affine.of(src), "delay in")
        (pid,) = b.resolve_vector(prev_name(b.nodes[src].group), None, None, self.pos)
        if b.inits.get(src, (0, None))[0] != init:
            b.set_init(src, init, self.pos)
        lo, hi = self.ranges[src]
        self.ranges[pid] = (min(lo, init), max(hi, init))
        return pid

    def new_product(self, a: int, b: int, role: str) -> int:
        (nid,) = self.b.declare(self._name(role), None, Product(a, b), self.pos)
        corners = [x * y for x in self.ranges[a] for y in self.ranges[b]]
        self.ranges[nid] = (min(corners), max(corners))
        return nid


# Operations whose operands (from this position on) may be vectors or slices, which stand
# for their elements (construct.spread); every other operand is one value.
_SPREAD_FROM = {"min": 0, "max": 0, "argmax": 0, "and": 0, "or": 0, "xor": 0, "switch": 1}


def resolve(b, kind: str, args: list, pos: Pos):
    """Check the arguments of one operation; returns (operands, extras) or None after an
    error. Operands are node ids, lists of node ids (a vector or a slice, where the
    operation takes several values) or constant Affines; extras are the lists / ranges /
    counts."""
    usage = MACROS[kind]
    if any(key is not None for key, _, _ in args):
        b.error(pos, f"{kind} takes positional arguments only", f"write {usage}")
        return None

    def operand(value, apos, many=False):
        if isinstance(value, int):
            return Affine.constant(value)
        if not (isinstance(value, tuple) and isinstance(value[0], str)):
            b.error(apos, f"{kind}: expected a name or a number here", f"write {usage}")
            return None
        name, sel = value
        if many:
            return _elements(b, name, sel, apos)
        if isinstance(sel, tuple):
            b.error(apos, f"{kind}: {name}[{_end(sel[1])}:{_end(sel[2])}] is a slice where "
                          "one value is needed",
                    f"write one element such as {name}[{sel[1] or 0}]; slices go where an "
                    "operation takes several values (min, max, argmax, and, or, xor, equals, "
                    "switch's values)")
            return None
        return b.resolve(name, sel, apos)

    vals = [v for _, v, _ in args]
    bad = lambda: b.error(pos, f"{kind} needs different arguments", f"write {usage}")  # noqa: E731
    if kind == "equals":
        if len(args) != 2 or not isinstance(vals[1], list) or not (
                isinstance(vals[0], tuple) and isinstance(vals[0][0], str)):
            return bad()
        ids = operand(vals[0], args[0][2], many=True)
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
    lo, hi = {"select": (3, 3), "lt": (2, 2), "le": (2, 2), "eq": (2, 2), "not": (1, 1),
              "switch": (2, 99), "argmax": (2, 99)}.get(kind, (1, 99))
    start = _SPREAD_FROM.get(kind, len(args))
    if not (start < len(args) or lo <= len(args)) or len(args) > hi:
        return bad()
    ops = [operand(v, apos, many=k >= start) for k, (_, v, apos) in enumerate(args)]
    if any(o is None for o in ops):
        return None
    # Counted once vectors and slices are spread; argmax's too (it compares every pair).
    count = start + sum(len(o) if isinstance(o, list) else 1 for o in ops[start:])
    if count < lo or (kind == "argmax" and count > hi):
        return bad()
    return ops, None


def _elements(b, name: str, sel, pos: Pos) -> list[int] | None:
    """The node ids a reference names where several values may go: a scalar, a vector,
    one element or a slice (positioned errors for unknown names and bad ranges)."""
    if isinstance(sel, tuple):
        return b.resolve_vector(name, sel[1], sel[2], pos)
    return b.resolve_vector(name, sel, None, pos, single=sel is not None)


def _end(v) -> str:
    return "" if v is None else str(v)


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


def _value(o):
    """An operand as the recipes take it: an Affine, or a list of them (a vector, a slice)."""
    if isinstance(o, list):
        return [Affine.of(i) for i in o]
    return o if isinstance(o, Affine) else Affine.of(o)


def expand(b) -> None:
    """Lower every pending operation of a NetBuilder in place (see the module docstring).

    An operation whose operands depend on a previous step's value (prev nodes) needs that
    value's range, which depends on what the operations make: the lowering is tried on a
    copy of the builder, and dsl/ranges.py proves the prev ranges of what it made, until
    those lie within the ranges the operations were built for (_prev_fixpoint; build hands
    them to the netlist's own range analysis as proven)."""
    resolved = {}
    for nid, kind, args, pos in b._pending_macros:
        got = resolve(b, kind, args, pos)
        if got is not None:
            resolved[nid] = (kind, got, pos)
            b._macro_deps[nid] = [i for o in got[0] if not isinstance(o, Affine)
                                  for i in (o if isinstance(o, list) else [o])]
    known = len(b.diag.items)
    order = b._topological_order()
    if len(b.diag.items) > known:  # a cycle: there is no order to lower in
        return
    read = _read_prevs(b, resolved, order)
    assumed = _prev_fixpoint(b, resolved, order, read) if read and not b.diag else {}
    b.macro_prev_ranges = assumed
    _lower_all(b, resolved, order, assumed)


def _tainted(b, order: list[int]) -> set[int]:
    """The nodes that depend, within their step, on a prev node (prev nodes included)."""
    tainted: set[int] = set()
    for nid in order:
        if isinstance(b.nodes[nid].gate, Prev) or any(s in tainted for s in b._sources(nid)):
            tainted.add(nid)
    return tainted


def _upstream(b, order: list[int], roots: set[int]) -> set[int]:
    """`roots` and every node they read within a step."""
    feeds = set(roots)
    for nid in reversed(order):
        if nid in feeds:
            feeds.update(b._sources(nid))
    return feeds


def _clamped(b, order: list[int]) -> set[int]:
    """The nodes an operation's value is clamped to its own bounds at (_lower_all): on a
    recurrence (they depend on a prev node within their step and a prev node reads them, or
    what they feed, at the next step), and where a range is checked against a bound: what
    feeds a fed-back input (its range must lie within the input's) or the done node (0/1)."""
    feeds = _upstream(b, order, {n.gate.src for n in b.nodes if isinstance(n.gate, Prev)})
    checked = {y for _, y, _ in b.feedback} | ({b.done[0]} if b.done is not None else set())
    return (_tainted(b, order) & feeds) | _upstream(b, order, checked)


def _bound(r: Recipes, kind: str, ops: list, extra) -> tuple[int, int] | None:
    """The values an operation can take by its meaning, whatever its parts' intervals."""
    ops = ops[:1] + spread(ops[1:]) if kind in ("select", "switch") else spread(ops)
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


# Trial lowerings that look for the prev ranges operations may rely on; after GROW_ROUNDS of
# them a range still growing is extrapolated (doubling its growth), then narrowed again
# (a counter to 40 read by equals(c, [16]) takes ten trials, not forty).
PREV_ROUNDS = 32
FIXED_ROUNDS = 256
GROW_ROUNDS = 3
NARROW_ROUNDS = 8


def _init(b, p: int) -> int:
    return b.inits.get(b.nodes[p].gate.src, (0, None))[0]


def _prev_fixpoint(b, resolved: dict, order: list[int],
                   read: list[int]) -> dict[int, tuple[int, int]]:
    """Ranges A of the prev nodes operations read within their step (`read`) that the
    operations can be built for. Operations built for A are exact while those prev values
    lie in A; dsl/ranges.py, on the netlist they make with those prev values held to A,
    proves the values they take next in P(A) (_trial). From the first step's values up, A
    grows by P(A): after k rounds it holds at steps 0..k (so a fixed `steps T` netlist may
    stop after T - 1), and once P(A) lies within A it holds at every step (by induction);
    then it is narrowed while that still holds. A range that keeps growing is refused."""
    assumed = {p: (_init(b, p), _init(b, p)) for p in read}
    growth = _Growth()
    # Rounds of growth a proof needs at most: the fixed steps (their ranges), or enough for
    # a fixpoint of an open run. A leap taken back is no round.
    need = b.steps - 1 if not b.open and b.steps - 1 <= FIXED_ROUNDS else PREV_ROUNDS
    rounds = 0
    while rounds < need:
        proven = _trial(b, resolved, order, assumed)
        if proven is None and growth.leapt:
            assumed = growth.back()  # built for too much (a bit's leap): step back
            continue
        if proven is None:
            return assumed  # the lowering itself fails: the real one says why
        if _within(proven, assumed):
            break
        assumed = growth.grow(assumed, proven)
        rounds += 1
        if any(max(abs(lo), abs(hi)) > INT_LIMIT for lo, hi in assumed.values()):
            _refuse_growth(b, assumed, proven, rounds)
            return assumed
    else:
        if not b.open and rounds >= b.steps - 1:
            return assumed  # it holds for each of the fixed steps
        _refuse_growth(b, assumed, proven if rounds else None, rounds)
        return assumed
    for _ in range(NARROW_ROUNDS):
        if proven == assumed:
            break
        again = _trial(b, resolved, order, proven)
        if again is None or not _within(again, proven):
            break
        assumed, proven = proven, again
    return assumed


def _trial(b, resolved: dict, order: list[int], assumed: dict):
    """P(A): the operations lowered on a copy of the builder for `assumed`, and the ranges
    dsl/ranges.py proves for what they make while the prev values in `assumed` stay there
    (every other prev node, a delay's or one only a prev node reads, free): init joined
    with each one's source range. None if lowering failed (the real lowering says why)."""
    import copy

    from .ir import Range
    from .ranges import analyse

    trial = copy.deepcopy(b)
    _lower_all(trial, resolved, order, assumed)
    if trial.diag:
        return None
    net, remap = trial.assemble()
    analyse(net, {remap[p]: (Range(lo, hi), Range(lo, hi)) for p, (lo, hi) in assumed.items()})
    out = {}
    for p in assumed:
        src = trial.nodes[p].gate.src
        r, init = net.value_range[remap[src]], trial.inits.get(src, (0, None))[0]
        out[p] = (min(init, r.lo), max(init, r.hi))
    return out


def _within(inner: dict, outer: dict) -> bool:
    return all(outer[p][0] <= lo <= hi <= outer[p][1] for p, (lo, hi) in inner.items())


class _Growth:
    """A joined with P(A), round by round. An end that has moved GROW_ROUNDS rounds in a
    row moves on by twice as much as it did, each round it keeps moving (a saturating
    operation's bound is then reached in a few rounds, not one per step); a leap that the
    operations cannot be built for (a 0/1 value leapt past 1) is taken back, and from then
    on ranges only join."""

    def __init__(self):
        self.moves: dict[tuple[int, int], int] = {}   # (prev, end) -> rounds moving in a row
        self.leapt: dict | None = None   # the plain join, when this round leapt beyond it
        self.tame = False

    def grow(self, assumed: dict, proven: dict) -> dict:
        out, plain = {}, {}
        for p, (lo, hi) in assumed.items():
            plo, phi = proven[p]
            nlo, nhi = min(lo, plo), max(hi, phi)
            plain[p] = (nlo, nhi)
            ends = []
            for end, moved in ((0, nlo - lo), (1, nhi - hi)):
                run = self.moves.get((p, end), 0) + 1 if moved else 0
                self.moves[p, end] = run
                far = 2 ** (run - GROW_ROUNDS + 1) if run >= GROW_ROUNDS and not self.tame \
                    else 0
                ends.append(abs(moved) * far)
            out[p] = (nlo - ends[0], nhi + ends[1])
        self.leapt = plain if out != plain else None
        return out

    def back(self) -> dict:
        plain, self.leapt, self.tame = self.leapt, None, True
        return plain


def _refuse_growth(b, assumed: dict, proven, rounds: int) -> None:
    from .util import short_name

    grown = [p for p, (lo, hi) in assumed.items() if proven is not None and
             proven[p] != (lo, hi)] or list(assumed)
    src = b.nodes[b.nodes[grown[0]].gate.src]
    while isinstance(src.gate, Prev):
        src = b.nodes[src.gate.src]
    lo, hi = assumed[grown[0]] if proven is None else proven[grown[0]]
    b.error(src.pos, f"the range of '{short_name(src.name)}' keeps growing from step to step "
                     f"({lo}..{hi} after {rounds} rounds), and an operation reads its "
                     "previous value",
            "clamp it (clamp(x, LO..HI), or a relu with max=...) so operations on "
            "prev(...) can be built")


def _read_prevs(b, resolved: dict, order: list[int]) -> list[int]:
    """The prev nodes some operation depends on within its step: the ranges of these are
    what the operations are built for."""
    up = _upstream(b, order, set(resolved))
    return [n.id for n in b.nodes if isinstance(n.gate, Prev) and n.id in up]


def _lower_all(b, resolved: dict, order: list[int], assumed: dict) -> dict:
    """Lower the operations in dependency order; returns every node's estimated range."""
    ranges: dict[int, tuple[int, int]] = {}
    loops = _clamped(b, order)
    for nid in order:
        node = b.nodes[nid]
        if nid in resolved:
            kind, (ops, extra), pos = resolved[nid]
            r = Recipes(_Emitter(b, ranges, node.name, pos))
            ops = [_value(o) for o in ops]
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
            # What no operation reads within the step may take any value: its first one.
            ranges[nid] = assumed.get(nid) or (_init(b, nid), _init(b, nid))
        elif isinstance(node.gate, Product):
            corners = [x * y for x in ranges[node.gate.a] for y in ranges[node.gate.b]]
            ranges[nid] = (min(corners), max(corners))
        else:
            acc = Recipes(_Emitter(b, ranges, node.name, node.pos)).range(
                Affine(tuple(node.weights.items()), node.bias))
            ranges[nid] = value_range(node.gate, acc, b.steps)
    return ranges
