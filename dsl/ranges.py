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


def analyse(net: Netlist, known: dict[int, tuple[Range, Range]] | None = None) -> Netlist:
    """Fill net.acc_range, net.value_range and net.state_range; fills an omitted relu max.

    One range per node, used by every later pass (the light check, the door check, the
    reference's choice of integer type): interval arithmetic, tightened where it is cheap.
    Identity chains are folded (h = x - x through identities is 0, not -2r..2r), a product
    of a value with itself is a square, and small input spaces are enumerated exactly.
    What can remain loose: correlated values through gated neurons or products of
    different nodes, in netlists with too many input combinations to enumerate.

    A netlist with prev nodes is a fixpoint (`recurrent_ranges`): the ranges hold at every
    step of a run, for any number of steps when the netlist is open. `known`: node id ->
    (acc, value) ranges already proven for a node computing the same values (a lowered
    netlist's nodes, dsl/lower.py): every range is intersected with them."""
    gates = [n.gate for n in net.nodes]
    known = known or {}
    prevs = [n for n in net.nodes if isinstance(n.gate, Prev)]
    if prevs:
        assumed = recurrent_ranges(net, prevs, gates, known)
    else:
        assumed = {}
    _Evaluator(net, gates, known).run(assumed)
    for node, gate in zip(net.nodes, gates):
        if isinstance(gate, Relu) and gate.L is None:
            # No clamp written: clamping at the largest reachable value changes nothing,
            # and a map needs a finite staircase.
            node.gate = Relu(gate.s, max(net.acc_range[node.id].hi // gate.s, 0))
    _enumerate_exactly(net)
    return net


def _meet(r: Range, k: Range) -> Range:
    """r narrowed to k (both sound bounds of one value); r itself if they do not meet."""
    lo, hi = max(r.lo, k.lo), min(r.hi, k.hi)
    return Range(lo, hi) if lo <= hi else r


class _Evaluator:
    """The interval evaluation of a netlist's nodes: a whole pass in node order, or only
    what a change of some prev nodes' ranges reaches (`propagate`), so that a fixpoint
    over a long prev chain costs its changes, not its rounds times the netlist.
    `gates` are the gates as written (a relu's max unfilled)."""

    def __init__(self, net: Netlist, gates: list, known: dict):
        self.net, self.gates, self.known = net, gates, known
        self.steps = MAX_STEPS if net.open else net.steps
        self.fold = _Folding(net)
        net.acc_range = [Range(0, 0)] * len(net.nodes)
        net.value_range = [Range(0, 0)] * len(net.nodes)
        net.state_range = {}
        self._readers: list[list[int]] | None = None

    def run(self, assumed: dict[int, Range]) -> None:
        """Every node from its sources' ranges (prev nodes take the ranges in `assumed`)."""
        for node in self.net.nodes:
            self.node(node, assumed)

    def node(self, node: Node, assumed: dict[int, Range]) -> None:
        net, gate = self.net, self.gates[node.id]
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
            acc = self.fold.acc_range(node)
            state, val = spike_ranges(gate, acc, self.steps)
            net.state_range[node.id] = state
            _check_size(node, state, "membrane")
        else:
            acc = self.fold.acc_range(node)
            if isinstance(gate, Relu) and gate.L is None:
                gate = Relu(gate.s, max(acc.hi // gate.s, 0))
            val = gate_range(gate, acc)
        if node.id in self.known:
            ka, kv = self.known[node.id]
            acc, val = _meet(acc, ka), _meet(val, kv)
        _check_size(node, acc, "value" if isinstance(gate, Product) else "accumulator")
        net.acc_range[node.id] = acc
        net.value_range[node.id] = val

    def readers(self) -> list[list[int]]:
        """Node id -> the nodes that read it within a step."""
        if self._readers is None:
            self._readers = [[] for _ in self.net.nodes]
            for n in self.net.nodes:
                for s in set(n.sources()):
                    self._readers[s].append(n.id)
        return self._readers

    def propagate(self, seeds, assumed: dict[int, Range]) -> set[int]:
        """Re-evaluate the prev nodes `seeds` and what reads them, in node order; returns
        the nodes whose value range changed. An identity's readers are always looked at:
        they fold through it (_Folding), so its sources' ranges are theirs too."""
        import heapq

        readers, nodes, vr = self.readers(), self.net.nodes, self.net.value_range
        heap = list(seeds)
        heapq.heapify(heap)
        queued, changed = set(heap), set()
        while heap:
            i = heapq.heappop(heap)
            old = vr[i]
            self.node(nodes[i], assumed)
            moved = vr[i] != old
            if moved:
                changed.add(i)
            if moved or isinstance(self.gates[i], Identity):
                for r in readers[i]:
                    if r not in queued:
                        queued.add(r)
                        heapq.heappush(heap, r)
        return changed


# Changes of a prev node's range after which it is widened to what its source can ever
# produce (_static_bounds), and rounds of narrowing after a widening (every narrowing
# iterate is sound).
WIDEN_AFTER = 64
DESCENT_PASSES = 64
# Growing prev nodes named in one refusal.
MAX_NAMED = 8


def recurrent_ranges(net: Netlist, prevs: list[Node], gates: list,
                     known: dict | None = None) -> dict[int, Range]:
    """The range of every prev node over every step of a run: prev(x) at step t is x at
    t - 1 (its init at t = 0), so its range is init joined with x's range, which in turn
    depends on the prev nodes. Iterated from {init}, round by round: after k rounds the
    ranges cover steps 0..k, so a fixed `steps T` netlist stops after T - 1 rounds (as
    tight as unrolling), and any netlist stops at a fixpoint (then they hold for any number
    of steps). A round re-evaluates only what the prev nodes that changed reach, so a chain
    of 9,999 prev nodes costs 9,999 small rounds. In an open netlist a prev node still
    growing after WIDEN_AFTER of its own changes is widened to what its source can ever
    produce (a relu's max, a step's 0/1, a lut's table, an input's range, through
    identities, products and prev nodes); once the ranges hold one more step (by induction
    they hold at every step) they are narrowed again. A prev node that keeps growing with
    nothing to bound it is refused, naming its value."""
    known = known or {}
    ev = _Evaluator(net, gates, known)
    assumed = {p.id: Range(p.gate.init, p.gate.init) for p in prevs}
    ev.run(assumed)
    by_src: dict[int, list[Node]] = {}
    for p in prevs:
        by_src.setdefault(p.gate.src, []).append(p)
    growth = _Growth(net, gates, known) if net.open else None
    horizon = None if net.open else net.steps - 1
    todo, rounds = prevs, 0
    while horizon is None or rounds < horizon:
        new = _next(net, todo, assumed, join=True)
        if not new:
            break
        rounds += 1
        if growth is not None:
            growth.widen(new)
        assumed.update(new)
        todo = _reading(by_src, ev.propagate(new, assumed))
    if growth is None or not growth.widened:
        return assumed
    todo = prevs
    for _ in range(DESCENT_PASSES):
        lower = _next(net, todo, assumed, join=False)
        if not lower:
            break
        assumed.update(lower)
        todo = _reading(by_src, ev.propagate(lower, assumed))
    return assumed


def _next(net: Netlist, prevs, assumed: dict[int, Range], join: bool) -> dict[int, Range]:
    """The prev ranges one step later, where they differ: init joined with the source's
    range (and with the range before, while rising)."""
    out = {}
    for p in prevs:
        r, init, old = net.value_range[p.gate.src], p.gate.init, assumed[p.id]
        lo, hi = min(init, r.lo), max(init, r.hi)
        if join:
            lo, hi = min(lo, old.lo), max(hi, old.hi)
        if (lo, hi) != (old.lo, old.hi):
            out[p.id] = Range(lo, hi)
    return out


def _reading(by_src: dict[int, list[Node]], changed: set[int]) -> list[Node]:
    """The prev nodes that read a node whose range changed, in node order."""
    return [p for s in sorted(changed) for p in by_src.get(s, ())]


class _Growth:
    """Counts each prev node's changes in an open netlist's ascent; widens the ones that
    keep growing to their static bounds, refuses the ones nothing bounds."""

    def __init__(self, net: Netlist, gates: list, known: dict):
        self.net, self.gates, self.known = net, gates, known
        self.changes: dict[int, int] = {}
        self.quiet: dict[int, int] = {}   # changes since the last widening
        self.widened: set[int] = set()
        self._bounds: dict[int, Range] | None = None

    def widen(self, new: dict[int, Range]) -> None:
        jumped = False
        for pid, r in new.items():
            self.changes[pid] = self.changes.get(pid, 0) + 1
            self.quiet[pid] = self.quiet.get(pid, 0) + 1
            if self.changes[pid] < WIDEN_AFTER or pid in self.widened:
                continue
            if self._bounds is None:
                self._bounds = _static_bounds(self.net, self.gates, self.known)
            b = self._bounds.get(pid)
            if b is not None:
                new[pid] = Range(min(r.lo, b.lo), max(r.hi, b.hi))
                self.widened.add(pid)
                jumped = True
        if jumped:
            self.quiet = {}
        bad = [pid for pid in new if self.quiet.get(pid, 0) >= WIDEN_AFTER]
        if bad:
            self.refuse(bad, new)

    def refuse(self, bad: list[int], new: dict[int, Range]) -> None:
        """Name the value each growing prev node reads (through prev chains: delay(x, K)'s
        chain is x's), once each, with its range so far."""
        from .diagnostics import CompileError, Diagnostic
        from .util import short_name

        nodes, out, seen = self.net.nodes, [], set()
        for pid in bad:
            src = nodes[pid].gate.src
            while isinstance(nodes[src].gate, Prev):
                src = nodes[src].gate.src
            if src in seen or len(seen) >= MAX_NAMED:
                continue
            seen.add(src)
            out.append(Diagnostic(
                nodes[src].pos,
                f"the range of '{short_name(nodes[src].name)}' grows at every step (after "
                f"{self.changes[pid]} steps {new[pid]}) and nothing bounds it",
                "clamp it: a relu with max=..., a lut, or clamp(x, LO..HI) inside the loop; "
                "or prove it for a fixed number of steps with 'steps T'"))
        raise CompileError(out)


def _static_bounds(net: Netlist, gates: list, known: dict) -> dict[int, Range]:
    """What each node can ever produce, whatever its inputs and step, where something
    bounds it: a gate that clamps (a relu's max, a step or spike's 0/1, a lut's table),
    an input's range or a proven `known` range, and what identities, relus without a max,
    products and prev nodes make of such bounds. A node on a cycle of unbounded ones
    (through prev nodes) has none."""
    bounds: dict[int, Range] = {}
    deps: dict[int, set[int]] = {}
    users: dict[int, list[int]] = {}
    ready = []
    for n in net.nodes:
        g, k = gates[n.id], known.get(n.id)
        own = _clamp(g)
        if k is not None:
            own = k[1] if own is None else _meet(own, k[1])
        if own is not None:
            bounds[n.id] = own
            ready.append(n.id)
            continue
        need = {g.src} if isinstance(g, Prev) else set(n.sources())
        deps[n.id] = need
        for s in need:
            users.setdefault(s, []).append(n.id)
        if not need:
            ready.append(n.id)
    while ready:
        i = ready.pop()
        if i not in bounds:
            b = _bound_from_sources(net, gates[i], net.nodes[i], bounds)
            if max(abs(b.lo), abs(b.hi)).bit_length() > RANGE_BITS:
                continue  # squarings: no bound worth the digits, as good as none
            bounds[i] = b
        for u in users.get(i, ()):
            deps[u].discard(i)
            if not deps[u] and u not in bounds:
                ready.append(u)
    return bounds


def _bound_from_sources(net: Netlist, gate, node: Node, bounds: dict[int, Range]) -> Range:
    if isinstance(gate, Prev):
        b = bounds[gate.src]
        return Range(min(b.lo, gate.init), max(b.hi, gate.init))
    if isinstance(gate, Product):
        return product_range(bounds[gate.a], bounds[gate.b], gate.a == gate.b)
    lo = hi = node.bias
    for s, w in node.weights.items():
        b = bounds[s]
        lo, hi = (lo + w * b.lo, hi + w * b.hi) if w > 0 else (lo + w * b.hi, hi + w * b.lo)
    acc = Range(lo, hi)
    if isinstance(gate, Relu):
        return gate_range(Relu(gate.s, max(hi // gate.s, 0)), acc)
    return acc


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


def product_range(a: Range, b: Range, same: bool) -> Range:
    if same:  # x * x: a square is never negative, whatever the corners say
        lo = 0 if a.lo <= 0 <= a.hi else min(a.lo * a.lo, a.hi * a.hi)
        return Range(lo, max(a.lo * a.lo, a.hi * a.hi))
    corners = [a.lo * b.lo, a.lo * b.hi, a.hi * b.lo, a.hi * b.hi]
    return Range(min(corners), max(corners))


def _check_size(node, r: Range, what: str) -> None:
    if max(abs(r.lo), abs(r.hi)).bit_length() > RANGE_BITS:
        from .diagnostics import CompileError, Diagnostic
        from .util import short_int, short_name

        big = r.hi if abs(r.hi) >= abs(r.lo) else r.lo
        raise CompileError([Diagnostic(
            node.pos, f"the {what} of '{short_name(node.name)}' can reach {short_int(big)}, "
                      f"beyond 2^{RANGE_BITS}: refused before its bounds grow further",
            "no map holds values past 32 bits: requantise (relu with s > 1) or narrow the "
            "inputs before it")])


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
