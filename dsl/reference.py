"""The exact integer reference: evaluates any netlist, every node, over a batch of inputs.

This is the oracle every engine run is judged against, with `==`. It uses NumPy int64 when
the range analysis proves every intermediate fits with headroom, and Python ints (object
arrays) otherwise, so it is exact either way. Nodes are evaluated in dependency levels:
all nodes of a level at once, as one integer matrix product over the batch.

Shapes: inputs are (batch, n_inputs) for a one-step netlist, or (batch, steps, n_inputs);
`Result.acc` and `Result.value` are (batch, steps, n_nodes).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .diagnostics import VoodooError
from .ir import Identity, Input, Lut, Netlist, Prev, Product, Relu, Spike, Step

_SAFE = 2**62


@dataclass
class Result:
    net: Netlist
    acc: np.ndarray    # (batch, steps, nodes): the accumulator before the gate
    value: np.ndarray  # (batch, steps, nodes): the node's value
    state: np.ndarray | None = None  # (batch, steps, nodes): a spike's membrane after the step

    @property
    def outputs(self) -> np.ndarray:
        """(batch, steps, n_outputs)"""
        return self.value[:, :, self.net.outputs]

    def last_outputs(self) -> np.ndarray:
        """(batch, n_outputs) at the final time step."""
        return self.value[:, -1, self.net.outputs]

    def named(self, sample: int = 0, step: int = -1) -> dict[str, int]:
        return {n.name: int(self.value[sample, step, n.id]) for n in self.net.nodes}


def _dtype(net: Netlist):
    worst = 0
    for n in net.nodes:
        a, v = net.acc_range[n.id], net.value_range[n.id]
        worst = max(worst, abs(a.lo), abs(a.hi), abs(v.lo), abs(v.hi))
        # Partial sums of a dot product are bounded by the sum of |w| * max|x|.
        worst = max(worst, abs(n.bias) + sum(
            abs(w) * max(abs(net.value_range[s].lo), abs(net.value_range[s].hi))
            for s, w in n.weights.items()))
    for r in net.state_range.values():
        worst = max(worst, abs(r.lo), abs(r.hi))
    return np.int64 if worst < _SAFE else object


def levels(net: Netlist) -> list[list[int]]:
    """Node ids grouped by dependency depth (inputs at depth 0)."""
    depth = [0] * len(net.nodes)
    for n in net.nodes:
        srcs = n.sources()
        # Inputs and prev nodes (values from outside the step) make level 0; a neuron with
        # no lines (a constant) still computes.
        depth[n.id] = 0 if n.is_input or n.is_prev else \
            1 + max((depth[s] for s in srcs), default=0)
    out: dict[int, list[int]] = {}
    for i, d in enumerate(depth):
        out.setdefault(d, []).append(i)
    return [out[d] for d in sorted(out)]


def check_inputs(net: Netlist, inputs) -> np.ndarray:
    """Validate and shape inputs to (batch, steps, n_inputs) exact integers. An open netlist
    takes any number of steps (at most net.steps); a fed-back input may be None at a step
    after the first: it then takes its node's value of the previous step."""
    arr = np.asarray(inputs, dtype=object)
    n_in = len(net.inputs)
    if arr.ndim == 1:
        arr = arr[None, None, :]
    elif arr.ndim == 2:
        arr = arr[:, None, :] if net.steps == 1 and not net.open else arr[None, :, :]
    steps_ok = arr.ndim == 3 and (1 <= arr.shape[1] <= net.steps if net.open
                                  else arr.shape[1] == net.steps)
    if arr.ndim != 3 or arr.shape[2] != n_in or not steps_ok:
        want = f"1..{net.steps}" if net.open else str(net.steps)
        raise VoodooError(f"{net.source}: expected inputs of shape (batch, {want}, {n_in})"
                          f" or ({n_in},), got {np.shape(inputs)}")
    for k, nid in enumerate(net.inputs):
        g = net.nodes[nid].gate
        col = arr[:, :, k]
        for t, v in np.ndenumerate(col):
            if v is None and nid in net.feedback and t[1] > 0:
                continue
            if not isinstance(v, (int, np.integer)) or isinstance(v, bool):
                hint = " (None: fed back, after the first step)" if nid in net.feedback else ""
                raise VoodooError(f"{net.source}: input {net.nodes[nid].name} = {v!r} "
                                  f"is not an integer{hint}")
            if not g.lo <= int(v) <= g.hi:
                raise VoodooError(f"{net.source}: input {net.nodes[nid].name} = {int(v)} is "
                                  f"outside its declared range {g.lo}..{g.hi}")
    return arr


def evaluate(net: Netlist, inputs) -> Result:
    x = check_inputs(net, inputs)
    dt = _dtype(net)
    batch, steps, _ = x.shape
    N = len(net.nodes)
    acc = np.zeros((batch, steps, N), dtype=dt)
    val = np.zeros((batch, steps, N), dtype=dt)
    mem = np.zeros((batch, steps, N), dtype=dt)
    mats = [_LevelSums(net, ids, dt) for ids in levels(net)]
    state = {n.id: np.full(batch, n.gate.init, dtype=dt) for n in net.nodes
             if isinstance(n.gate, Spike)}
    prevs = [(n.id, n.gate.src, n.gate.init) for n in net.nodes if isinstance(n.gate, Prev)]
    for t in range(steps):
        V = val[:, t, :]
        _step_inputs(net, x, val, t, dt)
        for nid, src, init in prevs:
            V[:, nid] = val[:, t - 1, src] if t else init
        acc[:, t, net.inputs] = V[:, net.inputs]
        acc[:, t, [p[0] for p in prevs]] = V[:, [p[0] for p in prevs]]
        for level in mats:
            ids = level.ids
            if all(net.nodes[i].is_input or net.nodes[i].is_prev for i in ids):
                continue
            A = level.sums(V)
            acc[:, t, ids] = A
            # Identity and relu nodes of a level at once; the other gates node by node.
            V[:, level.ident_ids] = A[:, level.ident]
            if len(level.relu):
                V[:, level.relu_ids] = np.minimum(np.maximum(A[:, level.relu] // level.relu_s,
                                                             0), level.relu_L)
            for r in level.others:
                nid = ids[r]
                node = net.nodes[nid]
                a = A[:, r]
                g = node.gate
                if isinstance(g, Product):
                    y = V[:, g.a] * V[:, g.b]
                    acc[:, t, nid] = y
                elif isinstance(g, Identity):
                    y = a
                elif isinstance(g, Relu):
                    y = np.minimum(np.maximum(a // g.s, 0), g.L)
                elif isinstance(g, Step):
                    y = np.where(a >= g.t, 1, 0).astype(dt)
                elif isinstance(g, Lut):
                    table = np.array(g.table, dtype=dt)
                    idx = np.clip(a, g.lo, g.hi) - g.lo
                    y = table[idx.astype(np.int64)]
                elif isinstance(g, Spike):
                    u = state[nid] + a
                    fire = u >= g.threshold
                    y = np.where(fire, 1, 0).astype(dt)
                    u = np.where(fire, u - g.threshold if g.reset is None else g.reset, u)
                    state[nid] = np.maximum(u - g.leak, 0)
                    mem[:, t, nid] = state[nid]
                else:
                    raise TypeError(g)
                V[:, nid] = y
    return Result(net, acc, val, mem)


def _step_inputs(net: Netlist, x: np.ndarray, val: np.ndarray, t: int, dt) -> None:
    """Step t's input values: as given, or (None, for a fed-back input) the value its node
    had at step t - 1."""
    col = x[:, t, :]
    for k, nid in enumerate(net.inputs):
        given = col[:, k]
        fed = np.array([v is None for v in given], dtype=bool)
        if fed.any():
            given = np.where(fed, val[:, t - 1, net.feedback[nid]], given)
        val[:, t, nid] = given.astype(dt)


def stop_step(net: Netlist, res: Result, sample: int = 0) -> int:
    """How many steps a run takes: up to and including the first step at which the done
    node is 1 (all of them without one, or if it never is)."""
    steps = res.value.shape[1]
    if net.done is None:
        return steps
    hits = np.nonzero(res.value[sample, :, net.done] == 1)[0]
    return int(hits[0]) + 1 if len(hits) else steps


class _LevelSums:
    """The weighted sums of one dependency level over a batch: a dense matrix over just the
    columns the level reads when that is compact, else a scatter-add over the connections
    (`neuron h[100000]` fed by one input must not become a 100000 x 100001 matrix)."""

    CHUNK = 1 << 22  # elements of batch x connections per scatter step

    def __init__(self, net: Netlist, ids: list[int], dt):
        self.ids, self.dt = ids, dt
        gates = [net.nodes[nid].gate for nid in ids]
        self.ident = np.array([r for r, g in enumerate(gates) if isinstance(g, Identity)],
                              dtype=np.int64)
        self.relu = np.array([r for r, g in enumerate(gates) if isinstance(g, Relu)],
                             dtype=np.int64)
        self.others = [r for r, g in enumerate(gates) if not isinstance(g, (Identity, Relu))]
        self.ident_ids = np.array(ids, dtype=np.int64)[self.ident]
        self.relu_ids = np.array(ids, dtype=np.int64)[self.relu]
        self.relu_s = np.array([gates[r].s for r in self.relu], dtype=dt)
        self.relu_L = np.array([gates[r].L for r in self.relu], dtype=dt)
        rows, cols, ws = [], [], []
        for r, nid in enumerate(ids):
            for s, w in net.nodes[nid].weights.items():
                rows.append(r)
                cols.append(s)
                ws.append(w)
        self.b = np.array([net.nodes[nid].bias for nid in ids], dtype=dt)
        used = sorted(set(cols))
        self.dense = len(ids) * len(used) <= 4 * len(ws) + 4096
        if self.dense:
            where = {s: k for k, s in enumerate(used)}
            self.cols = np.array(used, dtype=np.int64)
            self.W = np.zeros((len(ids), len(used)), dtype=dt)
            for r, s, w in zip(rows, cols, ws):
                self.W[r, where[s]] = w
        else:
            self.rows = np.array(rows, dtype=np.int64)
            self.cols = np.array(cols, dtype=np.int64)
            self.w = np.array(ws, dtype=dt)

    def sums(self, V: np.ndarray) -> np.ndarray:
        if self.dense:
            return V[:, self.cols] @ self.W.T + self.b
        A = np.tile(self.b, (V.shape[0], 1))
        step = max(1, self.CHUNK // max(1, V.shape[0]))
        for k in range(0, len(self.w), step):
            part = slice(k, k + step)
            np.add.at(A, (slice(None), self.rows[part]), V[:, self.cols[part]] * self.w[part])
        return A


def gate_value(gate, acc: int) -> int:
    """One gate on one accumulator value (not for products or spikes)."""
    if isinstance(gate, (Identity, Input)):
        return acc
    if isinstance(gate, Relu):
        return min(max(acc // gate.s, 0), gate.L)
    if isinstance(gate, Step):
        return int(acc >= gate.t)
    if isinstance(gate, Lut):
        return gate(acc)
    raise TypeError(gate)
