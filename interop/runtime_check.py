"""`build.py import MODEL -o NET --check N`: the imported netlist against the model's own
runtime, on N seeded inputs (docs/import.md, "Checking against the runtime").

Owns running a model in the runtime that defines it and reading back its integers:
onnxruntime (at its default optimisation level, which fuses QDQ into its integer kernels)
for onnxruntime's int8 files and for integer graphs, and qonnx's executor for QONNX. The
netlist side is dsl/reference.py, the same oracle every engine run is compared with.
Inputs are the netlist's integer inputs: within each input's range, all lowest, all
highest, then seeded random rows; the float model sees `x * input_step` in float32, the
numbers the importer quantised (interop/quant_read.input_floats).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dsl.diagnostics import VoodooError


@dataclass
class Verdict:
    total: int
    exact: int
    runtime: str
    first: str = ""          # the first difference, described
    row: int = -1            # its input
    why: str = ""            # its cause, where known

    def line(self) -> str:
        verdict = "EXACT" if self.exact == self.total else "MISMATCH"
        text = f"{self.exact}/{self.total} {verdict} against {self.runtime}"
        text += f"\n  first difference: {self.first}" if self.first else ""
        return text + (f"\n  because {self.why}" if self.why else "")


def inputs(net, n: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    ranges = net.input_ranges()
    lo = np.array([r[0] for r in ranges], dtype=np.int64)
    hi = np.array([r[1] for r in ranges], dtype=np.int64)
    rows = [lo, hi] + list(rng.integers(lo, hi + 1, size=(max(n - 2, 0), len(lo))))
    return np.array(rows[:n], dtype=np.int64)


def check(model, net, n: int, input_range=None, input_step=None, where: str = "<onnx>",
          seed: int = 0, ort_pairs: str = "auto") -> Verdict:
    """Run n inputs through the model's runtime and the netlist's reference (imported
    with the same ort_pairs, interop/ort_pairs.py)."""
    from dsl.reference import evaluate
    from interop.onnx_check import constants, load_model
    from interop.quant_graph import is_quantised

    m = load_model(model, where)
    x = inputs(net, n, seed)
    res = evaluate(net, x.tolist())
    want = np.asarray(res.last_outputs(), dtype=np.int64)
    r = None
    try:
        if is_quantised(m):
            from interop.quant_read import Reader

            r = Reader(m, constants(m, where), where, ort_pairs)
            r.read(input_range, input_step)
            got, runtime = _quantised(m, r, x)
        else:
            got, runtime = _integer(m, x, where), "onnxruntime"
    except VoodooError:
        raise
    except Exception as e:  # the runtime's own refusal of the model
        raise VoodooError(f"{where}: the model's runtime cannot run it: "
                          f"{str(e).strip().splitlines()[0][:200]}") from None
    v = _compare(x, want, got, runtime)
    if v.first and r is not None:
        v.why = _why(r, net, res, v.row)
    return v


def _why(r, net, res, row: int) -> str:
    """Why the netlist and onnxruntime differ on this input, where it is known: a pair sum
    its u8s8 kernel saturated that the netlist (imported with --ort-pairs exact, or where
    onnxruntime sums exactly) did not."""
    from interop import ort_pairs
    from interop.quant_emit import Emitter

    if not any(getattr(L, "pairs", None) is not None for L in r.layers):
        return ""
    e = Emitter(r.layers, r.where)
    for k, layer in enumerate(r.layers):
        e.emit(k, layer)
    values = {k: res.value[row, -1, net.groups[name]] for k, name in e.names.items()
              if name in net.groups}
    return ort_pairs.first_saturation(r.layers, values, lambda L: L.name)


def _compare(x, want, got, runtime) -> Verdict:
    same = np.all(want == got, axis=1)
    v = Verdict(len(x), int(same.sum()), runtime)
    if not same.all():
        k = int(np.flatnonzero(~same)[0])
        j = int(np.flatnonzero(want[k] != got[k])[0])
        v.row = k
        v.first = (f"input #{k} {x[k].tolist()[:16]}{' ...' if x.shape[1] > 16 else ''}: "
                   f"output {j} is {want[k, j]} in the netlist, {got[k, j]} in {runtime}")
    return v


def _integer(m, x, where: str) -> np.ndarray:
    import onnxruntime as ort

    elem = m.graph.input[0].type.tensor_type.elem_type
    from onnx import TensorProto

    if elem not in (TensorProto.INT64, TensorProto.INT32):
        raise VoodooError(f"{where}: --check compares exact integers: this float graph is "
                          "quantised here, so no runtime computes the netlist's integers\n"
                          "    hint: --check applies to integer, int8 and QONNX graphs")
    sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    dtype = np.int64 if elem == TensorProto.INT64 else np.int32
    return np.asarray(sess.run(None, {sess.get_inputs()[0].name: x.astype(dtype)})[0],
                      dtype=np.int64)


def _feeds(r, x) -> list[np.ndarray]:
    from interop.quant_read import input_floats

    shape = [1] + [int(d) for d in r.x_dims[1:]]
    return [input_floats(row, r.step).reshape(shape) for row in x]


def _quantised(m, r, x):
    kind, name, scale, zero = r.out_int
    if r.flavour == "QONNX":
        outs = _qonnx(m, r, x, name)
        runtime = "qonnx"
    else:
        outs = _ort(m, r, x, name, kind)
        runtime = "onnxruntime"
    if kind == "float":
        return _integers(outs, scale, zero), runtime
    return np.asarray(outs).astype(np.int64), runtime


def _integers(y: np.ndarray, scale, zero) -> np.ndarray:
    """The integers q whose dequantisation `f32(f32(q - zero) * scale)` (DequantizeLinear,
    or an integer kernel's float output) is exactly y; a value of no such form is reported
    as -2^62, which no netlist output equals."""
    s = np.asarray(scale, np.float32).reshape(1, -1)
    y = np.asarray(y, np.float32)
    q = np.rint(y.astype(np.float64) / s.astype(np.float64))
    ok = np.isfinite(q) & ((q.astype(np.float32) * s).astype(np.float32) == y)
    return np.where(ok, np.nan_to_num(q) + zero, -(2 ** 62)).astype(np.int64)


def _ort(m, r, x, name, kind) -> np.ndarray:
    """onnxruntime at its default optimisation level, running the model as it is (another
    output would change what it fuses into its integer kernels) and reading its output."""
    import onnxruntime as ort

    sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    inp = sess.get_inputs()[0].name
    out = [o.name for o in sess.get_outputs()].index(name)
    return np.stack([np.asarray(sess.run(None, {inp: f})[out]).reshape(-1)
                     for f in _feeds(r, x)])


def _qonnx(m, r, x, name) -> np.ndarray:
    from qonnx.core.modelwrapper import ModelWrapper
    from qonnx.core.onnx_exec import execute_onnx

    import onnx

    m2 = onnx.ModelProto()
    m2.CopyFrom(m)
    # torch's exporter writes IR version 14; the onnxruntime qonnx runs each node in
    # reads at most 13, and nothing the executor uses changed since 10
    m2.ir_version = min(m2.ir_version, 10)
    w = ModelWrapper(m2)
    # qonnx runs every standard node in its own onnxruntime session, made with
    # onnx.helper.make_model, which stamps onnx.IR_VERSION (14 with onnx 1.23) that
    # onnxruntime 1.31 refuses (it reads up to 13): the executor's models get 10 here.
    saved = onnx.IR_VERSION
    onnx.IR_VERSION = 10
    try:
        return np.stack([np.asarray(execute_onnx(w, {r.x_name: f})[name]).reshape(-1)
                         for f in _feeds(r, x)])
    finally:
        onnx.IR_VERSION = saved
