"""Bad ONNX and torch inputs to `build.py import` (issue 37, items 5, 8, 9 and 10): each
is a one-line error naming the file and what is wrong, exit status 1, no traceback, no
output file, and an answer in seconds (a FIFO never blocks, a huge layer is refused from
its shape). One case per class the issue found; each failed before its fix."""
from __future__ import annotations

import os
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

from conftest import ROOT
from dsl.diagnostics import VoodooError
from dsl.parser import parse

import onnx  # noqa: E402  pinned requirements: a missing one fails
import torch  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402
from torch import nn  # noqa: E402

from interop import from_onnx, from_torch  # noqa: E402
from interop.export_onnx import onnx_bytes  # noqa: E402

NET = parse("network r\ninput x[3] : 0..2\nneuron y : relu(s=2, max=3) = x[0] + 2*x[1] - x[2]\n"
            "neuron z : lut(-1..1, [3, 0, 3]) = x[0] - x[1]\noutput y, z\n")


def _int_model():
    return onnx.load_from_string(onnx_bytes(NET))


def _init(m, stem: str):
    return next(i for i in m.graph.initializer if stem in i.name)


def _float_model(nodes, inits, in_shape=(4,), out=3, elem=TensorProto.FLOAT):
    x = helper.make_tensor_value_info("x", elem, [1, *in_shape])
    y = helper.make_tensor_value_info("y", elem, [1, out])
    init = [numpy_helper.from_array(np.asarray(v), k) for k, v in inits.items()]
    return helper.make_model(helper.make_graph(nodes, "fg", [x], [y], init))


def _gemm(W=np.ones((3, 4), np.float32), b=np.zeros(3, np.float32)):
    return _float_model([helper.make_node("Gemm", ["x", "W", "b"], ["y"], transB=1)],
                        {"W": W, "b": b})


# ------------------------------------------------------------------ item 8: one validation pass
def _no_output():
    m = _int_model()
    m.graph.node.insert(0, helper.make_node("Identity", ["x"], [], name="lost"))
    return m


def _nan_matmul():
    m = _int_model()
    t = _init(m, "relu_WT")
    t.CopyFrom(numpy_helper.from_array(np.array([[1.0], [np.nan], [2.0]]), t.name))
    return m


def _inf_gather_table():
    m = _int_model()
    t = _init(m, "lut_tables")
    t.CopyFrom(numpy_helper.from_array(np.array([3.0, np.inf, 3.0]), t.name))
    return m


def _gather_out_of_range():
    m = _int_model()
    t = _init(m, "outcols")
    t.CopyFrom(numpy_helper.from_array(np.array([5], np.int64), t.name))
    return m


def _meta(value):
    def make():
        m = _int_model()
        m.metadata_props[0].value = value
        return m
    return make


def _short_raw_data():
    m = _int_model()
    t = _init(m, "relu_WT")
    t.raw_data = t.raw_data[:5]
    return m


def _huge_input():
    m = _gemm()
    m.graph.input[0].type.tensor_type.shape.dim[1].dim_value = 10 ** 9
    return m


def _scalar_reshape():
    return _float_model([helper.make_node("Reshape", ["x", "s"], ["f"]),
                         helper.make_node("Gemm", ["f", "W"], ["y"], transB=1)],
                        {"s": np.array(4, np.int64), "W": np.ones((3, 4), np.float32)})


def _nan_bias():
    return _gemm(b=np.array([0, np.nan, 1], np.float32))


CASES = [
    (_no_output, "node 0 (Identity 'lost') has no outputs"),
    (_nan_matmul, "holds NaN or infinity"),
    (_inf_gather_table, "holds NaN or infinity"),
    (_gather_out_of_range, "picks column 5 of"),
    (_meta("[[0, 1e400], [0, 1], [0, 2]]"), "input_ranges is damaged"),
    (_meta("[" * 100_000 + "]" * 100_000), "input_ranges is damaged"),
    (_meta("[[0, 2], [0, 2]]"), "gives 2 input ranges but the graph's input has 3 values"),
    (lambda: _float_model([helper.make_node("Conv", ["x", "W"], ["y"], pads=[1, 1])],
                          {"W": np.ones((2, 1, 3, 3), np.float32)}, (1, 4, 4), 2),
     "pads [1, 1] needs 4 values"),
    (_scalar_reshape, "is not a 1-D list of sizes"),
    (lambda: _gemm(W=np.ones((3, 4, 1), np.float32)), "a Gemm multiplies by a 2-D matrix"),
    (lambda: _gemm(W=np.ones((0, 4), np.float32)), "a Gemm multiplies by a 2-D matrix"),
    (_short_raw_data, "cannot be decoded"),
    (_huge_input, "1,000,000,000 values per sample"),
    (_nan_bias, "constant 'b' holds NaN or infinity"),
]


@pytest.mark.parametrize("make, match", CASES, ids=[m for _, m in CASES])
def test_a_bad_graph_is_one_message_not_an_internal_error(make, match):
    with pytest.raises(VoodooError) as e:
        from_onnx(make(), input_range=(0, 2))
    assert match in str(e.value)


def test_external_data_is_read_from_beside_the_model(tmp_path):
    """Brevitas and torch write big initializers to a file beside the model."""
    m = _int_model()
    path = str(tmp_path / "ext.onnx")
    onnx.save_model(m, path, save_as_external_data=True, all_tensors_to_one_file=True,
                    location="ext.onnx.data", size_threshold=0)
    assert os.path.getsize(tmp_path / "ext.onnx.data") > 0
    net = from_onnx(path)
    x = np.array([[0, 1, 2], [2, 2, 0], [1, 0, 1]])
    from dsl.reference import evaluate

    assert evaluate(net, x).last_outputs().tolist() == evaluate(NET, x).last_outputs().tolist()
    os.remove(tmp_path / "ext.onnx.data")
    with pytest.raises(VoodooError, match="ext.onnx.data: no such file"):
        from_onnx(path)
    with pytest.raises(VoodooError, match="import the model from its file"):
        from_onnx(open(path, "rb").read())


# ------------------------------------------------------------------ item 10: too big to build
def test_a_layer_no_map_holds_is_refused_in_seconds(tmp_path):
    t = time.monotonic()
    with pytest.raises(VoodooError, match="4,000,000 weights"):
        from_torch(nn.Sequential(nn.Linear(2000, 2000)))
    W = np.zeros((2000, 2000), np.float32)
    with pytest.raises(VoodooError, match="4,000,000 weights"):
        from_onnx(_float_model([helper.make_node("Gemm", ["x", "W"], ["y"], transB=1)],
                               {"W": W}, (2000,), 2000))
    assert time.monotonic() - t < 20


def test_the_bias_hint_is_spelled_right():
    lin = nn.Linear(2, 1)
    with torch.no_grad():
        lin.weight.fill_(1)
        lin.bias.fill_(2 ** 40)
    with pytest.raises(VoodooError) as e:
        from_torch(nn.Sequential(lin))
    assert "biases lie within" in str(e.value) and "biass" not in str(e.value)


# ------------------------------------------------------------------ the command: items 5 and 9
def _run(tmp_path, *args, timeout=60):
    return subprocess.run([sys.executable, os.path.join(ROOT, "build.py"), "import", *args],
                          capture_output=True, text=True, cwd=tmp_path, timeout=timeout)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("imp")
    (d / "m.onnx").write_bytes(onnx_bytes(NET))
    gemm = _gemm(W=np.arange(12, dtype=np.float32).reshape(3, 4) / 7)
    onnx.save_model(gemm, str(d / "f.onnx"))
    half = _float_model([helper.make_node("Relu", ["x"], ["y"])], {}, (3,), 3,
                        TensorProto.FLOAT16)
    onnx.save_model(half, str(d / "half.onnx"))
    big = onnx.load_from_string(onnx_bytes(NET))
    _init(big, "relu_WT").CopyFrom(numpy_helper.from_array(
        np.array([[2 ** 62], [1], [1]], np.int64), _init(big, "relu_WT").name))
    onnx.save_model(big, str(d / "big.onnx"))
    np.save(d / "empty.npy", np.zeros((0, 4), np.int64))
    os.mkfifo(d / "fifo")
    os.mkdir(d / "dir.onnx")
    return d


def test_a_fifo_to_calibrate_is_refused_without_blocking(files):
    """Item 5: `--calibrate FIFO` blocked forever (nothing ever writes the FIFO)."""
    r = _run(files, "f.onnx", "-o", "x.dnet", "--calibrate", "fifo", timeout=60)
    assert r.returncode == 1 and "--calibrate fifo: is a FIFO" in r.stderr, r.stderr
    assert not (files / "x.dnet").exists()


@pytest.mark.parametrize("args, msg", [
    (("big.onnx", "-o", "x.dnet"), "big.onnx: node"),
    (("half.onnx", "-o", "x.dnet"), "the input is of type float16"),
    (("f.onnx", "-o", "x.dnet", "--input-step", "inf"), "--input-step inf: give a positive"),
    (("f.onnx", "-o", "x.dnet", "--calibrate", "empty.npy"), "at least one row"),
    (("dir.onnx", "-o", "x.dnet"), "dir.onnx: is a directory"),
    (("fifo", "-o", "x.dnet"), "fifo: is a FIFO"),
])
def test_messages_name_the_model_and_the_fault(files, args, msg):
    """Item 9: never a position in the output that was never written, types by name, a bad
    step told apart from a NaN weight, an empty calibration refused, a directory or FIFO
    is not 'no such file'."""
    r = _run(files, *args)
    assert r.returncode == 1 and msg in r.stderr, r.stderr
    assert "x.dnet" not in r.stderr and "Traceback" not in r.stderr
    assert "no such file" not in r.stderr
    assert not (files / "x.dnet").exists()


def test_a_negative_input_range_needs_no_equals_sign(files):
    r = _run(files, "f.onnx", "-o", "neg.dnet", "--input-range", "-3..3")
    assert r.returncode == 0, r.stderr
    assert "input x[4] : -3..3" in (files / "neg.dnet").read_text()


def test_a_nan_in_a_torch_export_names_the_file(files):
    onnx.save_model(_gemm(b=np.array([0, np.nan, 1], np.float32)), str(files / "nan.onnx"))
    r = _run(files, "nan.onnx", "-o", "x.dnet")
    assert r.returncode == 1 and "nan.onnx: constant 'b' holds NaN" in r.stderr, r.stderr
