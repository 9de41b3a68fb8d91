"""The integer layers of a quantised graph: matrix products and convolutions (QDQ, QONNX
and onnxruntime's QOperator forms), their requantisation, pooling and reshapes, and the
graph's output (for interop/quant_read.py's Reader; the rules are in quant_graph.py)."""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from interop import staircase as S
from interop.quant_graph import QT, Acc, Layer, fail

F32 = np.float32


def _attrs(node) -> dict:
    from onnx import helper

    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


# -- operands -----------------------------------------------------------------------------
def _act(r, node, i: int) -> QT:
    """A dequantised activation: its integers with the DequantizeLinear's zero and scale."""
    v = r.get(node, i)
    if isinstance(v, tuple) and v[0] == "deq":
        return replace(v[1], zero=v[3], scale=v[2])
    fail(r.where, node, f"input {i} is not a dequantised integer tensor",
         "every Gemm, MatMul and Conv reads DequantizeLinear or Quant outputs")


def _weights(r, node, i: int, out_axis: int):
    """(integers minus zero point with the output channel first, scale per output, zero
    point per output, stored as int8)."""
    v = r.get(node, i)
    if not (isinstance(v, tuple) and v[0] == "wdeq"):
        fail(r.where, node, f"input {i} (the weights) is not a dequantised integer constant",
             "quantise the weights (a float weight is not an integer network)")
    _, q, s, z, axis, signed = v
    q = np.moveaxis(q, out_axis, 0)
    n = q.shape[0]
    s, z = np.asarray(s, F32).reshape(-1), np.asarray(z, np.int64).reshape(-1)
    if s.size not in (1, n) or z.size not in (1, n) or (s.size == n > 1 and axis % q.ndim
                                                        != out_axis % q.ndim):
        fail(r.where, node, "weight scales are not per tensor or per output channel")
    zn = np.broadcast_to(z, (n,)).astype(np.int64)
    return q - zn.reshape((n,) + (1,) * (q.ndim - 1)), np.broadcast_to(s, (n,)).astype(F32), \
        zn, signed


def _bias(r, node, i: int, n: int, scale: np.ndarray) -> np.ndarray:
    """The integer bias, whose scale must be the accumulator's (times a power of two)."""
    v = r.get(node, i)
    if v is None:
        return np.zeros(n, np.int64)
    if not (isinstance(v, tuple) and v[0] == "wdeq"):
        fail(r.where, node, "a float bias: the sum's rounding would depend on float "
             "arithmetic", "quantise the bias to int32 with scale input x weight scale")
    q, s, z = v[1:4]
    q = (q - np.asarray(z).reshape(-1)).reshape(-1)
    ratio = np.broadcast_to(np.asarray(s, np.float64).reshape(-1), (n,)) / scale
    k = np.round(np.log2(ratio))
    if q.size != n or np.any(ratio != 2.0 ** k) or np.any(k < 0):
        fail(r.where, node, "the bias scale is not the product of the input and weight "
             "scales", "quantise the bias with scale input scale x weight scale (int32)")
    return q.astype(np.int64) * (2 ** k.astype(np.int64))


# -- QDQ and QONNX: float operators on dequantised integers --------------------------------
def op_Gemm(r, node):
    a = _attrs(node)
    if a.get("transA", 0) or a.get("alpha", 1.0) != 1.0 or a.get("beta", 1.0) != 1.0:
        fail(r.where, node, "transA, alpha or beta other than the defaults")
    x = _flat(r, node, _act(r, node, 0))
    return _dense(r, node, x, _weights(r, node, 1, 0 if a.get("transB", 0) else 1), 2)


def op_MatMul(r, node):
    x = _flat(r, node, _act(r, node, 0))
    return _dense(r, node, x, _weights(r, node, 1, 1), None)


def _form(r) -> str:
    """QDQ (fused by onnxruntime into its integer kernels) or QONNX (qonnx's float32)."""
    return "qonnx" if r.flavour == "QONNX" else "qdq"


def _dense(r, node, x: QT, weights, bias_input):
    W, sw, zw, signed = weights
    if W.ndim != 2 or W.shape[1] != int(np.prod(x.shape)):
        fail(r.where, node, f"weights of shape {list(W.shape)} for {int(np.prod(x.shape))} "
             "inputs")
    scale = (F32(x.scale) * sw).astype(F32)
    bias = _bias(r, node, bias_input, W.shape[0], scale) if bias_input else \
        np.zeros(W.shape[0], np.int64)
    return Acc(x, "dense", W.astype(np.int64), bias, scale, form=_form(r), wzero=zw,
               wsigned=signed)


def op_Add(r, node):
    """A MatMul's bias (QDQ writes MatMul + Add)."""
    a = r.get(node, 0)
    if not isinstance(a, Acc) or a.relu or a.bias.any():
        fail(r.where, node, "an Add that is not the bias of a MatMul",
             "residual additions of quantised tensors are not read")
    return replace(a, bias=_bias(r, node, 1, len(a.bias), a.scale))


def op_Conv(r, node):
    x = _act(r, node, 0)
    W, sw, zw, signed = _weights(r, node, 1, 0)
    conv = _conv_params(r, node, x, W)
    scale = (F32(x.scale) * sw).astype(F32)
    bias = _bias(r, node, 2, W.shape[0], scale)
    return Acc(x, "conv", W.astype(np.int64), bias, scale, conv, form=_form(r), wzero=zw,
               wsigned=signed)


def _conv_params(r, node, x: QT, W) -> dict:
    a = _attrs(node)
    if len(x.shape) != 3 or W.ndim != 4 or W.shape[1] != x.shape[0]:
        fail(r.where, node, f"weights {list(W.shape)} on an image of shape {list(x.shape)}")
    if a.get("group", 1) != 1 or any(d != 1 for d in a.get("dilations", [1, 1])):
        fail(r.where, node, "a grouped or dilated convolution", "use group 1, dilation 1")
    auto = a.get("auto_pad", b"NOTSET")
    if (auto.decode() if isinstance(auto, bytes) else auto) not in ("NOTSET", "VALID"):
        fail(r.where, node, "auto_pad", "give explicit pads")
    p = list(a.get("pads", [0, 0, 0, 0]))
    if p[0] != p[2] or p[1] != p[3]:
        fail(r.where, node, f"asymmetric pads {p}", "pad both sides equally")
    return {"in": list(x.shape), "out": int(W.shape[0]), "kernel": list(W.shape[2:]),
            "stride": list(a.get("strides", [1, 1])), "pad": [int(p[0]), int(p[1])]}


def op_Relu(r, node):
    a = r.get(node, 0)
    if isinstance(a, Acc):
        return replace(a, relu=True)
    fail(r.where, node, "a Relu on something that is not a Gemm, MatMul or Conv")


# -- onnxruntime's QOperator form -----------------------------------------------------------
def _qop(r, node, x_i, w_i, y_i, bias_i, kind, out_axis):
    """QGemm / QLinearMatMul / QLinearConv: an accumulator and its requantisation."""
    x = r.get(node, x_i)
    if not isinstance(x, QT):
        fail(r.where, node, "its input is not a quantised tensor")
    sa = F32(r.const(node, x_i + 1, "input scale").reshape(()))
    za = r.get(node, x_i + 2)
    x = replace(x, zero=0 if za is None else int(za.reshape(-1)[0]), scale=sa,
                signed=za is not None and za.dtype == np.int8)
    Wq = r.const(node, w_i, "weights").astype(np.int64)
    sw = np.asarray(r.const(node, w_i + 1, "weight scale"), F32).reshape(-1)
    zw = r.get(node, w_i + 2)
    zw = np.zeros(1, np.int64) if zw is None else zw.astype(np.int64).reshape(-1)
    r.consts[f"{node.output[0]}#w"] = Wq  # the same weights as a QDQ graph's DequantizeLinear
    signed = r.const(node, w_i, "weights").dtype == np.int8
    r.env[f"{node.output[0]}#wdeq"] = ("wdeq", Wq, sw, zw, out_axis, signed)
    W, sw, zw, signed = _weights_of(r, node, out_axis)
    if kind == "conv":
        x_shape_ok = len(x.shape) == 3
        if not x_shape_ok:
            fail(r.where, node, f"a convolution of a tensor of shape {list(x.shape)}")
        conv = _conv_params(r, node, x, W)
    else:
        x, conv = _flat(r, node, x), {}
    scale = (sa * sw).astype(F32)
    if bias_i is not None and r.get(node, bias_i) is not None:
        bias = r.const(node, bias_i, "bias").astype(np.int64).reshape(-1)
        if bias.size != W.shape[0]:
            fail(r.where, node, f"{bias.size} biases for {W.shape[0]} outputs")
    else:
        bias = np.zeros(W.shape[0], np.int64)
    if W.ndim == 2 and W.shape[1] != int(np.prod(x.shape)):
        fail(r.where, node, f"weights of shape {list(W.shape)} for {int(np.prod(x.shape))} "
             "inputs")
    acc = Acc(x, kind, W, bias, scale, conv, form="qop", wzero=zw, wsigned=signed)
    if y_i >= len(node.input) or not node.input[y_i]:
        fail(r.where, node, "no output scale (a float output)",
             "quantise the output too (QuantizeLinear after it)")
    sy = F32(r.const(node, y_i, "output scale").reshape(()))
    zp = r.get(node, y_i + 1)
    zp = np.zeros((), np.uint8) if zp is None else zp
    qlo, qhi = S.type_bounds(zp.dtype)
    z = int(zp.reshape(-1)[0])
    return requant(r, node, acc, lambda M: lambda v: S.ort_requant(v, M, z, qlo, qhi), sy, z,
                   qlo, qhi, "ort")


def _weights_of(r, node, out_axis):
    class _N:  # a stand-in node whose input 0 is the weights registered above
        input = [f"{node.output[0]}#wdeq"]
        name, output, op_type = node.name, node.output, node.op_type
    return _weights(r, _N, 0, out_axis)


def op_QGemm(r, node):
    a = _attrs(node)
    if a.get("transA", 0) or a.get("alpha", 1.0) != 1.0:
        fail(r.where, node, "transA or alpha other than the defaults")
    return _qop(r, node, 0, 3, 7, 6, "dense", 0 if a.get("transB", 0) else 1)


def op_QLinearMatMul(r, node):
    return _qop(r, node, 0, 3, 6, None, "dense", 1)


def op_QLinearConv(r, node):
    return _qop(r, node, 0, 3, 6, 8, "conv", 0)


# -- requantisation ---------------------------------------------------------------------------
def acc_ranges(acc: Acc) -> tuple[np.ndarray, np.ndarray]:
    """Per output channel, an interval holding every accumulator (padding counts as a
    missing term: zero)."""
    a_lo, a_hi = acc.src.lo - acc.src.zero, acc.src.hi - acc.src.zero
    W = acc.W.reshape(acc.W.shape[0], -1)
    lo = np.minimum(W * a_lo, W * a_hi)
    hi = np.maximum(W * a_lo, W * a_hi)
    if acc.kind == "conv":
        lo, hi = np.minimum(lo, 0), np.maximum(hi, 0)
    return acc.bias + lo.sum(1), acc.bias + hi.sum(1)


def requant(r, node, acc: Acc, f_of_M, sy, zy, qlo, qhi, how):
    """The integer layer of an accumulator and its per-channel staircase."""
    if how == "ort" and acc.relu and zy != qlo:
        fail(r.where, node, "a Relu before a quantisation whose zero point is not the least "
             "value: onnxruntime computes it in float", "use a zero point of 0 (uint8) after "
             "a Relu, as quantize_static does")
    lo, hi = acc_ranges(acc)
    name = node.name or node.output[0]
    if how == "ort":
        Ms = (acc.scale / F32(sy)).astype(F32)
        fs = [f_of_M(M) for M in Ms]
    else:
        fs = [f_of_M(s) for s in acc.scale]
    stairs = _stairs(fs, lo, hi, [float(v) for v in acc.scale])
    k = r.add(Layer(acc.kind, acc.src.layer, _out_shape(acc), acc.W, acc.bias,
                    acc.src.zero, stairs, acc.conv, min(s.base for s in stairs),
                    max(s.top for s in stairs), name, _pairs(r, acc, name)))
    return QT(k, _out_shape(acc), r.layers[k].lo, r.layers[k].hi, zy, F32(sy),
              signed=qlo < 0)


def _pairs(r, acc: Acc, name: str):
    """onnxruntime's u8s8 kernel's saturating pair sums of this layer (interop/ort_pairs.py),
    noted in the netlist's header."""
    from interop import ort_pairs

    pairs = ort_pairs.find(acc, r.ort_pairs)
    line = ort_pairs.note(pairs, name)
    if line:
        r.notes.append(line)
    return pairs


def _stairs(fs, lo, hi, keys) -> list:
    """One staircase per channel; channels with the same formula share the union range."""
    union: dict = {}
    for k, key in enumerate(keys):
        a, b = union.get(key, (lo[k], hi[k]))
        union[key] = (min(a, lo[k]), max(b, hi[k]))
    made: dict = {}
    out = []
    for k, key in enumerate(keys):
        if key not in made:
            made[key] = S.thresholds(fs[k], int(union[key][0]), int(union[key][1]))
        out.append(made[key])
    return out


def _out_shape(acc: Acc) -> tuple:
    if acc.kind == "dense":
        return (acc.W.shape[0],)
    c = acc.conv
    oh = (c["in"][1] + 2 * c["pad"][0] - c["kernel"][0]) // c["stride"][0] + 1
    ow = (c["in"][2] + 2 * c["pad"][1] - c["kernel"][1]) // c["stride"][1] + 1
    return (c["out"], oh, ow)


# -- shapes and pooling ---------------------------------------------------------------------
def _flat(r, node, x: QT) -> QT:
    return replace(x, shape=(int(np.prod(x.shape)),))


def op_Flatten(r, node):
    if _attrs(node).get("axis", 1) != 1:
        fail(r.where, node, "a flatten not at axis 1")
    return _reshaped(r, node, r.get(node, 0), None)


def op_Reshape(r, node):
    shape = r.const(node, 1, "shape").astype(np.int64).tolist()
    if len(shape) != 2 or shape[0] not in (0, 1, -1):
        fail(r.where, node, f"a reshape to {shape}", "reshape only to (batch, -1)")
    return _reshaped(r, node, r.get(node, 0), shape[1])


def _reshaped(r, node, v, width):
    if isinstance(v, str):  # the float input flattened before its quantisation
        r.x_flat = True
        return v
    qt = v[1] if isinstance(v, tuple) and v[0] == "deq" else v
    if not isinstance(qt, QT):
        fail(r.where, node, "a reshape of something that is not a quantised tensor")
    n = int(np.prod(qt.shape))
    if width not in (None, -1, n):
        fail(r.where, node, f"a reshape to width {width} of {n} values")
    flat = replace(qt, shape=(n,))
    return (v[0], flat, *v[2:]) if isinstance(v, tuple) else flat


def op_MaxPool(r, node):
    v = r.get(node, 0)
    qt = v[1] if isinstance(v, tuple) and v[0] == "deq" else v
    a = _attrs(node)
    if not isinstance(qt, QT) or len(qt.shape) != 3:
        fail(r.where, node, "a max pool of something that is not a quantised image")
    if a.get("ceil_mode", 0) or any(d != 1 for d in a.get("dilations", [1, 1])) \
            or len([o for o in node.output if o]) > 1:
        fail(r.where, node, "ceil_mode, dilation or indices", "plain max pooling")
    p = list(a.get("pads", [0, 0, 0, 0]))
    if p[0] != p[2] or p[1] != p[3]:
        fail(r.where, node, f"asymmetric pads {p}")
    k = list(a["kernel_shape"])
    conv = {"in": list(qt.shape), "kernel": k, "stride": list(a.get("strides", k)),
            "pad": [int(p[0]), int(p[1])], "out": qt.shape[0]}
    shape = pool_shape(qt, conv)
    j = r.add(Layer("maxpool", qt.layer, shape, conv=conv, lo=qt.lo, hi=qt.hi))
    out = replace(qt, layer=j, shape=shape, tensor="")
    return ("deq", out, *v[2:]) if isinstance(v, tuple) else out


def pool_shape(qt: QT, conv: dict) -> tuple:
    k = conv["kernel"]
    return _out_shape(Acc(qt, "conv", np.zeros((qt.shape[0], 1, *k)), np.zeros(1), np.ones(1),
                          conv))


def op_AveragePool(r, node):
    from interop.quant_qonnx import avgpool

    return avgpool(r, node)


def op_Trunc(r, node):
    from interop.quant_qonnx import trunc

    return trunc(r, node)


def op_QuantizeLinear_of_deq(r, node, v, s, z):
    """Q(DQ(q)) with the same scale and zero point: the same integers (a pool between)."""
    qt = v[1]
    if F32(v[2]) != F32(s) or v[3] != z:
        fail(r.where, node, "requantises a tensor to a different scale without an integer "
             "kernel", "keep the scale across pooling")
    return replace(qt, tensor="")


# -- the output -----------------------------------------------------------------------------
def finish(r):
    """The netlist's outputs, and how runtime_check reads the runtime's integers."""
    name = r.m.graph.output[0].name
    v = r.env.get(name)
    if isinstance(v, QT):
        r.out_int = ("int", name, None, 0)
        return v
    if isinstance(v, tuple) and v[0] == "deq":
        qt = v[1]
        # read from the graph's own output: naming an inner tensor as an output would
        # change what onnxruntime fuses, and so its integers
        r.out_int = ("float", name, v[2], v[3])
        return qt
    if isinstance(v, Acc):  # a last Gemm without a quantiser: its integer accumulators
        lo, hi = acc_ranges(v)
        k = r.add(Layer(v.kind, v.src.layer, _out_shape(v), v.W, v.bias, v.src.zero,
                        [None] * v.W.shape[0], v.conv, int(lo.min()), int(hi.max()),
                        "output", _pairs(r, v, "output")))
        r.out_int = ("float", name, v.scale, 0)
        return QT(k, _out_shape(v), int(lo.min()), int(hi.max()))
    fail(r.where, r.m.graph.node[-1], "the graph's output is not a quantised tensor")


# -- elementwise operators, tabulated by the runtime itself ----------------------------------
def op_QLinearAdd(r, node):
    """onnxruntime's QLinearAdd of a quantised tensor and a constant (the bias of a
    QLinearMatMul, as quantize_static writes MatMul + Add): per element a function of one
    integer, so its table is taken from onnxruntime itself, running this very node on
    every value the tensor can hold, in the layout it runs in (one row), and the netlist
    looks it up (`quant_emit.Emitter.emit_table`)."""
    a, b = r.get(node, 0), r.get(node, 3)
    if isinstance(a, QT) and isinstance(b, np.ndarray):
        qt, slot = a, 0
    elif isinstance(b, QT) and isinstance(a, np.ndarray):
        qt, slot = b, 3
    else:
        fail(r.where, node, "an addition of two computed tensors",
             "residual additions of quantised tensors are not read; a constant operand is")
    table = _tabulate(r, node, qt, slot)
    sc, zc = r.const(node, 6, "output scale"), r.get(node, 7)
    z = 0 if zc is None else int(zc.reshape(-1)[0])
    k = r.add(Layer("table", qt.layer, qt.shape, bias=table, lo=int(table.min()),
                    hi=int(table.max()), name=node.name or node.output[0]))
    return QT(k, qt.shape, int(table.min()), int(table.max()), z, F32(sc.reshape(())),
              signed=zc is not None and zc.dtype == np.int8)


def _tabulate(r, node, qt: QT, slot: int) -> np.ndarray:
    """(values, elements): the node's output for every value of its computed operand."""
    import onnx
    import onnxruntime as ort
    from onnx import helper

    n = int(np.prod(qt.shape))
    if (qt.hi - qt.lo + 1) * n > 4_000_000:
        fail(r.where, node, f"a table of {qt.hi - qt.lo + 1} values for {n} elements")
    dtype = np.uint8 if qt.lo >= 0 and qt.hi <= 255 else np.int8
    elem = onnx.TensorProto.UINT8 if dtype == np.uint8 else onnx.TensorProto.INT8
    names = list(node.input)
    names[slot] = "v"
    inits = [onnx.numpy_helper.from_array(np.asarray(r.consts[i]), i)
             for i in dict.fromkeys(names) if i and i != "v"]
    one = helper.make_node(node.op_type, names, ["out"], domain=node.domain)
    shape = [1, *qt.shape]
    g = helper.make_graph([one], "tab", [helper.make_tensor_value_info("v", elem, shape)],
                          [helper.make_tensor_value_info("out", elem, None)], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17),
                                            helper.make_opsetid("com.microsoft", 1)],
                          ir_version=8)
    sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    rows = [sess.run(None, {"v": np.full(shape, v, dtype)})[0].reshape(-1)
            for v in range(qt.lo, qt.hi + 1)]
    return np.stack(rows).astype(np.int64)
