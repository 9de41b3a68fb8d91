"""The .dnet text of a quantised graph's integer layers (interop/quant_graph.py).

Owns how each layer is written with today's language, so the netlist compiles with
today's map compiler:

- the input's quantisation: a `lut` over the integer inputs, one per element (`diag`);
- a matrix product or convolution: `dense` or `conv(...)` lines with the weights minus
  their zero point; the source's zero point is folded into the bias (per element for a
  convolution: a padded position has fewer terms);
- its requantisation: a `lut` over the window of accumulators where the staircase steps
  (edges clamp: below it the lowest value, above it the highest), channels with the same
  staircase sharing one vector, gathered in order by an identity vector (free in a map);
  an accumulator a light cannot hold goes through interop/wide.py;
- a max pool: `maxpool(...)`; flatten and reshape: nothing (vectors are flat).
"""
from __future__ import annotations

import numpy as np

from dsl.diagnostics import VoodooError
from dsl.ir import WEIGHT_LIMIT
from interop.staircase import Stairs

LUT_WINDOW = 2_000         # a requantisation lut's threshold span (its lane rises with it)


def _ints(v) -> str:
    return ", ".join(str(int(a)) for a in np.asarray(v).reshape(-1))


def gate_text(st: Stairs | None) -> str:
    """A staircase as a lut over the window of its thresholds."""
    if st is None:
        return "identity"
    if not st.steps:
        return f"lut(0..0, [{st.base}])"
    lo, hi = st.steps[0][0] - 1, st.steps[-1][0]
    return f"lut({lo}..{hi}, [{_ints(st(np.arange(lo, hi + 1)))}])"


class Emitter:
    def __init__(self, layers, where: str):
        self.layers, self.where = layers, where
        self.names: dict[int, str] = {}
        self.out: list[str] = []

    def vec(self, k: int) -> str:
        return self.names[k]

    def emit(self, k: int, layer) -> None:
        getattr(self, "emit_" + layer.kind)(k, layer)

    def emit_input(self, k, layer):
        self.names[k] = "x"
        self.out.append(f"input x[{int(np.prod(layer.shape))}] : {layer.lo}..{layer.hi}")

    def emit_quantize(self, k, layer):
        n, src = int(np.prod(layer.shape)), self.layers[layer.src]
        name = self.names[k] = f"q{k}"
        self.out += [f"neuron {name}[{n}] : lut({src.lo}..{src.hi}, [{_ints(layer.bias)}])",
                     f"lines {self.vec(layer.src)} -> {name} diag [{_ints(np.ones(n))}]"]

    def emit_maxpool(self, k, layer):
        c = layer.conv
        name = self.names[k] = f"p{k}"
        self.out.append(f"neuron {name}[{int(np.prod(layer.shape))}] : maxpool("
                        f"{self.vec(layer.src)}, in=[{_ints(c['in'])}], kernel=[{_ints(c['kernel'])}]"
                        f", stride=[{_ints(c['stride'])}], pad=[{_ints(c['pad'])}])")

    def emit_avgpool(self, k, layer):
        """A Trunc of an average pool: a table over each window's integer sum."""
        c, src = layer.conv, self.layers[layer.src]
        kk = int(np.prod(c["kernel"]))
        name = self.names[k] = f"a{k}"
        self.out += [f"neuron {name}[{int(np.prod(layer.shape))}] : lut({kk * src.lo}.."
                     f"{kk * src.hi}, [{_ints(layer.bias)}])",
                     f"lines {self.vec(layer.src)} -> {name} avgpool(in=[{_ints(c['in'])}], "
                     f"kernel=[{_ints(c['kernel'])}], stride=[{_ints(c['stride'])}])"]

    def emit_table(self, k, layer):
        """An elementwise function of one integer (QLinearAdd with a constant): a lut per
        element; elements with the same table share a vector, gathered in order."""
        src = self.layers[layer.src]
        T = layer.bias
        groups: dict = {}
        for j in range(T.shape[1]):
            groups.setdefault(tuple(T[:, j].tolist()), []).append(j)
        name = self.names[k] = f"t{k}"
        parts = []
        for g, (col, elems) in enumerate(groups.items()):
            self.out += [f"neuron {name}g{g}[{len(elems)}] : lut({src.lo}..{src.hi}, "
                         f"[{_ints(col)}])",
                         f"lines {self.vec(layer.src)} -> {name}g{g} sparse {{ "
                         + ", ".join(f"{e} -> {i} : 1" for i, e in enumerate(elems)) + " }"]
            parts.append((f"{name}g{g}", elems))
        self.out.append(f"neuron {name}[{T.shape[1]}] : identity")
        for part, elems in parts:
            self.out.append(f"lines {part} -> {name} sparse {{ "
                            + ", ".join(f"{i} -> {e} : 1" for i, e in enumerate(elems)) + " }")

    def emit_dense(self, k, layer):
        self._weighted(k, layer)

    emit_conv = emit_dense

    def _weighted(self, k, layer):
        """One vector per distinct staircase, then (if several) an identity gathering
        them in channel order."""
        from interop import ort_pairs
        from interop.wide import fits, wide_layer

        if np.abs(layer.W).max(initial=0) > WEIGHT_LIMIT:
            raise VoodooError(f"{self.where}: layer {layer.name!r}: a weight beyond "
                              f"{WEIGHT_LIMIT}")
        bias = self._bias(layer)
        if ort_pairs.emulated(layer):  # the excess of onnxruntime's saturated pair sums
            ort_pairs.emit(self, k, layer)
        if not fits(layer, bias, self.layers[layer.src]):
            self.names[k] = wide_layer(self, k, layer, bias)
            return
        groups: dict = {}
        for ch, st in enumerate(layer.stairs):
            groups.setdefault(st, []).append(ch)
        per = int(np.prod(layer.shape[1:])) if layer.kind == "conv" else 1
        if len(groups) == 1:
            self.names[k] = f"L{k}"
            self._group(f"L{k}", layer, list(range(len(layer.stairs))), bias,
                        layer.stairs[0], k)
            return
        parts = []
        for j, (st, chans) in enumerate(groups.items()):
            self._group(f"L{k}g{j}", layer, chans, bias, st, k)
            parts.append((f"L{k}g{j}", chans))
        self.names[k] = f"L{k}"
        self.out.append(f"neuron L{k}[{len(layer.stairs) * per}] : identity")
        for name, chans in parts:
            pairs = [f"{j * per + p} -> {ch * per + p} : 1" for j, ch in enumerate(chans)
                     for p in range(per)]
            self.out.append(f"lines {name} -> L{k} sparse {{ {', '.join(pairs)} }}")

    def _bias(self, layer) -> np.ndarray:
        """Per output element: the bias minus the source's zero point times the weights of
        the terms present (a convolution's border has fewer)."""
        z = layer.src_zero
        if layer.kind == "dense":
            return layer.bias - z * layer.W.sum(1)
        import torch

        c = layer.conv
        ones = torch.ones((1, *c["in"]), dtype=torch.float64)
        present = torch.nn.functional.conv2d(ones, torch.as_tensor(layer.W, dtype=torch.float64),
                                             stride=c["stride"], padding=c["pad"])[0]
        return (layer.bias[:, None, None] - z * present.numpy().round().astype(np.int64))

    def _group(self, name, layer, chans, bias, st, k):
        from interop import ort_pairs

        per = int(np.prod(layer.shape[1:])) if layer.kind == "conv" else 1
        self.out.append(f"neuron {name}[{len(chans) * per}] : {gate_text(st)}")
        src = self.vec(layer.src)
        rows = [layer.W[ch].reshape(-1) for ch in chans]
        body = ",\n".join(f"  [{_ints(r)}]" for r in rows)
        if layer.kind == "dense":
            self.out.append(f"lines {src} -> {name} dense [\n{body}]")
        else:
            c = layer.conv
            self.out.append(f"lines {src} -> {name} conv(in=[{_ints(c['in'])}], out={len(chans)}"
                            f", kernel=[{_ints(c['kernel'])}], stride=[{_ints(c['stride'])}], "
                            f"pad=[{_ints(c['pad'])}]) [\n{body}]")
        b = np.concatenate([np.asarray(bias[ch]).reshape(-1) for ch in chans])
        if b.any():
            self.out.append(f"bias {name} = [{_ints(b)}]")
        if ort_pairs.emulated(layer):
            local = {ch * per + p: j * per + p for j, ch in enumerate(chans)
                     for p in range(per)}
            self.out += ort_pairs.narrow_lines(layer, k, name, local)


def emit(layers, out, name: str, comment: str, where: str) -> str:
    e = Emitter(layers, where)
    for k, layer in enumerate(layers):
        e.emit(k, layer)
    head = [f"# {line}" for line in comment.splitlines()] + [f"network {name}"]
    return "\n".join(head + e.out + [f"output {e.vec(out.layer)}"]) + "\n"
