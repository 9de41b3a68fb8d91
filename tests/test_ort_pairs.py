"""onnxruntime's u8s8 kernel adds adjacent products in 16 bits with saturation on x86
without VNNI (interop/ort_pairs.py, docs/import.md): which pairs, read from the graph;
kernels built here (matrix products of odd depth, convolutions with padded taps holding a
zero point, strides, several channels; the one-channel convolution that runs exactly)
imported and `==` onnxruntime on every output; the mode that does not match this
machine shown to differ, with the saturated pair named."""
from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from conftest import ROOT
from dsl.parser import parse

from onnx import TensorProto as T  # noqa: E402
from onnx import helper, numpy_helper as nh  # noqa: E402

from interop import ort_pairs  # noqa: E402
from interop.onnx_import import onnx_to_dnet  # noqa: E402
from interop.quant_graph import QT, Acc  # noqa: E402
from interop.runtime_check import check  # noqa: E402

HERE = ort_pairs._probe("qop", False)   # 'pairs' on x86 without VNNI (this machine), else 'exact'
OTHER = "exact" if HERE == "pairs" else "saturate"


def _qop_model(op: str, W: np.ndarray, x_shape: list, za: int, **attrs):
    """QuantizeLinear (uint8, zero point za) -> QGemm or QLinearConv with int8 weights W
    -> DequantizeLinear: a float model running onnxruntime's u8s8 kernel."""
    s, sy = np.float32(1 / 64), np.float32(4.0)
    inits = [nh.from_array(s, "s"), nh.from_array(np.uint8(za), "z"),
             nh.from_array(W.astype(np.int8), "W"), nh.from_array(np.float32(1 / 32), "sw"),
             nh.from_array(np.int8(0), "zw"), nh.from_array(sy, "sy"),
             nh.from_array(np.uint8(128), "zy")]
    ins = ["q", "s", "z", "W", "sw", "zw"]
    if op == "QGemm":
        node = helper.make_node(op, ins + ["", "sy", "zy"], ["y8"], domain="com.microsoft",
                                transB=1)
    else:
        node = helper.make_node(op, ins + ["sy", "zy"], ["y8"], **attrs)
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"]), node,
             helper.make_node("DequantizeLinear", ["y8", "sy", "zy"], ["y"])]
    g = helper.make_graph(nodes, "k", [helper.make_tensor_value_info("x", T.FLOAT, x_shape)],
                          [helper.make_tensor_value_info("y", T.FLOAT, None)], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17),
                                               helper.make_opsetid("com.microsoft", 1)],
                             ir_version=8)


def _big_weights(shape, seed):
    """Weights of magnitude 90..127, signs at random: most same-sign pairs can pass 16 bits."""
    rng = np.random.default_rng(seed)
    return rng.integers(90, 128, shape) * rng.choice([-1, 1], shape)


KERNELS = {  # name: (op, weights, input shape, input zero point, attributes)
    "gemm, odd depth": ("QGemm", _big_weights((3, 7), 0), [1, 7], 0, {}),
    "conv, 3 channels, padded, stride 2": (
        "QLinearConv", _big_weights((2, 3, 3, 3), 1), [1, 3, 5, 5], 100,
        {"pads": [1, 1, 1, 1], "strides": [2, 2]}),
    "conv, 2 channels, 2x1 kernel": ("QLinearConv", _big_weights((3, 2, 2, 1), 2),
                                     [1, 2, 3, 3], 20, {}),
    "conv, 1 channel in and out": ("QLinearConv", _big_weights((1, 1, 3, 3), 3),
                                   [1, 1, 4, 4], 0, {"pads": [1, 1, 1, 1]}),
}


@pytest.mark.parametrize("name", list(KERNELS))
def test_kernels_equal_onnxruntime(name, tmp_path):
    """Imported as this machine's onnxruntime computes them: == on 300 inputs (all lowest,
    all highest, random); imported the other way, they differ (but for the one-channel
    convolution, whose kernel sums exactly everywhere: nothing to reproduce)."""
    op, W, shape, za, attrs = KERNELS[name]
    path = str(tmp_path / "k.onnx")
    import onnx

    onnx.save(_qop_model(op, W, shape, za, **attrs), path)
    text = onnx_to_dnet(path, None, None, where="k.onnx")
    v = check(path, parse(text), 300, where="k.onnx")
    assert (v.exact, v.total) == (300, 300), v.line()
    saturable = "pair sums can pass 16 bits" in text
    assert saturable == (name != "conv, 1 channel in and out")
    if saturable:
        other = check(path, parse(onnx_to_dnet(path, None, None, where="k.onnx", ort_pairs=OTHER)), 300,
                      where="k.onnx", ort_pairs=OTHER)
        assert other.exact < 300, other.line()


def _acc(W, kind="dense", conv=None, lo=0, hi=255, signed=False, zero=0):
    src = QT(0, (W.shape[1],) if kind == "dense" else tuple(conv["in"]), lo, hi, zero,
             signed=signed)
    return Acc(src, kind, W, np.zeros(len(W), np.int64), np.ones(len(W), np.float32),
               conv or {}, form="qdq", wzero=np.zeros(len(W), np.int64), wsigned=True)


def test_which_pairs():
    """Adjacent inputs (0, 1), (2, 3) of a matrix product, never the odd last one; a
    convolution's (ky, kx, c) order, a tap outside the image holding the input's zero
    point; an int8 source shifted by 128 (onnxruntime makes it uint8)."""
    P = ort_pairs.find(_acc(np.array([[127, 127, 127, 127, 127]])), "saturate")
    assert P.src.tolist() == [[0, 1], [2, 3]] and P.sign.tolist() == [1, 1]
    P = ort_pairs.find(_acc(np.array([[127, -100, -128, -127]])), "saturate")
    assert P.src.tolist() == [[2, 3]] and P.sign.tolist() == [-1]   # (0, 1): mixed signs
    assert ort_pairs.find(_acc(np.array([[100, 28, 0, 0]])), "saturate") is None
    # int8 values -128..-1 are uint8 0..127 to the kernel: 127 * 2 * 127 < 32767
    assert ort_pairs.find(_acc(np.array([[127, 127]]), lo=-128, hi=-1, signed=True),
                          "saturate") is None
    conv = {"in": [2, 2, 2], "out": 1, "kernel": [2, 2], "stride": [1, 1], "pad": [0, 0]}
    W = np.full((1, 2, 2, 2), 127)
    P = ort_pairs.find(_acc(W, "conv", conv), "saturate")
    assert P.src.tolist() == [[0, 4], [1, 5], [2, 6], [3, 7]]   # (c0, c1) at each tap
    conv = dict(conv, pad=[1, 1])
    P = ort_pairs.find(_acc(W, "conv", conv, zero=200), "saturate")
    corner = P.out == 0     # output (0, 0): of its taps (ky, kx), only (1, 1) is inside
    assert P.src[corner].tolist() == [[-1, -1]] * 3 + [[0, 4]]
    assert P.const[corner].tolist() == [2 * 127 * 200] * 3 + [0]   # saturated always
    assert ort_pairs.find(_acc(W, "conv", conv), "exact").emulate is False


def test_the_command_says_what_it_reproduces(tmp_path):
    """build.py import warns of each layer whose pair sums can saturate and checks EXACT;
    imported the other way, --check names the first pair onnxruntime saturated."""
    model = os.path.join(ROOT, "tests", "data", "quant", "ort_default_tiny_qdq.onnx")

    def run(*args):
        return subprocess.run([sys.executable, os.path.join(ROOT, "build.py"), "import",
                               model, "-o", "t.dnet", "--check", "100", *args],
                              capture_output=True, text=True, cwd=tmp_path)

    r = run()
    assert r.returncode == 0 and r.stdout.splitlines()[-1] == "100/100 EXACT against " \
        "onnxruntime", r.stdout + r.stderr
    assert r.stderr.count("pair sums can pass 16 bits") == 2   # both layers
    r = run("--ort-pairs", OTHER)
    assert r.returncode == 4 and "MISMATCH against onnxruntime" in r.stdout
    if HERE == "pairs":
        assert "because onnxruntime's u8s8 kernel (x86 without VNNI) saturated a pair sum " \
               "in layer '/1/Relu_output_0_QuantizeLinear'" in r.stdout, r.stdout
