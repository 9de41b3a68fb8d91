"""IR-to-IR lowering: rewrite constructs the map cannot build directly into ones it can.

`lower_products` turns every product into two lookup tables and a difference, using the
quarter-square identity, exact for all integers because a+b and a-b have the same parity:

    a * b = floor((a + b)^2 / 4) - floor((a - b)^2 / 4)

The result evaluates identically under the reference (a test checks it on every input),
and keeps the ranges proven for the netlist it lowers.
"""
from __future__ import annotations

from .diagnostics import CompileError, Diagnostic
from .ir import Identity, Lut, Netlist, Node, Prev, Product
from .ranges import analyse

MAX_LUT = 65536


def _quarter_square(lo: int, hi: int) -> Lut:
    return Lut(lo, tuple(u * u // 4 for u in range(lo, hi + 1)))


def lower_products(net: Netlist) -> Netlist:
    if not any(isinstance(n.gate, Product) for n in net.nodes):
        return net
    new: list[Node] = []
    remap: dict[int, int] = {}

    def add(name, group, index, gate, pos, weights=None, bias=0) -> int:
        node = Node(len(new), name, group, index, gate, pos, dict(weights or {}), bias)
        new.append(node)
        return node.id

    for n in net.nodes:
        if isinstance(n.gate, Product):
            a, b = remap[n.gate.a], remap[n.gate.b]
            ra, rb = net.value_range[n.gate.a], net.value_range[n.gate.b]
            s_lo, s_hi = ra.lo + rb.lo, ra.hi + rb.hi
            d_lo, d_hi = ra.lo - rb.hi, ra.hi - rb.lo
            if max(s_hi - s_lo, d_hi - d_lo) + 1 > MAX_LUT:
                raise CompileError([Diagnostic(
                    n.pos, f"product '{n.name}' has operands too wide to build "
                           f"({ra} times {rb})",
                    f"operand sums may span at most {MAX_LUT} values; requantise them first")])
            w_sum = {a: 1}
            w_sum[b] = w_sum.get(b, 0) + 1
            w_diff = {a: 1}
            w_diff[b] = w_diff.get(b, 0) - 1
            w_diff = {k: v for k, v in w_diff.items() if v}
            qs = add(f"{n.name}.qsum", f"{n.name}.qsum", None, _quarter_square(s_lo, s_hi),
                     n.pos, w_sum)
            qd = add(f"{n.name}.qdiff", f"{n.name}.qdiff", None, _quarter_square(d_lo, d_hi),
                     n.pos, w_diff)
            remap[n.id] = add(n.name, n.group, n.index, Identity(), n.pos, {qs: 1, qd: -1})
        else:
            remap[n.id] = add(n.name, n.group, n.index, n.gate, n.pos,
                              {remap[s]: w for s, w in n.weights.items()}, n.bias)
    for node in new:  # a prev node may read a node that comes after it
        if isinstance(node.gate, Prev):
            node.gate = Prev(remap[node.gate.src], node.gate.init)
    groups: dict[str, list[int]] = {}
    for node in new:
        groups.setdefault(node.group, []).append(node.id)
    out = Netlist(net.name, new, groups, [remap[i] for i in net.inputs],
                  [remap[o] for o in net.outputs], net.steps, net.source, open=net.open,
                  feedback={remap[x]: remap[y] for x, y in net.feedback.items()},
                  done=None if net.done is None else remap[net.done])
    # Every node of `net` has its counterpart here, computing the same values: its proven
    # ranges hold for it (a prev lane of a product's value keeps the product's range, not
    # what the two tables' difference looks like).
    known = {remap[n.id]: (net.acc_range[n.id], net.value_range[n.id]) for n in net.nodes}
    return analyse(out, known)
