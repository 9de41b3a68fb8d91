"""Make the quantised ONNX models tests/test_quant_import.py reads (checked in beside this
script, in tests/data/quant/; CI never runs this): nothing is trained, every weight is
seeded, and the quantisers are the ones people use.

    python tests/data/make_quant_models.py        # rewrites tests/data/quant/*.onnx
    QUANT_MODELS_OUT=/tmp/q python tests/data/make_quant_models.py   # elsewhere, to compare

Run twice, it writes the same bytes (checked with `cmp` against the files here).

- onnxruntime int8 (onnxruntime.quantization.quantize_static, uint8 activations, int8
  weights with reduce_range=True as onnxruntime advises on AVX2, calibrated on 64 seeded
  inputs of 4 levels): an MLP and a CNN, each as QOperator (per tensor) and QDQ (per
  channel); a tiny MLP for the engine; an MLP written as MatMul + Add (QLinearMatMul +
  QLinearAdd); and the MNIST MLP of circuits/mnist_small.dnet
  (its trained weights, as a float model on inputs x / 3) quantised the same way;
- onnxruntime int8 with quantize_static's defaults (QDQ, int8 activations and weights, per
  tensor, full 8-bit weights): a tiny MLP, an MLP and a CNN, whose pair sums onnxruntime's
  u8s8 kernel saturates on x86 without VNNI (interop/ort_pairs.py), and the MLP in
  QOperator form (int8 by int8: MLAS's exact kernel);
- QONNX from Brevitas (export_qonnx): a 4-bit MLP, a 4-bit CNN with a max pool and one
  with an average pool (TruncAvgPool2d: AveragePool + Trunc), with fixed-point
  (power-of-two) scales and Int32Bias, their activation scales set from seeded batches.
"""
from __future__ import annotations

import os
import sys
import warnings

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.environ.get("QUANT_MODELS_OUT", os.path.join(HERE, "quant"))
sys.path.insert(0, os.path.dirname(os.path.dirname(HERE)))


def _torch_onnx(model, shape, path):
    import torch

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model.eval(), (torch.zeros(1, *shape),), path, dynamo=False,
                          input_names=["x"], output_names=["y"])


def _reader(shape, seed=0):
    from onnxruntime.quantization import CalibrationDataReader

    class Levels(CalibrationDataReader):
        """64 seeded inputs of the 4 levels 0, 1/3, 2/3, 1."""

        def __init__(self):
            rng = np.random.default_rng(seed)
            self.it = iter([{"x": (rng.integers(0, 4, (1, *shape)) / 3).astype(np.float32)}
                            for _ in range(64)])

        def get_next(self):
            return next(self.it, None)

    return Levels()


def ort_models(tmp: str) -> None:
    import torch
    from onnxruntime.quantization import QuantFormat, QuantType, quantize_static

    nn = torch.nn
    torch.manual_seed(0)
    nets = {"mlp": (nn.Sequential(nn.Linear(12, 10), nn.ReLU(), nn.Linear(10, 4)), (12,)),
            "cnn": (nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                                  nn.Flatten(), nn.Linear(36, 5)), (1, 6, 6)),
            "tiny": (nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2)), (4,)),
            "mnist": (_mnist_float(), (100,))}
    nets["matmul_add"] = (None, (8,))
    for name, (net, shape) in nets.items():
        f = os.path.join(tmp, f"{name}.onnx")
        if net is None:
            _matmul_add(f)
        else:
            _torch_onnx(net, shape, f)
        forms = [("qop", QuantFormat.QOperator, False)]
        if name in ("mlp", "cnn"):
            forms.append(("qdq", QuantFormat.QDQ, True))
        for tag, fmt, per_channel in forms:
            quantize_static(f, os.path.join(OUT, f"ort_{name}_{tag}.onnx"), _reader(shape),
                            quant_format=fmt, per_channel=per_channel,
                            activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8,
                            reduce_range=True)
        if name in ("tiny", "mlp", "cnn"):  # every default: what most people run
            quantize_static(f, os.path.join(OUT, f"ort_default_{name}_qdq.onnx"),
                            _reader(shape))
        if name == "mlp":
            quantize_static(f, os.path.join(OUT, f"ort_default_{name}_qop.onnx"),
                            _reader(shape), quant_format=QuantFormat.QOperator)


def _matmul_add(path: str) -> None:
    """A float MLP written as MatMul + Add (as TensorFlow and hand-written graphs are):
    quantize_static makes QLinearMatMul + QLinearAdd of it."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    consts = {"W1": rng.normal(size=(8, 6)), "b1": rng.normal(size=6),
              "W2": rng.normal(size=(6, 3)), "b2": rng.normal(size=3)}
    nodes = [helper.make_node("MatMul", ["x", "W1"], ["m1"]),
             helper.make_node("Add", ["m1", "b1"], ["a1"]),
             helper.make_node("Relu", ["a1"], ["r1"]),
             helper.make_node("MatMul", ["r1", "W2"], ["m2"]),
             helper.make_node("Add", ["m2", "b2"], ["y"])]
    g = helper.make_graph(nodes, "matmul_add",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3])],
                          [numpy_helper.from_array(v.astype(np.float32), k)
                           for k, v in consts.items()])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8),
              path)


def _mnist_float():
    """circuits/mnist_small.dnet's trained integer MLP as the float model it approximates:
    inputs x / 3, the hidden relu's divisor folded into the second layer."""
    import torch

    from dsl import load

    net = load(os.path.join(os.path.dirname(os.path.dirname(HERE)), "circuits",
                            "mnist_small.dnet"))
    W1, b1 = _dense(net, "h1"), _bias(net, "h1")
    W2, b2 = _dense(net, "o"), _bias(net, "o")
    s = 9  # relu(s=9, max=15) in the netlist
    m = torch.nn.Sequential(torch.nn.Linear(100, 16), torch.nn.ReLU(), torch.nn.Linear(16, 10))
    with torch.no_grad():
        m[0].weight.copy_(torch.tensor(W1 * 3.0 / s))
        m[0].bias.copy_(torch.tensor(b1 / s))
        m[2].weight.copy_(torch.tensor(W2, dtype=torch.float32))
        m[2].bias.copy_(torch.tensor(b2, dtype=torch.float32))
    return m


def _dense(net, group):
    ids = net.groups[group]
    srcs = net.groups["x"] if group == "h1" else net.groups["h1"]
    return np.array([[net.nodes[i].weights.get(j, 0) for j in srcs] for i in ids], np.float32)


def _bias(net, group):
    return np.array([net.nodes[i].bias for i in net.groups[group]], np.float32)


def brevitas_models() -> None:
    import brevitas.nn as qnn
    import torch
    from brevitas.export import export_qonnx
    from brevitas.quant import Int8WeightPerTensorFixedPoint as WQ
    from brevitas.quant import Int32Bias
    from brevitas.quant import Uint8ActPerTensorFixedPoint as UQ

    def lin(a, b):
        return qnn.QuantLinear(a, b, weight_quant=WQ, weight_bit_width=4, bias=True,
                               bias_quant=Int32Bias, return_quant_tensor=True)

    torch.manual_seed(0)
    act = dict(act_quant=UQ, bit_width=4, return_quant_tensor=True)
    nets = {"mlp": (torch.nn.Sequential(qnn.QuantIdentity(**act), lin(16, 12),
                                        qnn.QuantReLU(**act), lin(12, 5)), (16,)),
            "cnn": (torch.nn.Sequential(
                qnn.QuantIdentity(**act),
                qnn.QuantConv2d(1, 4, 3, padding=1, weight_quant=WQ, weight_bit_width=4,
                                bias=True, bias_quant=Int32Bias, return_quant_tensor=True),
                qnn.QuantReLU(**act), torch.nn.MaxPool2d(2), torch.nn.Flatten(),
                lin(36, 5)), (1, 6, 6)),
            "pool": (torch.nn.Sequential(
                qnn.QuantIdentity(**act),
                qnn.QuantConv2d(1, 4, 3, padding=1, weight_quant=WQ, weight_bit_width=4,
                                bias=True, bias_quant=Int32Bias, return_quant_tensor=True),
                qnn.QuantReLU(**act), qnn.TruncAvgPool2d(2, bit_width=4,
                                                         return_quant_tensor=True),
                torch.nn.Flatten(), lin(36, 5)), (1, 6, 6))}
    for name, (net, shape) in nets.items():
        net.train()
        with torch.no_grad():  # activation scales from seeded batches
            for k in range(4):
                net(torch.rand(16, *shape, generator=torch.Generator().manual_seed(k)))
        net.eval()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            export_qonnx(net, torch.zeros(1, *shape), export_path=os.path.join(
                OUT, f"brevitas_{name}.onnx"))
        data = os.path.join(OUT, f"brevitas_{name}.onnx.data")
        if os.path.exists(data) and os.path.getsize(data) == 0:
            os.remove(data)  # nothing was stored outside: the model is whole


def main() -> None:
    import tempfile

    os.makedirs(OUT, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        ort_models(tmp)
    brevitas_models()
    for f in sorted(os.listdir(OUT)):
        print(f, os.path.getsize(os.path.join(OUT, f)), "bytes")


if __name__ == "__main__":
    main()
