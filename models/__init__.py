"""Importers and models: data sets (MNIST), quantisation-aware training, torch import.

Everything here turns something a user brings (a torch model, a data set) into a netlist
of the `dsl` language; nothing here knows about maps or the engine.

    from models import from_torch
    net = from_torch(model, input_range=(0, 3))
"""
from __future__ import annotations


def from_torch(model, input_range=(0, 1), scales=None, clamps=None, name=None,
               input_shape=None):
    """Import a torch model as a netlist: a `models.transformer.Transformer` (its integer
    forward, exactly; the other arguments do not apply), or an integer nn.Sequential of
    Linear, Conv2d, AvgPool2d, MaxPool2d, ReLU and Flatten layers (models/torch_import.py;
    input_shape = (channels, height, width) when it starts with a convolution)."""
    from models.torch_import import from_torch as _from_torch
    from models.transformer import Transformer, netlist

    if isinstance(model, Transformer):
        return netlist(model, name or "transformer")
    return _from_torch(model, input_range, scales, clamps, name or "torch_net", input_shape)


def from_onnx(model, input_range=(0, 1), input_step=1.0, calibration=None, weight_bits=6,
              clamp=15, name=None):
    """Import an ONNX model (a path, bytes or an onnx.ModelProto) as a netlist: an integer
    graph exactly, a float one quantised (models/onnx_import.py)."""
    from models.onnx_import import from_onnx as _from_onnx

    return _from_onnx(model, input_range, input_step, calibration, weight_bits, clamp, name)
