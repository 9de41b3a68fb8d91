"""The typed netlist IR: nodes, gates, weighted lines and ranges (types only).

Netlists are built and validated by `dsl/builder.py`; this module depends on nothing else
of the project, so every pass (ranges, reference, lowering, map generation) can import it.

A node computes `acc = bias + sum(w * value(src))` and then `value = gate(acc)`. Inputs are
nodes whose value is given; a product node multiplies two node values and has no lines.
Semantics of every gate are in docs/dnet.md; the exact evaluation is dsl/reference.py.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Union

from .diagnostics import Pos

# One line adds its weight to a light level in the engine; a single weight beyond the
# light range can never be represented, so it is rejected at the source.
WEIGHT_LIMIT = 32767
# Anything that does not fit a 32-bit ACS int cannot reach the engine in any form.
INT_LIMIT = 2**31 - 1
MAX_STEPS = 10_000


# ---------------------------------------------------------------------------------- gates
@dataclass(frozen=True)
class Input:
    """A value given to the map. `levels`: the only values it can take, when the value
    is another map's lookup (a tile's input, mapgen/tiles.py): its lane then has a door
    per level instead of one per integer of lo..hi."""
    lo: int
    hi: int
    levels: tuple[int, ...] | None = None
    kind = "input"

    def __post_init__(self):
        lv = self.levels
        if lv is not None and not (all(a < b for a, b in zip(lv, lv[1:])) and
                                   self.lo <= lv[0] and lv[-1] <= self.hi):
            raise ValueError(f"input levels must rise strictly within {self.lo}..{self.hi}")


@dataclass(frozen=True)
class Identity:
    kind = "identity"


@dataclass(frozen=True)
class Relu:
    """y = min(max(floor(acc / s), 0), L)."""

    s: int = 1
    L: int | None = None  # None: no clamp was written; range analysis fills it in
    kind = "relu"


@dataclass(frozen=True)
class Step:
    """y = 1 if acc >= t else 0."""

    t: int = 0
    kind = "step"


@dataclass(frozen=True)
class Lut:
    """y = table[clamp(acc, lo, lo + len(table) - 1) - lo]."""

    lo: int
    table: tuple[int, ...]
    kind = "lut"

    @property
    def hi(self) -> int:
        return self.lo + len(self.table) - 1

    def __call__(self, acc: int) -> int:
        return self.table[min(max(acc, self.lo), self.hi) - self.lo]


@dataclass(frozen=True)
class Product:
    """y = value(a) * value(b); a product node has no lines and no bias."""

    a: int
    b: int
    kind = "product"


@dataclass(frozen=True)
class Spike:
    """Leaky integrate-and-fire over time steps (membrane v starts at `init`):

        u = v + acc;  y = 1 if u >= threshold else 0
        if y: u = u - threshold (reset=None, 'subtract') or u = reset
        v = max(u - leak, 0)
    """

    threshold: int
    leak: int = 0
    reset: int | None = 0
    init: int = 0
    kind = "spike"


@dataclass(frozen=True)
class Prev:
    """A recurrent reference: the value node `src` had at the previous time step (`init` at
    the first step of a sequence). A prev node has no lines and no bias; it depends on
    nothing within its step, so a cycle through it is a recurrence, not a cycle."""

    src: int
    init: int = 0
    kind = "prev"


Gate = Union[Input, Identity, Relu, Step, Lut, Product, Spike, Prev]
GATE_NAMES = ("relu", "step", "lut", "identity", "product", "spike")
# The hidden vector of prev(h) is named h + PREV_SUFFIX (h.prev[3] is prev(h[3])); that of
# prev(prev(h)) h.prev2, of K nested prevs h.prevK (prev_name), so a delay(x, 9999) chain
# has short names. A dot keeps them apart from every written name.
PREV_SUFFIX = ".prev"
_PREV_TAIL = re.compile(r"\.prev([2-9]|[1-9][0-9]+)?$")


def prev_depth(group: str) -> tuple[str, int]:
    """(base, K): `group` names prev applied K times to the vector `base` (K = 0: not a
    prev vector). The older spelling h.prev.prev counts as well as h.prev2."""
    k = 0
    while True:
        m = _PREV_TAIL.search(group)
        if not m:
            return group, k
        k += int(m.group(1) or 1)
        group = group[:m.start()]


def canonical_name(group: str) -> str:
    """A vector's name as netlists keep it: h.prev2, never h.prev.prev."""
    return prev_name(group, 0)


def prev_name(group: str, k: int = 1) -> str:
    """The hidden vector of prev applied k more times to `group`: h -> h.prev -> h.prev2."""
    base, depth = prev_depth(group)
    depth += k
    return base if depth == 0 else base + PREV_SUFFIX + (str(depth) if depth > 1 else "")


# ---------------------------------------------------------------------------------- nodes
@dataclass
class Node:
    id: int
    name: str                 # "h[3]" for vector elements, "y" for scalars
    group: str                # the declared vector ("h")
    index: int | None         # position in the vector, None for a scalar
    gate: Gate
    pos: Pos
    weights: dict[int, int] = field(default_factory=dict)  # source id -> weight
    bias: int = 0
    line_pos: dict[int, Pos] = field(default_factory=dict)  # where each line was written

    @property
    def is_input(self) -> bool:
        return isinstance(self.gate, Input)

    @property
    def is_prev(self) -> bool:
        return isinstance(self.gate, Prev)

    def sources(self) -> list[int]:
        """The nodes this one reads within its time step (a prev node reads none)."""
        if isinstance(self.gate, Product):
            return [self.gate.a, self.gate.b]
        return list(self.weights)


@dataclass
class Range:
    lo: int
    hi: int

    def __iter__(self):
        yield self.lo
        yield self.hi

    def __str__(self) -> str:
        return f"{self.lo}..{self.hi}"


@dataclass
class Netlist:
    name: str
    nodes: list[Node]              # topological order: every source precedes its users
    groups: dict[str, list[int]]   # vector name -> node ids, in index order
    inputs: list[int]              # input node ids in declaration order
    outputs: list[int]             # output node ids in the order declared
    steps: int = 1                 # time steps of a run (the most a run may take, if open)
    source: str = "<netlist>"
    # `steps open`: a run may take any number of steps (up to `steps`), so every range
    # holds at every step, not only the first `steps`.
    open: bool = False
    feedback: dict[int, int] = field(default_factory=dict)  # input id -> node id fed back
    done: int | None = None        # a 0/1 node: the run ends after the first step it is 1
    acc_range: list[Range] = field(default_factory=list)    # filled by dsl.ranges
    value_range: list[Range] = field(default_factory=list)
    state_range: dict[int, Range] = field(default_factory=dict)  # spike membranes
    # Convolutions and pools written as such (dsl/conv.ConvLines): their lines are in the
    # nodes' weights like any others; the record lets writers say `conv` instead.
    convs: list = field(default_factory=list)

    def by_name(self, name: str) -> Node:
        for n in self.nodes:
            if n.name == name:
                return n
        raise KeyError(name)

    @property
    def recurrent(self) -> bool:
        """Does any value cross from one step to the next (prev nodes, feedback, membranes)?"""
        return bool(self.feedback) or any(isinstance(n.gate, (Prev, Spike)) for n in self.nodes)

    @property
    def multi_step(self) -> bool:
        return self.open or self.steps > 1

    @property
    def n_connections(self) -> int:
        return sum(len(n.weights) for n in self.nodes)

    def input_ranges(self) -> list[tuple[int, int]]:
        return [(self.nodes[i].gate.lo, self.nodes[i].gate.hi) for i in self.inputs]


def element_name(group: str, index: int | None) -> str:
    return group if index is None else f"{group}[{index}]"
