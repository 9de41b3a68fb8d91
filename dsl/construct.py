"""Construction recipes: how each program operation becomes ordinary netlist neurons.

Owns the one lowering of every constructed operation (compare, equals, select, switch,
logic, lookup, min / max / argmax, clamp, product, delay), shared by the Python graph API
(dsl/graph.py) and by the operations written directly in .dnet (dsl/macros.py), so both
build the same neurons. A recipe works on `Affine` values (a weighted sum of nodes plus a
constant: adding and scaling cost no neuron, the sum rides on the consumer's lines) and asks
an `Emitter` for new neurons and for the proven value range of a node (dsl/ranges.py).
Every constant a recipe needs (select's B, a lookup's strides and domain) comes from those
ranges; an operation whose ranges do not prove it exact is refused with a `Refused`.
Semantics of every operation: docs/graph.md.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Callable, Hashable, Protocol

from .ir import MAX_STEPS, WEIGHT_LIMIT, Lut, Range, Relu, Spike, Step
from .ranges import gate_range, spike_ranges

MAX_TABLE = 65536
MAX_SCAN = 1 << 22     # a wider domain is refused before its table is even computed


def value_range(gate, acc: tuple[int, int], steps: int) -> tuple[int, int]:
    """The value range dsl/ranges.py proves for a gate over an accumulator range."""
    r = Range(*acc)
    if isinstance(gate, Spike):
        return tuple(spike_ranges(gate, r, steps)[1])
    if isinstance(gate, Relu) and gate.L is None:
        gate = Relu(gate.s, max(r.hi // gate.s, 0))
    return tuple(gate_range(gate, r))


class Refused(Exception):
    """An operation the ranges cannot prove exact, or cannot build: message and hint."""

    def __init__(self, message: str, hint: str = ""):
        super().__init__(message)
        self.message = message
        self.hint = hint


@dataclass(frozen=True)
class Affine:
    """const + sum(w * value(node)); nodes are the emitter's keys (names or ids)."""

    terms: tuple[tuple[Hashable, int], ...] = ()
    const: int = 0

    @staticmethod
    def of(key: Hashable) -> "Affine":
        return Affine(((key, 1),), 0)

    @staticmethod
    def constant(c: int) -> "Affine":
        return Affine((), int(c))

    def weights(self) -> dict:
        return dict(self.terms)

    def _combine(self, other: "Affine", k: int) -> "Affine":
        w = self.weights()
        for key, v in other.terms:
            w[key] = w.get(key, 0) + k * v
        return Affine(tuple((key, v) for key, v in w.items() if v), self.const + k * other.const)

    def __add__(self, other) -> "Affine":
        return self._combine(lift(other), 1)

    __radd__ = __add__

    def __sub__(self, other) -> "Affine":
        return self._combine(lift(other), -1)

    def __rsub__(self, other) -> "Affine":
        return lift(other)._combine(self, -1)

    def __neg__(self) -> "Affine":
        return self * -1

    def __mul__(self, k) -> "Affine":
        if not isinstance(k, int) or isinstance(k, bool):
            raise TypeError("an Affine value scales by an integer only (use product for two values)")
        return Affine(tuple((key, v * k) for key, v in self.terms if v * k), self.const * k)

    __rmul__ = __mul__

    @property
    def is_constant(self) -> bool:
        return not self.terms


class NotOneValue(Refused, TypeError):
    """A list (a vector or a slice) where an operation takes one value: refused like any
    operation (positioned in .dnet, a GraphError in the graph API), and still a TypeError
    for Python code that does arithmetic on values."""


def lift(v) -> Affine:
    if isinstance(v, Affine):
        return v
    if isinstance(v, int) and not isinstance(v, bool):
        return Affine.constant(v)
    if isinstance(v, (list, tuple)):
        raise NotOneValue(f"an operand is a list (a vector or a slice) of {len(v)} "
                          f"value{'s' * (len(v) != 1)} where one value is needed",
                          "pass one element (x[0]); min, max, argmax, and, or, xor, equals "
                          "and switch's values take vectors and slices")
    raise TypeError(f"expected a value or an integer, got {v!r}")


def spread(values) -> list[Affine]:
    """The operands of an operation over any number of values (min, max, argmax, the logic
    operations, equals, switch's values): a list in them (a vector or a slice) stands for
    its elements, so max(x[0:2], 1) is max(x[0], x[1], 1)."""
    out: list[Affine] = []
    for v in values:
        out.extend(lift(e) for e in v) if isinstance(v, (list, tuple)) else out.append(lift(v))
    return out


class Emitter(Protocol):
    steps: int

    def node_range(self, key) -> tuple[int, int]: ...

    def new_neuron(self, gate, value: Affine, role: str): ...

    def new_product(self, a, b, role: str): ...

    def new_prev(self, key, init: int):
        """A node holding node `key`'s value of the previous step (`init` at the first)."""
        ...


@dataclass
class Recipes:
    """The operations, over one emitter. Each returns Affine values."""

    em: Emitter

    # -- ranges and neurons -------------------------------------------------------------
    def range(self, v: Affine) -> tuple[int, int]:
        lo = hi = v.const
        for key, w in v.terms:
            a, b = self.em.node_range(key)
            lo, hi = (lo + w * a, hi + w * b) if w > 0 else (lo + w * b, hi + w * a)
        return lo, hi

    def neuron(self, gate, v: Affine, role: str) -> Affine:
        for key, w in v.terms:
            if abs(w) > WEIGHT_LIMIT:
                raise Refused(f"{role} needs a weight {w}, beyond the engine's {WEIGHT_LIMIT}",
                              "narrow the operands' ranges (clamp or requantise them first)")
        return Affine.of(self.em.new_neuron(gate, v, role))

    def bit(self, v: Affine, what: str) -> Affine:
        lo, hi = self.range(v)
        if not (0 <= lo and hi <= 1):
            raise Refused(f"{what} has range {lo}..{hi}; it must be a proven 0/1 value",
                          "make it with a compare, equals or step first")
        return v

    # -- arithmetic that needs a gate ------------------------------------------------------
    def step(self, v: Affine, t: int, role: str) -> Affine:
        """1 if v >= t else 0; a constant when the range decides it."""
        lo, hi = self.range(v)
        if lo >= t:
            return Affine.constant(1)
        if hi < t:
            return Affine.constant(0)
        return self.neuron(Step(t), v, role)

    def relu(self, v: Affine, role: str, cap: int | None = None) -> Affine:
        """min(max(v, 0), cap); the cap defaults to the range's top (no change)."""
        lo, hi = self.range(v)
        top = hi if cap is None else min(hi, cap)
        if hi <= 0:
            return Affine.constant(0)
        if cap is not None and lo >= cap:
            return Affine.constant(cap)
        if lo >= 0 and (cap is None or hi <= cap):
            return v
        return self.neuron(Relu(1, max(top, 0)), v, role)

    def lut(self, v: Affine, fn: Callable[[int], int], role: str) -> Affine:
        lo, hi = self.range(v)
        if hi - lo + 1 > MAX_SCAN:
            raise Refused(f"{role} needs a table over {lo}..{hi}, {hi - lo + 1} entries",
                          f"a lookup covers at most {MAX_TABLE} values; narrow the operands")
        table = [int(fn(u)) for u in range(lo, hi + 1)]
        if len(set(table)) == 1:
            return Affine.constant(table[0])
        # A lut holds its edge values beyond its domain: runs at either end are trimmed.
        first = next(k for k in range(len(table)) if table[k + 1] != table[0])
        last = next(k for k in range(len(table) - 1, 0, -1) if table[k - 1] != table[-1])
        table, lo = table[first:last + 1], lo + first
        if len(table) > MAX_TABLE:
            raise Refused(f"{role} needs a table of {len(table)} entries",
                          f"a lookup covers at most {MAX_TABLE} values; narrow the operands")
        return self.neuron(Lut(lo, tuple(table)), v, role)

    # -- the operations -------------------------------------------------------------------
    def lt(self, a, b) -> Affine:
        return self.step(lift(b) - lift(a), 1, "compare <")

    def le(self, a, b) -> Affine:
        return self.step(lift(b) - lift(a), 0, "compare <=")

    def eq(self, a, b) -> Affine:
        return self.lut(lift(a) - lift(b), lambda d: int(d == 0), "compare ==")

    def equals(self, xs: list, consts: list[int]) -> Affine:
        """1 if xs[k] == consts[k] for every k. An element whose constant is an end of its
        range contributes its (linear) distance; any other needs an == first."""
        xs = spread(xs)
        if len(xs) != len(consts):
            raise Refused(f"equals compares {len(xs)} values with {len(consts)} constants",
                          "give one constant per value")
        dist = Affine.constant(0)
        for x, c in zip(xs, consts):
            x = lift(x)
            lo, hi = self.range(x)
            if not lo <= c <= hi:
                return Affine.constant(0)
            if lo == hi:
                continue
            if c == lo:
                dist = dist + (x - lo)
            elif c == hi:
                dist = dist + (hi - x)
            else:
                dist = dist + (1 - self.eq(x, c))
        return self.step(-dist, 0, "equals")

    def select(self, c, a, b) -> Affine:
        """a if c else b. With m = the lowest value either can take and B = the widest
        span, a - m - B(1-c) and b - m - Bc are never positive on the unchosen side."""
        c = self.bit(lift(c), "select's condition")
        a, b = lift(a), lift(b)
        (la, ha), (lb, hb) = self.range(a), self.range(b)
        if self.range(c) == (1, 1):
            return a
        if self.range(c) == (0, 0):
            return b
        m = min(la, lb)
        big = max(ha, hb) - m
        return (m + self.relu(a - m - big * (1 - c), "select (then)")
                + self.relu(b - m - big * c, "select (else)"))

    def switch(self, index, values: list) -> Affine:
        """values[index], for an index proven within 0..len(values)-1."""
        index = lift(index)
        lo, hi = self.range(index)
        vals = spread(values)
        if not (0 <= lo and hi < len(vals)):
            raise Refused(f"switch index has range {lo}..{hi} but there are {len(vals)} "
                          f"values", f"the index must be proven within 0..{len(vals) - 1}")
        if all(v.is_constant for v in vals):
            return self.lut(index, lambda i: vals[i].const, "switch")
        live = list(range(lo, hi + 1))
        m = min(self.range(vals[k])[0] for k in live)
        big = max(self.range(vals[k])[1] for k in live) - m
        out = Affine.constant(m)
        for k in live:
            cond = self.eq(index, k)
            out = out + self.relu(vals[k] - m - big * (1 - cond), f"switch case {k}")
        return out

    def and_(self, *bits) -> Affine:
        bits = [self.bit(b, "an 'and' operand") for b in spread(bits)]
        return self.step(sum(bits, Affine()), len(bits), "and")

    def or_(self, *bits) -> Affine:
        bits = [self.bit(b, "an 'or' operand") for b in spread(bits)]
        return self.step(sum(bits, Affine()), 1, "or")

    def not_(self, bit) -> Affine:
        return 1 - self.bit(lift(bit), "a 'not' operand")

    def xor(self, *bits) -> Affine:
        bits = [self.bit(b, "an 'xor' operand") for b in spread(bits)]
        return self.lut(sum(bits, Affine()), lambda s: s % 2, "xor")

    def lookup(self, fn: Callable[..., int], *args) -> Affine:
        """fn(*values) for any integer function: one table over a mixed-radix key."""
        args = [lift(a) for a in args]
        key = Affine.constant(0)
        stride = 1
        ranges = [self.range(a) for a in args]
        for a, (lo, hi) in reversed(list(zip(args, ranges))):
            key = key + (a - lo) * stride
            stride *= hi - lo + 1
        if stride > MAX_TABLE:
            raise Refused(f"lookup over a domain of {stride} combinations",
                          f"a lookup covers at most {MAX_TABLE} values; narrow the operands")
        combos = itertools.product(*[range(lo, hi + 1) for lo, hi in ranges])
        table = [int(fn(*c)) for c in combos]
        return self.lut(key, lambda k: table[k], "lookup")

    def max2(self, a, b) -> Affine:
        a, b = lift(a), lift(b)
        return b + self.relu(a - b, "max")

    def min2(self, a, b) -> Affine:
        a, b = lift(a), lift(b)
        return a - self.relu(a - b, "min")

    def reduce(self, op, values: list) -> Affine:
        """A balanced tree: n values in ceil(log2 n) layers."""
        vals = spread(values)
        if not vals:
            raise Refused("min / max of no values", "give at least one value")
        while len(vals) > 1:
            vals = [op(vals[i], vals[i + 1]) if i + 1 < len(vals) else vals[i]
                    for i in range(0, len(vals), 2)]
        return vals[0]

    def argmax(self, values: list, gate=None) -> list[Affine]:
        """One-hot of the largest value, ties to the lowest index: c[i][j] = [v_i >= v_j]
        for i < j, then best_i = [i beats all n-1 others]. `gate` (a 0/1 value) can zero the
        whole answer at no extra depth."""
        vals = spread(values)
        n = len(vals)
        if n == 0:
            raise Refused("argmax of no values", "give at least one value")
        beats = {}
        for i in range(n):
            for j in range(i + 1, n):
                beats[i, j] = self.step(vals[i] - vals[j], 0, f"argmax {i} vs {j}")
        extra = Affine() if gate is None else self.bit(lift(gate), "argmax's gate")
        need = n - 1 + (gate is not None)
        out = []
        for i in range(n):
            wins = sum((beats[i, j] for j in range(i + 1, n)), extra)
            wins = wins + sum(((1 - beats[j, i]) for j in range(i)), Affine())
            out.append(self.step(wins, need, f"argmax {i}"))
        return out

    def clamp(self, x, lo: int, hi: int) -> Affine:
        if lo > hi:
            raise Refused(f"clamp range {lo}..{hi} is empty", f"write {hi}..{lo}")
        x = lift(x)
        return lo + self.relu(x - lo, "clamp", cap=hi - lo)

    def product(self, a, b) -> Affine:
        ka, kb = self.node(lift(a), "product operand"), self.node(lift(b), "product operand")
        return Affine.of(self.em.new_product(ka, kb, "product"))

    def node(self, v: Affine, role: str):
        """The key of a node holding v (an identity neuron unless v already is one)."""
        if len(v.terms) == 1 and v.terms[0][1] == 1 and v.const == 0:
            return v.terms[0][0]
        from .ir import Identity

        return self.em.new_neuron(Identity(), v, role)

    def delay(self, x, k: int) -> Affine:
        """x as it was k steps earlier (its range's low end before the first k steps): a
        chain of k prev nodes, each the value of the one before at the previous step,
        kept in the map from step to step (docs/dnet.md, "State across steps"). In a run
        of at most k steps that is the low end throughout: a constant."""
        if self.em.steps < 2:
            raise Refused("delay needs a netlist with several time steps",
                          "set steps (Graph(steps=T) or 'steps T') to 2 or more, or 'steps open'")
        if not 1 <= k <= MAX_STEPS:
            raise Refused(f"delay of {k} steps", f"delay by 1..{MAX_STEPS} steps (a run takes "
                          f"at most {MAX_STEPS})")
        x = lift(x)
        lo, hi = self.range(x)
        if lo == hi or k >= self.em.steps:
            return Affine.constant(lo)
        key = self.node(x, "delay in")
        for _ in range(k):
            key = self.em.new_prev(key, lo)
        return Affine.of(key)
