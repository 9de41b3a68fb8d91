"""The PyTorch importer: an integer `nn.Sequential` of Linear/ReLU layers becomes a netlist.

    from models import from_torch
    net = from_torch(model, input_range=(0, 3), scales=[16], clamps=[15], name="mnist")

Owns the mapping from torch layers to .dnet (docs/mnist.md, "Importing from torch"):

- every `Linear` becomes a neuron vector with `dense` lines (torch's `weight` is already one
  row per destination, the .dnet layout) and its `bias`;
- a `Linear` followed by `ReLU` gets the gate `relu(s=S, max=L)`, i.e. the exact integer
  `min(max(floor(acc / S), 0), L)`, with S and L taken in order from `scales` and `clamps`
  (one per ReLU; a single int applies to all); any other `Linear` is `identity`, so the
  last layer's accumulators are the outputs;
- a leading `Flatten` is allowed and does nothing (inputs are one flat vector).

The importer does not quantise: weights and biases must already be integers (or floats
holding integer values); `models/quantize.py` makes such models. It writes .dnet text and parses
it, so an imported network passes every check a hand-written one does, and the text can be
saved as it is (`to_dnet`).
"""
from __future__ import annotations


import numpy as np

from dsl.diagnostics import VoodooError
from dsl.ir import INT_LIMIT, WEIGHT_LIMIT

TORCH_HINT = "install it with `pip install torch==2.13.0` (see requirements.txt)"


def _torch():
    try:
        import torch
    except ImportError:
        raise VoodooError(f"from_torch needs PyTorch, which is not installed\n    hint: "
                          f"{TORCH_HINT}") from None
    return torch


def _per_layer(value, count: int, what: str, allow_none: bool) -> list:
    if value is None or isinstance(value, (int, np.integer)):
        if value is None and not allow_none:
            return [1] * count
        return [None if value is None else int(value)] * count
    items = list(value)
    if len(items) != count:
        raise VoodooError(f"from_torch: {what} has {len(items)} entries but the model has "
                          f"{count} ReLU layer{'s' if count != 1 else ''}\n    hint: give "
                          f"one {what[:-1]} per ReLU, in order, or a single int for all")
    out = []
    for k, v in enumerate(items):
        if v is None and allow_none:
            out.append(None)
        elif isinstance(v, (int, np.integer)) and not isinstance(v, bool):
            out.append(int(v))
        else:
            raise VoodooError(f"from_torch: {what}[{k}] = {v!r} is not an integer")
    return out


def _integer_array(t, where: str, what: str, limit: int) -> np.ndarray:
    a = t.detach().cpu().to(dtype=_torch().float64).numpy()
    if not np.all(np.isfinite(a)):
        raise VoodooError(f"from_torch: {where} {what} holds NaN or infinity")
    bad = np.flatnonzero(a.ravel() != np.round(a.ravel()))
    if bad.size:
        idx = np.unravel_index(bad[0], a.shape)
        raise VoodooError(f"from_torch: {where} {what} is not integer "
                          f"({what}{list(map(int, idx))} = {float(a[idx])!r}, and {bad.size - 1} "
                          f"more)\n    hint: quantise the model first (models/quantize.py "
                          "does), so every weight and bias is a whole number")
    big = np.flatnonzero(np.abs(a.ravel()) > limit)
    if big.size:
        idx = np.unravel_index(big[0], a.shape)
        raise VoodooError(f"from_torch: {where} {what}{list(map(int, idx))} = "
                          f"{int(a[idx])} is out of range\n    hint: {what}s lie within "
                          f"-{limit}..{limit}; use fewer weight bits")
    return a.astype(np.int64)


def _layers(model) -> list[tuple[int, object, bool]]:
    """[(position in the Sequential, Linear, followed by ReLU)], validating the layer list."""
    torch = _torch()
    nn = torch.nn
    if not isinstance(model, nn.Sequential):
        raise VoodooError(f"from_torch: expected an nn.Sequential of Linear and ReLU layers, "
                          f"got {type(model).__name__}\n    hint: wrap the layers in "
                          "nn.Sequential(...)")
    layers: list[tuple[int, object, bool]] = []
    for k, (name, m) in enumerate(model.named_children()):
        kind = type(m).__name__
        if isinstance(m, nn.Linear):
            layers.append((k, m, False))
        elif isinstance(m, nn.ReLU):
            if not layers or layers[-1][2]:
                raise VoodooError(f"from_torch: layer {name} (ReLU) does not follow a Linear"
                                  "\n    hint: every ReLU must come right after a Linear")
            layers[-1] = (layers[-1][0], layers[-1][1], True)
        elif isinstance(m, nn.Flatten) and not layers:
            continue
        else:
            raise VoodooError(f"from_torch: layer {name} ({kind}) is not supported\n    "
                              "hint: the importer takes Linear and ReLU layers (and a "
                              "leading Flatten); fold other layers into the weights first")
    if not layers:
        raise VoodooError("from_torch: the model has no Linear layer")
    return layers


def to_dnet(model, input_range: tuple[int, int] = (0, 1), scales=None, clamps=None,
            name: str = "torch_net", comment: str = "") -> str:
    """The .dnet text of an integer nn.Sequential (see the module docstring)."""
    layers = _layers(model)
    n_relu = sum(r for _, _, r in layers)
    s_list = _per_layer(scales, n_relu, "scales", allow_none=False)
    l_list = _per_layer(clamps, n_relu, "clamps", allow_none=True)
    for k, s in enumerate(s_list):
        if s < 1:
            raise VoodooError(f"from_torch: scales[{k}] = {s}; the requantisation divisor "
                              "must be >= 1")
    for k, L in enumerate(l_list):
        if L is not None and L < 0:
            raise VoodooError(f"from_torch: clamps[{k}] = {L}; a clamp must be >= 0")
    try:
        lo, hi = (int(v) for v in input_range)
    except (TypeError, ValueError):
        raise VoodooError(f"from_torch: input_range {input_range!r} is not a (lo, hi) pair "
                          "of integers") from None
    if lo > hi:
        raise VoodooError(f"from_torch: input_range ({lo}, {hi}) is empty")
    import re

    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
        raise VoodooError(f"from_torch: name {name!r} is not a valid netlist name")

    out = [f"# {line}" if line else "#" for line in comment.splitlines()]
    out += [f"network {name}", ""]
    n_in = layers[0][1].in_features
    out += [f"input x[{n_in}] : {lo}..{hi}", ""]
    prev, prev_n, relu_k = "x", n_in, 0
    for j, (pos, lin, relu) in enumerate(layers):
        where = f"layer {pos} (Linear {lin.in_features}->{lin.out_features})"
        if lin.in_features != prev_n:
            raise VoodooError(f"from_torch: {where} takes {lin.in_features} inputs but the "
                              f"layer before it gives {prev_n}")
        last = j == len(layers) - 1
        lname = "o" if last else f"h{j + 1}"
        if relu:
            s, L = s_list[relu_k], l_list[relu_k]
            relu_k += 1
            gate = f"relu(s={s})" if L is None else f"relu(s={s}, max={L})"
        else:
            gate = "identity"
        W = _integer_array(lin.weight, where, "weight", WEIGHT_LIMIT)
        out.append(f"neuron {lname}[{lin.out_features}] : {gate}")
        out.append(f"lines {prev} -> {lname} dense [")
        out.extend("  [" + ", ".join(map(str, row)) + "]," for row in W.tolist())
        out.append("]")
        if lin.bias is not None:
            b = _integer_array(lin.bias, where, "bias", INT_LIMIT)
            if b.any():
                out.append(f"bias {lname} = [" + ", ".join(map(str, b.tolist())) + "]")
        out.append("")
        prev, prev_n = lname, lin.out_features
    out.append("output o")
    return "\n".join(out) + "\n"


def from_torch(model, input_range: tuple[int, int] = (0, 1), scales=None, clamps=None,
               name: str = "torch_net"):
    """A validated Netlist (ranges computed) from an integer nn.Sequential of Linear/ReLU.

    input_range: the declared range of every input; scales / clamps: the relu divisor S and
    clamp L of each ReLU in order (an int applies to all; clamps None means "as large as
    the range analysis can reach").
    """
    from dsl.parser import parse

    return parse(to_dnet(model, input_range, scales, clamps, name), f"<from_torch {name}>")
