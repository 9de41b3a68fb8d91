"""ONNX import (`build.py import`, interop/onnx_import.py, interop/onnx_float.py).

The round trip: every netlist exported with `export --onnx` and imported back computes the
same outputs, `==`, on range edges and random inputs (and so does onnxruntime on the
exported graph). Float graphs are read into the float model they describe (compared
exactly with torch in float64) and quantised through models/seq_quant.py, the same path
as a torch model; unsupported operators are errors that name them."""
from __future__ import annotations

import glob
import io
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

from conftest import ROOT
from dsl import load
from dsl.diagnostics import VoodooError
from dsl.parser import parse
from dsl.random_net import mlp_text
from dsl.reference import evaluate

import onnx  # noqa: E402  pinned requirements: a missing one fails
import onnxruntime as ort  # noqa: E402
import torch  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402
from torch import nn  # noqa: E402

from interop import from_onnx  # noqa: E402
from interop.export_onnx import onnx_bytes  # noqa: E402
from interop.onnx_float import float_stack  # noqa: E402
from interop.onnx_import import load_model, onnx_to_dnet  # noqa: E402
from models.seq_quant import QuantStack, calibrate  # noqa: E402

CIRCUITS = sorted(glob.glob(os.path.join(ROOT, "circuits", "*.dnet")))

CNN = """network cnn
input x[32] : 0..3
neuron c[16] : relu(s=3, max=5)
lines x -> c conv(in=[2, 4, 4], out=2, kernel=[3, 2], stride=[1, 2], pad=[1, 0]) [
  [1, -2, 0, 3, 1, 1, -1, 0, 2, 1, -3, 2],
  [0, 1, 2, -1, -2, 0, 1, 1, 0, -1, 2, 3]]
bias c = [1, 1, 1, 1, 1, 1, 1, 1, -2, -2, -2, -2, -2, -2, -2, -2]
neuron p[6] : identity
lines c -> p avgpool(in=[2, 4, 2], kernel=2, stride=1)
neuron m[4] : maxpool(c, in=[2, 4, 2], kernel=[3, 2], stride=1)
neuron o[3] : identity
lines p -> o dense [[1, -1, 2, 0, 1, 1], [0, 2, 1, 1, -1, 0], [1, 1, 1, 1, 1, 1]]
neuron e : lut(-2..2, [4, 1, 0, 1, 4]) = m[0] - m[3]
neuron q : product(e, o[2])
neuron s : step(t=4) = o[0] + e
output o, e, q, s, m
"""


def _inputs(net, n_random: int = 200, seed: int = 0) -> np.ndarray:
    """Every input alone at each edge of its range (the others random), all low, all high,
    then random rows."""
    rng = np.random.default_rng(seed)
    lo = np.array([r[0] for r in net.input_ranges()], dtype=np.int64)
    hi = np.array([r[1] for r in net.input_ranges()], dtype=np.int64)
    rows = [lo, hi]
    for k in range(len(lo)):
        for edge in (lo, hi):
            row = rng.integers(lo, hi + 1)
            row[k] = edge[k]
            rows.append(row)
    rows += list(rng.integers(lo, hi + 1, size=(n_random, len(lo))))
    return np.array(rows, dtype=np.int64)


def _outputs(net, x) -> np.ndarray:
    return np.asarray(evaluate(net, x.tolist()).last_outputs(), dtype=np.int64)


def _round_trip(net):
    data = onnx_bytes(net)
    back = from_onnx(data)
    x = _inputs(net)
    want = _outputs(net, x)
    assert np.array_equal(_outputs(back, x), want)
    sess = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    assert np.array_equal(sess.run(None, {"x": x})[0], want)
    assert back.input_ranges() == net.input_ranges()
    return back


@pytest.mark.parametrize("path", [p for p in CIRCUITS if load(p).steps == 1],
                         ids=lambda p: os.path.basename(p))
def test_round_trip_of_every_circuit(path):
    back = _round_trip(load(path))
    assert len(back.outputs) == len(load(path).outputs)


@pytest.mark.parametrize("seed", range(6))
def test_round_trip_of_random_networks(seed):
    gates = ("relu", "step", "lut", "identity")
    text = mlp_text(seed, [7, 6, 5, 4], in_range=(-3, 4), gates=gates)
    _round_trip(parse(text))


def test_round_trip_of_a_convolutional_netlist():
    """conv, avgpool, maxpool, a lut, a product and a step, mixed input ranges in the
    metadata: the same outputs, and every node comes back one for one."""
    net = parse(CNN)
    back = _round_trip(net)
    assert len(back.nodes) == len(net.nodes)
    mixed = parse("network mixed\ninput a : -3..4\ninput b : 0..1\ninput c : 5..9\n"
                  "neuron y : relu(s=2, max=6) = 3*a - 2*b + c - 4\nneuron z : identity = y - a\n"
                  "output z, y, z2\nneuron z2 : identity = 2*z\n")
    assert _round_trip(mixed).input_ranges() == [(-3, 4), (0, 1), (5, 9)]


def test_the_same_value_twice_and_an_input_as_output():
    net = parse("network twice\ninput x[2] : 0..3\nneuron h : relu(s=1, max=4) = x[0] + x[1]\n"
                "neuron o : identity = h\noutput h, o, x[1]\n")
    _round_trip(net)


def test_multi_step_graphs_are_refused():
    net = load(os.path.join(ROOT, "circuits", "spike_counter.dnet"))
    with pytest.raises(VoodooError, match="only one-step graphs"):
        from_onnx(onnx_bytes(net))


def test_integer_graph_without_metadata_takes_the_given_range():
    net = parse("network r\ninput x[3] : 0..2\nneuron y : relu(s=2, max=3) = x[0] + 2*x[1] - x[2]\n"
                "output y\n")
    m = onnx.load_from_string(onnx_bytes(net))
    del m.metadata_props[:]
    back = from_onnx(m, input_range=(0, 2))
    x = _inputs(net)
    assert np.array_equal(_outputs(back, x), _outputs(net, x))
    assert back.input_ranges() == [(0, 2)] * 3


def test_unsupported_integer_operators_are_named():
    x = helper.make_tensor_value_info("x", TensorProto.INT64, ["batch", 2])
    y = helper.make_tensor_value_info("y", TensorProto.INT64, ["batch", 2])
    g = helper.make_graph([helper.make_node("Abs", ["x"], ["a"], name="abs1"),
                           helper.make_node("Neg", ["a"], ["y"], name="neg1")], "g", [x], [y])
    with pytest.raises(VoodooError) as e:
        from_onnx(helper.make_model(g))
    assert "unsupported ONNX operators in this integer graph: Abs (node 'abs1'), Neg (node " \
           "'neg1')" in str(e.value)


# ------------------------------------------------------------------------- float graphs
def _float_cnn(seed=0):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Conv2d(1, 4, 3, 2, 1), nn.ReLU(), nn.AvgPool2d(2, 1),
                         nn.Conv2d(4, 6, 3, 1, 1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                         nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 3)).eval()


def _torch_onnx(model, shape) -> bytes:
    f = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, (torch.zeros(1, *shape),), f, dynamo=False)
    return f.getvalue()


def test_float_graph_is_the_torch_model_and_quantises_the_same_way():
    model = _float_cnn()
    data = _torch_onnx(model, (1, 8, 8))
    m = load_model(data)
    rebuilt, shape = float_stack(m, m.graph.input[0], "<t>")
    assert shape == (1, 8, 8)
    x = np.random.default_rng(1).integers(0, 4, (300, 64))
    xt = torch.tensor(x, dtype=torch.float64).reshape(-1, 1, 8, 8) / 3
    with torch.no_grad():
        assert torch.equal(rebuilt(xt), model.to(torch.float64)(xt))
    # The netlist is exactly the quantised torch model, calibrated the same way.
    net = from_onnx(data, (0, 3), 1 / 3, calibration=x, weight_bits=6)
    q = QuantStack(model, (1, 8, 8), 1 / 3, 6, 15)
    want = q.float_logits(torch.as_tensor(x)).argmax(1).numpy()
    s = calibrate(q, x, lambda out: float((out.argmax(1) == want).mean()))
    assert np.array_equal(_outputs(net, x), q.integer_outputs(x, s))
    assert [r.conv.kind for r in net.convs] == ["conv", "avgpool", "conv"]


def _float_graph(nodes, inits, in_shape, out_width):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, *in_shape])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, out_width])
    init = [numpy_helper.from_array(np.asarray(v, dtype=np.int64 if np.asarray(v).dtype.kind
                                               == "i" else np.float32), k)
            for k, v in inits.items()]
    return helper.make_model(helper.make_graph(nodes, "fg", [x], [y], init))


def test_matmul_add_reshape_and_gemm():
    rng = np.random.default_rng(0)
    W1, b1 = rng.normal(size=(12, 5)), rng.normal(size=5)
    W2, b2 = rng.normal(size=(4, 5)), rng.normal(size=4)
    nodes = [helper.make_node("Reshape", ["x", "shape"], ["f"]),
             helper.make_node("MatMul", ["f", "W1"], ["m"]),
             helper.make_node("Add", ["m", "b1"], ["a"]),
             helper.make_node("Relu", ["a"], ["r"]),
             helper.make_node("Gemm", ["r", "W2", "b2"], ["y"], transB=1)]
    m = _float_graph(nodes, {"W1": W1, "b1": b1, "W2": W2, "b2": b2,
                             "shape": np.array([-1, 12])}, (12,), 4)
    model, shape = float_stack(m, m.graph.input[0], "<t>")
    assert shape == 12
    x = rng.normal(size=(50, 12))
    ref = np.maximum(x @ W1.astype(np.float32).astype(np.float64)
                     + b1.astype(np.float32), 0) @ W2.astype(np.float32).astype(np.float64).T \
        + b2.astype(np.float32)
    with torch.no_grad():
        got = model(torch.tensor(x)).numpy()
    assert np.abs(got - ref).max() < 1e-9
    net = from_onnx(m, (0, 3), 0.25)
    assert len(net.inputs) == 12 and len(net.outputs) == 4


def test_unsupported_float_operators_are_named_with_a_hint():
    nodes = [helper.make_node("Flatten", ["x"], ["f"]),
             helper.make_node("Gemm", ["f", "W"], ["g"], transB=1),
             helper.make_node("Sin", ["g"], ["s"], name="sin"),
             helper.make_node("Cos", ["s"], ["y"], name="cos")]
    m = _float_graph(nodes, {"W": np.ones((3, 4))}, (4,), 3)
    with pytest.raises(VoodooError) as e:
        from_onnx(m)
    text = str(e.value)
    assert "unsupported ONNX operators in this float graph: Cos (node 'cos'), Sin " \
           "(node 'sin')" in text
    assert "hint: a float graph may use Conv, Gemm" in text
    assert "as activations (lookups on the quantised values), elementwise functions of a " \
           "layer's output made of Abs, Celu" in text


def test_the_float_layers_a_torch_user_exports():
    """ZeroPad2d (a Pad torch writes through a constant subgraph), a BatchNorm after a
    Linear (folded), GlobalAveragePool (AdaptiveAvgPool2d(1)) and a Softmax at the output
    (its argmax is the logits'): rebuilt as the float model, then quantised as any."""
    torch.manual_seed(3)
    model = nn.Sequential(nn.ZeroPad2d(1), nn.Conv2d(1, 4, 3), nn.ReLU(),
                          nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(4, 5),
                          nn.BatchNorm1d(5), nn.Softmax(1))
    bn = model[6]
    with torch.no_grad():
        bn.running_mean.uniform_(-1, 1)
        bn.running_var.uniform_(0.5, 2)
        bn.weight.uniform_(0.5, 2)
    model.eval()
    data = _torch_onnx(model, (1, 6, 6))
    m = load_model(data)
    assert {"Pad", "BatchNormalization", "GlobalAveragePool", "Softmax"} <= \
        {n.op_type for n in m.graph.node}
    rebuilt, shape = float_stack(m, m.graph.input[0], "<t>")
    x = torch.rand(40, 1, 6, 6, dtype=torch.float64)
    with torch.no_grad():
        want, got = model.double()(x), torch.softmax(rebuilt(x), 1)
    assert float((want - got).abs().max()) < 1e-6
    net = from_onnx(data, (0, 3), 1 / 3)
    assert len(net.inputs) == 36 and len(net.outputs) == 5


def test_a_batchnorm_that_follows_no_linear_layer_is_refused():
    nodes = [helper.make_node("BatchNormalization", ["x", "g", "b", "m", "v"], ["y"],
                              name="bn0")]
    one = np.ones(4, np.float32)
    m = _float_graph(nodes, {"g": one, "b": one, "m": one, "v": one}, (4,), 4)
    with pytest.raises(VoodooError, match="a BatchNorm that does not follow a Conv or a "
                                          "Linear layer"):
        from_onnx(m)


@pytest.mark.parametrize("node, match", [
    (helper.make_node("Conv", ["x", "W"], ["y"], group=2), "grouped or dilated"),
    (helper.make_node("Conv", ["x", "W"], ["y"], pads=[1, 0, 0, 0]), "asymmetric pads"),
    (helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[2, 2], ceil_mode=1), "ceil_mode"),
    (helper.make_node("AveragePool", ["x"], ["y"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
     "not counted"),
])
def test_float_layer_refusals(node, match):
    m = _float_graph([node], {"W": np.ones((2, 2, 3, 3))}, (2, 6, 6), 2)
    with pytest.raises(VoodooError, match=match):
        from_onnx(m)


def test_command_line_round_trip_and_errors(tmp_path):
    src = os.path.join(ROOT, "circuits", "mnist_small.dnet")
    run = lambda *a: subprocess.run([sys.executable, os.path.join(ROOT, "build.py"), *a],  # noqa: E731
                                    capture_output=True, text=True, cwd=tmp_path)
    r = run("export", src, "--onnx", "-o", "m.onnx")
    assert r.returncode == 0, r.stderr
    r = run("import", "m.onnx", "-o", "m.dnet")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("wrote m.dnet: network 'mnist_small', 100 inputs -> 10 outputs")
    net, back = load(src), load(str(tmp_path / "m.dnet"))
    x = _inputs(net, 100)
    assert np.array_equal(_outputs(back, x), _outputs(net, x))
    (tmp_path / "bad.onnx").write_bytes(b"\x00not a model")
    for args, msg in [(("nothere.onnx", "-o", "x.dnet"), "nothere.onnx: no such file"),
                      (("bad.onnx", "-o", "x.dnet"), "bad.onnx: not an ONNX model"),
                      (("m.onnx", "-o", "m.onnx"), "would overwrite the input"),
                      (("m.onnx", "-o", "x.dnet", "--input-range", "3..1"), "--input-range"),
                      (("m.onnx", "-o", "nodir/x.dnet"), "does not exist")]:
        r = run("import", *args)
        assert r.returncode == 1 and msg in r.stderr, (args, r.stderr)
        assert "Traceback" not in r.stderr
    assert not (tmp_path / "x.dnet").exists()


def test_text_is_what_from_onnx_parses():
    net = parse(CNN)
    data = onnx_bytes(net)
    assert _outputs(parse(onnx_to_dnet(data)), _inputs(net)).tolist() == \
        _outputs(from_onnx(data), _inputs(net)).tolist()
