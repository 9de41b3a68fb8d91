"""Measure how often onnxruntime's u8s8 kernel saturates a pair sum on real digits
(docs/import.md, "onnxruntime's u8s8 kernel"; interop/ort_pairs.py).

Trains (seeded, a few epochs on the 8,000 training digits of models/datasets.py) an MLP
784-64-10 and a CNN (conv 1->8 3x3, relu, max pool 2, linear 1352-10), quantises each with
onnxruntime's `quantize_static` defaults (QDQ, int8 activations and weights, per tensor),
calibrated on 200 training digits, and runs the 2,000 held-out digits through
onnxruntime and through the netlist imported with `--ort-pairs exact` (ONNX's exact int32
sums). Prints, per model: the pair sums that can pass 16 bits, the digits on which
onnxruntime saturated at least one (found from the netlist's own values), the digits whose
output integers differ, and whose predicted class differs.

    python bench/ort_pairs.py            # needs the MNIST digits (docs/mnist.md)
"""
from __future__ import annotations

import os
import sys
import tempfile
import warnings

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))


def _train(net, x, y, epochs=3):
    import torch

    opt = torch.optim.Adam(net.parameters(), 1e-3)
    g = torch.Generator().manual_seed(0)
    for _ in range(epochs):
        for idx in torch.randperm(len(x), generator=g).split(64):
            opt.zero_grad()
            torch.nn.functional.cross_entropy(net(x[idx]), y[idx]).backward()
            opt.step()
    return net.eval()


def _quantise(net, shape, calib, path):
    import torch
    from onnxruntime.quantization import CalibrationDataReader, quantize_static

    f = path + ".float.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(net, (torch.zeros(1, *shape),), f, dynamo=False,
                          input_names=["x"], output_names=["y"])

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.it = iter({"x": c.reshape(1, *shape)} for c in calib)

        def get_next(self):
            return next(self.it, None)

    quantize_static(f, path, Reader())


def measure(name, path, digits, labels):
    from dsl.parser import parse
    from dsl.reference import evaluate
    from interop import ort_pairs
    from interop.onnx_check import constants, load_model
    from interop.onnx_import import onnx_to_dnet
    from interop.quant_emit import Emitter
    from interop.quant_read import Reader
    from interop.runtime_check import _quantised

    rng, step = (0, 255), 1 / 255   # the pixels' own integers
    net = parse(onnx_to_dnet(path, rng, step, where=path, ort_pairs="exact"))
    m = load_model(path)
    r = Reader(m, constants(m, path), path, "exact")
    layers, _ = r.read(rng, step)
    e = Emitter(layers, path)
    for k, layer in enumerate(layers):
        e.emit(k, layer)
    x = digits.reshape(len(digits), -1).astype(np.int64)
    res = evaluate(net, x.tolist())
    mine = np.asarray(res.last_outputs(), np.int64)
    theirs, _ = _quantised(m, r, x)
    pairs = {L.name: len(L.pairs.out) for L in layers if getattr(L, "pairs", None)}
    saturated = 0
    for row in range(len(x)):
        values = {k: res.value[row, -1, net.groups[nm]] for k, nm in e.names.items()
                  if nm in net.groups}
        saturated += bool(ort_pairs.first_saturation(layers, values, lambda L: L.name))
    differ = int((mine != theirs).any(1).sum())
    classes = int((mine.argmax(1) != theirs.argmax(1)).sum())
    acc = float((theirs.argmax(1) == labels).mean())
    print(f"{name}: pairs that can pass 16 bits {pairs}; of {len(x)} held-out digits, "
          f"{saturated} saturate a pair in onnxruntime, {differ} differ in an output, "
          f"{classes} in the class (onnxruntime's accuracy {acc:.3f})")


def main() -> None:
    import torch

    from models.datasets import load_split

    s = load_split()
    xt = torch.tensor(s.train_images / 255, dtype=torch.float32)
    yt = torch.tensor(s.train_labels, dtype=torch.long)
    calib = (s.train_images[:200] / 255).astype(np.float32)
    torch.manual_seed(0)
    nn = torch.nn
    nets = {"mlp 784-64-10": (nn.Sequential(nn.Flatten(), nn.Linear(784, 64), nn.ReLU(),
                                            nn.Linear(64, 10)), (784,)),
            "cnn conv8-pool-1352-10": (nn.Sequential(
                nn.Conv2d(1, 8, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                nn.Linear(8 * 13 * 13, 10)), (1, 28, 28))}
    with tempfile.TemporaryDirectory() as tmp:
        for i, (name, (net, shape)) in enumerate(nets.items()):
            _train(net, xt.reshape(-1, *shape), yt)
            path = os.path.join(tmp, f"m{i}.onnx")
            _quantise(net, shape, calib, path)
            measure(name, path, s.test_images, s.test_labels)


if __name__ == "__main__":
    main()
