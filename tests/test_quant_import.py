"""Quantised models made by others, read exactly (interop/quant_*.py, interop/wide.py,
docs/import.md): onnxruntime's int8 QOperator and QDQ files and Brevitas's QONNX.

The formulas of interop/staircase.py are compared with the runtimes themselves (every
accumulator of wide ranges, every threshold's neighbourhood); every checked-in model
(tests/data/make_quant_models.py) is imported and `==` its runtime on 500 inputs; the
netlists' lights are proven within 16 bits; a few run in the engine, every light read
back; what cannot be reproduced exactly is refused with its reason."""
from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from conftest import ROOT
from dsl.diagnostics import VoodooError
from dsl.parser import parse

import onnx  # noqa: E402  pinned requirements: a missing one fails
import onnxruntime as ort  # noqa: E402
from onnx import TensorProto, helper, numpy_helper as nh  # noqa: E402

from interop import staircase as S  # noqa: E402
from interop.onnx_import import onnx_to_dnet  # noqa: E402
from interop.runtime_check import check  # noqa: E402

DATA = os.path.join(ROOT, "tests", "data", "quant")
LEVELS = ((0, 3), 1 / 3)   # the MNIST inputs: 4 levels, the float model sees x / 3
MODELS = {  # model: (input range, input step) given to the importer; None: the model's own
    "brevitas_mlp": (None, None), "brevitas_cnn": (None, None), "brevitas_pool": (None, None),
    "ort_mlp_qop": (None, None), "ort_mlp_qdq": (None, None),
    "ort_cnn_qop": LEVELS, "ort_cnn_qdq": LEVELS, "ort_tiny_qop": (None, None),
    "ort_mnist_qop": LEVELS, "ort_matmul_add_qop": (None, None),
    # quantize_static's defaults: onnxruntime saturates pair sums (interop/ort_pairs.py)
    "ort_default_tiny_qdq": (None, None), "ort_default_mlp_qdq": (None, None),
    "ort_default_mlp_qop": (None, None), "ort_default_cnn_qdq": (None, None),
}


def _session(nodes, inputs, outputs, inits):
    m = helper.make_model(helper.make_graph(nodes, "g", inputs, outputs, inits),
                          opset_imports=[helper.make_opsetid("", 17),
                                         helper.make_opsetid("com.microsoft", 1)],
                          ir_version=8)
    return ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])


def _qgemm_requant(sa, sb, sy, zy, ytype, base, n_cols):
    """onnxruntime's QGemm on accumulators a + base + 256 j (a = 0..255, j = 0..n_cols-1):
    every integer of a range of 256 * n_cols, with B all ones and the bias stepping."""
    onnx_y = TensorProto.UINT8 if ytype == np.uint8 else TensorProto.INT8
    C = (base + 256 * np.arange(n_cols)).astype(np.int32)
    inits = [nh.from_array(np.float32(sa), "sa"), nh.from_array(np.uint8(0), "za"),
             nh.from_array(np.ones((1, n_cols), np.int8), "B"),
             nh.from_array(np.float32(sb), "sb"), nh.from_array(np.int8(0), "zb"),
             nh.from_array(C, "C"), nh.from_array(np.float32(sy), "sy"),
             nh.from_array(ytype(zy), "zy")]
    node = helper.make_node("QGemm", ["A", "sa", "za", "B", "sb", "zb", "C", "sy", "zy"],
                            ["Y"], domain="com.microsoft")
    sess = _session([node], [helper.make_tensor_value_info("A", TensorProto.UINT8, [256, 1])],
                    [helper.make_tensor_value_info("Y", onnx_y, [256, n_cols])], inits)
    a = np.arange(256, dtype=np.uint8).reshape(256, 1)
    acc = a.astype(np.int64) + C.astype(np.int64)[None, :]
    return acc, sess.run(None, {"A": a})[0].astype(np.int64)


def _qlinearmatmul_int8(sa, sb, sy, zy):
    """QLinearMatMul of int8 on every accumulator a + 127 m (a = -128..127, m = -127..127):
    A's rows are (a, 127), B's columns (1, m)."""
    a = np.stack([np.arange(-128, 128), np.full(256, 127)], 1).astype(np.int8)
    m = np.arange(-127, 128)
    B = np.stack([np.ones_like(m), m]).astype(np.int8)
    inits = [nh.from_array(np.float32(sa), "sa"), nh.from_array(np.int8(0), "za"),
             nh.from_array(B, "B"), nh.from_array(np.float32(sb), "sb"),
             nh.from_array(np.int8(0), "zb"), nh.from_array(np.float32(sy), "sy"),
             nh.from_array(np.int8(zy), "zy")]
    node = helper.make_node("QLinearMatMul", ["A", "sa", "za", "B", "sb", "zb", "sy", "zy"],
                            ["Y"])
    sess = _session([node], [helper.make_tensor_value_info("A", TensorProto.INT8, [256, 2])],
                    [helper.make_tensor_value_info("Y", TensorProto.INT8, [256, len(m)])],
                    inits)
    acc = np.arange(-128, 128)[:, None] + 127 * m[None, :]
    return acc, sess.run(None, {"A": a})[0].astype(np.int64)


@pytest.mark.parametrize("seed", range(4))
def test_requantisation_is_onnxruntimes_on_every_accumulator(seed):
    """M = f32(f32(sa * sb) / sy), round half to even, saturation: equal to onnxruntime on
    every accumulator of a range (QGemm to uint8: 2^21 values; QLinearMatMul to int8:
    -16256..16256), and the thresholds found by bisection are where the runtime steps."""
    rng = np.random.default_rng(seed)
    sa, sb = rng.uniform(1e-3, 0.05, 2).astype(np.float32)
    ytype = (np.uint8, np.int8)[seed % 2]
    qlo, qhi = S.type_bounds(ytype)
    zy = int(rng.integers(qlo, qhi + 1))
    if ytype == np.uint8:
        sy = np.float32(rng.uniform(0.05, 4))
        M = S.ort_scale(sa, sb, sy)
        centre = int((0 - zy) / float(M))
        acc, got = _qgemm_requant(sa, sb, sy, zy, ytype, centre - 2 ** 20, 2 ** 13)
    else:  # a staircase within the accumulators QLinearMatMul reaches here
        sy = np.float32(sa * sb * rng.uniform(20, 100))
        M = S.ort_scale(sa, sb, sy)
        acc, got = _qlinearmatmul_int8(sa, sb, sy, zy)
    assert np.array_equal(S.ort_requant(acc, M, zy, qlo, qhi), got)
    st = S.thresholds(lambda v: S.ort_requant(v, M, zy, qlo, qhi), int(acc.min()),
                      int(acc.max()))
    assert np.array_equal(st(acc), got)
    assert len(st.steps) > 20  # the range crosses many thresholds
    # the neighbourhood of every threshold, wherever it lies
    ts = np.array([t for t, _ in st.steps])
    near = (ts[:, None] + np.arange(-2, 2)[None, :]).reshape(-1)
    assert np.array_equal(st(near), S.ort_requant(near, M, zy, qlo, qhi))


def test_quantize_linear_is_onnxruntimes():
    """QuantizeLinear: sat(rne(x / s) + zp), including every tie x = (k + 1/2) s."""
    s, zp = np.float32(0.0173), 7
    x = np.concatenate([(np.arange(-300, 300) + 0.5) * s, np.linspace(-6, 6, 20001)])
    x = x.astype(np.float32)
    node = helper.make_node("QuantizeLinear", ["x", "s", "z"], ["y"])
    sess = _session([node], [helper.make_tensor_value_info("x", TensorProto.FLOAT, [len(x)])],
                    [helper.make_tensor_value_info("y", TensorProto.UINT8, [len(x)])],
                    [nh.from_array(s, "s"), nh.from_array(np.uint8(zp), "z")])
    assert np.array_equal(S.ort_quantize(x, s, zp, 0, 255), sess.run(None, {"x": x})[0])


@pytest.mark.parametrize("mode", ["ROUND", "FLOOR", "CEIL", "HALF_UP", "HALF_DOWN", "UP",
                                  "DOWN"])
def test_qonnx_quant_is_qonnxs(mode):
    from qonnx.custom_op.general.intquant import int_quant

    x = (np.linspace(-40, 40, 8001).astype(np.float32) * np.float32(0.125))
    for s, z, bits, signed, narrow in [(0.25, 0, 4, True, False), (0.125, 3, 4, False, True),
                                       (1.0, 0, 8, True, True)]:
        lo, hi = S.quant_bounds(bits, signed, narrow)
        want = int_quant(x, np.float32(s), np.float32(z), np.float32(bits), signed, narrow, mode)
        got = S.qonnx_quant_int(x, s, z, lo, hi, mode)
        assert np.array_equal((got - z) * np.float32(s), want)


def test_thresholds_are_the_staircase_on_every_value():
    f = lambda v: np.clip(np.floor(np.asarray(v) * 0.37) // 3, -4, 9)  # noqa: E731
    st = S.thresholds(f, -200, 300)
    v = np.arange(-200, 301)
    assert np.array_equal(st(v), f(v))


# ----------------------------------------------------------------- models, against runtimes
@pytest.fixture(scope="module")
def imported():
    """Each checked-in model's netlist (text, parsed)."""
    out = {}
    for name, (rng, step) in MODELS.items():
        text = onnx_to_dnet(os.path.join(DATA, f"{name}.onnx"), rng, step,
                            where=f"{name}.onnx")
        out[name] = (text, parse(text, name))
    return out


@pytest.mark.parametrize("name", list(MODELS))
def test_every_model_equals_its_runtime_on_500_inputs(imported, name):
    rng, step = MODELS[name]
    net = imported[name][1]
    v = check(os.path.join(DATA, f"{name}.onnx"), net, 500, rng, step, f"{name}.onnx")
    assert (v.exact, v.total) == (500, 500), v.line()
    assert v.runtime == ("qonnx" if name.startswith("brevitas") else "onnxruntime")


@pytest.mark.parametrize("name", list(MODELS))
def test_every_light_is_proven_within_16_bits(imported, name):
    net = imported[name][1]
    worst = max(max(-net.acc_range[n.id].lo, net.acc_range[n.id].hi, -net.value_range[n.id].lo,
                    net.value_range[n.id].hi) for n in net.nodes if not n.is_input)
    assert worst <= 32767


def test_wide_accumulators_are_wide():
    """The int8 models' accumulators pass a light's range: they go through interop/wide.py
    (digits, partials, carries), the 4-bit Brevitas ones do not need to."""
    from interop.onnx_check import constants, load_model
    from interop.quant_read import Reader
    from interop.wide import acc_bounds

    for name, wide in (("ort_mnist_qop", True), ("ort_cnn_qop", True),
                       ("brevitas_cnn", False)):
        m = load_model(os.path.join(DATA, f"{name}.onnx"))
        r = Reader(m, constants(m, name), name)
        layers, _ = r.read(*MODELS[name])
        from interop.quant_emit import Emitter

        e = Emitter(layers, name)
        spans = [acc_bounds(L, e._bias(L), layers[L.src]) for L in layers
                 if L.kind in ("dense", "conv")]
        assert (max(max(-lo, hi) for lo, hi in spans) > 32767) == wide, (name, spans)


def test_the_mnist_int8_mlp_lowers_into_maps(imported):
    """onnxruntime's int8 MLP of the MNIST model (first layer's accumulators proven within
    about +-1.6 million) is planned over maps, and every map's circuit (mapgen/circuit.py:
    lights, lanes, doors) holds every light within -32768..32767 at every moment and every
    lane within the door limit. (The whole compile, layout and ACS included, is measured in
    docs/import.md: `build.py compile ... --tiles auto`.)"""
    from mapgen import physics as P
    from mapgen.circuit import lower
    from mapgen.tiles import plan_tiles

    net = imported["ort_mnist_qop"][1]
    tiles = plan_tiles(net, n_tiles=None)
    assert len(tiles) >= 2
    for t in tiles:
        c = lower(t.net)
        assert all(P.LIGHT_MIN <= l.lo and l.hi <= P.LIGHT_MAX for l in c.lights)
        assert all(len(lane.doors) <= P.MAX_DOORS for lane in c.lanes)


# ----------------------------------------------------------------- in the engine
@pytest.mark.parametrize("name", ["ort_tiny_qop", "brevitas_mlp", "ort_default_tiny_qdq"])
def test_in_the_engine(imported, tmp_path, name):
    """A wide int8 MLP (digits, partials, carries, two-level staircase), a 4-bit QONNX
    MLP, and quantize_static's defaults (onnxruntime's saturated pair sums reproduced):
    engine == reference on every output and every light read back."""
    from test_engine_maps import edge_and_random_inputs, run_exact

    net = imported[name][1]
    run_exact(tmp_path, net, edge_and_random_inputs(net, 3, 0))


# ----------------------------------------------------------------- refusals
def _float_model(path):
    import torch

    torch.manual_seed(1)
    m = torch.nn.Sequential(torch.nn.Linear(6, 5), torch.nn.ReLU(), torch.nn.Linear(5, 3))
    with torch.no_grad():
        m[0].weight.mul_(8)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(m.eval(), (torch.zeros(1, 6),), path, dynamo=False,
                          input_names=["x"], output_names=["y"])


def _reader():
    from onnxruntime.quantization import CalibrationDataReader

    class R(CalibrationDataReader):
        def __init__(self):
            rng = np.random.default_rng(0)
            self.it = iter([{"x": rng.uniform(0, 1, (1, 6)).astype(np.float32)}
                            for _ in range(16)])

        def get_next(self):
            return next(self.it, None)
    return R()


def test_dynamic_quantisation_is_refused(tmp_path):
    from onnxruntime.quantization import QuantType, quantize_dynamic

    f = str(tmp_path / "f.onnx")
    _float_model(f)
    quantize_dynamic(f, str(tmp_path / "dyn.onnx"), weight_type=QuantType.QInt8)
    with pytest.raises(VoodooError, match="quantise statically"):
        onnx_to_dnet(str(tmp_path / "dyn.onnx"), where="dyn.onnx")


@pytest.mark.parametrize("weights", ["QInt8", "QUInt8"])
def test_full_8_bit_weights_import_exact(tmp_path, weights):
    """QOperator, uint8 activations, full 8-bit weights: int8 weights run onnxruntime's
    u8s8 kernel, whose pair sums saturate on x86 without VNNI (reproduced: the import
    says so); uint8 weights its u8u8 kernel, which never saturates (nothing to say).
    Both were refused before."""
    from onnxruntime.quantization import QuantType, quantize_static

    f, q = str(tmp_path / "f.onnx"), str(tmp_path / "q.onnx")
    _float_model(f)
    quantize_static(f, q, _reader(), weight_type=getattr(QuantType, weights),
                    activation_type=QuantType.QUInt8, reduce_range=False)
    text = onnx_to_dnet(q, None, None, where="q.onnx")
    v = check(q, parse(text), 500, where="q.onnx")
    assert (v.exact, v.total) == (500, 500), v.line()
    assert ("pair sums can pass 16 bits" in text) == (weights == "QInt8")


def _qonnx_gemm(scale):
    """Quant(x) -> Gemm with Quant weights, the weights' scale given."""
    nodes = [helper.make_node("Quant", ["x", "s", "z", "b"], ["xq"], domain="qonnx.custom_op."
                              "general", signed=0, narrow=0, rounding_mode="ROUND"),
             helper.make_node("Quant", ["W", "sw", "z", "b"], ["Wq"], domain="qonnx.custom_op."
                              "general", signed=1, narrow=1, rounding_mode="ROUND"),
             helper.make_node("Gemm", ["xq", "Wq"], ["y"], transB=1)]
    inits = [nh.from_array(np.float32(0.25), "s"), nh.from_array(np.float32(0), "z"),
             nh.from_array(np.float32(4), "b"), nh.from_array(np.float32(scale), "sw"),
             nh.from_array(np.ones((2, 3), np.float32), "W")]
    return helper.make_model(helper.make_graph(
        nodes, "q", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2])], inits))


def test_qonnx_scales_that_are_not_powers_of_two_are_refused():
    with pytest.raises(VoodooError, match="is not a power of two"):
        onnx_to_dnet(_qonnx_gemm(0.3), where="q.onnx")
    net = parse(onnx_to_dnet(_qonnx_gemm(0.5), where="q.onnx"))
    assert len(net.inputs) == 3 and len(net.outputs) == 2


def test_the_command_checks_and_says_so(tmp_path):
    """QONNX against qonnx; an integer graph (export --onnx) against onnxruntime; a float
    graph, which no runtime computes in integers, refused."""
    def run(*args):
        return subprocess.run([sys.executable, os.path.join(ROOT, "build.py"), *args],
                              capture_output=True, text=True, cwd=tmp_path)

    r = run("import", os.path.join(DATA, "brevitas_mlp.onnx"), "-o", "b.dnet", "--check", "20")
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[-1] == "20/20 EXACT against qonnx"
    assert run("export", os.path.join(ROOT, "circuits", "xor.dnet"), "--onnx", "-o",
               "x.onnx").returncode == 0
    r = run("import", "x.onnx", "-o", "x.dnet", "--check", "30")
    assert r.returncode == 0 and r.stdout.splitlines()[-1] == "30/30 EXACT against onnxruntime"
    _float_model(str(tmp_path / "f.onnx"))
    r = run("import", "f.onnx", "-o", "f.dnet", "--check", "10")
    assert r.returncode == 1 and "no runtime computes the netlist's integers" in r.stderr
    assert not (tmp_path / "f.dnet").exists()


def test_a_layer_too_wide_even_for_wide_accumulators_is_refused_naming_it():
    """2,000 uint8 inputs by 7-bit weights: accumulators past +-16 million, whose / 256
    no light holds."""
    n = 2000
    W = np.full((1, n), 60, np.int8)
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"]),
             helper.make_node("QGemm", ["q", "s", "z", "W", "sw", "zw", "", "sy", "z"],
                              ["y8"], domain="com.microsoft", transB=1, name="big"),
             helper.make_node("DequantizeLinear", ["y8", "sy", "z"], ["y"])]
    inits = [nh.from_array(np.float32(1 / 255), "s"), nh.from_array(np.uint8(0), "z"),
             nh.from_array(W, "W"), nh.from_array(np.float32(0.01), "sw"),
             nh.from_array(np.int8(0), "zw"), nh.from_array(np.float32(300.0), "sy")]
    m = helper.make_model(helper.make_graph(
        nodes, "wide", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, n])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 1])], inits),
        opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)])
    with pytest.raises(VoodooError) as e:
        onnx_to_dnet(m, where="wide.onnx")
    assert "layer 'big': its accumulators reach 0..30600000" in str(e.value)
