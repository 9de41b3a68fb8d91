"""Reading an ONNX file and validating the whole graph before anything is built from it.

Owns the one validation pass every ONNX import goes through (issue 37, item 8): a file is
read as bytes (a directory, FIFO or device is refused before it is opened), its external
data (Brevitas and torch write large initializers to a file beside the model) is loaded
from beside the model only, and then every node and constant is checked at once:

- every node has an output; attributes have the lengths their operator needs (Conv and
  pool `pads` of 2 x 2 values, `strides`, `kernel_shape`), a Reshape's shape is a 1-D
  constant, a Gemm's weight is a 2-D matrix with outputs;
- every constant decodes (a short `raw_data` is named), is finite, and is not larger than
  `MAX_ELEMENTS`; the graph's input is at most `MAX_INPUTS` values with fixed sizes;
- the number of weights the netlist would get is estimated from the constants' shapes and
  refused past `MAX_WEIGHTS`, so a network too big for any map is answered in seconds, not
  after minutes of elaboration.

Problems are collected and reported together, each naming the node or tensor.
"""
from __future__ import annotations

import os

import numpy as np

from dsl.diagnostics import VoodooError

ONNX_HINT = "install it with `pip install onnx==1.23.2` (see requirements.txt)"
MAX_ELEMENTS = 20_000_000   # one constant: 80 MB of float32, far past any map
MAX_INPUTS = 65_536         # a map reads at most 2,796 inputs; tiles split more, not 10^9
# Weighted lines: a map holds 400,000 linedefs (mapgen/physics.py MAX_LINES), and the MNIST
# CNN's 403,000 weighted lines fill two maps. A million weights is about ten maps, and the
# .dnet text of more takes minutes and gigabytes to elaborate (issue 37: Linear(2000, 2000),
# 4.5 min and 6.3 GB): refused from the shapes alone, before anything is built.
MAX_WEIGHTS = 1_000_000
TYPE_NAMES = {1: "float32", 2: "uint8", 3: "int8", 4: "uint16", 5: "int16", 6: "int32",
              7: "int64", 8: "string", 9: "bool", 10: "float16", 11: "float64 (double)",
              12: "uint32", 13: "uint64", 14: "complex64", 15: "complex128",
              16: "bfloat16", 17: "float8e4m3fn", 18: "float8e4m3fnuz", 19: "float8e5m2",
              20: "float8e5m2fnuz", 21: "uint4", 22: "int4", 23: "float4e2m1"}


def onnx_module():
    try:
        import onnx
        from onnx import numpy_helper  # noqa: F401
    except ImportError:
        raise VoodooError(f"ONNX import needs the onnx package, which is not installed\n"
                          f"    hint: {ONNX_HINT}") from None
    return onnx


def type_name(elem: int) -> str:
    return TYPE_NAMES.get(elem, f"ONNX type {elem}")


def read_model_file(path: str) -> bytes:
    """The bytes of a model file; anything but a regular file is refused before opening."""
    from dsl.util import not_a_file

    what = not_a_file(path)
    if what:
        raise VoodooError(f"{path}: is {what}, not a model file\n    hint: give the path of "
                          "an .onnx file")
    try:
        with open(path, "rb") as f:
            return f.read()
    except FileNotFoundError:
        raise VoodooError(f"{path}: no such file\n    hint: give the path of an .onnx "
                          "model") from None
    except OSError as e:
        raise VoodooError(f"{path}: cannot read the ONNX file: {e.strerror}") from None


def load_model(model, where: str = "<onnx>"):
    """An onnx.ModelProto from a path, bytes or a ModelProto, its external data loaded
    from beside the file; a damaged file is an error naming it."""
    onnx = onnx_module()
    base = None
    if isinstance(model, onnx.ModelProto):
        m = model
    else:
        if isinstance(model, (bytes, bytearray)):
            data = bytes(model)
        else:
            data, base = read_model_file(model), os.path.dirname(os.path.abspath(model))
        try:
            m = onnx.load_from_string(data)
        except Exception as e:  # protobuf raises its own DecodeError
            raise VoodooError(f"{where}: not an ONNX model ({type(e).__name__})\n    hint: "
                              "give a .onnx file written by an ONNX exporter") from None
    if not m.graph.node:
        raise VoodooError(f"{where}: the ONNX graph has no nodes\n    hint: give a .onnx file "
                          "written by an ONNX exporter")
    _load_external(m, base, where)
    return m


def _load_external(m, base: str | None, where: str) -> None:
    """Initializers stored in a file beside the model (location, offset, length), read
    from that directory only."""
    from onnx import TensorProto

    for t in m.graph.initializer:
        if t.data_location != TensorProto.EXTERNAL:
            continue
        info = {kv.key: kv.value for kv in t.external_data}
        loc = info.get("location", "")
        if base is None:
            raise VoodooError(f"{where}: initializer {t.name!r} is stored in an external file "
                              f"{loc!r}\n    hint: import the model from its file, with "
                              f"{loc!r} beside it")
        path = os.path.realpath(os.path.join(base, loc))
        if not loc or os.path.isabs(loc) or os.path.dirname(path) != os.path.realpath(base):
            raise VoodooError(f"{where}: initializer {t.name!r} names external data {loc!r} "
                              "outside the model's directory\n    hint: external data must "
                              "be a file beside the model")
        try:
            offset, length = int(info.get("offset", 0)), info.get("length")
            blob = read_model_file(path)
        except ValueError:
            raise VoodooError(f"{where}: initializer {t.name!r}: a damaged external-data "
                              "offset") from None
        end = len(blob) if length is None else offset + int(length)
        if offset < 0 or end > len(blob) or end < offset:
            raise VoodooError(f"{where}: initializer {t.name!r} reads bytes {offset}..{end} of "
                              f"{loc} ({len(blob)} bytes)\n    hint: the external data file "
                              "is short or not the model's")
        t.raw_data = blob[offset:end]
        del t.external_data[:]
        t.data_location = TensorProto.DEFAULT


def constants(m, where: str) -> dict[str, np.ndarray]:
    """Every initializer and Constant value, decoded and checked (size, finiteness)."""
    from onnx import numpy_helper

    out, bad = {}, []
    tensors = [(t.name, t) for t in m.graph.initializer]
    for n in m.graph.node:
        if n.op_type == "Constant" and n.output:
            for a in n.attribute:
                if a.name == "value":
                    tensors.append((n.output[0], a.t))
    for name, t in tensors:
        count = int(np.prod([max(int(d), 0) for d in t.dims], dtype=object))
        if any(d < 0 for d in t.dims) or count > MAX_ELEMENTS:
            bad.append(f"constant {name!r} has shape {list(t.dims)}: more than "
                       f"{MAX_ELEMENTS:,} values")
            continue
        try:
            arr = numpy_helper.to_array(t)
        except Exception as e:  # a short raw_data, an unknown type
            bad.append(f"constant {name!r} ({type_name(t.data_type)} {list(t.dims)}) cannot be "
                       f"decoded: {str(e).splitlines()[0][:120]}")
            continue
        if arr.dtype.kind in "fc" and not np.all(np.isfinite(arr)):
            bad.append(f"constant {name!r} holds NaN or infinity")
        out[name] = arr
    _report(bad, where)
    return out


def _report(bad: list[str], where: str) -> None:
    if bad:
        more = f" (and {len(bad) - 8} more)" if len(bad) > 8 else ""
        raise VoodooError(f"{where}: " + f"\n{where}: ".join(bad[:8]) + more +
                          "\n    hint: the graph must be valid ONNX (onnx.checker) with "
                          "finite constants and static shapes")


def _attrs(node) -> dict:
    from onnx import helper

    out = {}
    for a in node.attribute:
        try:
            out[a.name] = helper.get_attribute_value(a)
        except Exception:  # an attribute of no known type
            out[a.name] = None
    return out


def _node_name(node) -> str:
    return node.name or (node.output[0] if node.output and node.output[0] else node.op_type)


def _spatial_attrs(node, a: dict, bad: list[str]) -> None:
    """Conv and pools: kernel, stride, dilation and pads lengths for 2-D images."""
    what = f"node {_node_name(node)!r} ({node.op_type})"
    if node.op_type in ("MaxPool", "AveragePool"):
        k = a.get("kernel_shape")
        if not isinstance(k, list) or len(k) != 2 or min(k) < 1:
            bad.append(f"{what}: kernel_shape {k!r} is not two positive sizes")
    for key, n in (("strides", 2), ("dilations", 2), ("pads", 4), ("kernel_shape", 2)):
        v = a.get(key)
        if v is None:
            continue
        if not isinstance(v, list) or len(v) != n:
            bad.append(f"{what}: {key} {v!r} needs {n} values for a 2-D image")
        elif key in ("strides", "dilations", "kernel_shape") and min(v) < 1:
            bad.append(f"{what}: {key} {v!r} must be positive")
        elif key == "pads" and min(v) < 0:
            bad.append(f"{what}: pads {v!r} must not be negative")


def _weights(node, consts: dict) -> int:
    """How many weighted lines a node adds to the netlist, from its constants' shapes
    (a convolution's lines repeat over its output positions: counted per channel here,
    times the output positions by the caller's image size when it is known)."""
    if node.op_type in ("Gemm", "MatMul", "MatMulInteger", "QGemm", "QLinearMatMul",
                        "Conv", "QLinearConv", "ConvInteger"):
        idx = {"QGemm": 3, "QLinearMatMul": 3, "QLinearConv": 3}.get(node.op_type, 1)
        if len(node.input) > idx and node.input[idx] in consts:
            return int(np.prod(consts[node.input[idx]].shape, dtype=object))
    return 0


def check_graph(m, consts: dict, where: str) -> None:
    """The structural checks of the module docstring, all problems at once."""
    bad: list[str] = []
    for k, node in enumerate(m.graph.node):
        if not node.output or not any(node.output):
            bad.append(f"node {k} ({node.op_type} {node.name!r}) has no outputs")
            continue
        a = _attrs(node)
        if node.op_type in ("Conv", "MaxPool", "AveragePool", "QLinearConv", "ConvInteger"):
            _spatial_attrs(node, a, bad)
        if node.op_type == "Reshape" and len(node.input) > 1 and node.input[1] in consts \
                and consts[node.input[1]].ndim != 1:
            bad.append(f"node {_node_name(node)!r} (Reshape): its shape "
                       f"{consts[node.input[1]].tolist()!r} is not a 1-D list of sizes")
        if node.op_type == "Gemm" and len(node.input) > 1 and node.input[1] in consts:
            w = consts[node.input[1]]
            if w.ndim != 2 or 0 in w.shape:
                bad.append(f"node {_node_name(node)!r} (Gemm): weight of shape "
                           f"{list(w.shape)}; a Gemm multiplies by a 2-D matrix with outputs")
    inits = {i.name for i in m.graph.initializer}
    for x in m.graph.input:
        if x.name in inits:
            continue
        dims = [d.dim_value if d.HasField("dim_value") else None
                for d in x.type.tensor_type.shape.dim]
        size = int(np.prod([d for d in dims[1:] if d], dtype=object)) if len(dims) > 1 else 0
        if size > MAX_INPUTS:
            bad.append(f"the input {x.name!r} has shape {dims}: {size:,} values per sample; "
                       f"an imported network takes at most {MAX_INPUTS:,}")
    total = sum(_weights(n, consts) for n in m.graph.node)
    if total > MAX_WEIGHTS:
        biggest = max(m.graph.node, key=lambda n: _weights(n, consts))
        bad.append(f"the graph has {total:,} weights (node {_node_name(biggest)!r} alone "
                   f"{_weights(biggest, consts):,}); a network that fits maps has at most "
                   f"{MAX_WEIGHTS:,} (a map holds 400,000 weighted lines)")
    _report(bad, where)


def check_ranges_meta(text: str, n_inputs: int | None, key: str, where: str):
    """The exporter's input ranges from the metadata: a JSON list of [lo, hi] integer
    pairs, one per input; floats, huge numbers and deep nesting are a damaged record."""
    import json

    from dsl.ir import INT_LIMIT

    def no_float(s):
        raise ValueError(f"a non-integer {s}")

    damaged = f"{where}: the metadata {key} is damaged"
    if len(text) > 10_000_000:
        raise VoodooError(f"{damaged}: {len(text):,} characters")
    try:
        ranges = json.loads(text, parse_float=no_float, parse_constant=no_float)
    except (ValueError, RecursionError) as e:
        raise VoodooError(f"{damaged}: {str(e)[:80]}") from None
    if not isinstance(ranges, list) or not all(
            isinstance(r, list) and len(r) == 2 and all(type(v) is int for v in r)
            and all(abs(v) <= INT_LIMIT for v in r) and r[0] <= r[1] for r in ranges):
        raise VoodooError(f"{damaged}: it must be a list of [lo, hi] integer pairs with "
                          f"lo <= hi within 32 bits")
    if n_inputs is not None and len(ranges) != n_inputs:
        raise VoodooError(f"{where}: the metadata {key} gives {len(ranges)} input ranges but "
                          f"the graph's input has {n_inputs} values\n    hint: one [lo, hi] "
                          "per input, in order")
    return [tuple(r) for r in ranges]


def fold_constants(m, consts: dict, where: str) -> set[str]:
    """Evaluate the nodes whose inputs are all constants (torch writes a ZeroPad2d's pads
    as such a subgraph: ConstantOfShape, Concat, Slice, ...) with onnx's reference
    evaluator, adding their outputs to `consts`; returns the folded nodes' first outputs."""
    from onnx import helper
    from onnx.reference import ReferenceEvaluator

    folded = set()
    opset = [o for o in m.opset_import if o.domain in ("", "ai.onnx")]
    for n in m.graph.node:
        if n.op_type == "Constant" or not n.input or not all(
                i in consts for i in n.input if i) or n.domain not in ("", "ai.onnx"):
            continue
        if all(o in consts for o in n.output if o):  # folded before
            folded.add(n.output[0])
            continue
        g = helper.make_graph([n], "fold", [], [helper.make_empty_tensor_value_info(o)
                                                for o in n.output if o],
                              [_tensor(consts[i], i) for i in n.input if i])
        try:
            outs = ReferenceEvaluator(helper.make_model(g, opset_imports=opset)).run(None, {})
        except Exception as e:
            raise VoodooError(f"{where}: node {_node_name(n)!r} ({n.op_type}) on constants "
                              f"cannot be evaluated: {str(e).splitlines()[0][:120]}") from None
        for o, v in zip([o for o in n.output if o], outs):
            consts[o] = np.asarray(v)
        folded.add(n.output[0])
    return folded


def _tensor(a, name):
    from onnx import numpy_helper

    return numpy_helper.from_array(np.asarray(a), name)
