"""QONNX's Quant node (Brevitas's export), read exactly: of the graph's input (a table over
the integer inputs), of a constant (integer weights or bias with their scale), and of a
Gemm / MatMul / Conv output (the requantisation staircase of interop/staircase.py).

qonnx's executor runs Quant in NumPy float32 and the other nodes in onnxruntime float32;
that is exact integer arithmetic when every scale is a power of two and every accumulator
stays within float32's 24-bit significand (Brevitas's fixed-point quantisers and Int32Bias
make such graphs). Other scales are refused: the runtime's answer would then depend on the
order of its float additions."""
from __future__ import annotations

import numpy as np

from interop import staircase as S
from interop.quant_graph import Acc, fail

F32 = np.float32
EXACT_LIMIT = 2 ** 24


def _params(r, node):
    from interop.quant_read import _attrs, _pow2

    a = _attrs(node)
    s = np.asarray(r.const(node, 1, "scale"), F32)
    z = np.asarray(r.const(node, 2, "zero point"), F32)
    bits = r.const(node, 3, "bit width").reshape(-1)
    mode = a.get("rounding_mode", b"ROUND")
    mode = (mode.decode() if isinstance(mode, bytes) else mode).upper()
    if bits.size != 1 or bits[0] != int(bits[0]) or not 2 <= bits[0] <= 32:
        fail(r.where, node, f"bit width {bits.tolist()}", "2 to 32 bits (1-bit is "
             "BipolarQuant, not read)")
    if mode not in S.ROUNDING:
        fail(r.where, node, f"rounding mode {mode}")
    if not _pow2(s):
        fail(r.where, node, f"scale {s.reshape(-1)[:3].tolist()} is not a power of two: "
             "qonnx's executor then rounds floats in an order no netlist can follow",
             "use Brevitas's fixed-point quantisers (Int8ActPerTensorFixedPoint, "
             "Int8WeightPerTensorFixedPoint, Int32Bias)")
    if np.any(z != np.round(z)):
        fail(r.where, node, "a zero point that is not an integer")
    lo, hi = S.quant_bounds(int(bits[0]), bool(a.get("signed", 1)), bool(a.get("narrow", 0)))
    return s, z, lo, hi, mode


def quant(r, node):
    x = r.get(node, 0)
    s, z, lo, hi, mode = _params(r, node)
    if isinstance(x, str):  # the graph's input
        if s.size != 1 or z.size != 1:
            fail(r.where, node, "a per-channel quantisation of the input")
        sv, zv = F32(s.reshape(())), F32(z.reshape(()))
        qt = r.input_layer(node, lambda v: S.qonnx_quant_int(v, sv, zv, lo, hi, mode), lo,
                           hi, int(zv), sv)
        return ("deq", qt, sv, int(zv))
    if isinstance(x, np.ndarray):  # weights or a bias
        q = S.qonnx_quant_int(x, s, z, lo, hi, mode)
        axis = int(np.argmax(s.shape)) if s.size > 1 else 0
        return ("wdeq", q, s.reshape(-1), z.astype(np.int64).reshape(-1), axis, True)
    if isinstance(x, Acc):
        return _requant(r, node, x, s, z, lo, hi, mode)
    fail(r.where, node, "quantises a tensor that is neither the input, a constant nor a "
         "Gemm, MatMul or Conv output", "Quant nodes around Gemm, MatMul and Conv")


def _requant(r, node, acc: Acc, s, z, lo, hi, mode):
    from interop.quant_layers import acc_ranges

    if s.size != 1 or z.size != 1:
        fail(r.where, node, "a per-channel quantisation of activations")
    a_lo, a_hi = acc_ranges(acc)
    if max(-int(a_lo.min()), int(a_hi.max())) >= EXACT_LIMIT:
        fail(r.where, node, f"accumulators reach {int(a_lo.min())}..{int(a_hi.max())}, past "
             "float32's exact integers: the executor rounds them")
    sv, zv = F32(s.reshape(())), F32(z.reshape(()))

    def f_of(scale):
        def f(v):
            x = np.asarray(v).astype(F32) * F32(scale)
            if acc.relu:
                x = np.maximum(x, F32(0))
            return S.qonnx_quant_int(x, sv, zv, lo, hi, mode)
        return f

    qt = r.requant(node, acc, f_of, sv, int(zv), lo, hi, "qonnx")
    return ("deq", qt, sv, int(zv))


def avgpool(r, node):
    """An AveragePool of Quant outputs, whose window's size is a power of two: the float
    average of `s (q - z)` is then exact, `s (S - k z) / k` for the window's integer sum
    S; a Trunc after it makes the integers again (`trunc`)."""
    from interop.quant_read import _attrs

    v = r.get(node, 0)
    a = _attrs(node)
    if not (isinstance(v, tuple) and v[0] == "deq") or len(v[1].shape) != 3:
        fail(r.where, node, "an average pool of something that is not a quantised image")
    k = list(a.get("kernel_shape", []))
    p = list(a.get("pads", [0, 0, 0, 0]))
    kk = int(np.prod(k))
    if a.get("ceil_mode", 0) or any(p) or kk & (kk - 1):
        fail(r.where, node, f"a pool with ceil_mode, padding or a window of {kk} values: its "
             "float average would round", "a window of 1, 2, 4, ... values without padding")
    conv = {"in": list(v[1].shape), "kernel": k, "stride": list(a.get("strides", k)),
            "pad": [0, 0], "out": v[1].shape[0]}
    return ("avgsum", v[1], v[2], v[3], conv, kk)


def trunc(r, node):
    """qonnx's Trunc (v1: 5 inputs, v2: 6) of an average pool's output: a table over the
    window sums, computed with its float32 formula."""
    from interop.quant_layers import pool_shape
    from interop.quant_read import _attrs

    v = r.get(node, 0)
    if not (isinstance(v, tuple) and v[0] == "avgsum"):
        fail(r.where, node, "a Trunc that does not follow an average pool of Quant outputs")
    _, qt, s, z, conv, kk = v
    a = _attrs(node)
    scale, zp = (F32(r.const(node, i, "scale").reshape(())) for i in (1, 2))
    mode = a.get("rounding_mode", b"FLOOR")
    mode = (mode.decode() if isinstance(mode, bytes) else mode).upper()
    if mode not in S.ROUNDING:
        fail(r.where, node, f"rounding mode {mode}")
    sums = np.arange(kk * qt.lo, kk * qt.hi + 1)
    x = (F32(s) * (sums - kk * z).astype(F32)) / F32(kk)
    y = S.ROUNDING["ROUND"](x / scale + zp)
    if len(node.input) >= 6:  # v2: the output's scale and bits, clamped
        out_scale = F32(r.const(node, 4, "output scale").reshape(()))
        bits = int(r.const(node, 5, "bit width").reshape(-1)[0])
        t = F32(2.0 ** np.round(np.log2(out_scale / scale)))
        lo, hi = S.quant_bounds(bits, bool(a.get("signed", 1)), bool(a.get("narrow", 0)))
        y = S.ROUNDING[mode](np.clip(y / t, F32(lo), F32(hi)))
    else:
        t = F32(2.0 ** (int(r.const(node, 3, "bits").reshape(-1)[0])
                        - int(r.const(node, 4, "bits").reshape(-1)[0])))
        out_scale = scale * t
        y = S.ROUNDING[mode](y / t)
    z_out = zp / t
    if z_out != np.round(z_out) or not np.all(np.isfinite(y)):
        fail(r.where, node, "a zero point that is not an integer after the truncation")
    table = y.astype(np.int64)
    from interop.quant_graph import QT, Layer

    shape = pool_shape(qt, conv)
    k = r.add(Layer("avgpool", qt.layer, shape, bias=table, conv=conv, lo=int(table.min()),
                    hi=int(table.max()), name=node.name or node.output[0]))
    out = QT(k, shape, int(table.min()), int(table.max()), int(z_out), out_scale)
    return ("deq", out, out_scale, int(z_out))
