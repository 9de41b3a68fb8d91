"""The vectorised plan of a netlist that the ONNX and torch exporters both emit.

A netlist is evaluated, like `dsl/reference.py` does, level by level (`reference.levels`):
the values computed so far form one int64 matrix V (batch x columns), inputs first, then
each level's nodes in the order of this plan. A level is split into groups of one gate
kind; each group reads V through one integer matrix product (`V @ W.T + b`, products read
two columns instead) and appends its values as new columns. The exporters only translate
these groups into ONNX nodes or torch statements; the integer semantics (docs/dnet.md,
"Semantics") live here once:

    identity  y = a
    relu      y = min(max(floor(a / s), 0), L)      floor, also for negative a
    step      y = 1 if a >= t else 0
    lut       y = table[min(max(a, lo), hi) - lo + offset]   all tables in one flat vector
    product   y = V[:, ca] * V[:, cb]
    spike     u = v + a; y = u >= threshold; u = reset or u - threshold where fired;
              v = max(u - leak, 0)                  membranes carried across steps
    prev      y = V_previous_step[:, src]           init at the first step

Multi-step netlists are unrolled over their steps (an open netlist over the steps asked
for); a fed-back input takes, where the step's `fed` flag is 1, the previous step's column
of its node. A netlist whose values do not fit int64, or whose unrolled graph would be too
large, is refused with a VoodooError.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from dsl.diagnostics import VoodooError
from dsl.ir import Identity, Lut, Netlist, Prev, Product, Relu, Spike, Step
from dsl.reference import levels

INT64_MAX = 2**63 - 1
# Unrolled steps times levels above this make a graph nobody wants to load.
MAX_UNROLLED = 4096
KINDS = (Prev, Identity, Relu, Step, Lut, Product, Spike)


@dataclass
class Group:
    """Nodes of one level and one gate kind; `W` has one row per node over the columns of V
    computed before this level."""

    kind: str
    ids: list[int]
    W: list[list[int]] = field(default_factory=list)
    b: list[int] = field(default_factory=list)
    params: dict[str, list[int]] = field(default_factory=dict)


@dataclass
class Plan:
    name: str
    steps: int
    n_inputs: int
    levels: list[list[Group]]
    out_cols: list[int]          # columns of V holding the outputs, in declared order
    n_cols: int
    # Fed-back inputs: (input position, column of V the previous step's value is read from).
    feedback: list[tuple[int, int]] = field(default_factory=list)


def _fits_int64(net: Netlist) -> str | None:
    """The first node whose values (or the partial sums of its dot product) may leave int64."""
    for n in net.nodes:
        a, v = net.acc_range[n.id], net.value_range[n.id]
        worst = max(abs(a.lo), abs(a.hi), abs(v.lo), abs(v.hi))
        worst = max(worst, abs(n.bias) + sum(
            abs(w) * max(abs(net.value_range[s].lo), abs(net.value_range[s].hi))
            for s, w in n.weights.items()))
        r = net.state_range.get(n.id)
        if r is not None:
            worst = max(worst, abs(r.lo) + abs(a.lo) + abs(a.hi), abs(r.hi) + abs(a.hi))
        if worst > INT64_MAX:
            return n.name
    return None


def _params(kind: str, nodes, col: dict[int, int], tables: list[int]) -> dict[str, list[int]]:
    gates = [n.gate for n in nodes]
    if kind == "relu":
        return {"s": [g.s for g in gates], "L": [g.L for g in gates]}
    if kind == "step":
        return {"t": [g.t for g in gates]}
    if kind == "lut":
        offset = []
        for g in gates:
            offset.append(len(tables))
            tables.extend(g.table)
        return {"lo": [g.lo for g in gates], "hi": [g.hi for g in gates], "offset": offset}
    if kind == "product":
        return {"a": [col[g.a] for g in gates], "b": [col[g.b] for g in gates]}
    if kind == "prev":  # src columns are filled in once every column is known
        return {"src": [g.src for g in gates], "init": [g.init for g in gates]}
    if kind == "spike":
        return {"threshold": [g.threshold for g in gates], "leak": [g.leak for g in gates],
                "reset": [0 if g.reset is None else g.reset for g in gates],
                "subtract": [int(g.reset is None) for g in gates],
                "init": [g.init for g in gates]}
    return {}


def plan(net: Netlist, steps: int | None = None) -> tuple[Plan, list[int]]:
    """The plan of `net` and the flat lookup table shared by all its luts; a multi-step
    netlist is unrolled over `steps` (default: its fixed steps; an open one needs it)."""
    bad = _fits_int64(net)
    if bad is not None:
        raise VoodooError(f"{net.source}: node {bad} may reach values beyond 64-bit integers; "
                          "the exported graph computes in int64\n    hint: narrow the input "
                          "ranges or the weights (python build.py check --nodes shows ranges)")
    steps = _steps(net, steps)
    lv = levels(net)
    depth = sum(1 for ids in lv if not all(net.nodes[i].is_input for i in ids))
    if steps > 1 and steps * depth > MAX_UNROLLED:
        raise VoodooError(f"{net.source}: {steps} steps x {depth} levels is too many to "
                          f"unroll into one graph (limit {MAX_UNROLLED})\n    hint: export "
                          "fewer steps")
    col = {nid: k for k, nid in enumerate(net.inputs)}
    tables: list[int] = []
    out: list[list[Group]] = []
    for ids in lv:
        ids = [i for i in ids if not net.nodes[i].is_input]
        if not ids:
            continue
        width = len(col)
        groups = []
        for cls in KINDS:
            members = [net.nodes[i] for i in ids if isinstance(net.nodes[i].gate, cls)]
            if not members:
                continue
            g = Group(cls.kind, [n.id for n in members])
            if cls is not Product:
                g.W = [[0] * width for _ in members]
                for r, n in enumerate(members):
                    for s, w in n.weights.items():
                        g.W[r][col[s]] = w
                g.b = [n.bias for n in members]
            g.params = _params(cls.kind, members, col, tables)
            groups.append(g)
        for g in groups:
            for nid in g.ids:
                col[nid] = len(col)
        out.append(groups)
    for grp in (g for level in out for g in level if g.kind == "prev"):
        grp.params["src"] = [col[s] for s in grp.params["src"]]
    p = Plan(net.name, steps, len(net.inputs), out, [col[o] for o in net.outputs], len(col),
             [(k, col[net.feedback[i]]) for k, i in enumerate(net.inputs) if i in net.feedback])
    return p, tables


def _steps(net: Netlist, steps: int | None) -> int:
    if steps is None:
        if net.open:
            raise VoodooError(f"{net.source}: an open netlist runs any number of steps\n"
                              "    hint: give the steps to unroll (export --steps N)")
        return net.steps
    if not 1 <= steps <= net.steps or (not net.multi_step and steps != 1):
        raise VoodooError(f"{net.source}: cannot unroll {steps} steps (it runs "
                          f"{'1..' + str(net.steps) if net.multi_step else '1'})\n    hint: "
                          "give --steps within that")
    return steps
