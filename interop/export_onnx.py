"""The ONNX exporter: a netlist as an ONNX graph computing the same integers (docs/export.md).

    from interop.export_onnx import to_onnx
    model = to_onnx(net)            # an onnx.ModelProto; model.SerializeToString() to save

Every tensor is int64. The graph follows `interop/netplan.py` group by group: `MatMul` + `Add`
for the accumulators, then per gate `Mod`/`Sub`/`Div` (floor division: `a - (a mod s)` is
an exact multiple of s, and ONNX `Mod` with fmod=0 takes the divisor's sign, so negative
accumulators floor as in dsl/reference.py), `Max`/`Min` clamps, `GreaterOrEqual` + `Cast`
for steps, `Gather` over one flat table for luts, `Gather` + `Mul` for products, and
`Where` for spiking membranes; a prev node `Gather`s its node's column of the previous
step's values. Input `x` is (batch, n_inputs) for a one-step netlist and (batch, steps,
n_inputs) otherwise (an open netlist is unrolled over the steps asked for); a netlist with
fed-back inputs also takes `fed` (batch, steps), 1 where a step's fed-back inputs take
their nodes' previous values instead of x (the reference's None); output `y` is
(batch, n_outputs) or (batch, steps, n_outputs), the reference's `last_outputs()` /
`outputs` (a done node is one of them: a run ends after its first 1).
"""
from __future__ import annotations

import json

import numpy as np

from dsl.diagnostics import VoodooError
from interop.netplan import Group, Plan, plan

OPSET = 17
ONNX_HINT = "install it with `pip install onnx==1.23.2` (see requirements.txt)"


def _onnx():
    try:
        import onnx
    except ImportError:
        raise VoodooError(f"ONNX export needs the onnx package, which is not installed\n"
                          f"    hint: {ONNX_HINT}") from None
    return onnx


class _Graph:
    """Accumulates nodes and constant initialisers with unique, readable names."""

    def __init__(self, onnx):
        self.onnx, self.nodes, self.inits, self.count = onnx, [], [], 0

    def name(self, stem: str) -> str:
        self.count += 1
        return f"{stem}_{self.count}"

    def const(self, stem: str, values, shape=None) -> str:
        arr = np.asarray(values, dtype=np.int64)
        if shape is not None:
            arr = arr.reshape(shape)
        name = self.name(stem)
        self.inits.append(self.onnx.numpy_helper.from_array(arr, name))
        return name

    def op(self, op_type: str, inputs: list[str], stem: str, **attrs) -> str:
        out = self.name(stem)
        self.nodes.append(self.onnx.helper.make_node(op_type, inputs, [out],
                                                     name=f"{op_type}_{out}", **attrs))
        return out


def _row(g: _Graph, stem: str, values) -> str:
    """A (1, n) constant that broadcasts over the batch."""
    return g.const(stem, values, (1, len(values)))


def _group(g: _Graph, grp: Group, V: str, tag: str, state: dict[str, str],
           table: str | None) -> str:
    """The ONNX nodes of one group reading V; returns the (batch, len(ids)) values."""
    p = grp.params
    if grp.kind == "prev":
        if "V" in state:  # the previous step's values
            return g.op("Gather", [state["V"], g.const(f"{tag}_src", p["src"])], f"{tag}_y",
                        axis=1)
        return _batch_rows(g, _row(g, f"{tag}_init", p["init"]), len(grp.ids), tag)
    if grp.kind == "product":
        a = g.op("Gather", [V, g.const(f"{tag}_a", p["a"])], f"{tag}_va", axis=1)
        b = g.op("Gather", [V, g.const(f"{tag}_b", p["b"])], f"{tag}_vb", axis=1)
        return g.op("Mul", [a, b], f"{tag}_y")
    WT = g.const(f"{tag}_WT", np.asarray(grp.W, dtype=np.int64).reshape(len(grp.ids), -1).T)
    acc = g.op("Add", [g.op("MatMul", [V, WT], f"{tag}_dot"), _row(g, f"{tag}_bias", grp.b)],
               f"{tag}_acc")
    if grp.kind == "identity":
        return acc
    if grp.kind == "relu":
        s = _row(g, f"{tag}_s", p["s"])
        q = g.op("Div", [g.op("Sub", [acc, g.op("Mod", [acc, s], f"{tag}_rem", fmod=0)],
                              f"{tag}_exact"), s], f"{tag}_floor")
        low = g.op("Max", [q, g.const(f"{tag}_zero", 0)], f"{tag}_pos")
        return g.op("Min", [low, _row(g, f"{tag}_L", p["L"])], f"{tag}_y")
    if grp.kind == "step":
        ge = g.op("GreaterOrEqual", [acc, _row(g, f"{tag}_t", p["t"])], f"{tag}_ge")
        return g.op("Cast", [ge], f"{tag}_y", to=g.onnx.TensorProto.INT64)
    if grp.kind == "lut":
        lo = _row(g, f"{tag}_lo", p["lo"])
        c = g.op("Min", [g.op("Max", [acc, lo], f"{tag}_up"), _row(g, f"{tag}_hi", p["hi"])],
                 f"{tag}_clamp")
        idx = g.op("Add", [g.op("Sub", [c, lo], f"{tag}_rel"),
                           _row(g, f"{tag}_off", p["offset"])], f"{tag}_idx")
        return g.op("Gather", [table, idx], f"{tag}_y", axis=0)
    if grp.kind == "spike":
        return _spike(g, grp, acc, tag, state)
    raise TypeError(grp.kind)


def _batch_rows(g: _Graph, row: str, n: int, tag: str) -> str:
    """A (1, n) row repeated for every sample: (batch, n)."""
    batch = g.op("Slice", [g.op("Shape", ["x"], f"{tag}_shape"), g.const(f"{tag}_0", [0]),
                           g.const(f"{tag}_1", [1])], f"{tag}_batch")
    shape = g.op("Concat", [batch, g.const(f"{tag}_n", [n])], f"{tag}_bshape", axis=0)
    return g.op("Expand", [row, shape], f"{tag}_rows")


def _fed_inputs(g: _Graph, pl: Plan, X: str, t: int, state: dict[str, str]) -> str:
    """Step t's inputs where the fed flag is 1: the fed-back ones from the previous step."""
    if not pl.feedback or "V" not in state:
        return X
    src = list(range(pl.n_inputs))
    mask = [0] * pl.n_inputs
    for k, col in pl.feedback:
        src[k], mask[k] = col, 1
    back = g.op("Gather", [state["V"], g.const(f"t{t}_fbsrc", src)], f"t{t}_back", axis=1)
    flag = g.op("Gather", ["fed", g.const(f"t{t}_fedt", [t])], f"t{t}_fed", axis=1)
    on = g.op("Cast", [g.op("Mul", [flag, _row(g, f"t{t}_fbmask", mask)], f"t{t}_fbm")],
              f"t{t}_fbb", to=g.onnx.TensorProto.BOOL)
    return g.op("Where", [on, back, X], f"t{t}_xin")


def _spike(g: _Graph, grp: Group, acc: str, tag: str, state: dict[str, str]) -> str:
    """Integrate, fire, reset, leak; the membrane goes on in `state` to the next step."""
    p, key = grp.params, f"{grp.ids[0]}"
    if key not in state:
        state[key] = _row(g, f"{tag}_init", p["init"])
    thr = _row(g, f"{tag}_thr", p["threshold"])
    u = g.op("Add", [state[key], acc], f"{tag}_u")
    fire = g.op("GreaterOrEqual", [u, thr], f"{tag}_fire")
    subtract = g.op("Cast", [_row(g, f"{tag}_sub", p["subtract"])], f"{tag}_subb",
                    to=g.onnx.TensorProto.BOOL)
    after = g.op("Where", [subtract, g.op("Sub", [u, thr], f"{tag}_usub"),
                           _row(g, f"{tag}_reset", p["reset"])], f"{tag}_after")
    u2 = g.op("Where", [fire, after, u], f"{tag}_u2")
    leaked = g.op("Sub", [u2, _row(g, f"{tag}_leak", p["leak"])], f"{tag}_leaked")
    state[key] = g.op("Max", [leaked, g.const(f"{tag}_zero", 0)], f"{tag}_v")
    return g.op("Cast", [fire], f"{tag}_y", to=g.onnx.TensorProto.INT64)


def _step(g: _Graph, pl: Plan, X: str, t: int, state: dict[str, str], table) -> str:
    """One time step: inputs (batch, n_inputs) to outputs (batch, n_outputs); `state`
    carries membranes and the step's values (V) to the next."""
    V = _fed_inputs(g, pl, X, t, state)
    for k, level in enumerate(pl.levels):
        parts = [_group(g, grp, V, f"t{t}_l{k + 1}_{grp.kind}", state, table) for grp in level]
        V = g.op("Concat", [V] + parts, f"t{t}_V{k + 1}", axis=1)
    state["V"] = V
    return g.op("Gather", [V, g.const(f"t{t}_outcols", pl.out_cols)], f"t{t}_out", axis=1)


def to_onnx(net, steps: int | None = None):
    """An onnx.ModelProto computing `net`'s outputs exactly (int64), checked by onnx; a
    multi-step netlist unrolled over `steps` (default its fixed steps)."""
    onnx = _onnx()
    pl, flat = plan(net, steps)
    g = _Graph(onnx)
    table = g.const("lut_tables", flat) if flat else None
    helper, INT64 = onnx.helper, onnx.TensorProto.INT64
    n_out = len(pl.out_cols)
    inputs = []
    if not net.multi_step:
        x = helper.make_tensor_value_info("x", INT64, ["batch", pl.n_inputs])
        y_info = helper.make_tensor_value_info("y", INT64, ["batch", n_out])
        g.nodes.append(helper.make_node("Identity", [_step(g, pl, "x", 0, {}, table)], ["y"]))
    else:
        x = helper.make_tensor_value_info("x", INT64, ["batch", pl.steps, pl.n_inputs])
        y_info = helper.make_tensor_value_info("y", INT64, ["batch", pl.steps, n_out])
        state: dict[str, str] = {}
        axis1, ys = g.const("axis1", [1]), []
        for t in range(pl.steps):
            xt = g.op("Gather", ["x", g.const(f"t{t}", t)], f"x_t{t}", axis=1)
            ys.append(g.op("Unsqueeze", [_step(g, pl, xt, t, state, table), axis1], f"y_t{t}"))
        g.nodes.append(helper.make_node("Concat", ys, ["y"], axis=1))
        if pl.feedback:
            inputs.append(helper.make_tensor_value_info("fed", INT64, ["batch", pl.steps]))
    graph = helper.make_graph(g.nodes, pl.name, [x] + inputs, [y_info], g.inits,
                              doc_string=f"VoodooNet netlist {pl.name}: exact int64 outputs")
    model = helper.make_model(graph, producer_name="voodoonet",
                              opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = 8  # readable by onnxruntime releases back to 1.10
    # ONNX has no integer ranges; the importer (interop/onnx_import.py) reads them back here.
    helper.set_model_props(model, {"voodoonet.input_ranges": json.dumps(net.input_ranges())})
    onnx.checker.check_model(model, full_check=True)
    return model


def onnx_bytes(net, steps: int | None = None) -> bytes:
    return to_onnx(net, steps).SerializeToString()
