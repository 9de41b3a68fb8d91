"""The PyTorch importer: an integer `nn.Sequential` becomes a netlist.

    from interop import from_torch
    net = from_torch(model, input_range=(0, 3), scales=[16], clamps=[15], name="mnist")
    net = from_torch(cnn, (0, 3), scales=[8, 6], clamps=15, input_shape=(1, 12, 12))

Owns the mapping from torch layers to .dnet (docs/mnist.md, "Importing from torch"):

- every `Linear` becomes a neuron vector with `dense` lines (torch's `weight` is already one
  row per destination, the .dnet layout) and its `bias`;
- every `Conv2d` becomes a neuron vector `(out, OH, OW)` with one `conv(...)` lines
  statement (dsl/conv.py) and its per-channel bias repeated over the channel's positions;
- an `AvgPool2d(..., divisor_override=1)` (a sum over each window: integers stay integers)
  becomes an identity vector with `avgpool(...)` lines; a `MaxPool2d` a `maxpool(...)`
  vector (the max operation);
- a `Linear`, `Conv2d` or `AvgPool2d` followed by `ReLU` gets the gate `relu(s=S, max=L)`,
  i.e. the exact integer `min(max(floor(acc / S), 0), L)`, with S and L taken in order
  from `scales` and `clamps` (one per ReLU; a single int applies to all); any other layer
  is `identity`, so the last layer's accumulators are the outputs;
- a `Linear` or `Conv2d` followed by a lookup (models/seq_quant.Lookup: `lut_lo` and
  `lut_values`, an activation other than ReLU tabulated on the accumulators) gets the gate
  `lut(LO..HI, [...])`;
- a `Linear` or `Conv2d` followed by a residual shortcut (models/seq_quant.Shortcut:
  `shortcut_src`, the layer whose values it adds, -1 for the input, and
  `shortcut_weights`, one per channel) gets `diag` lines from that vector;
- `Flatten` does nothing (every vector is flat, channel by channel, as torch flattens).

The importer does not quantise: weights and biases must already be integers (or floats
holding integer values); `models/quantize.py` (MLPs) and `models/cnn.py` make such models.
It writes .dnet text and parses it, so an imported network passes every check a
hand-written one does, and the text can be saved as it is (`to_dnet`).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dsl import conv
from dsl.conv import Shape
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
                          f"{int(a[idx])} is out of range\n    hint: "
                          f"{'biases' if what == 'bias' else what + 's'} lie within "
                          f"-{limit}..{limit}; use fewer weight bits")
    return a.astype(np.int64)


@dataclass
class _Layer:
    pos: int                 # position in the Sequential
    kind: str                # linear, conv, avgpool, maxpool
    module: object
    relu: bool = False       # followed by a ReLU
    lut: object = None       # followed by a lookup (lut_lo, lut_values)
    shortcut: object = None  # a residual shortcut into its accumulators


def _layers(model) -> list[_Layer]:
    """The weighted and pooling layers in order, each marked when a ReLU follows it,
    validating the layer list (Flatten is a no-op: every vector is already flat)."""
    torch = _torch()
    nn = torch.nn
    if not isinstance(model, nn.Sequential):
        raise VoodooError(f"from_torch: expected an nn.Sequential of Linear and ReLU layers, "
                          f"got {type(model).__name__}\n    hint: wrap the layers in "
                          "nn.Sequential(...)")
    kinds = ((nn.Linear, "linear"), (nn.Conv2d, "conv"), (nn.AvgPool2d, "avgpool"),
             (nn.MaxPool2d, "maxpool"))
    layers: list[_Layer] = []
    for k, (name, m) in enumerate(model.named_children()):
        kind = next((v for cls, v in kinds if type(m) is cls), None)
        if kind is not None:
            layers.append(_Layer(k, kind, m))
        elif isinstance(m, nn.ReLU):
            if not layers or layers[-1].relu or layers[-1].kind == "maxpool":
                raise VoodooError(f"from_torch: layer {name} (ReLU) does not follow a Linear, "
                                  "Conv2d or AvgPool2d\n    hint: every ReLU must come right "
                                  "after one of those (before a MaxPool2d: the same function)")
            layers[-1].relu = True
        elif hasattr(m, "shortcut_src"):
            if not layers or layers[-1].relu or layers[-1].lut is not None \
                    or layers[-1].shortcut is not None \
                    or layers[-1].kind not in ("linear", "conv") \
                    or not -1 <= m.shortcut_src < len(layers) - 1:
                raise VoodooError(f"from_torch: layer {name} (a residual shortcut) does not "
                                  "follow a Linear or Conv2d, or reads a layer after it\n    "
                                  "hint: a shortcut joins a layer's accumulators, before its "
                                  "activation")
            layers[-1].shortcut = m
        elif hasattr(m, "lut_values"):
            if not layers or layers[-1].relu or layers[-1].lut is not None \
                    or layers[-1].kind not in ("linear", "conv"):
                raise VoodooError(f"from_torch: layer {name} (a lookup) does not follow a "
                                  "Linear or Conv2d\n    hint: a lookup reads a Linear's or "
                                  "Conv2d's accumulators")
            layers[-1].lut = m
        elif isinstance(m, nn.Flatten):
            continue
        else:
            raise VoodooError(f"from_torch: layer {name} ({type(m).__name__}) is not "
                              "supported\n    hint: the importer takes Linear, Conv2d, "
                              "AvgPool2d, MaxPool2d, ReLU and Flatten layers; fold other "
                              "layers into the weights first")
    if not any(l.kind in ("linear", "conv") for l in layers):
        raise VoodooError("from_torch: the model has no Linear layer or Conv2d")
    _check_size(layers)
    return layers


def _check_size(layers: list[_Layer]) -> None:
    """Refuse, from the shapes alone, a model whose weights no set of maps holds, before
    its text is written (Linear(2000, 2000): minutes and gigabytes otherwise)."""
    from interop.onnx_check import MAX_WEIGHTS

    sizes = [(l, int(l.module.weight.numel())) for l in layers if l.kind in ("linear", "conv")]
    total = sum(n for _, n in sizes)
    if total > MAX_WEIGHTS:
        big, n = max(sizes, key=lambda p: p[1])
        raise VoodooError(f"from_torch: the model has {total:,} weights ({_where(big)} alone "
                          f"{n:,}); a network that fits maps has at most {MAX_WEIGHTS:,} (a "
                          "map holds 400,000 weighted lines)\n    hint: use smaller layers")


def _options(scales, clamps, n_relu: int, input_range, name: str):
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
    return s_list, l_list, lo, hi


def to_dnet(model, input_range: tuple[int, int] = (0, 1), scales=None, clamps=None,
            name: str = "torch_net", comment: str = "", input_shape=None,
            prefix: str = "", layers_only: bool = False) -> str:
    """The .dnet text of an integer nn.Sequential (see the module docstring). `prefix`
    names its vectors (`{prefix}h1`, ..., `{prefix}o`); `layers_only` leaves out the
    network, input and output statements (to put several models on one input x)."""
    layers = _layers(model)
    s_list, l_list, lo, hi = _options(scales, clamps, sum(l.relu for l in layers),
                                      input_range, name)
    shape = _input_shape(layers[0], input_shape)
    n_in = shape.size if isinstance(shape, Shape) else shape
    out = [f"# {line}" if line else "#" for line in comment.splitlines()]
    if not layers_only:
        out += [f"network {name}", "", f"input x[{n_in}] : {lo}..{hi}", ""]
    prev, relu_k = "x", 0
    made: list[tuple[str, int]] = []   # each layer's vector and size, for shortcuts
    for j, layer in enumerate(layers):
        lname = prefix + ("o" if j == len(layers) - 1 else f"h{j + 1}")
        gate = "identity"
        if layer.lut is not None:
            lo, T = layer.lut.lut_lo, layer.lut.lut_values
            gate = f"lut({lo}..{lo + len(T) - 1}, [{', '.join(map(str, T.tolist()))}])"
        if layer.relu:
            s, L = s_list[relu_k], l_list[relu_k]
            relu_k += 1
            gate = f"relu(s={s})" if L is None else f"relu(s={s}, max={L})"
        text, shape = _LAYER_TEXT[layer.kind](layer, prev, lname, gate, shape)
        if layer.shortcut is not None:
            text += _shortcut_text(layer, lname, _flat(shape), made, n_in)
        out += text + [""]
        made.append((lname, _flat(shape)))
        prev = lname
    if not layers_only:
        out.append(f"output {prev}")
    return "\n".join(out) + "\n"


def _shortcut_text(layer: _Layer, lname: str, n: int, made: list, n_in: int) -> list[str]:
    """Lines adding the shortcut's source, times its weight per channel, to lname."""
    m = layer.shortcut
    src, size = ("x", n_in) if m.shortcut_src < 0 else made[m.shortcut_src]
    w = np.asarray(m.shortcut_weights, np.int64).reshape(-1)
    if size != n or n % len(w):
        raise VoodooError(f"from_torch: {_where(layer)}: a shortcut from {src} ({size} values) "
                          f"joins {n} accumulators with {len(w)} weights")
    if np.abs(w).max(initial=0) > WEIGHT_LIMIT:
        raise VoodooError(f"from_torch: {_where(layer)}: a shortcut weight beyond "
                          f"{WEIGHT_LIMIT}")
    return [f"lines {src} -> {lname} diag [{', '.join(map(str, np.repeat(w, n // len(w))))}]"]


def _input_shape(first: _Layer, input_shape):
    """The input as an image Shape (needed before a Conv2d or pool) or a flat size."""
    if input_shape is not None:
        dims = tuple(int(v) for v in input_shape)
        if len(dims) == 2:
            dims = (1,) + dims
        if len(dims) != 3 or min(dims) < 1:
            raise VoodooError(f"from_torch: input_shape {tuple(input_shape)!r} is not "
                              "(channels, height, width)")
        return Shape(*dims)
    if first.kind == "linear":
        return first.module.in_features
    raise VoodooError(f"from_torch: layer {first.pos} ({type(first.module).__name__}) reads an "
                      "image, so the input's shape is needed\n    hint: pass "
                      "input_shape=(channels, height, width)")


def _where(layer: _Layer) -> str:
    m = layer.module
    if layer.kind == "linear":
        return f"layer {layer.pos} (Linear {m.in_features}->{m.out_features})"
    return f"layer {layer.pos} ({type(m).__name__})"


def _flat(shape) -> int:
    return shape.size if isinstance(shape, Shape) else shape


def _linear_text(layer: _Layer, prev: str, lname: str, gate: str, shape):
    lin, where = layer.module, _where(layer)
    if lin.in_features != _flat(shape):
        raise VoodooError(f"from_torch: {where} takes {lin.in_features} inputs but the "
                          f"layer before it gives {_flat(shape)}")
    W = _integer_array(lin.weight, where, "weight", WEIGHT_LIMIT)
    out = [f"neuron {lname}[{lin.out_features}] : {gate}", f"lines {prev} -> {lname} dense ["]
    out.extend("  [" + ", ".join(map(str, row)) + "]," for row in W.tolist())
    out.append("]")
    out += _bias_text(lin.bias, where, lname, 1)
    return out, lin.out_features


def _bias_text(bias, where: str, lname: str, repeat: int) -> list[str]:
    """A bias list; a conv's per-channel bias is repeated over the channel's positions."""
    if bias is None:
        return []
    b = _integer_array(bias, where, "bias", INT_LIMIT)
    if not b.any():
        return []
    return [f"bias {lname} = [" + ", ".join(map(str, np.repeat(b, repeat).tolist())) + "]"]


def _image_of(layer: _Layer, shape) -> Shape:
    if not isinstance(shape, Shape):
        raise VoodooError(f"from_torch: {_where(layer)} reads an image but the layer before "
                          "it gives a flat vector\n    hint: pooling and convolutions come "
                          "before the Linear layers")
    return shape


def _conv_text(layer: _Layer, prev: str, lname: str, gate: str, shape):
    m, where = layer.module, _where(layer)
    shape = _image_of(layer, shape)
    if m.in_channels != shape.channels:
        raise VoodooError(f"from_torch: {where} takes {m.in_channels} channels but the layer "
                          f"before it gives {shape.channels}")
    if tuple(m.dilation) != (1, 1) or m.groups != 1 or m.padding_mode != "zeros":
        raise VoodooError(f"from_torch: {where} has dilation {tuple(m.dilation)}, groups "
                          f"{m.groups}, padding mode {m.padding_mode!r}\n    hint: the importer "
                          "takes plain convolutions (dilation 1, groups 1, zero padding)")
    pad = _padding(m, where)
    W = _integer_array(m.weight, where, "weight", WEIGHT_LIMIT)
    c = _conv(where, "conv", {"in": [shape.channels, shape.height, shape.width],
                              "out": m.out_channels, "kernel": list(m.kernel_size),
                              "stride": list(m.stride), "pad": pad},
              W.reshape(m.out_channels, -1).tolist())
    o = c.out_shape
    out = [f"neuron {lname}[{o.size}] : {gate}", f"lines {prev} -> {lname} {c.text()} ["]
    out.extend("  [" + ", ".join(map(str, row)) + "]," for row in c.rows())
    out.append("]")
    out += _bias_text(m.bias, where, lname, o.height * o.width)
    return out, o


def _padding(m, where: str) -> list[int]:
    if isinstance(m.padding, str):
        if m.padding == "valid":
            return [0, 0]
        if all(k % 2 for k in m.kernel_size) and tuple(m.stride) == (1, 1):
            return [k // 2 for k in m.kernel_size]
        raise VoodooError(f"from_torch: {where} pads 'same' with an even kernel\n    hint: "
                          "give the padding as numbers")
    return list(m.padding)


def _pool_params(layer: _Layer, shape: Shape) -> dict:
    m, where = layer.module, _where(layer)
    pair = lambda v: list(v) if isinstance(v, (tuple, list)) else [v, v]  # noqa: E731
    if m.ceil_mode:
        raise VoodooError(f"from_torch: {where} uses ceil_mode\n    hint: the importer "
                          "takes ceil_mode=False (windows inside the padded image)")
    if layer.kind == "maxpool" and (pair(m.dilation) != [1, 1] or m.return_indices):
        raise VoodooError(f"from_torch: {where} has dilation or return_indices\n    hint: "
                          "the importer takes plain max pooling")
    return {"in": [shape.channels, shape.height, shape.width], "kernel": pair(m.kernel_size),
            "stride": pair(m.stride if m.stride is not None else m.kernel_size),
            "pad": pair(m.padding)}


def _avgpool_text(layer: _Layer, prev: str, lname: str, gate: str, shape):
    m, where = layer.module, _where(layer)
    shape = _image_of(layer, shape)
    if m.divisor_override != 1:
        raise VoodooError(f"from_torch: {where} divides by its window size, which is not an "
                          "integer operation\n    hint: an integer model sums its windows: "
                          "nn.AvgPool2d(..., divisor_override=1), with the 1/k^2 folded into "
                          "the next layer (models/cnn.py's quantiser does this)")
    c = _conv(where, "avgpool", _pool_params(layer, shape), None)
    o = c.out_shape
    return [f"neuron {lname}[{o.size}] : {gate}", f"lines {prev} -> {lname} {c.text()}"], o


def _maxpool_text(layer: _Layer, prev: str, lname: str, gate: str, shape):
    shape = _image_of(layer, shape)
    c = _conv(_where(layer), "maxpool", _pool_params(layer, shape), None)
    head = c.text()
    return [f"neuron {lname}[{c.out_shape.size}] : maxpool({prev}, {head[len('maxpool('):]}"], \
        c.out_shape


def _conv(where: str, kind: str, params: dict, rows):
    try:
        c = conv.make(kind, params, rows)
        conv.check_sizes(c, c.shape.size, None)
    except conv.ShapeError as e:
        raise VoodooError(f"from_torch: {where}: {e.message}\n    hint: {e.hint}") from None
    return c


_LAYER_TEXT = {"linear": _linear_text, "conv": _conv_text, "avgpool": _avgpool_text,
               "maxpool": _maxpool_text}


def from_torch(model, input_range: tuple[int, int] = (0, 1), scales=None, clamps=None,
               name: str = "torch_net", input_shape=None):
    """A validated Netlist (ranges computed) from an integer nn.Sequential.

    input_range: the declared range of every input; scales / clamps: the relu divisor S and
    clamp L of each ReLU in order (an int applies to all; clamps None means "as large as
    the range analysis can reach"); input_shape: (channels, height, width) of the input
    when the first layer is a Conv2d or a pool.
    """
    from dsl.parser import parse

    return parse(to_dnet(model, input_range, scales, clamps, name, input_shape=input_shape),
                 f"<from_torch {name}>")
