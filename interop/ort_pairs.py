"""onnxruntime's u8s8 integer kernel and its 16-bit pair sums, reproduced exactly
(docs/import.md, "onnxruntime's u8s8 kernel").

On x86 without VNNI (AVX2, as this machine) MLAS multiplies uint8 activations by int8
weights with vpmaddubsw, which adds the two products of each adjacent pair of the
reduction, `a[2p] w[2p] + a[2p+1] w[2p+1]`, in 16 bits with signed saturation before the
32-bit sums; the zero points are corrected afterwards, exactly. So onnxruntime's
accumulator is `sum_p sat16(P_p) - za' sum w - ...`: the exact one less, for every pair
sum P_p past -32768..32767, its excess. Measured here (tests/test_quant_import.py and
docs/import.md): QGemm, QLinearMatMul, QLinearConv, MatMulInteger and
MatMulIntegerToFloat; a QDQ graph's int8 activations become uint8 (`a + 128`, zero point
+ 128) before these kernels; a convolution's reduction runs over (ky, kx, c) for each
output position (NHWC), a padded position holding the input's zero point, except a
convolution of one input and one output channel (the depthwise kernel: exact); int8
activations with int8 weights in QOperator form, and uint8 weights, are exact.

Owns:
- which layers run on that kernel and whether it saturates here (`behaviour`: per form
  and types, measured by running onnxruntime itself on two probe rows once per process,
  or as `--ort-pairs` says);
- which (output, pair) sums can pass the 16-bit range for the source's proven range
  (`find`);
- the netlist computing each such pair's excess exactly with lights within 16 bits
  (`emit`), and how it joins the layer's accumulator (`narrow_lines`, `wide_parts`);
- which pair an input saturated (`first_saturation`), for --check's report.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from dsl.diagnostics import VoodooError

MODES = ("auto", "saturate", "exact")
HI, LO = 32767, -32768


@dataclass
class Pairs:
    """The pair sums of one layer that can leave 16 bits: one row per (output element,
    pair). Its sum is `P = sum_i w[i] (v[i] + shift) + const` over the taps with a source
    element (src >= 0; v the netlist's value of it), const the padded taps' products."""

    out: np.ndarray        # (n,) the output element (channel * positions + position)
    src: np.ndarray        # (n, 2) source element of each tap, -1 for a padded position
    w: np.ndarray          # (n, 2) the raw (stored) weights
    const: np.ndarray      # (n,) the padded taps' products
    sign: np.ndarray       # (n,) +1: P can pass 32767; -1: P can pass -32768
    shift: int             # raw activation = value + shift (128 for int8 made uint8)
    emulate: bool          # reproduced in the netlist (else only reported)

    def q_form(self, lo: int) -> tuple[np.ndarray, np.ndarray]:
        """|w| and c with the excess `E = relu(Q)`, `Q = sum_i |w_i| d_i + c`, d = v - lo
        the value above the source's lowest (0 for a padded tap)."""
        aw = np.where(self.src >= 0, np.abs(self.w), 0)
        limit = np.where(self.sign > 0, HI, -LO)
        c = aw.sum(1) * (lo + self.shift) + self.sign * self.const - limit
        return aw, c


# -- which kernel, and does it saturate here -------------------------------------------------
def behaviour(form: str, act_signed: bool, w_signed: bool, mode: str) -> str:
    """'pairs' where the layer's kernel adds pairs in 16 bits with saturation, else
    'exact'. QONNX (qonnx's float32 executor) and uint8 weights never saturate."""
    if form == "qonnx" or not w_signed or mode == "exact":
        return "exact"
    if mode == "saturate":  # as measured on x86 AVX2 without VNNI
        return "pairs" if form == "qdq" or not act_signed else "exact"
    return _probe(form, act_signed)


@functools.lru_cache(maxsize=None)
def _probe(form: str, act_signed: bool) -> str:
    """Run onnxruntime itself on raw activations [255, 255, 0, 0] and [0, 255, 255, 0]
    times weights 127: a kernel that pairs (0, 1), (2, 3) gives 32767 for the first row
    and 64770 for the second; an exact one 64770 for both."""
    import onnxruntime as ort

    rows = np.array([[255, 255, 0, 0], [0, 255, 255, 0]], np.int64)
    model = _probe_model(form, act_signed)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    feed = rows - 128 if act_signed else rows
    if form == "qdq":   # a float input quantised with scale 1 and zero point -128 / 0
        feed = rows.astype(np.float32)
    else:
        feed = feed.astype(np.int8 if act_signed else np.uint8)
    got = np.asarray(sess.run(None, {"x": feed})[0], np.float64).reshape(-1)
    if got[0] == HI and got[1] == 64770:
        return "pairs"
    if got[0] == got[1] == 64770:
        return "exact"
    raise VoodooError(f"onnxruntime's int8 kernel on this machine gives {got.tolist()} for "
                      "the probe rows (64770 exact, 32767 for a saturated pair): a behaviour "
                      "the importer does not know\n    hint: --ort-pairs exact or saturate "
                      "chooses one; --check then says whether it holds")


def _probe_model(form: str, act_signed: bool):
    from onnx import TensorProto as T
    from onnx import helper, numpy_helper as nh

    adt, at = (np.int8, T.INT8) if act_signed else (np.uint8, T.UINT8)
    za = adt(-128 if act_signed else 0)
    W = np.full((4, 1), 127, np.int8)
    one = np.float32(1)
    inits = [nh.from_array(one, "s"), nh.from_array(za, "z"), nh.from_array(W, "W"),
             nh.from_array(one, "sw"), nh.from_array(np.int8(0), "zw")]
    if form == "qdq":  # fused at the default level into MatMulIntegerToFloat
        nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["xq"]),
                 helper.make_node("DequantizeLinear", ["xq", "s", "z"], ["xd"]),
                 helper.make_node("DequantizeLinear", ["W", "sw", "zw"], ["Wd"]),
                 helper.make_node("MatMul", ["xd", "Wd"], ["y"])]
        x = helper.make_tensor_value_info("x", T.FLOAT, [None, 4])
    else:
        nodes = [helper.make_node("QGemm", ["x", "s", "z", "W", "sw", "zw"], ["y"],
                                  domain="com.microsoft")]
        x = helper.make_tensor_value_info("x", at, [None, 4])
    g = helper.make_graph(nodes, "probe", [x], [helper.make_tensor_value_info(
        "y", T.FLOAT, None)], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17),
                                               helper.make_opsetid("com.microsoft", 1)],
                             ir_version=8)


# -- which pairs can saturate -----------------------------------------------------------------
def find(acc, mode: str) -> Pairs | None:
    """The layer's pairs whose sum can leave 16 bits on a saturating kernel (reported even
    where this machine's kernel is exact), or None."""
    if acc.form == "qonnx" or not acc.wsigned:
        return None
    how = behaviour(acc.form, acc.src.signed, acc.wsigned, mode)
    if acc.form == "qop" and acc.src.signed and how == "exact":
        return None  # int8 by int8 in QOperator form: MLAS's exact kernel, on x86 too
    shift = 128 if acc.src.signed else 0
    raw = acc.W + acc.wzero.reshape((-1,) + (1,) * (acc.W.ndim - 1))
    top = acc.src.hi + shift
    pad = acc.src.zero + shift
    if acc.kind == "dense":
        rows = _dense_pairs(raw, top)
    elif acc.conv["in"][0] == 1 and raw.shape[0] == 1:
        return None  # one input and one output channel: the exact depthwise kernel
    else:
        rows = _conv_pairs(raw, acc.conv, top, pad)
    if rows is None:
        return None
    out, src, w, const, sign = rows
    if not len(out):
        return None
    return Pairs(out, src, w, const, sign, shift, how == "pairs")


def _beyond(w: np.ndarray, raw_max: np.ndarray, const: np.ndarray):
    """Per row: +1 if the sum can pass 32767, -1 if it can pass -32768, else 0 (a pair of
    mixed signs never can: |P| <= 128 * 255)."""
    pos = (w >= 0).all(1) & ((w * raw_max).sum(1) + const > HI)
    neg = (w <= 0).all(1) & ((w * raw_max).sum(1) + const < LO)
    return np.where(pos, 1, np.where(neg, -1, 0))


def _dense_pairs(raw: np.ndarray, top: int):
    n_out, K = raw.shape
    p = np.arange(K // 2)
    if not p.size:
        return None
    w = np.stack([raw[:, 0::2][:, :p.size], raw[:, 1::2][:, :p.size]], -1)   # (out, p, 2)
    w = w.reshape(-1, 2)
    out = np.repeat(np.arange(n_out), p.size)
    src = np.tile(np.stack([2 * p, 2 * p + 1], 1), (n_out, 1))
    const = np.zeros(len(w), np.int64)
    sign = _beyond(w, np.full(w.shape, top), const)
    keep = sign != 0
    return out[keep], src[keep], w[keep], const[keep], sign[keep]


def _conv_pairs(raw: np.ndarray, conv: dict, top: int, pad: int):
    """(ky, kx, c) is the reduction's order for each output position; a tap outside the
    image holds the input's zero point."""
    O, C, KH, KW = raw.shape
    _, H, Wd = conv["in"]
    (sy, sx), (py, px) = conv["stride"], conv["pad"]
    oh, ow = (H + 2 * py - KH) // sy + 1, (Wd + 2 * px - KW) // sx + 1
    taps = np.array([(c, ky, kx) for ky in range(KH) for kx in range(KW) for c in range(C)])
    n_p = len(taps) // 2
    if not n_p:
        return None
    t = taps[:2 * n_p].reshape(n_p, 2, 3)                           # (pair, tap, (c,ky,kx))
    wt = raw[:, t[..., 0], t[..., 1], t[..., 2]]                    # (O, pair, 2)
    yy, xx = np.meshgrid(np.arange(oh) * sy - py, np.arange(ow) * sx - px, indexing="ij")
    iy = yy.reshape(-1, 1, 1) + t[None, :, :, 1]                    # (pos, pair, 2)
    ix = xx.reshape(-1, 1, 1) + t[None, :, :, 2]
    inside = (iy >= 0) & (iy < H) & (ix >= 0) & (ix < Wd)
    src = np.where(inside, t[None, :, :, 0] * H * Wd + iy * Wd + ix, -1)
    w = np.broadcast_to(wt[:, None], (O, len(iy), n_p, 2)).reshape(-1, 2)
    src = np.broadcast_to(src[None], (O, *src.shape)).reshape(-1, 2)
    const = np.where(src < 0, w * pad, 0).sum(1)
    raw_max = np.where(src >= 0, top, 0)
    sign = _beyond(w, raw_max, const)
    out = np.broadcast_to((np.arange(O)[:, None] * (oh * ow) + np.arange(oh * ow))[..., None],
                          (O, oh * ow, n_p)).reshape(-1)
    keep = sign != 0
    return out[keep], src[keep], w[keep], const[keep], sign[keep]


def note(pairs: Pairs | None, name: str) -> str:
    """The header's warning line for a layer with pairs that can saturate."""
    if pairs is None or not len(pairs.out):
        return ""
    n = len(pairs.out)
    if pairs.emulate:
        return (f"layer {name!r}: this machine's onnxruntime adds adjacent products in 16 bits "
                f"with saturation (its u8s8 kernel, x86 without VNNI): {n} pair sums can "
                "pass 16 bits and are reproduced; with VNNI or on ARM onnxruntime sums "
                "exactly (--ort-pairs exact)")
    return (f"layer {name!r}: {n} pair sums can pass 16 bits, which onnxruntime's u8s8 kernel "
            "saturates on x86 without VNNI; the netlist sums exactly, as ONNX defines it "
            "(--ort-pairs saturate reproduces the other)")


# -- the netlist of the excess ---------------------------------------------------------------
def emit(e, k: int, layer) -> dict:
    """Vectors computing, for each pair, its excess E = relu(Q) >= 0 (acc_ort = acc -
    sign * E) as `E = 256 SU + 16 SV + SM`, from the source's base-16 digits
    (v = lo + 16 h + l, interop/wide.digits) so that every light stays narrow:

        Q  = 16 (sum |w| h + sum wh l) + sum wl l + c,    |w| = 16 wh + wl
        SK = floor(Yl / 16), SR = Yl - 16 SK,             Yl = sum wl l + (c mod 16)
        W  = sum |w| h + sum wh l + SK + floor(c / 16)    (so Q = 16 W + SR, SR in 0..15)
        SU = relu(floor(W / 16)), SV = relu(W - 16 SU) (0..15), SG = [W >= 0],
        SM = SG * SR = relu(SR + 16 SG - 16)

    Q < 0 iff W < 0, where all three are 0. Returns what the wiring needs."""
    from interop.wide import _ints, digits

    P = layer.pairs
    planes = digits(e, layer.src)
    aw, wh, wl, c, k_max, u_max = plan(P, e.layers[layer.src])
    n = len(P.out)
    tag = f"{k}"
    lines_l = _tap_lines(planes[-1][0], P.src, wl)
    lines_w = _tap_lines(planes[-1][0], P.src, wh)
    if len(planes) == 2:
        lines_w += _tap_lines(planes[0][0], P.src, aw)
    ones = _ints(np.ones(n, np.int64))
    # Yl and W as identity vectors (free in a map: their readers take their lines)
    out = _neuron(f"SY{tag}", n, "identity", lines_l, c % 16)
    out += _neuron(f"SX{tag}", n, "identity", lines_w, c // 16)
    out += [f"neuron SK{tag}[{n}] : relu(s=16, max={int(k_max.max())})",
            f"lines SY{tag} -> SK{tag} diag [{ones}]",
            f"neuron SR{tag}[{n}] : relu(s=1, max=15)",
            f"lines SY{tag} -> SR{tag} diag [{ones}]",
            f"lines SK{tag} -> SR{tag} diag [{_ints(np.full(n, -16))}]",
            f"lines SK{tag} -> SX{tag} diag [{ones}]"]
    for name, gate in ((f"SU{tag}", f"relu(s=16, max={int(u_max.max())})"),
                       (f"SV{tag}", "relu(s=1, max=15)"), (f"SG{tag}", "step(t=0)")):
        out += [f"neuron {name}[{n}] : {gate}", f"lines SX{tag} -> {name} diag [{ones}]"]
    out.append(f"lines SU{tag} -> SV{tag} diag [{_ints(np.full(n, -16))}]")
    out += [f"neuron SM{tag}[{n}] : relu(s=1, max=15)",
            f"lines SR{tag} -> SM{tag} diag [{ones}]",
            f"lines SG{tag} -> SM{tag} diag [{_ints(np.full(n, 16))}]",
            f"bias SM{tag} = {-16}"]
    e.out += out


def plan(P: Pairs, src):
    """|w|, its base-16 digits wh and wl, c, and the largest SK and SU of each pair, for a
    source of values lo..hi (interop/wide.digits: two digit planes, or one of at most 15)."""
    aw, c = P.q_form(src.lo)
    span = src.hi - src.lo
    hmax, lmax = (span // 16, 15) if span > 15 else (0, span)
    wh, wl = aw // 16, aw % 16
    k_max = ((wl * lmax).sum(1) + c % 16) // 16
    w_max = (aw * hmax).sum(1) + (wh * lmax).sum(1) + k_max + c // 16
    return aw, wh, wl, c, k_max, np.maximum(w_max, 0) // 16


def _neuron(name: str, n: int, gate: str, lines: list[str], bias) -> list[str]:
    from interop.wide import _ints

    return ([f"neuron {name}[{n}] : {gate}"] + [t.replace("{dst}", name) for t in lines]
            + [f"bias {name} = [{_ints(bias)}]"])


def _tap_lines(plane: str, src: np.ndarray, w: np.ndarray) -> list[str]:
    """Sparse lines from a digit plane into a pair vector ({dst}), weight w per tap."""
    body = [f"{int(s)} -> {p} : {int(wt)}" for p in range(len(src)) for s, wt in
            zip(src[p], w[p]) if s >= 0 and wt]
    return [f"lines {plane} -> {{dst}} sparse {{ {', '.join(body)} }}"] if body else []


def emulated(layer) -> bool:
    P = getattr(layer, "pairs", None)
    return P is not None and P.emulate and len(P.out) > 0


def bounds(layer, src) -> tuple[np.ndarray, np.ndarray]:
    """Per output element, how far the correction can move the netlist's accumulator down
    and up (each pair's E within 0..256 max(SU) + 255), as the range analysis sees it."""
    return _per_element(layer, 256 * plan(layer.pairs, src)[-1] + 255)


def _per_element(layer, amount: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    n, P = _n_out(layer), layer.pairs
    down, up = np.zeros(n, np.int64), np.zeros(n, np.int64)
    np.add.at(down, P.out[P.sign > 0], amount[P.sign > 0])
    np.add.at(up, P.out[P.sign < 0], amount[P.sign < 0])
    return down, up


def _n_out(layer) -> int:
    per = int(np.prod(layer.shape[1:])) if layer.kind == "conv" else 1
    return layer.W.shape[0] * per


def narrow_lines(layer, k: int, dst: str, local: dict) -> list[str]:
    """Lines taking -sign * E of each pair whose output element is in `local` (layer
    element -> element of dst) into dst."""
    P = layer.pairs
    out = []
    for vec, coef in ((f"SU{k}", 256), (f"SV{k}", 16), (f"SM{k}", 1)):
        body = [f"{p} -> {local[int(o)]} : {int(-s * coef)}" for p, (o, s) in
                enumerate(zip(P.out, P.sign)) if int(o) in local]
        if body:
            out.append(f"lines {vec} -> {dst} sparse {{ {', '.join(body)} }}")
    return out


def wide_parts(e, k: int, layer) -> tuple[list[str], list[dict], np.ndarray, tuple]:
    """For interop/wide.py's accumulator `256 V + U`: the vector adding -sign * SU to V;
    the terms (each element in 0..255) carrying 16 SV + SM (255 - it for a pair that
    subtracts); the constant those 255s need (per element); how far V moves down and up, per element."""
    from interop.wide import _ints

    P, n = layer.pairs, _n_out(layer)
    body = [f"{p} -> {int(o)} : {int(-s)}" for p, (o, s) in enumerate(zip(P.out, P.sign))]
    e.out += [f"neuron SW{k}[{n}] : identity",
              f"lines SU{k} -> SW{k} sparse {{ {', '.join(body)} }}"]
    rank = np.zeros(len(P.out), np.int64)
    seen: dict = {}
    for p, o in enumerate(P.out):
        rank[p] = seen.get(int(o), 0)
        seen[int(o)] = rank[p] + 1
    terms, const = [], np.zeros(n, np.int64)
    for r in range(int(rank.max()) + 1):
        name, mine = f"ST{k}_{r}", np.flatnonzero(rank == r)
        bias = np.zeros(n, np.int64)
        subtract = mine[P.sign[mine] > 0]
        bias[P.out[subtract]] = 255
        const[P.out[subtract]] -= 255
        e.out.append(f"neuron {name}[{n}] : identity")
        for vec, coef in ((f"SV{k}", 16), (f"SM{k}", 1)):
            pairs = ", ".join(f"{p} -> {int(P.out[p])} : {int(-P.sign[p] * coef)}"
                              for p in mine)
            e.out.append(f"lines {vec} -> {name} sparse {{ {pairs} }}")
        if bias.any():
            e.out.append(f"bias {name} = [{_ints(bias)}]")
        terms.append({name: 1})
    down, up = _per_element(layer, plan(P, e.layers[layer.src])[-1])
    return [f"SW{k}"], terms, const, (down, up)


# -- what an input did -----------------------------------------------------------------------
def first_saturation(layers, values: dict, name_of) -> str:
    """The first layer (in order) with a pair sum past 16 bits for this input, described;
    values[k] holds layer k's values as the netlist computed them (equal to onnxruntime's
    up to that layer, since no earlier pair saturated)."""
    for k, layer in enumerate(layers):
        P = getattr(layer, "pairs", None)
        if P is None or P.emulate or not len(P.out) or layer.src not in values:
            continue
        v = values[layer.src]
        raw = np.where(P.src >= 0, v[np.maximum(P.src, 0)] + P.shift, 0)
        s = (P.w * raw).sum(1) + P.const
        bad = np.flatnonzero((s > HI) | (s < LO))
        if bad.size:
            j = int(bad[0])
            return (f"onnxruntime's u8s8 kernel (x86 without VNNI) saturated a pair sum in "
                    f"layer {name_of(layer)!r}: output element {int(P.out[j])}, "
                    f"{int(P.w[j, 0])} x {int(raw[j, 0])} + {int(P.w[j, 1])} x "
                    f"{int(raw[j, 1])}{' + ' + str(int(P.const[j])) if P.const[j] else ''} "
                    f"= {int(s[j])}, which it holds as {int(np.clip(s[j], LO, HI))}")
    return ""
