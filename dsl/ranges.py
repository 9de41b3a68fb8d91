"""Value-range analysis: a sound integer [lo, hi] for every accumulator, value and membrane.

Computed with exact Python ints when a netlist is built (`NetBuilder.build` calls
`analyse`), so every later pass can prove engine limits (light levels and plane heights in
-32768..32767) before anything is emitted. Bounds are interval arithmetic over the
declared input ranges: never smaller than any reachable value (a property test checks it),
and exact for a single layer of independent inputs.
"""
from __future__ import annotations

from .ir import Identity, Input, Lut, Netlist, Product, Range, Relu, Spike, Step


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


def analyse(net: Netlist) -> Netlist:
    """Fill net.acc_range, net.value_range and net.state_range; fills an omitted relu max."""
    net.acc_range = [Range(0, 0)] * len(net.nodes)
    net.value_range = [Range(0, 0)] * len(net.nodes)
    net.state_range = {}
    for node in net.nodes:
        gate = node.gate
        if isinstance(gate, Input):
            acc = Range(gate.lo, gate.hi)
            val = Range(gate.lo, gate.hi)
        elif isinstance(gate, Product):
            a, b = net.value_range[gate.a], net.value_range[gate.b]
            corners = [a.lo * b.lo, a.lo * b.hi, a.hi * b.lo, a.hi * b.hi]
            acc = Range(min(corners), max(corners))
            val = Range(acc.lo, acc.hi)
        elif isinstance(gate, Spike):
            acc = affine_range(net, node.id)
            state, val = spike_ranges(gate, acc, net.steps)
            net.state_range[node.id] = state
        else:
            acc = affine_range(net, node.id)
            if isinstance(gate, Relu) and gate.L is None:
                # No clamp written: clamping at the largest reachable value changes nothing,
                # and a map needs a finite staircase.
                gate = Relu(gate.s, max(acc.hi // gate.s, 0))
                node.gate = gate
            val = gate_range(gate, acc)
        net.acc_range[node.id] = acc
        net.value_range[node.id] = val
    return net
