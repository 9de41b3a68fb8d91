"""Quantised graphs made by others, read exactly (docs/import.md)."""
from __future__ import annotations

QUANT_OPS = {"QuantizeLinear", "DequantizeLinear", "QLinearMatMul", "QGemm", "QLinearConv",
             "QLinearAdd", "Quant", "BipolarQuant", "Trunc", "MatMulInteger", "ConvInteger"}


def is_quantised(m) -> bool:
    return any(n.op_type in QUANT_OPS for n in m.graph.node)


def quantised_dnet(m, consts, input_range, input_step, name, where):
    from dsl.diagnostics import VoodooError

    raise VoodooError(f"{where}: quantised graphs are not read yet")
