"""A float ONNX graph as the float nn.Sequential it computes (for interop/onnx_import.py).

Owns the mapping of one chain of ONNX operators, input to output, onto torch layers:

| ONNX | torch |
| --- | --- |
| `Conv` (group 1, dilation 1, symmetric pads) | `Conv2d` |
| `Gemm` (transA 0; alpha and beta folded in), `MatMul` by a constant (+ `Add` of one) | `Linear` |
| `Relu` | `ReLU` |
| an elementwise function of the chain's tensor (`Sigmoid`, `Tanh`, `LeakyRelu`, `Clip` / ReLU6, `Gelu` or its `Erf` and `Tanh` forms, `Elu`, `Mul(x, Sigmoid(x))`, ...: `ELEMENTWISE` nodes whose other inputs are scalar constants) | `Elementwise` (a lookup on the quantised values) |
| `AveragePool` (ceil_mode 0; padding only when it is counted) | `AvgPool2d` |
| `MaxPool` (ceil_mode 0, dilation 1, no indices output) | `MaxPool2d` |
| `Flatten` (axis 1), `Reshape` to (batch, n) | `Flatten` |
| `GlobalAveragePool`, `ReduceMean` over axes (2, 3) | `AvgPool2d` over the whole image (+ `Flatten` unless keepdims) |
| `BatchNormalization` after a `Conv` or `Gemm` / `MatMul` | folded into its weights and bias |
| a zero `Pad` (`ZeroPad2d`) before a `Conv`, `AveragePool`, or a `MaxPool` of values >= 0 | that layer's padding |
| `Softmax`, `LogSoftmax` at the output, over the features | nothing (its argmax is the logits') |
| `Identity`, `Dropout` | nothing (inference) |
| `Add` of the chain's tensor and an earlier one of the chain (a residual block's identity shortcut) | `SkipFrom` (in a `ResidualSequential`) |

Everything else, and graphs that branch otherwise (a shortcut through layers of its own),
are errors naming the node.
"""
from __future__ import annotations

import numpy as np

from dsl.diagnostics import VoodooError


def _attrs(node) -> dict:
    from onnx import helper

    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


ELEMENTWISE = {"Add", "Sub", "Mul", "Div", "Pow", "Sqrt", "Exp", "Log", "Erf", "Tanh",
               "Sigmoid", "Relu", "LeakyRelu", "Clip", "Neg", "Abs", "Max", "Min",
               "Softplus", "Softsign", "Elu", "Selu", "Celu", "Gelu", "HardSigmoid",
               "HardSwish", "Reciprocal", "Mish", "ThresholdedRelu", "Identity"}


PADDED = ("Conv", "AveragePool", "MaxPool")   # what a ZeroPad2d may come before
IN_PLACE = ("BatchNormalization", "Add")   # change the layer before them (folded into it)
PAD_HINT = "pad with zeros, the same on both sides, right before a Conv or a pool"


class _Chain:
    """Walks the graph's nodes in order, following the one tensor from input to output."""

    def __init__(self, m, where: str, consts: dict):
        self.m, self.where = m, where
        self.consts = consts
        self.layers: list = []
        self.widths: dict[int, tuple] = {}   # a Reshape's layer -> (node, width it asks for)
        self.pending_pad = None          # a Pad's (node, (top, left)) waiting for its layer
        self.ended_in_softmax = False                 # the last node was a Softmax (dropped)
        self.made: dict[str, int] = {}   # a chain tensor -> the layer it follows (-1: input)

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
        self.made[cur] = -1
        folded = fold_constants(self.m, self.consts, self.where)
        nodes = [n for n in self.m.graph.node
                 if n.op_type != "Constant" and n.output[0] not in folded]
        i = 0
        while i < len(nodes):
            node, before = nodes[i], len(self.layers)
            if self.pending_pad is not None and node.op_type not in PADDED:
                self.fail(self.pending_pad[0], f"a zero padding followed by {node.op_type} "
                          f"(node {node.name or node.output[0]!r})", PAD_HINT)
            new, used = self._read(nodes, i, cur)
            for layer in self.layers[before:]:   # errors later name the ONNX node
                layer.onnx_node = node.name or node.output[0]
            if len(self.layers) == before and node.op_type in IN_PLACE:
                # a layer changed in place (a folded BatchNorm or bias): what it made before
                # is gone, no shortcut may read it
                self.made = {k: v for k, v in self.made.items() if v != before - 1}
            cur = new
            self.made[cur] = len(self.layers) - 1
            i += used
        if self.pending_pad is not None:
            self.fail(self.pending_pad[0], "a zero padding at the end of the graph", PAD_HINT)
        if cur != self.m.graph.output[0].name:
            raise VoodooError(f"{self.where}: the chain of layers does not end at the graph's "
                              "output\n    hint: the importer takes one chain of layers")
        return self.layers

    def _read(self, nodes: list, i: int, cur: str) -> tuple[str, int]:
        """Node i (and the nodes of its activation): (the chain's new tensor, nodes read)."""
        node = nodes[i]
        region = self._region(nodes, i, cur)
        if region:  # an activation: one elementwise function of the chain's tensor
            return self._elementwise(region, cur), len(region)
        if node.op_type == "Add" and self._shortcut(node, cur):
            return node.output[0], 1
        if not node.input or node.input[0] != cur:
            self.fail(node, f"does not read the chain's tensor {cur!r}",
                      "the importer takes one chain of layers, joined only by identity "
                      "shortcuts (y = f(x) + x); a branch with layers of its own (a "
                      "projection shortcut) is not read")
        if any(name not in self.consts for name in node.input[1:] if name):
            self.fail(node, "a second computed input (the graph branches)",
                      "the importer takes one chain of layers, joined only by identity "
                      "shortcuts (y = f(x) + x)")
        handler = getattr(self, node.op_type.lower(), None)
        if handler is None:  # an elementwise operator with a per-channel constant
            self.fail(node, "an elementwise operator with a constant of more than one "
                      "value, outside a layer's bias",
                      "an activation is read as a lookup when its constants are scalars")
        handler(node)
        return node.output[0], 1

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
        pads = self._padded(self._pads(node, a, W.shape[2:]))
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
            m.bias.copy_(torch.from_numpy(np.zeros(W.shape[0]) if B is None else np.array(B)))
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

    def _shortcut(self, node, cur: str) -> bool:
        """A residual Add: the chain's tensor plus one it held before (not a constant)."""
        ins = [n for n in node.input if n]
        if len(ins) != 2 or cur not in ins or any(n in self.consts for n in ins):
            return False
        other = ins[1] if ins[0] == cur else ins[0]
        if other == cur or other not in self.made:
            self.fail(node, f"an addition of the chain's tensor and {other!r}, which no "
                      "earlier layer of the chain made (a shortcut through layers of its "
                      "own)", "the importer reads identity shortcuts: y = f(x) + x")
        self.layers.append(_skip_from(self.made[other]))
        return True

    # -- activations other than ReLU: elementwise regions ---------------------------------
    def _scalar_consts(self, node) -> bool:
        return all(np.asarray(self.consts[n]).size == 1 for n in node.input
                   if n and n in self.consts)

    def _region(self, nodes: list, i: int, cur: str) -> list:
        """The nodes from i on computing one elementwise function of `cur` (their other
        inputs scalar constants or each other's outputs), unless node i is a plain Relu or
        a layer's bias; [] if none."""
        first = nodes[i]
        if first.op_type not in ELEMENTWISE or first.op_type == "Identity" \
                or cur not in first.input \
                or not self._scalar_consts(first) or first.op_type == "Relu" \
                or (first.op_type == "Add" and self._is_bias(first)):
            return []
        inside, region = {cur}, []
        for node in nodes[i:]:
            ins = [n for n in node.input if n]
            if node.op_type not in ELEMENTWISE or not self._scalar_consts(node) or not all(
                    n in inside or n in self.consts for n in ins) \
                    or not any(n in inside for n in ins):
                break
            region.append(node)
            inside.update(o for o in node.output if o)
        if not region:
            return []
        # the region ends at its last node: nothing else may read what it computes inside
        inner = {o for n in region[:-1] for o in n.output if o} | {cur}
        later = [n for n in nodes[i + len(region):]]
        if any(x in inner for n in later for x in n.input) or \
                any(o.name in inner - {cur} for o in self.m.graph.output):
            self.fail(region[-1], "an elementwise region whose inner values are read "
                      "elsewhere", "an activation ends in one tensor that the next layer "
                      "reads")
        return region

    def _is_bias(self, node) -> bool:
        torch = __import__("torch")
        prev = self.layers[-1] if self.layers else None
        return isinstance(prev, (torch.nn.Linear, torch.nn.Conv2d)) and \
            any(n in self.consts for n in node.input[1:])

    def _elementwise(self, region: list, cur: str) -> str:
        self.layers.append(_elementwise_module(region, cur, self.consts, self.m, self.where))
        return region[-1].output[0]

    def averagepool(self, node):
        a = _attrs(node)
        own = self._pool(node, a)
        pads = self._pool_pads(node, a, own)
        if any(own) and not a.get("count_include_pad", 0):
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
        if self.pending_pad is not None and not self._nonnegative():
            self.fail(self.pending_pad[0], "a zero padding before a MaxPool of values that "
                      "may be negative (a zero would win over them at the borders)",
                      "pad a max pool's input only after a ReLU, or use the pool's own "
                      "padding")
        pads = self._pool_pads(node, a, self._pool(node, a))
        self.layers.append(__import__("torch").nn.MaxPool2d(
            tuple(a["kernel_shape"]), tuple(a.get("strides", [1, 1])), pads))

    def _pool_pads(self, node, a: dict, own) -> tuple[int, int]:
        """A pool's pads with a ZeroPad2d's before it (counted zeros, as the pad writes
        them; a max pool's input is then known non-negative), at most half its window."""
        pads, k = self._padded(own), a["kernel_shape"]
        if any(p > kk // 2 for p, kk in zip(pads, k)):
            self.fail(node, f"padding {list(pads)} (with the Pad before it) of more than half "
                      f"the window {list(k)}", "pad a pool by at most half its window")
        return pads

    def _nonnegative(self) -> bool:
        """The chain's tensor is >= 0: the last activation is a ReLU or a lookup whose
        values are (ReLU6, Sigmoid, ...), pools since keep it so."""
        torch = __import__("torch")
        for layer in reversed(self.layers):
            if isinstance(layer, (torch.nn.MaxPool2d, torch.nn.AvgPool2d)):
                continue
            if isinstance(layer, torch.nn.ReLU):
                return True
            if hasattr(layer, "lookup_values"):
                return bool(layer.lookup_values(np.linspace(-1e4, 1e4, 200_001)).min() >= 0)
            return False
        return False

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

    def reducemean(self, node):
        """A mean over height and width (torch.export writes AdaptiveAvgPool2d(1) and
        x.mean((2, 3)) so): a GlobalAveragePool, flattened unless the dimensions are kept."""
        a = _attrs(node)
        axes = self.const(node, 1).astype(np.int64).tolist() if len(node.input) > 1 and \
            node.input[1] else list(a.get("axes", []))
        if sorted(v % 4 for v in axes) != [2, 3] or a.get("noop_with_empty_axes", 0):
            self.fail(node, f"a mean over axes {axes}", "average over height and width "
                      "(axes 2 and 3) only: a global average pool")
        self.layers.append(_WholeImage())
        if not a.get("keepdims", 1):
            self.layers.append(__import__("torch").nn.Flatten())

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
                      f"{p})", PAD_HINT)
        self.pending_pad = (node, (p[2], p[3]))

    def _padded(self, pads) -> tuple[int, int]:
        """A layer's pads, plus those of a ZeroPad2d right before it (the same zeros)."""
        if self.pending_pad is None:
            return pads
        (top, left), self.pending_pad = self.pending_pad[1], None
        return pads[0] + top, pads[1] + left

    def softmax(self, node):
        """At the output (Softmax, LogSoftmax, over the features): the argmax it feeds is
        the argmax of the logits before it."""
        if node.output[0] != self.m.graph.output[0].name:
            self.fail(node, f"a {node.op_type} inside the network",
                      f"a {node.op_type} may end the network (it is dropped there)")
        if _attrs(node).get("axis", -1) not in (1, -1) or len(self.layers) and \
                isinstance(self.layers[-1], __import__("torch").nn.Conv2d):
            self.fail(node, f"a {node.op_type} over another axis than the features of a "
                      "flat vector", "end the network with a Linear (Gemm) and a Softmax "
                      "over its outputs")
        self.ended_in_softmax = True

    logsoftmax = softmax
    dropout = identity


def _elementwise_module(region, x: str, consts: dict, m, where: str):
    """An nn.Module computing the region's function elementwise with onnx's reference
    evaluator, in the graph's float32, on any shape (`lookup_values` for the tables of
    models/seq_quant.py)."""
    from onnx import TensorProto, helper, numpy_helper
    from onnx.reference import ReferenceEvaluator

    torch = __import__("torch")
    out = region[-1].output[0]
    names = {n for node in region for n in node.input if n in consts}
    g = helper.make_graph(region, "act", [helper.make_tensor_value_info(x, TensorProto.FLOAT,
                                                                        [None])],
                          [helper.make_tensor_value_info(out, TensorProto.FLOAT, [None])],
                          [numpy_helper.from_array(np.asarray(consts[n]).astype(np.float32)
                                                   .reshape(np.asarray(consts[n]).shape), n)
                           for n in sorted(names)])
    opset = [o for o in m.opset_import if o.domain in ("", "ai.onnx")]
    try:
        ev = ReferenceEvaluator(helper.make_model(g, opset_imports=opset))
        with np.errstate(all="ignore"):   # only whether it runs: log(0) may be -inf
            ev.run(None, {x: np.zeros(2, np.float32)})
    except Exception as e:
        raise VoodooError(f"{where}: node {region[0].name or region[0].output[0]!r} "
                          f"({region[0].op_type}): the activation cannot be evaluated: "
                          f"{str(e).splitlines()[0][:120]}") from None

    class Elementwise(torch.nn.Module):
        """The ONNX nodes {ops} as one activation."""

        def __init__(self):
            super().__init__()
            self.ops = [n.op_type for n in region]

        def lookup_values(self, v):
            v = np.asarray(v, dtype=np.float32)
            with np.errstate(all="ignore"):   # a value outside its domain: refused by its caller
                out = ev.run(None, {x: v.reshape(-1)})[0]
            return np.asarray(out, np.float64).reshape(v.shape)

        def forward(self, t):
            return torch.from_numpy(self.lookup_values(t.detach().numpy())).to(t.dtype)

        def extra_repr(self):
            return ", ".join(self.ops)

    return Elementwise()


def _skip_from(src: int):
    """The residual Add: adds the output of layer `src` (-1: the input) of the
    ResidualSequential it sits in; models/seq_quant.py reads `skip_from`."""
    torch = __import__("torch")

    class SkipFrom(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.skip_from = int(src)

        def forward(self, h):   # the addition itself is ResidualSequential's
            raise RuntimeError("SkipFrom runs inside a ResidualSequential")

        def extra_repr(self):
            return f"skip_from={self.skip_from}"

    return SkipFrom()


def residual_sequential(layers):
    """nn.Sequential whose SkipFrom layers add an earlier layer's output."""
    torch = __import__("torch")

    class ResidualSequential(torch.nn.Sequential):
        def forward(self, x):
            outs, h = [], x
            for layer in self:
                h = h + (outs[layer.skip_from] if layer.skip_from >= 0 else x) \
                    if hasattr(layer, "skip_from") else layer(h)
                outs.append(h)
            return h

    return ResidualSequential(*layers)


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
    model = (residual_sequential(layers) if any(hasattr(v, "skip_from") for v in layers)
             else torch.nn.Sequential(*layers)).to(torch.float64)
    shape = tuple(dims[1:]) if len(dims) == 4 else dims[1]
    h = x0 = torch.zeros((1, *dims[1:]), dtype=torch.float64)
    outs = []
    try:
        with torch.no_grad():
            for k, layer in enumerate(layers):
                h = _step(layer, h, outs, x0)
                node, width = chain.widths.get(k, (None, -1))
                if width not in (-1, h.shape[1]):
                    chain.fail(node, f"a reshape to width {width} of {h.shape[1]} features",
                               "reshape only to (batch, -1)")
    except RuntimeError as e:
        raise VoodooError(f"{where}: the layers' shapes do not fit together: "
                          f"{str(e).splitlines()[0]}") from None
    return model, shape


def _step(layer, h, outs: list, x0):
    """One layer of a ResidualSequential on input x0, its output kept in outs (the
    addition checks a shortcut's shape: it must match the tensor it joins)."""
    if hasattr(layer, "skip_from"):
        src = outs[layer.skip_from] if layer.skip_from >= 0 else x0
        if src.shape != h.shape:
            raise RuntimeError(f"a shortcut of shape {list(src.shape)} joins a tensor of shape "
                               f"{list(h.shape)}")
        h = h + src
    else:
        h = layer(h)
    outs.append(h)
    return h


def _whole_images(layers: list, dims, where: str) -> list:
    """GlobalAveragePool placeholders as AvgPool2d over the image's size at that point."""
    torch = __import__("torch")
    h = x0 = torch.zeros((1, *dims[1:]), dtype=torch.float64)
    out, outs = [], []
    try:
        with torch.no_grad():
            for layer in layers:
                if isinstance(layer, _WholeImage):
                    if h.dim() != 4:
                        raise VoodooError(f"{where}: a GlobalAveragePool of a flat vector")
                    name = getattr(layer, "onnx_node", None)
                    layer = torch.nn.AvgPool2d(tuple(h.shape[2:]))
                    layer.onnx_node = name
                h = _step(layer.to(torch.float64), h, outs, x0)
                out.append(layer)
    except RuntimeError as e:
        raise VoodooError(f"{where}: the layers' shapes do not fit together: "
                          f"{str(e).splitlines()[0]}") from None
    return out
