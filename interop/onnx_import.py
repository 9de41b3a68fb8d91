"""The ONNX importer: an ONNX graph becomes a netlist (docs/export.md, "Importing ONNX").

    from interop import from_onnx
    net = from_onnx("model.onnx", input_range=(0, 3), input_step=1 / 3)
    text = onnx_to_dnet("model.onnx", ...)        # the same as .dnet text

Owns reading two kinds of graph:

- **integer graphs** (int64 input), such as `build.py export --onnx` writes: read exactly,
  with no quantisation. The graph is interpreted symbolically, column by column: a
  `MatMul` by a constant and `Add`/`Sub`/`Mul` of constants are weighted sums; the
  exporter's floor division `Div(Sub(a, Mod(a, s)), s)` followed by `Max(., lo)` and
  `Min(., hi)` is a relu(s) neuron; `Cast(GreaterOrEqual(a, t))` a step; `Gather` of a
  constant table at a clamped, shifted accumulator a lut; `Mul` of two computed columns a
  product; every column a `Concat` collects becomes one neuron, so the netlist has the
  exporter's nodes one for one (named n0, n1, ...). The exporter records the inputs'
  ranges in the model's metadata (`voodoonet.input_ranges`); other graphs take
  `input_range`. Multi-step (spiking) graphs are refused.
- **float graphs** of `Conv`, `Gemm`, `MatMul` (+ `Add`), `Relu`, `AveragePool`,
  `MaxPool`, `Flatten` and `Reshape` (to a flat vector), with what torch exports around
  them (BatchNorm, ZeroPad2d, global average pools, a final Softmax, other activations as
  lookups, identity shortcuts; interop/onnx_float.py), one chain from the input to the
  output: rebuilt as a float nn.Sequential and quantised by models/seq_quant.py (the path
  models/cnn.py uses), its divisors calibrated on `calibration` inputs (default: 512
  seeded random inputs within the range) by agreement with the float model's answers.

Any other operator is an error naming every one the graph uses.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from dsl.diagnostics import VoodooError
from dsl.ir import INT_LIMIT, WEIGHT_LIMIT
from interop.onnx_check import (check_graph, check_ranges_meta, constants, load_model,
                                onnx_module, type_name)
from interop.onnx_float import ELEMENTWISE, float_stack

META_RANGES = "voodoonet.input_ranges"
FLOAT_OPS = ("Conv", "Gemm", "MatMul", "Add", "Relu", "AveragePool", "MaxPool", "Flatten",
             "Reshape", "Identity", "Dropout", "Constant", "BatchNormalization",
             "GlobalAveragePool", "ReduceMean", "Pad", "Softmax", "LogSoftmax")
ACTIVATION_OPS = tuple(sorted(set(ELEMENTWISE) - set(FLOAT_OPS)))  # lookups, interop/onnx_float
INT_OPS = ("MatMul", "Add", "Sub", "Mul", "Mod", "Div", "Max", "Min", "GreaterOrEqual",
           "Cast", "Gather", "Concat", "Identity", "Constant")


def _graph_input(m, where: str):
    inits = {i.name for i in m.graph.initializer}
    ins = [i for i in m.graph.input if i.name not in inits]
    if len(ins) != 1 or len(m.graph.output) != 1:
        raise VoodooError(f"{where}: the graph has {len(ins)} inputs and {len(m.graph.output)} "
                          "outputs\n    hint: the importer takes one input tensor and one "
                          "output tensor")
    return ins[0]


def _attrs(node) -> dict:
    from onnx import helper

    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


def _refuse_unknown(m, allowed, where: str, kind: str, folded=frozenset()) -> None:
    bad: dict[str, list[str]] = {}
    for n in m.graph.node:
        if n.op_type not in allowed and n.output[0] not in folded:
            bad.setdefault(n.op_type, []).append(n.name or n.output[0])
    if bad:
        listed = ", ".join(f"{op} (node {names[0]!r}{f' and {len(names) - 1} more' if len(names) > 1 else ''})"
                           for op, names in sorted(bad.items()))
        why = ""
        if kind == "float":
            why = (f", and, as activations (lookups on the quantised values), elementwise "
                   f"functions of a layer's output made of {', '.join(ACTIVATION_OPS)} with "
                   "scalar constants")
        raise VoodooError(f"{where}: unsupported ONNX operator{'s' if len(bad) > 1 else ''} "
                          f"in this {kind} graph: {listed}\n    hint: {'an' if kind[0] in 'aeiou' else 'a'} "
                          f"{kind} graph may use "
                          f"{', '.join(allowed if kind != 'float' else FLOAT_OPS)}{why}")


def _net_name(m, name: str | None) -> str:
    if name is not None:
        return name
    g = m.graph.name
    return g if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]{0,99}", g or "") else "onnx_net"


def onnx_to_dnet(model, input_range=(0, 1), input_step: float = 1.0, calibration=None,
                 weight_bits: int = 6, clamp: int = 15, name: str | None = None,
                 where: str = "<onnx>", ort_pairs: str = "auto") -> str:
    """The .dnet text of an ONNX model (see the module docstring). ort_pairs says how an
    onnxruntime int8 graph's u8s8 pair sums are read (interop/ort_pairs.py): auto (as this
    machine's onnxruntime computes them), saturate or exact."""
    onnx = onnx_module()
    m = load_model(model, where)
    consts = constants(m, where)
    check_graph(m, consts, where)  # every node and constant, before anything is built
    x = _graph_input(m, where)
    elem = x.type.tensor_type.elem_type
    from interop.quant_graph import is_quantised, quantised_dnet

    if is_quantised(m):
        return quantised_dnet(m, consts, input_range, input_step, _net_name(m, name), where,
                              ort_pairs)
    input_range = (0, 1) if input_range is None else input_range
    input_step = 1.0 if input_step is None else input_step
    if elem in (onnx.TensorProto.INT64, onnx.TensorProto.INT32):
        ranges = _input_ranges(m, x, input_range, where)  # refuses multi-step graphs first
        _refuse_unknown(m, INT_OPS, where, "integer")
        return _IntegerGraph(m, consts, where).dnet(ranges, _net_name(m, name))
    if elem not in (onnx.TensorProto.FLOAT, onnx.TensorProto.DOUBLE):
        raise VoodooError(f"{where}: the input is of type {type_name(elem)}\n    hint: the "
                          "importer reads float32/float64 graphs (quantised here or, with "
                          "QuantizeLinear or Quant nodes, exactly) and int64 graphs (exact)")
    from interop.onnx_check import fold_constants

    _refuse_unknown(m, FLOAT_OPS + ACTIVATION_OPS, where, "float", fold_constants(m, consts, where))
    _check_step(input_step, where)
    model_f, shape = float_stack(m, x, where, consts)
    return _quantised_dnet(model_f, shape, input_range, input_step, calibration, weight_bits,
                           clamp, _net_name(m, name), where)


def _check_step(input_step, where: str) -> None:
    import math

    if not (isinstance(input_step, (int, float)) and math.isfinite(input_step)
            and input_step > 0):
        raise VoodooError(f"{where}: input step {input_step!r} must be a positive, finite "
                          "number (the float value of one input step)")


def from_onnx(model, input_range=(0, 1), input_step: float = 1.0, calibration=None,
              weight_bits: int = 6, clamp: int = 15, name: str | None = None,
              ort_pairs: str = "auto"):
    """A validated Netlist from an ONNX model (a path, bytes or an onnx.ModelProto)."""
    from dsl.parser import parse

    where = model if isinstance(model, str) else "<onnx>"
    text = onnx_to_dnet(model, input_range, input_step, calibration, weight_bits, clamp, name,
                        where, ort_pairs)
    return parse(text, f"<from_onnx {where}>")


def _range_pair(r, where: str) -> tuple[int, int]:
    try:
        lo, hi = (int(v) for v in r)
    except (TypeError, ValueError):
        raise VoodooError(f"{where}: input range {r!r} is not a (lo, hi) pair of integers") \
            from None
    if lo > hi:
        raise VoodooError(f"{where}: input range {lo}..{hi} is empty")
    return lo, hi


def _input_ranges(m, x, input_range, where: str) -> list[tuple[int, int]]:
    """Per-input ranges: the exporter's metadata, else input_range for every input."""
    dims = x.type.tensor_type.shape.dim
    if len(dims) != 2:
        raise VoodooError(f"{where}: the integer graph's input has {len(dims)} dimensions\n"
                          "    hint: only one-step graphs (batch, inputs) are imported; a "
                          "multi-step (spiking) netlist cannot come back from ONNX")
    n = dims[1].dim_value if dims[1].HasField("dim_value") else 0
    meta = {p.key: p.value for p in m.metadata_props}
    if META_RANGES in meta:
        return check_ranges_meta(meta[META_RANGES], n or None, META_RANGES, where)
    if n <= 0:
        raise VoodooError(f"{where}: the input's width is not fixed\n    hint: give the graph "
                          "a static (batch, N) input")
    return [_range_pair(input_range, where)] * n


def quantise_float(model_f, shape, input_range, input_step, calibration, weight_bits, clamp,
                   where):
    """(QuantStack, divisors, calibration inputs, agreement with the float model's argmax
    on them) of a float model (models/seq_quant.py)."""
    from models.seq_quant import QuantStack, calibrate

    torch = __import__("torch")
    lo, hi = _range_pair(input_range, where)
    _check_step(input_step, where)
    try:
        q = QuantStack(model_f, shape, input_step, weight_bits, clamp, (lo, hi))
    except VoodooError as e:  # name the file, not only the layer
        raise VoodooError(f"{where}: {e}") from None
    n_in = int(np.prod(shape)) if isinstance(shape, tuple) else shape
    if calibration is None:
        x = np.random.default_rng(0).integers(lo, hi + 1, (512, n_in))
    else:
        x = np.asarray(calibration)
        if x.ndim != 2 or x.shape[0] == 0 or x.shape[1] != n_in \
                or not np.issubdtype(x.dtype, np.integer) \
                or x.min(initial=lo) < lo or x.max(initial=hi) > hi:
            raise VoodooError(f"{where}: calibration inputs must be integers of shape (N, "
                              f"{n_in}) with N >= 1, within {lo}..{hi}; got {x.dtype} "
                              f"{x.shape}")
    want = q.float_logits(torch.as_tensor(x)).argmax(1).numpy()
    try:  # a lookup's table too wide, a shortcut's shape: name the file
        s = calibrate(q, x, lambda out: float((out.argmax(1) == want).mean()))
    except VoodooError as e:
        raise VoodooError(f"{where}: {e}") from None
    agree = float((q.integer_outputs(x, s).argmax(1) == want).mean())
    return q, s, x, agree


def _quantised_dnet(model_f, shape, input_range, input_step, calibration, weight_bits, clamp,
                    name, where) -> str:
    from interop.torch_import import to_dnet

    q, s, x, agree = quantise_float(model_f, shape, input_range, input_step, calibration,
                                    weight_bits, clamp, where)
    lo, hi = _range_pair(input_range, where)
    try:
        st = q.integer_model(s, (lo, hi))
    except VoodooError as e:
        raise VoodooError(f"{where}: {e}") from None
    luts = sum(step.act is not None for step in q.steps)
    comment = (f"{name}: imported from ONNX by interop/onnx_import.py and quantised "
               f"(models/seq_quant.py)\n{weight_bits}-bit weights, relu clamp {clamp}, "
               f"divisors {s}{f' ({luts} of them lookups)' if luts else ''}; inputs {lo}..{hi}, one input step = {input_step:g} in the float "
               f"model\nagrees with the float model on {100 * agree:.1f}% of "
               f"{len(x)} calibration inputs")
    try:
        return to_dnet(st.model, (lo, hi), st.scales, st.clamps, name, comment,
                       input_shape=st.input_shape)
    except VoodooError as e:  # name the file, not only the layer
        raise VoodooError(f"{where}: {e}") from None


# ------------------------------------------------------------------- integer graphs
@dataclass
class _Lin:
    """sum(w * node) + c over netlist nodes (indices into _IntegerGraph.nodes)."""

    w: dict = field(default_factory=dict)
    c: int = 0

    def node(self):
        """The node this is exactly, if any."""
        if self.c == 0 and len(self.w) == 1:
            (k, v), = self.w.items()
            if v == 1:
                return k
        return None

    def scaled(self, k: int) -> "_Lin":
        return _Lin({n: v * k for n, v in self.w.items() if v * k}, self.c * k)

    def plus(self, other: "_Lin", k: int = 1) -> "_Lin":
        w = dict(self.w)
        for n, v in other.w.items():
            w[n] = w.get(n, 0) + k * v
        return _Lin({n: v for n, v in w.items() if v}, self.c + k * other.c)


@dataclass(frozen=True)
class _Rem:       # a mod s
    a: _Lin
    s: int


@dataclass(frozen=True)
class _FloorMul:  # s * floor(a / s)
    a: _Lin
    s: int


@dataclass(frozen=True)
class _Clamp:     # min(max(floor(a / s), lo), hi) + off; lo / hi None when not applied
    a: _Lin
    s: int
    lo: int | None
    hi: int | None
    off: int = 0


@dataclass(frozen=True)
class _Ge:        # a >= t (a bool column)
    a: _Lin
    t: int


_WHAT = {_Lin: "a weighted sum", _Rem: "a remainder (Mod)", _FloorMul: "a rounded-down "
         "multiple", _Clamp: "a clamped quotient", _Ge: "a comparison"}


@dataclass
class _Neuron:
    gate: str                 # .dnet gate text
    lin: _Lin | None          # its weighted sum (None for a product)
    operands: tuple = ()      # a product's two nodes


class _IntegerGraph:
    """Symbolic evaluation of an int64 ONNX graph into neurons (see the module docstring)."""

    def __init__(self, m, consts: dict, where: str):
        self.m, self.where = m, where
        self.consts = consts
        self.nodes: list = []          # ("input", k) or _Neuron
        self.env: dict[str, object] = {}

    def fail(self, node, why: str):
        raise VoodooError(f"{self.where}: node {node.name or node.output[0]!r} "
                          f"({node.op_type}): {why}\n    hint: integer graphs are read as "
                          "`build.py export --onnx` writes them (docs/export.md)")

    def dnet(self, ranges: list[tuple[int, int]], name: str) -> str:
        x = _graph_input(self.m, self.where)
        self.nodes = [("input", k) for k in range(len(ranges))]
        self.env[x.name] = [_Lin({k: 1}) for k in range(len(ranges))]
        for node in self.m.graph.node:
            if node.op_type == "Constant":
                continue
            self.env[node.output[0]] = self.op(node)
        out = self.env.get(self.m.graph.output[0].name)
        if not isinstance(out, list):
            raise VoodooError(f"{self.where}: the graph's output is a constant\n    hint: "
                              "nothing to compute")
        outs: list[int] = []
        for col in out:
            k = self.materialize(col)
            if k in outs:  # the same value twice: each output is its own node
                k = self.new(_Neuron("identity", _Lin({k: 1})))
            outs.append(k)
        return self.text(ranges, outs, name)

    # -- values ---------------------------------------------------------------------------
    def value(self, node, i: int):
        name = node.input[i]
        if name in self.env:
            return self.env[name]
        if name in self.consts:
            c = self.consts[name]
            if c.dtype.kind not in "iub" and not np.all(c == np.round(c)):
                self.fail(node, f"the constant {name!r} holds a value that is not an integer")
            if c.size and np.abs(c.astype(np.float64)).max() > INT_LIMIT:
                self.fail(node, f"the constant {name!r} holds a value beyond 32-bit integers")
            return c
        self.fail(node, f"input {name!r} is not computed before it")

    def new(self, neuron: _Neuron) -> int:
        self.nodes.append(neuron)
        return len(self.nodes) - 1

    def materialize(self, col) -> int:
        """The node holding a column's value (a new neuron unless it is one already)."""
        lin = self.linear(col)
        k = lin.node()
        return k if k is not None else self.new(_Neuron("identity", lin))

    def linear(self, col) -> _Lin:
        """A column as a weighted sum over nodes (gated expressions become neurons)."""
        if isinstance(col, _Lin):
            return col
        if isinstance(col, _Clamp):
            if col.lo is None:
                raise VoodooError(f"{self.where}: an integer division or clamp without the "
                                  "lower bound a relu has\n    hint: integer graphs are read "
                                  "as `build.py export --onnx` writes them")
            top = "" if col.hi is None else f", max={col.hi - col.lo}"
            k = self.new(_Neuron(f"relu(s={col.s}{top})", col.a.plus(_Lin({}, col.lo * col.s), -1)))
            return _Lin({k: 1}, col.lo + col.off)
        raise VoodooError(f"{self.where}: {_WHAT[type(col)]} is used as a number\n    hint: "
                          "integer graphs are read as `build.py export --onnx` writes them")

    # -- operators ------------------------------------------------------------------------
    def op(self, node):
        t = node.op_type
        if t == "Identity":
            return self.value(node, 0)
        if t == "Concat":
            cols = []
            for i in range(len(node.input)):
                v = self.value(node, i)
                if not isinstance(v, list):
                    self.fail(node, "a constant is concatenated")
                cols += [_Lin({self.materialize(c): 1}) for c in v]
            return cols
        if t == "MatMul":
            return self.matmul(node)
        if t == "Gather":
            return self.gather(node)
        if t == "Cast":
            v = self.value(node, 0)
            from onnx import TensorProto

            if _attrs(node).get("to") not in (TensorProto.INT64, TensorProto.INT32):
                self.fail(node, "a cast to anything but an integer type")
            return [self.step(node, c) for c in v] if isinstance(v, list) else v
        a, b = self.value(node, 0), self.value(node, 1) if len(node.input) > 1 else None
        if not isinstance(a, list) and not isinstance(b, list):
            self.fail(node, "an operation on constants only")
        if t in ("Add", "Sub", "Mul") and isinstance(a, list) and isinstance(b, list):
            return [self.pair(node, t, p, q) for p, q in zip(a, b, strict=True)]
        if not isinstance(a, list):
            if t in ("Add", "Mul", "Max", "Min"):
                a, b = b, a
            elif t == "Sub":
                return [self.linear(c).scaled(-1).plus(_Lin({}, int(v)))
                        for c, v in zip(b, self.row(node, a, len(b)))]
            else:
                self.fail(node, "a constant on the left")
        vals = self.row(node, b, len(a))
        return [self.scalar(node, t, c, int(v)) for c, v in zip(a, vals)]

    def row(self, node, c: np.ndarray, n: int) -> list:
        c = np.asarray(c)
        if c.size == 1:
            return [c.reshape(-1)[0]] * n
        if c.shape in ((n,), (1, n)):
            return list(c.reshape(-1))
        self.fail(node, f"a constant of shape {c.shape} against {n} columns")

    def scalar(self, node, t: str, col, v: int):
        """A column and a constant."""
        if t == "Add":
            if isinstance(col, _Clamp):
                return _Clamp(col.a, col.s, col.lo, col.hi, col.off + v)
            return self.linear(col).plus(_Lin({}, v))
        if t == "Sub":
            return self.scalar(node, "Add", col, -v)
        if t == "Mul":
            return self.linear(col).scaled(v)
        if t == "Mod" and isinstance(col, _Lin) and v > 0 and not _attrs(node).get("fmod", 0):
            return _Rem(col, v)
        if t == "Div" and isinstance(col, _FloorMul) and v == col.s:
            return _Clamp(col.a, col.s, None, None)
        if t == "Max" and isinstance(col, (_Lin, _Clamp)):
            c = col if isinstance(col, _Clamp) else _Clamp(col, 1, None, None)
            if c.hi is not None or c.off:
                self.fail(node, "a lower bound after an upper one")
            return _Clamp(c.a, c.s, v if c.lo is None else max(c.lo, v), None)
        if t == "Min" and isinstance(col, (_Lin, _Clamp)):
            c = col if isinstance(col, _Clamp) else _Clamp(col, 1, None, None)
            if c.off:
                self.fail(node, "an upper bound after a shift")
            return _Clamp(c.a, c.s, c.lo, v if c.hi is None else min(c.hi, v))
        if t == "GreaterOrEqual" and isinstance(col, _Lin):
            return _Ge(col, v)
        self.fail(node, f"this operation on {_WHAT[type(col)]}")

    def pair(self, node, t: str, p, q):
        """Two computed columns."""
        if t == "Sub" and isinstance(q, _Rem) and isinstance(p, _Lin) and p == q.a:
            return _FloorMul(p, q.s)
        if t == "Mul":
            a, b = self.materialize(p), self.materialize(q)
            return _Lin({self.new(_Neuron("product", None, (a, b))): 1})
        return self.linear(p).plus(self.linear(q), 1 if t == "Add" else -1)

    def step(self, node, col):
        if isinstance(col, _Ge):
            return _Lin({self.new(_Neuron(f"step(t={col.t})", col.a)): 1})
        return col

    def matmul(self, node):
        v, W = self.value(node, 0), self.value(node, 1)
        if not isinstance(v, list) or isinstance(W, list) or np.ndim(W) != 2 \
                or W.shape[0] != len(v):
            self.fail(node, "only a computed (batch, n) tensor times a constant (n, m) matrix")
        lins = [self.linear(c) for c in v]
        out = []
        for j in range(W.shape[1]):
            acc = _Lin()
            for i in np.flatnonzero(W[:, j]):
                acc = acc.plus(lins[i], int(W[i, j]))
            out.append(acc)
        return out

    def gather(self, node):
        data, idx = self.value(node, 0), self.value(node, 1)
        axis = _attrs(node).get("axis", 0)
        if isinstance(data, list) and not isinstance(idx, list) and axis == 1:
            picks = np.asarray(idx)
            if picks.ndim != 1:
                self.fail(node, "columns must be picked with a list of indices")
            if picks.size and not (-len(data) <= picks.min() and picks.max() < len(data)):
                self.fail(node, f"picks column {int(picks.max() if picks.max() >= len(data) else picks.min())} "
                                f"of {len(data)}")
            return [data[int(i)] for i in picks]
        if not isinstance(data, list) and isinstance(idx, list) and axis == 0 \
                and np.ndim(data) == 1:
            return [self.lut(node, np.asarray(data), c) for c in idx]
        self.fail(node, "only columns of a computed tensor, or a constant table looked up")

    def lut(self, node, table: np.ndarray, col):
        if not (isinstance(col, _Clamp) and col.s == 1 and col.lo is not None
                and col.hi is not None and col.lo <= col.hi):
            self.fail(node, "a table looked up at an index that is not a clamped sum")
        first, last = col.lo + col.off, col.hi + col.off
        if first < 0 or last >= len(table):
            self.fail(node, f"the lookup reads entries {first}..{last} of a table of "
                            f"{len(table)}")
        values = ", ".join(str(int(v)) for v in table[first:last + 1])
        return _Lin({self.new(_Neuron(f"lut({col.lo}..{col.hi}, [{values}])", col.a)): 1})

    # -- the netlist ------------------------------------------------------------------------
    def check_sizes(self, name: str, lin: _Lin) -> None:
        _too_big(name, lin, self.where)

    def names(self, n_inputs: int, vector: bool) -> list[str]:
        names = []
        for k, n in enumerate(self.nodes):
            if isinstance(n, tuple):
                names.append(f"x[{n[1]}]" if vector else f"x_{n[1]}")
            else:
                names.append(f"n{k - n_inputs}")
        return names

    def text(self, ranges, outs: list[int], name: str) -> str:
        vector = len(set(ranges)) == 1
        names = self.names(len(ranges), vector)
        out = [f"# imported from an integer ONNX graph by interop/onnx_import.py", f"network {name}"]
        if vector:
            out.append(f"input x[{len(ranges)}] : {ranges[0][0]}..{ranges[0][1]}")
        else:
            out += [f"input x_{k} : {lo}..{hi}" for k, (lo, hi) in enumerate(ranges)]
        for k, n in enumerate(self.nodes):
            if isinstance(n, tuple):
                continue
            if n.lin is not None:
                self.check_sizes(names[k], n.lin)
            if n.lin is None:
                a, b = (names[i] for i in n.operands)
                out.append(f"neuron {names[k]} : product({a}, {b})")
                continue
            out.append(f"neuron {names[k]} : {n.gate}" + _sum_text(n.lin, names))
        out.append("output " + ", ".join(names[k] for k in outs))
        return "\n".join(out) + "\n"


def _too_big(name: str, lin: _Lin, where: str):
    """A weight or bias the language cannot hold, named before the text is written."""
    for src, w in lin.w.items():
        if abs(w) > WEIGHT_LIMIT:
            raise VoodooError(f"{where}: neuron {name} would get a weight of {w}: weights lie "
                              f"within -{WEIGHT_LIMIT}..{WEIGHT_LIMIT}\n    hint: a light "
                              "adds one weight per line crossing; scale the graph down")
    if abs(lin.c) > INT_LIMIT:
        raise VoodooError(f"{where}: neuron {name} would get a bias of {lin.c}: biases are "
                          "32-bit integers\n    hint: scale the graph down")


def _sum_text(lin: _Lin, names: list[str]) -> str:
    parts = [f"{'-' if w < 0 else '+'} {'' if abs(w) == 1 else f'{abs(w)}*'}{names[n]}"
             for n, w in sorted(lin.w.items())]
    if lin.c:
        parts.append(f"{'-' if lin.c < 0 else '+'} {abs(lin.c)}")
    if not parts:
        return " = 0"
    text = " ".join(parts)
    return " = " + (text[2:] if text.startswith("+ ") else "-" + text[2:])
