"""Quantised graphs made by others, read exactly: onnxruntime's int8 files (QOperator and
QDQ) and QONNX (Brevitas), docs/import.md.

Owns reading such a graph into a chain of integer layers (`Layer`) whose every value is
an integer the runtime itself computes:

- a quantised tensor is its integers q (uint8 / int8 for onnxruntime, the Quant's integer
  for QONNX); a float tensor between a DequantizeLinear (or a Quant's `s * (q - z)`) and
  the next QuantizeLinear or Quant is `scale * acc` with acc an exact integer sum;
- QuantizeLinear / Quant of the graph's float input: a table over the integer inputs the
  netlist reads (`x * input_step` is the float the model sees);
- QGemm, QLinearMatMul, QLinearConv, and DequantizeLinear -> Gemm / MatMul / Conv ->
  (Relu) -> QuantizeLinear (QDQ as onnxruntime fuses it at its default optimisation level),
  and Quant -> Gemm / MatMul / Conv -> (Relu) -> Quant (QONNX): an integer matrix product
  or convolution `acc = sum (w - zw)(q - zq) + bias` and the requantisation staircase of
  interop/staircase.py;
- QLinearAdd with a constant operand: a table per element taken from onnxruntime itself;
- MaxPool on integers; QONNX's AveragePool + Trunc (a table over window sums);
  Flatten and Reshape to (batch, -1), Identity, Dropout.

Refused, each with its reason: float arithmetic whose result depends on rounding order
(dynamic quantisation, a float bias, QONNX scales that are not powers of two, a Relu that
onnxruntime does not fuse), and operators not listed. interop/quant_emit.py writes the
layers as .dnet text.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from dsl.diagnostics import VoodooError
from interop import staircase as S

QUANT_OPS = {"QuantizeLinear", "DequantizeLinear", "QLinearMatMul", "QGemm", "QLinearConv",
             "QLinearAdd", "Quant", "BipolarQuant", "Trunc", "MatMulInteger", "ConvInteger",
             "DynamicQuantizeLinear", "QLinearGlobalAveragePool", "QLinearAveragePool",
             "QLinearSigmoid", "QLinearLeakyRelu", "QLinearConcat", "QLinearMul"}
WHY_NOT = {
    "DynamicQuantizeLinear": "dynamic quantisation takes its scales from each batch's data, "
                             "so the integers depend on the batch: quantise statically "
                             "(onnxruntime.quantization.quantize_static)",
    "MatMulInteger": "dynamic quantisation (scales from the data at run time): quantise "
                     "statically",
    "ConvInteger": "dynamic quantisation (scales from the data at run time): quantise "
                   "statically",
}


def is_quantised(m) -> bool:
    return any(n.op_type in QUANT_OPS for n in m.graph.node)


@dataclass
class QT:
    """A tensor of integers: shape (C, H, W) or (N,), every element within lo..hi."""

    layer: int                # index of the Layer that makes it
    shape: tuple
    lo: int
    hi: int
    zero: int = 0             # its zero point (a DequantizeLinear / Quant subtracts it)
    scale: object = None      # float32 scale (per tensor) of its float value
    tensor: str = ""          # the graph's name for these integers (runtime_check reads it)
    signed: bool = False      # stored as int8 (else uint8): onnxruntime's kernels differ


@dataclass
class Acc:
    """A float tensor `scale * acc` (scale per output channel) of an integer layer not yet
    requantised: the pending accumulator of a Gemm/MatMul/Conv in QDQ or QONNX form."""

    src: QT
    kind: str                 # dense or conv
    W: np.ndarray             # integer weights, (out, in) or (out, C, kh, kw), zero point out
    bias: np.ndarray          # integer bias per output channel
    scale: np.ndarray         # float32 per output channel: sa * sw
    conv: dict = field(default_factory=dict)
    relu: bool = False
    form: str = "qdq"         # qdq, qop (onnxruntime's QOperator) or qonnx: which kernel
    wzero: np.ndarray | None = None   # the weights' zero point per output channel
    wsigned: bool = True      # the weights are stored as int8 (else uint8)


@dataclass
class Layer:
    """One integer layer of the chain (see interop/quant_emit.py for its .dnet form)."""

    kind: str                 # input, quantize, dense, conv, maxpool
    src: int = -1             # the layer it reads
    shape: tuple = ()
    W: np.ndarray | None = None
    bias: np.ndarray | None = None
    src_zero: int = 0         # subtracted from every source value (its zero point)
    stairs: list = field(default_factory=list)   # per output channel: Stairs or None
    conv: dict = field(default_factory=dict)
    lo: int = 0
    hi: int = 0
    name: str = ""
    pairs: object = None      # interop/ort_pairs.Pairs: sums onnxruntime saturates, or None


def fail(where: str, node, why: str, hint: str = "") -> None:
    raise VoodooError(f"{where}: node {node.name or node.output[0]!r} ({node.op_type}): {why}"
                      + (f"\n    hint: {hint}" if hint else ""))


def quantised_dnet(m, consts, input_range, input_step, name, where, ort_pairs="auto") -> str:
    from interop.quant_emit import emit
    from interop.quant_read import Reader

    r = Reader(m, consts, where, ort_pairs)
    layers, out = r.read(input_range, input_step)
    return emit(layers, out, name, r.comment(), where)
