"""A float ONNX graph as the float nn.Sequential it computes (for interop/onnx_import.py).

Owns the mapping of one chain of ONNX operators, input to output, onto torch layers:

| ONNX | torch |
| --- | --- |
| `Conv` (group 1, dilation 1, symmetric pads) | `Conv2d` |
| `Gemm` (transA 0; alpha and beta folded in), `MatMul` by a constant (+ `Add` of one) | `Linear` |
| `Relu` | `ReLU` |
| `AveragePool` (ceil_mode 0; padding only when it is counted) | `AvgPool2d` |
| `MaxPool` (ceil_mode 0, dilation 1, no indices output) | `MaxPool2d` |
| `Flatten` (axis 1), `Reshape` to (batch, n) | `Flatten` |
| `Identity`, `Dropout` | nothing (inference) |

Everything else, and graphs that branch, are errors naming the node.
"""
from __future__ import annotations

import numpy as np

from dsl.diagnostics import VoodooError


def _attrs(node) -> dict:
    from onnx import helper

    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


class _Chain:
    """Walks the graph's nodes in order, following the one tensor from input to output."""

    def __init__(self, m, where: str, consts: dict):
        self.m, self.where = m, where
        self.consts = consts
        self.layers: list = []
        self.widths: dict[int, tuple] = {}   # a Reshape's layer -> (node, width it asks for)
        self.pending_pad = None                      # a Pad's (top, left) waiting for its Conv
        self.ended_in_softmax = False                 # the last node was a Softmax (dropped)

    def fail(self, node, why: str, hint: str = "export the layers as Conv, Gemm, Relu, "
                                                "AveragePool, MaxPool and Flatten"):
        raise VoodooError(f"{self.where}: node {node.name or node.output[0]!r} "
                          f"({node.op_type}): {why}\n    hint: {hint}")

    def const(self, node, i: int) -> np.ndarray:
        if i >= len(node.input) or node.input[i] not in self.consts:
            self.fail(node, f"input {i} must be a constant (an initializer)")
        return np.asarray(self.consts[node.input[i]], dtype=np.float64)

    def run(self, x_name: str) -> list:
        from interop.onnx_check import fold_constants

        cur = x_name
        folded = fold_constants(self.m, self.consts, self.where)
        for node in self.m.graph.node:
            if node.op_type == "Constant" or node.output[0] in folded:
                continue
            if not node.input or node.input[0] != cur:
                self.fail(node, f"does not read the chain's tensor {cur!r}",
                          "the importer takes one chain of layers without branches")
            if any(name not in self.consts for name in node.input[1:] if name):
                self.fail(node, "a second computed input (the graph branches)",
                          "the importer takes one chain of layers without branches")
            getattr(self, node.op_type.lower())(node)
            cur = node.output[0]
        if self.pending_pad is not None:
            raise VoodooError(f"{self.where}: a Pad that no convolution follows\n    hint: "
                              "zero padding is read as the next Conv's padding")
        if cur != self.m.graph.output[0].name:
            raise VoodooError(f"{self.where}: the chain of layers does not end at the graph's "
                              "output\n    hint: the importer takes one chain of layers")
        return self.layers

    # -- operators ------------------------------------------------------------------------
    def conv(self, node):
        torch = __import__("torch")
        W = self.const(node, 1)
        B = self.const(node, 2) if len(node.input) > 2 and node.input[2] else None
        a = _attrs(node)
        if a.get("group", 1) != 1 or any(d != 1 for d in a.get("dilations", [1, 1])):
            self.fail(node, "a grouped or dilated convolution", "use group 1 and dilation 1")
        if W.ndim != 4:
            self.fail(node, f"a {W.ndim - 2}-D convolution", "the importer takes 2-D ones")
        pads = self._pads(node, a, W.shape[2:])
        if self.pending_pad is not None:  # a ZeroPad2d before it: the same zeros, in the conv
            pads, self.pending_pad = (pads[0] + self.pending_pad[0], pads[1] + self.pending_pad[1]), None
        m = torch.nn.Conv2d(W.shape[1], W.shape[0], tuple(W.shape[2:]),
                            tuple(a.get("strides", [1, 1])), pads, bias=B is not None)
        with torch.no_grad():
            m.weight.copy_(torch.from_numpy(W))
            if B is not None:
                m.bias.copy_(torch.from_numpy(B))
        self.layers.append(m)

    def _pads(self, node, a: dict, kernel) -> tuple[int, int]:
        auto = a.get("auto_pad", b"NOTSET")
        auto = auto.decode() if isinstance(auto, bytes) else auto
        if auto in ("SAME_UPPER", "SAME_LOWER"):
            if any(s != 1 for s in a.get("strides", [1, 1])) or not all(k % 2 for k in kernel):
                self.fail(node, f"auto_pad {auto} with an even kernel or a stride",
                          "give explicit symmetric pads")
            return tuple(int(k) // 2 for k in kernel)
        p = list(a.get("pads", [0, 0, 0, 0])) if auto != "VALID" else [0, 0, 0, 0]
        if p[0] != p[2] or p[1] != p[3]:
            self.fail(node, f"asymmetric pads {p}", "pad both sides of each dimension equally")
        return int(p[0]), int(p[1])

    def gemm(self, node):
        a = _attrs(node)
        if a.get("transA", 0):
            self.fail(node, "transA = 1", "export the layer with its input first")
        B = self.const(node, 1) * a.get("alpha", 1.0)
        W = B if a.get("transB", 0) else B.T
        C = self.const(node, 2) * a.get("beta", 1.0) if len(node.input) > 2 and node.input[2] \
            else None
        if C is not None and C.size not in (1, W.shape[0]):
            self.fail(node, f"a bias of shape {C.shape}", "one bias per output")
        self._linear(W, None if C is None else np.broadcast_to(C.reshape(-1), (W.shape[0],)))

    def matmul(self, node):
        W = self.const(node, 1)
        if W.ndim != 2:
            self.fail(node, f"a {W.ndim}-D matrix", "multiply by a (inputs, outputs) matrix")
        self._linear(W.T, None)

    def _linear(self, W: np.ndarray, B):
        torch = __import__("torch")
        m = torch.nn.Linear(W.shape[1], W.shape[0], bias=True)
        with torch.no_grad():
            m.weight.copy_(torch.from_numpy(np.ascontiguousarray(W)))
            m.bias.copy_(torch.from_numpy(np.zeros(W.shape[0]) if B is None else np.asarray(B)))
        self.layers.append(m)

    def add(self, node):
        """A constant added to a Linear's or Conv's output: its bias."""
        torch = __import__("torch")
        prev = self.layers[-1] if self.layers else None
        c = self.const(node, 1)
        n = prev.out_features if isinstance(prev, torch.nn.Linear) else \
            prev.out_channels if isinstance(prev, torch.nn.Conv2d) else None
        per_channel = c.size == n and (isinstance(prev, torch.nn.Linear) or c.ndim < 2
                                       or c.shape[-2:] == (1, 1))
        if n is not None and (c.size == 1 or per_channel):
            if prev.bias is None:
                prev.bias = torch.nn.Parameter(torch.zeros(n, dtype=prev.weight.dtype))
            with torch.no_grad():
                prev.bias.add_(torch.from_numpy(np.broadcast_to(c.reshape(-1), (n,)).copy())
                               .to(prev.bias.dtype))
            return
        self.fail(node, "an Add that is not a MatMul's bias",
                  "add biases right after a MatMul (or use Gemm)")

    def relu(self, node):
        self.layers.append(__import__("torch").nn.ReLU())

    def averagepool(self, node):
        a = _attrs(node)
        pads = self._pool(node, a)
        if any(pads) and not a.get("count_include_pad", 0):
            self.fail(node, "padding that is not counted in the average (count_include_pad 0)",
                      "use count_include_pad=1, or no padding")
        self.layers.append(__import__("torch").nn.AvgPool2d(
            tuple(a["kernel_shape"]), tuple(a.get("strides", [1, 1])), pads))

    def maxpool(self, node):
        a = _attrs(node)
        if len([o for o in node.output if o]) > 1:
            self.fail(node, "the indices output", "export MaxPool without indices")
        if any(d != 1 for d in a.get("dilations", [1, 1])):
            self.fail(node, "a dilated max pool", "use dilation 1")
        pads = self._pool(node, a)
        self.layers.append(__import__("torch").nn.MaxPool2d(
            tuple(a["kernel_shape"]), tuple(a.get("strides", [1, 1])), pads))

    def _pool(self, node, a: dict) -> tuple[int, int]:
        if a.get("ceil_mode", 0):
            self.fail(node, "ceil_mode 1", "use ceil_mode 0")
        if len(a.get("kernel_shape", [])) != 2:
            self.fail(node, "not a 2-D pool", "pool over height and width")
        return self._pads(node, a, a["kernel_shape"])

    def flatten(self, node):
        if _attrs(node).get("axis", 1) != 1:
            self.fail(node, "a flatten that is not at axis 1", "flatten to (batch, features)")
        self.layers.append(__import__("torch").nn.Flatten())

    def reshape(self, node):
        shape = self.const(node, 1).astype(np.int64).tolist()
        if len(shape) != 2 or shape[0] not in (0, 1, -1):
            self.fail(node, f"a reshape to {shape}", "reshape only to (batch, -1)")
        self.widths[len(self.layers)] = (node, shape[1])
        self.layers.append(__import__("torch").nn.Flatten())

    def identity(self, node):
        pass

    def batchnormalization(self, node):
        """Folded into the Conv or Linear before it (inference: its running statistics)."""
        torch = __import__("torch")
        prev = self.layers[-1] if self.layers else None
        if not isinstance(prev, (torch.nn.Conv2d, torch.nn.Linear)):
            self.fail(node, "a BatchNorm that does not follow a Conv or a Linear layer",
                      "fold it into the layer before it, or put it after one")
        if len([o for o in node.output if o]) > 1:
            self.fail(node, "training-mode outputs", "export the model in eval mode")
        g, b, mean, var = (self.const(node, i) for i in range(1, 5))
        k = g / np.sqrt(var + _attrs(node).get("epsilon", 1e-5))
        n = prev.weight.shape[0]
        if k.size != n:
            self.fail(node, f"{k.size} channels after a layer of {n}")
        with torch.no_grad():
            shape = (n,) + (1,) * (prev.weight.dim() - 1)
            prev.weight.mul_(torch.from_numpy(k.reshape(shape)).to(prev.weight.dtype))
            bias = prev.bias.detach().double().numpy() if prev.bias is not None else 0.0
            new = (bias - mean) * k + b
            prev.bias = torch.nn.Parameter(torch.from_numpy(new).to(prev.weight.dtype))

    def globalaveragepool(self, node):
        """An average over the whole image: an AvgPool2d of its size (set in float_stack,
        where the image's size is known)."""
        self.layers.append(_WholeImage())

    def pad(self, node):
        """ZeroPad2d: zeros around the image, read as the next Conv's padding."""
        a = _attrs(node)
        mode = a.get("mode", b"constant")
        mode = mode.decode() if isinstance(mode, bytes) else mode
        p = self.const(node, 1).astype(np.int64).tolist() if len(node.input) > 1 \
            else list(a.get("pads", []))
        value = self.const(node, 2) if len(node.input) > 2 and node.input[2] else np.zeros(1)
        if mode != "constant" or np.any(value != 0) or len(p) != 8 or any(p[:2]) \
                or any(p[4:6]) or p[2] != p[6] or p[3] != p[7] or self.pending_pad is not None:
            self.fail(node, f"a padding other than symmetric zeros around the image ({mode}, "
                      f"{p})", "pad with zeros, the same on both sides, right before a Conv")
        self.pending_pad = (p[2], p[3])

    def softmax(self, node):
        """At the output: the argmax it feeds is the argmax of the logits before it."""
        if node.output[0] != self.m.graph.output[0].name:
            self.fail(node, "a Softmax inside the network", "a Softmax may end the network")
        self.ended_in_softmax = True

    dropout = identity


class _WholeImage:
    """A placeholder for GlobalAveragePool until the image's size is known."""


def float_stack(m, x, where: str, consts: dict | None = None):
    """(float nn.Sequential, input shape) of a float ONNX graph: (C, H, W) for an image
    input (batch, C, H, W), else the number of features. `consts`: the graph's validated
    constants (interop/onnx_check.py), decoded here when not given."""
    from interop.onnx_check import constants

    torch = __import__("torch")
    consts = constants(m, where) if consts is None else consts
    dims = [d.dim_value for d in x.type.tensor_type.shape.dim]
    if len(dims) not in (2, 4) or any(d <= 0 for d in dims[1:]):
        raise VoodooError(f"{where}: the input's shape {dims} is not (batch, features) or "
                          "(batch, channels, height, width) with fixed sizes\n    hint: export "
                          "the model with a fixed input shape")
    chain = _Chain(m, where, consts)
    layers = _whole_images(chain.run(x.name), dims, where)
    model = torch.nn.Sequential(*layers).to(torch.float64)
    shape = tuple(dims[1:]) if len(dims) == 4 else dims[1]
    h = torch.zeros((1, *dims[1:]), dtype=torch.float64)
    try:
        with torch.no_grad():
            for k, layer in enumerate(layers):
                h = layer(h)
                node, width = chain.widths.get(k, (None, -1))
                if width not in (-1, h.shape[1]):
                    chain.fail(node, f"a reshape to width {width} of {h.shape[1]} features",
                               "reshape only to (batch, -1)")
    except RuntimeError as e:
        raise VoodooError(f"{where}: the layers' shapes do not fit together: "
                          f"{str(e).splitlines()[0]}") from None
    return model, shape


def _whole_images(layers: list, dims, where: str) -> list:
    """GlobalAveragePool placeholders as AvgPool2d over the image's size at that point."""
    torch = __import__("torch")
    h = torch.zeros((1, *dims[1:]), dtype=torch.float64)
    out = []
    try:
        with torch.no_grad():
            for layer in layers:
                if isinstance(layer, _WholeImage):
                    if h.dim() != 4:
                        raise VoodooError(f"{where}: a GlobalAveragePool of a flat vector")
                    layer = torch.nn.AvgPool2d(tuple(h.shape[2:]))
                h = layer.to(torch.float64)(h)
                out.append(layer)
    except RuntimeError as e:
        raise VoodooError(f"{where}: the layers' shapes do not fit together: "
                          f"{str(e).splitlines()[0]}") from None
    return out
