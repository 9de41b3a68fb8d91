"""Value-range analysis: a sound integer [lo, hi] for every accumulator, value and membrane.

Computed with exact Python ints when a netlist is built (`NetBuilder.build` calls
`analyse`), so every later pass can prove engine limits (light levels and plane heights in
-32768..32767) before anything is emitted. Bounds are interval arithmetic over the
declared input ranges: never smaller than any reachable value (a property test checks it),
and exact for a single layer of independent inputs.
"""
from __future__ import annotations

from .ir import (MAX_STEPS, Identity, Input, Lut, Netlist, Node, Prev, Product, Range, Relu,
                 Spike, Step)


def affine_range(net: Netlist, node_id: int) -> Range:
    node = net.nodes[node_id]
    lo = hi = node.bias
    for src, w in node.weights.items():
        r = net.value_range[src]
        if w > 0:
            lo += w * r.lo
            hi += w * r.hi
        else:
            lo += w * r.hi
            hi += w * r.lo
    return Range(lo, hi)


def relu_value(acc: int, s: int, L: int | None) -> int:
    y = max(acc // s, 0)
    return y if L is None else min(y, L)


def gate_range(gate, acc: Range) -> Range:
    """The value range of a (non-product, non-spike) gate over an accumulator range."""
    if isinstance(gate, Identity):
        return Range(acc.lo, acc.hi)
    if isinstance(gate, Relu):
        return Range(relu_value(acc.lo, gate.s, gate.L), relu_value(acc.hi, gate.s, gate.L))
    if isinstance(gate, Step):
        return Range(int(acc.lo >= gate.t), int(acc.hi >= gate.t))
    if isinstance(gate, Lut):
        a = min(max(acc.lo, gate.lo), gate.hi) - gate.lo
        b = min(max(acc.hi, gate.lo), gate.hi) - gate.lo
        part = gate.table[a:b + 1]
        return Range(min(part), max(part))
    raise TypeError(gate)


def spike_ranges(gate: Spike, acc: Range, steps: int) -> tuple[Range, Range]:
    """(membrane range, spike output range) over `steps` time steps.

    The membrane range covers every value the membrane holds at any moment of a step:
    after integration (u), after a fire (the reset value, or u - threshold) and after the
    leak.

    Iterates the interval update step by step and stops early at a fixed point, so a
    membrane that cannot grow without bound gets a tight range at any number of steps.
    """
    v = Range(gate.init, gate.init)
    seen = Range(v.lo, v.hi)
    fire_lo, fire_hi = 1, 0
    for _ in range(steps):
        u = Range(v.lo + acc.lo, v.hi + acc.hi)
        can_fire = u.hi >= gate.threshold
        can_rest = u.lo < gate.threshold
        fire_lo = min(fire_lo, 0 if can_rest else 1)
        fire_hi = max(fire_hi, 1 if can_fire else 0)
        parts = []
        if can_rest:
            parts.append((u.lo, min(u.hi, gate.threshold - 1)))
        if can_fire:
            if gate.reset is None:
                parts.append((max(u.lo, gate.threshold) - gate.threshold, u.hi - gate.threshold))
            else:
                parts.append((gate.reset, gate.reset))
        lo = min(p[0] for p in parts)
        hi = max(p[1] for p in parts)
        nv = Range(max(lo - gate.leak, 0), max(hi - gate.leak, 0))
        # The membrane holds u after integration, lo..hi after firing (a reset value may
        # lie above u) and nv after the leak: the leak lane reads the middle one.
        seen = Range(min(seen.lo, nv.lo, u.lo, lo), max(seen.hi, nv.hi, u.hi, hi))
        if nv.lo == v.lo and nv.hi == v.hi:
            break
        v = nv
    return seen, Range(fire_lo, fire_hi)


# Beyond this many bits no value can reach the engine (32-bit) or be worth printing; a chain
# of squarings would otherwise grow the bounds' digits exponentially (and break str()).
RANGE_BITS = 256
# Exact ranges by running every input: only for one-step netlists with at most this many
# input combinations and this much work (combinations x nodes).
ENUM_INPUTS = 4096
ENUM_WORK = 1_000_000
ENUM_NODES = 5000
# Folding identity chains: a node's expansion over non-identity sources is built only while
# it costs at most this many terms beyond the node's own lines (so `check` stays linear).
FOLD_EXTRA = 256


def analyse(net: Netlist) -> Netlist:
    """Fill net.acc_range, net.value_range and net.state_range; fills an omitted relu max.

    One range per node, used by every later pass (the light check, the door check, the
    reference's choice of integer type): interval arithmetic, tightened where it is cheap.
    Identity chains are folded (h = x - x through identities is 0, not -2r..2r), a product
    of a value with itself is a square, and small input spaces are enumerated exactly.
    What can remain loose: correlated values through gated neurons or products of
    different nodes, in netlists with too many input combinations to enumerate.

    A netlist with prev nodes is a fixpoint (`recurrent_ranges`): the ranges hold at every
    step of a run, for any number of steps when the netlist is open."""
    gates = [n.gate for n in net.nodes]
    prevs = [n for n in net.nodes if isinstance(n.gate, Prev)]
    if prevs:
        assumed = recurrent_ranges(net, prevs, gates)
    else:
        assumed = {}
    _interval_pass(net, gates, assumed)
    for node, gate in zip(net.nodes, gates):
        if isinstance(gate, Relu) and gate.L is None:
            # No clamp written: clamping at the largest reachable value changes nothing,
            # and a map needs a finite staircase.
            node.gate = Relu(gate.s, max(net.acc_range[node.id].hi // gate.s, 0))
    _enumerate_exactly(net)
    return net


def _interval_pass(net: Netlist, gates: list, assumed: dict[int, Range]) -> None:
    """One walk over the nodes in order: every range from its sources' (prev nodes take
    the ranges in `assumed`). `gates` are the gates as written (a relu's max unfilled)."""
    net.acc_range = [Range(0, 0)] * len(net.nodes)
    net.value_range = [Range(0, 0)] * len(net.nodes)
    net.state_range = {}
    fold = _Folding(net)
    steps = MAX_STEPS if net.open else net.steps
    for node, gate in zip(net.nodes, gates):
        if isinstance(gate, Input):
            acc = Range(gate.lo, gate.hi)
            val = Range(gate.lo, gate.hi)
        elif isinstance(gate, Prev):
            acc = assumed[node.id]
            val = Range(acc.lo, acc.hi)
        elif isinstance(gate, Product):
            acc = product_range(net.value_range[gate.a], net.value_range[gate.b],
                                gate.a == gate.b)
            val = Range(acc.lo, acc.hi)
        elif isinstance(gate, Spike):
            acc = fold.acc_range(node)
            state, val = spike_ranges(gate, acc, steps)
            net.state_range[node.id] = state
            _check_size(node, state, "membrane")
        else:
            acc = fold.acc_range(node)
            if isinstance(gate, Relu) and gate.L is None:
                gate = Relu(gate.s, max(acc.hi // gate.s, 0))
            val = gate_range(gate, acc)
        _check_size(node, acc, "value" if isinstance(gate, Product) else "accumulator")
        net.acc_range[node.id] = acc
        net.value_range[node.id] = val


# Passes of the recurrent fixpoint: rising from the first step's ranges, then (widened to
# the gates' clamps) falling back towards the least fixpoint. Every falling iterate is sound.
ASCENT_PASSES = 64
DESCENT_PASSES = 64


def recurrent_ranges(net: Netlist, prevs: list[Node], gates: list) -> dict[int, Range]:
    """The range of every prev node over every step of a run: prev(x) at step t is x at
    t - 1 (its init at t = 0), so its range is init joined with x's range, which in turn
    depends on the prev nodes. Iterated from {init}: after k rounds the ranges cover steps
    0..k, so a fixed `steps T` netlist stops after T - 1 rounds (as tight as unrolling),
    and any netlist stops at a fixpoint (then they hold for any number of steps). A range
    still growing after ASCENT_PASSES rounds is widened to its source's clamp (relu max,
    step, lut edges, an input's range); if that is a post-fixpoint it holds at every step
    and is narrowed again, else the node is refused."""
    assumed = {p.id: Range(p.gate.init, p.gate.init) for p in prevs}
    horizon = None if net.open else net.steps - 1
    for rounds in range(ASCENT_PASSES):
        if horizon is not None and rounds >= horizon:
            return assumed
        _interval_pass(net, gates, assumed)
        grown = _next(net, prevs, assumed)
        if grown == assumed:
            return assumed
        assumed = grown
    _interval_pass(net, gates, assumed)
    assumed = _widen(net, prevs, gates, assumed, _next(net, prevs, assumed))
    for _ in range(DESCENT_PASSES):
        _interval_pass(net, gates, assumed)
        lower = _next(net, prevs, assumed)
        if lower == assumed:
            break
        assumed = lower
    return assumed


def _next(net: Netlist, prevs: list[Node], assumed: dict[int, Range]) -> dict[int, Range]:
    """The prev ranges one step later: init joined with the source's range."""
    out = {}
    for p in prevs:
        r, init = net.value_range[p.gate.src], p.gate.init
        out[p.id] = Range(min(init, r.lo), max(init, r.hi))
    return out


def _clamp(gate) -> Range | None:
    """The values a gate can ever produce, whatever its accumulator (None: unbounded)."""
    if isinstance(gate, Relu) and gate.L is not None:
        return Range(0, gate.L)
    if isinstance(gate, (Step, Spike)):
        return Range(0, 1)
    if isinstance(gate, Lut):
        return Range(min(gate.table), max(gate.table))
    if isinstance(gate, Input):
        return Range(gate.lo, gate.hi)
    return None


# Rounds after widening in which ranges without a clamp of their own may still settle on
# what the clamped ones allow (an identity fed by a clamped recurrence).
SETTLE_PASSES = 4


def _widen(net: Netlist, prevs: list[Node], gates: list, assumed: dict, grown: dict) -> dict:
    """Jump every still-growing prev range to its source's clamp, let the others settle,
    and check the result holds one more step (a post-fixpoint: by induction it then holds
    at every step); else refuse naming the nodes and the fix."""
    from .diagnostics import CompileError, Diagnostic

    wide = dict(grown)
    for p in prevs:
        c = _clamp(gates[p.gate.src])
        if grown[p.id] != assumed[p.id] and c is not None:
            r = grown[p.id]
            wide[p.id] = Range(min(r.lo, c.lo), max(r.hi, c.hi))
    for _ in range(SETTLE_PASSES):
        _interval_pass(net, gates, wide)
        after = _next(net, prevs, wide)
        bad = [p for p in prevs
               if not (wide[p.id].lo <= after[p.id].lo and after[p.id].hi <= wide[p.id].hi)]
        if not bad:
            return wide
        for p in bad:
            r, a = wide[p.id], after[p.id]
            wide[p.id] = Range(min(r.lo, a.lo), max(r.hi, a.hi))
    raise CompileError([Diagnostic(
        net.nodes[p.gate.src].pos,
        f"the range of '{net.nodes[p.gate.src].name}' grows at every step (after "
        f"{ASCENT_PASSES} steps {grown[p.id]}) and nothing bounds it",
        "clamp it: a relu with max=..., a lut, or clamp(x, LO..HI) inside the loop; or "
        "prove it for a fixed number of steps with 'steps T'") for p in bad])


def product_range(a: Range, b: Range, same: bool) -> Range:
    if same:  # x * x: a square is never negative, whatever the corners say
        lo = 0 if a.lo <= 0 <= a.hi else min(a.lo * a.lo, a.hi * a.hi)
        return Range(lo, max(a.lo * a.lo, a.hi * a.hi))
    corners = [a.lo * b.lo, a.lo * b.hi, a.hi * b.lo, a.hi * b.hi]
    return Range(min(corners), max(corners))


def _check_size(node, r: Range, what: str) -> None:
    if max(abs(r.lo), abs(r.hi)).bit_length() > RANGE_BITS:
        from .diagnostics import CompileError, Diagnostic
        from .util import short_int

        big = r.hi if abs(r.hi) >= abs(r.lo) else r.lo
        raise CompileError([Diagnostic(node.pos, f"the {what} of '{node.name}' can reach "
                                                 f"{short_int(big)}, beyond 2^{RANGE_BITS}: "
                                                 "refused before its bounds grow further",
                                       "no map holds values past 32 bits: requantise (relu "
                                       "with s > 1) or narrow the inputs before it")])


class _Folding:
    """Accumulators expanded through identity neurons: acc(x) = c + sum w * value(r) over
    non-identity nodes r, where weights of one source arriving by several paths add up
    (and may cancel) before the interval is taken."""

    def __init__(self, net: Netlist):
        self.net = net
        self.expansion: dict[int, tuple[int, dict[int, int]]] = {}

    def acc_range(self, node) -> Range:
        direct = affine_range(self.net, node.id)
        exp = self._expand(node)
        if exp is None:
            return direct
        const, terms = exp
        lo = hi = const
        for r, w in terms.items():
            v = self.net.value_range[r]
            lo += w * (v.lo if w > 0 else v.hi)
            hi += w * (v.hi if w > 0 else v.lo)
        # Both bounds are sound; their intersection is too.
        return Range(max(lo, direct.lo), min(hi, direct.hi))

    def _expand(self, node):
        cost = sum(len(self.expansion[s][1]) for s in node.weights if s in self.expansion)
        if cost > len(node.weights) + FOLD_EXTRA:
            return None  # too costly: its interval as it is, and a leaf for its readers
        const, terms = node.bias, {}
        for s, w in node.weights.items():
            if s in self.expansion:
                c, sub = self.expansion[s]
                const += w * c
                for r, wr in sub.items():
                    terms[r] = terms.get(r, 0) + w * wr
            else:
                terms[s] = terms.get(s, 0) + w
        terms = {r: w for r, w in terms.items() if w}
        if isinstance(node.gate, Identity):
            self.expansion[node.id] = (const, terms)
        return const, terms


def _enumerate_exactly(net: Netlist) -> None:
    """A one-step netlist with few input combinations: run the reference on all of them
    and keep the exact ranges (intersected with the intervals, which contain them)."""
    import math

    if net.steps != 1 or net.open or not net.inputs or net.recurrent:
        return
    combos = math.prod(hi - lo + 1 for lo, hi in net.input_ranges())
    if combos > ENUM_INPUTS or len(net.nodes) > ENUM_NODES or combos * len(net.nodes) > ENUM_WORK:
        return
    import itertools

    from .reference import evaluate

    xs = [list(x) for x in itertools.product(*(range(lo, hi + 1)
                                               for lo, hi in net.input_ranges()))]
    res = evaluate(net, xs)
    acc, val = res.acc[:, 0, :], res.value[:, 0, :]
    bounds = zip(acc.min(axis=0).tolist(), acc.max(axis=0).tolist(),
                 val.min(axis=0).tolist(), val.max(axis=0).tolist())
    for n, (alo, ahi, vlo, vhi) in zip(net.nodes, bounds):
        if not n.is_input:
            a, v = net.acc_range[n.id], net.value_range[n.id]
            net.acc_range[n.id] = Range(max(a.lo, int(alo)), min(a.hi, int(ahi)))
            net.value_range[n.id] = Range(max(v.lo, int(vlo)), min(v.hi, int(vhi)))
