"""Importers and exporters: networks in other formats in, netlists out to other formats.

Owns every conversion between a netlist (`dsl`) and a format someone else defines, apart
from the model families and their training (`models/`):

- in: an integer torch `nn.Sequential` (`torch_import.py`), float ONNX graphs quantised
  here (`onnx_float.py`, through `models/seq_quant.py`), integer ONNX graphs as
  `export --onnx` writes them (`onnx_import.py`), and quantised graphs made by others,
  read exactly: onnxruntime's int8 QOperator and QDQ files and QONNX from Brevitas
  (`quant_graph.py`, `staircase.py`), with checks against their own runtimes
  (`runtime_check.py`);
- out: an int64 ONNX graph (`export_onnx.py`) and a standalone torch module
  (`export_torch.py`), both following one plan (`netplan.py`).

Nothing here knows about maps or the engine (docs/import.md, docs/export.md).

    from interop import from_torch, from_onnx
    net = from_torch(model, input_range=(0, 3))
    net = from_onnx("model.onnx")
"""
from __future__ import annotations


def from_torch(model, input_range=(0, 1), scales=None, clamps=None, name=None,
               input_shape=None):
    """Import a torch model as a netlist: a `models.transformer.Transformer` (its integer
    forward, exactly; the other arguments do not apply), or an integer nn.Sequential of
    Linear, Conv2d, AvgPool2d, MaxPool2d, ReLU and Flatten layers (interop/torch_import.py;
    input_shape = (channels, height, width) when it starts with a convolution)."""
    from interop.torch_import import from_torch as _from_torch
    from models.transformer import Transformer, netlist

    if isinstance(model, Transformer):
        return netlist(model, name or "transformer")
    return _from_torch(model, input_range, scales, clamps, name or "torch_net", input_shape)


def from_onnx(model, input_range=(0, 1), input_step=1.0, calibration=None, weight_bits=6,
              clamp=15, name=None, ort_pairs="auto"):
    """Import an ONNX model (a path, bytes or an onnx.ModelProto) as a netlist: an integer
    or quantised graph exactly, a float one quantised (interop/onnx_import.py)."""
    from interop.onnx_import import from_onnx as _from_onnx

    return _from_onnx(model, input_range, input_step, calibration, weight_bits, clamp, name,
                      ort_pairs)
