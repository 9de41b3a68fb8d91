"""Reading a quantised ONNX graph (QOperator, QDQ or QONNX) into integer layers; the
rules are in interop/quant_graph.py's docstring, the formulas in interop/staircase.py."""
from __future__ import annotations

import numpy as np

from dsl.diagnostics import VoodooError
from interop import staircase as S
from interop.quant_graph import QT, WHY_NOT, Acc, Layer, fail

F32 = np.float32
INPUT_OPS = ("QuantizeLinear", "Quant")


def _attrs(node) -> dict:
    from onnx import helper

    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


def _pow2(v) -> bool:
    v = np.asarray(v, dtype=np.float64)
    m, _ = np.frexp(v)
    return bool(np.all(v > 0) and np.all(m == 0.5))


class Reader:
    """Walks the graph's nodes in order, keeping what each tensor is (see QT, Acc)."""

    def __init__(self, m, consts: dict, where: str, ort_pairs: str = "auto"):
        self.m, self.consts, self.where = m, consts, where
        self.ort_pairs = ort_pairs   # onnxruntime's u8s8 pair sums: auto, saturate, exact
        self.notes: list[str] = []   # warnings for the netlist's header
        self.env: dict[str, object] = {}
        self.layers: list[Layer] = []
        self.flavour = "QONNX" if any(n.op_type == "Quant" for n in m.graph.node) \
            else "onnxruntime"
        self.out_int = None      # how --check reads the runtime's integers (runtime_check)
        self.x_flat = False      # the input is flattened before its quantisation

    def comment(self) -> str:
        return (f"read exactly from a {self.flavour} quantised graph by interop/quant_read.py"
                f"\n{len(self.layers)} integer layers; input x is the integer the model sees "
                f"as x * {self.step!r}" + "".join(f"\nwarning: {n}" for n in self.notes))

    # -- the walk -----------------------------------------------------------------------
    def read(self, input_range, input_step):
        from interop.onnx_import import _graph_input

        x = _graph_input(self.m, self.where)
        self.x_name, self.x_dims = x.name, [d.dim_value for d in x.type.tensor_type.shape.dim]
        self.input_range, self.step = input_range, input_step
        for node in self.m.graph.node:
            if node.op_type in WHY_NOT:
                fail(self.where, node, "not reproducible exactly", WHY_NOT[node.op_type])
            handler = getattr(self, "op_" + node.op_type, None)
            if handler is None:
                fail(self.where, node, "an operator the quantised-graph importer does not "
                     "read", "see docs/import.md for the operators read (QGemm, QLinearConv, "
                     "QLinearMatMul, MaxPool, QDQ and QONNX forms)")
            out = handler(node)
            if isinstance(out, QT) and not out.tensor:
                out.tensor = node.output[0]
            self.env[node.output[0]] = out
        return self.layers, self.finish()

    def get(self, node, i: int):
        name = node.input[i] if i < len(node.input) else ""
        if not name:
            return None
        if name in self.env:
            return self.env[name]
        if name in self.consts:
            return self.consts[name]
        if name == self.x_name:
            return "x"
        fail(self.where, node, f"input {name!r} is not computed before it")

    def const(self, node, i: int, what: str) -> np.ndarray:
        v = self.get(node, i)
        if not isinstance(v, np.ndarray):
            fail(self.where, node, f"its {what} must be a constant")
        return v

    def add(self, layer: Layer) -> int:
        self.layers.append(layer)
        return len(self.layers) - 1

    # -- quantisation of the input, and of weights ----------------------------------------
    def input_layer(self, node, quantize, qlo: int, qhi: int, zero: int, scale) -> QT:
        if self.layers:
            fail(self.where, node, "a second quantisation of the graph's input")
        dims = self.x_dims[1:]
        if len(self.x_dims) not in (2, 4) or any(d <= 0 for d in dims):
            fail(self.where, node, f"the input's shape {self.x_dims} is not (1, N) or "
                 "(1, C, H, W) with fixed sizes")
        if self.x_flat:
            dims = [int(np.prod(dims))]
        if self.input_range is None:  # the integers the model's own quantisation reads
            self.input_range = (qlo - zero, qhi - zero)
        if self.step is None:
            self.step = float(scale)
        lo, hi = self.input_range
        if hi - lo > 65535:
            raise VoodooError(f"{self.where}: input range {lo}..{hi} has more than 65,536 "
                              "values\n    hint: give --input-range and --input-step")
        xs = np.arange(lo, hi + 1)
        table = quantize(input_floats(xs, self.step))
        self.add(Layer("input", shape=tuple(dims), lo=lo, hi=hi))
        k = self.add(Layer("quantize", 0, tuple(dims), bias=table, lo=int(table.min()),
                           hi=int(table.max())))
        return QT(k, tuple(dims), int(table.min()), int(table.max()), zero, scale,
                  signed=qlo < 0)

    def op_QuantizeLinear(self, node):
        a = self.get(node, 0)
        s = self.const(node, 1, "scale")
        zp = self.get(node, 2)
        zp = np.zeros((), np.uint8) if zp is None else zp
        if s.size != 1:
            fail(self.where, node, "a per-axis quantisation of activations")
        qlo, qhi = S.type_bounds(zp.dtype)
        z = int(zp.reshape(-1)[0])
        if isinstance(a, str):
            return self.input_layer(node, lambda v: S.ort_quantize(v, s.reshape(()), z, qlo,
                                                                     qhi), qlo, qhi, z,
                                    F32(s.reshape(())))
        if isinstance(a, Acc):
            return self.requant(node, a, lambda M: lambda acc: S.ort_requant(acc, M, z, qlo,
                                                                               qhi),
                                s.reshape(()), z, qlo, qhi, "ort")
        if isinstance(a, tuple) and a[0] == "deq":
            from interop.quant_layers import op_QuantizeLinear_of_deq

            return op_QuantizeLinear_of_deq(self, node, a, s.reshape(()), z)
        fail(self.where, node, "quantises a tensor that is neither the input nor a Gemm, "
             "MatMul or Conv of dequantised integers",
             "QDQ graphs are read in the form quantize_static writes them")

    def op_DequantizeLinear(self, node):
        a = self.get(node, 0)
        s = np.asarray(self.const(node, 1, "scale"), dtype=F32)
        zp = self.get(node, 2)
        z = np.zeros(s.shape, np.int64) if zp is None else zp.astype(np.int64)
        if isinstance(a, QT):
            if s.size != 1:
                fail(self.where, node, "a per-axis dequantisation of activations")
            return ("deq", a, F32(s.reshape(())), int(z.reshape(-1)[0]))
        if isinstance(a, np.ndarray) and a.dtype.kind in "iu":
            return ("wdeq", a.astype(np.int64), s, z, _attrs(node).get("axis", 1),
                    a.dtype == np.int8)
        fail(self.where, node, "dequantises something that is not quantised integers")

    def op_Quant(self, node):
        from interop.quant_qonnx import quant

        return quant(self, node)

    def op_Identity(self, node):
        return self.get(node, 0)

    op_Dropout = op_Identity

    def finish(self):
        from interop.quant_layers import finish

        return finish(self)

    def requant(self, node, acc: Acc, f_of_M, sy, zy, qlo, qhi, how):
        from interop.quant_layers import requant

        return requant(self, node, acc, f_of_M, sy, zy, qlo, qhi, how)

    def __getattr__(self, name):
        """The other operators' handlers live in interop/quant_layers.py as functions of
        the reader (op_Gemm(reader, node), ...): this module keeps the walk and the state."""
        if name.startswith("op_"):
            import interop.quant_layers as L

            fn = getattr(L, name, None)
            if fn is not None:
                return lambda node: fn(self, node)
        raise AttributeError(name)


def input_floats(xs, step) -> np.ndarray:
    """The float32 input the model sees for integer inputs xs (runtime_check feeds these)."""
    return (np.asarray(xs, dtype=np.float64) * float(step)).astype(F32)
