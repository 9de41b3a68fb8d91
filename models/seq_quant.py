"""Quantising a float layer stack into the integer network a netlist computes.

Owns the scheme for float `nn.Sequential` stacks of `Conv2d` and `Linear` layers (each
optionally followed by `ReLU`, or by another activation read as a lookup), `AvgPool2d`,
`MaxPool2d` and `Flatten` (docs/mnist.md, "The convolutional model"): the one
quantisation path of models/cnn.py (the MNIST CNN, with quantisation-aware training) and
interop/onnx_import.py (float ONNX graphs).

Every integer tensor h stands for a float tensor f ~ h * u, u one float per channel (per
feature once flat). The inputs are the integers the netlist reads, u0 = `input_step`
(the float value of one input step: the float model sees x * u0). Then, per layer:

    weighted (Conv2d / Linear, float W, B):
        A = W * u (u of its input, per input channel or feature)
        a = max |A| / wmax per output channel (one a for the whole last layer, so the
            outputs stay proportional to the float logits and the argmax is kept)
        w = round(A / a), b = round(B / a) (+ floor(s / 2) before a ReLU: floor becomes
            rounding), acc = w . h + b
        with ReLU: h = min(max(floor(acc / s), 0), L), u = a * s; else h = acc, u = a
        with another activation f (Sigmoid, Tanh, LeakyReLU, ReLU6 / Hardtanh, GELU, ...;
            `is_lookup`): one a for the layer, and h = T[acc], the table
            T[acc] = clamp(round(f(acc * a) / (a * s)), -L or 0, L) over every accumulator
            the inputs' range allows (a `lut` gate in the netlist), u = a * s
    AvgPool2d: h = the window's sum (integers stay integers), u = u / window size;
        a ReLU after it requantises the sum: h = clamp(floor(h / s), 0, L), u = u * s
    MaxPool2d: h = the window's maximum, u unchanged;  Flatten: u repeats per position

`s` (one integer per ReLU or lookup) is the only free choice: `calibrate` picks each in
turn by the score of the whole integer network (accuracy, or agreement with the float
model). The
same arithmetic runs with straight-through rounding (`forward(..., ste=True)`) for
quantisation-aware training. `QuantStack.integer_model` gives the integer nn.Sequential
(AvgPool2d with divisor_override=1: a sum) with its scales and clamps, which
interop/torch_import.py turns into a netlist.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dsl.diagnostics import VoodooError


def _torch():
    try:
        import torch
    except ImportError:
        raise VoodooError("quantising a model needs PyTorch, which is not installed\n"
                          "    hint: pip install torch==2.13.0 (see requirements.txt)") from None
    return torch


@dataclass
class Step:
    kind: str           # conv, linear, avgpool, maxpool, flatten
    module: object
    relu: bool = False
    act: object = None  # an activation read as a lookup on the accumulators (is_lookup)
    skip: int | None = None  # a residual shortcut: the step whose output is added (-1: input)


LOOKUP_NAMES = ("Sigmoid", "Tanh", "LeakyReLU", "ReLU6", "Hardtanh", "GELU", "ELU", "SELU",
                "CELU", "SiLU", "Mish", "Softplus", "Softsign", "Hardsigmoid", "Hardswish")


def is_lookup(m) -> bool:
    """An elementwise activation other than ReLU: torch's own, or a module with
    `lookup_values(x)` (interop/onnx_float.py's Elementwise, an ONNX subgraph)."""
    nn = _torch().nn
    return hasattr(m, "lookup_values") or any(type(m) is getattr(nn, n) for n in LOOKUP_NAMES)


def lookup_values(m, x: np.ndarray) -> np.ndarray:
    """The activation's float values at x (one call over a whole table's domain, so every
    table entry is computed the same way)."""
    if hasattr(m, "lookup_values"):
        return np.asarray(m.lookup_values(x), dtype=np.float64)
    torch = _torch()
    with torch.no_grad():
        return m(torch.from_numpy(np.asarray(x, dtype=np.float64))).numpy()


def steps_of(model) -> list[Step]:
    """The layers of a float nn.Sequential as quantisation steps, validated."""
    nn = _torch().nn
    kinds = ((nn.Conv2d, "conv"), (nn.Linear, "linear"), (nn.AvgPool2d, "avgpool"),
             (nn.MaxPool2d, "maxpool"), (nn.Flatten, "flatten"))
    steps: list[Step] = []
    step_of: dict[int, int] = {-1: -1}   # a module's output is that step's (-1: the input)
    for i, (name, m) in enumerate(model.named_children()):
        name = _label(name, m)
        kind = next((v for cls, v in kinds if type(m) is cls), None)
        if kind is not None:
            steps.append(Step(kind, m))
        elif hasattr(m, "skip_from"):
            _shortcut(steps, step_of, name, m.skip_from)
        elif isinstance(m, nn.ReLU):
            if not steps or steps[-1].relu or steps[-1].kind not in ("conv", "linear",
                                                                     "avgpool"):
                raise VoodooError(f"layer {name} (ReLU) does not follow a Conv2d, Linear or "
                                  "AvgPool2d\n    hint: put each ReLU right after one of "
                                  "those (before a max pool: the same function)")
            steps[-1].relu = True
        elif is_lookup(m):
            if not steps or steps[-1].relu or steps[-1].act is not None \
                    or steps[-1].kind not in ("conv", "linear"):
                raise VoodooError(f"layer {name} ({type(m).__name__}) does not follow a "
                                  "Conv2d or Linear\n    hint: an activation other than ReLU "
                                  "is a lookup on a Conv2d's or Linear's accumulators: put it "
                                  "right after one")
            steps[-1].act = m
        elif isinstance(m, (nn.Identity, nn.Dropout)):
            continue  # nothing at inference
        else:
            raise VoodooError(f"layer {name} ({type(m).__name__}) cannot be quantised\n    "
                              "hint: the layers are Conv2d, Linear, ReLU (or an elementwise "
                              "activation), AvgPool2d, MaxPool2d and Flatten")
        if (isinstance(m, nn.ReLU) or is_lookup(m)) and steps:
            # what came before the activation is no step's output: no shortcut reads it
            for j in [j for j, v in step_of.items() if v == len(steps) - 1]:
                step_of[j] = None
        step_of[i] = len(steps) - 1
    _check_end(steps)
    return steps


def _check_end(steps: list) -> None:
    """The last weighted layer gives the logits: no activation after it."""
    weighted = [k for k, s in enumerate(steps) if s.kind in ("conv", "linear")]
    if not weighted:
        raise VoodooError("the model has no Conv2d or Linear layer to quantise")
    last = steps[weighted[-1]]
    if last.relu or last.act is not None or any(s.kind != "flatten"
                                               for s in steps[weighted[-1] + 1:]):
        after = next((s.act or s.module for s in steps[weighted[-1] + 1:]
                      if s.kind != "flatten"), last.act)
        what = " (it ends in a ReLU)" if after is None else \
            f" (it ends in {type(after).__name__}{_label('', after)})"
        raise VoodooError("the model must end with a Conv2d or Linear layer without an "
                          f"activation: its outputs are the logits{what}\n    hint: leave "
                          "the last activation out (a Softmax at the output is dropped: the "
                          "argmax of the logits is the same)")


def _label(name: str, m) -> str:
    """A layer's name in messages: its index, and the ONNX node it came from."""
    node = getattr(m, "onnx_node", None)
    return f"{name} (ONNX node {node!r})" if node else name


def _shortcut(steps: list, step_of: dict, name: str, src: int) -> None:
    """A residual Add after a Conv2d or Linear (before its activation, as ResNets add)."""
    if not steps or steps[-1].kind not in ("conv", "linear") or steps[-1].relu \
            or steps[-1].act is not None or steps[-1].skip is not None:
        raise VoodooError(f"layer {name} (a residual addition) does not follow a Conv2d or "
                          "Linear\n    hint: add the shortcut to a layer's output before its "
                          "activation (y = relu(conv(x) + x)), as ResNets do: it joins that "
                          "layer's accumulators")
    if step_of.get(src) is None:
        raise VoodooError(f"layer {name} (a residual addition) adds a value before its "
                          "activation\n    hint: a shortcut carries a layer's output (after "
                          "its activation) or the input")
    steps[-1].skip = step_of[src]


def _pool_args(m):
    pair = lambda v: tuple(v) if isinstance(v, (tuple, list)) else (v, v)  # noqa: E731
    k = pair(m.kernel_size)
    return k, pair(m.stride if m.stride is not None else m.kernel_size), pair(m.padding)


@dataclass
class IntStack:
    """The integer model: an nn.Sequential of float64 modules holding integers, and the
    divisor and clamp of each ReLU, ready for interop.torch_import.from_torch."""

    model: object
    scales: list[int]
    clamps: list[int]
    input_shape: tuple | None    # (channels, height, width), or None for a flat input


class QuantStack:
    """A float nn.Sequential with its quantisation: weight bits, clamp L, input step."""

    def __init__(self, model, input_shape, input_step: float, weight_bits: int = 4,
                 clamp: int = 15, input_range: tuple[int, int] | None = None):
        self.model = model
        self.steps = steps_of(model)
        # the inputs' integer range: a lookup's table covers every accumulator it allows
        self.input_range = input_range
        if input_range is None and any(st.act is not None for st in self.steps):
            raise VoodooError("a lookup activation needs the inputs' range (input_range)")
        self.tables: dict[int, tuple[int, np.ndarray]] = {}   # step -> (lowest acc, T)
        self.lookup_scales: dict[int, tuple[float, int]] = {}   # step -> (a, s)
        # (channels, height, width) of an image input, or the number of flat inputs
        self.input_shape = int(input_shape) if np.ndim(input_shape) == 0 else \
            tuple(int(v) for v in input_shape)
        self.input_step = float(input_step)
        self.wmax = 2 ** (weight_bits - 1) - 1
        self.clamp = int(clamp)
        self.n_relu = sum(s.relu or s.act is not None for s in self.steps)  # divisors
        self.last = max(k for k, s in enumerate(self.steps) if s.kind in ("conv", "linear"))

    # -- the integer arithmetic, exact or with straight-through rounding ---------------------
    def _shape(self, x):
        """x (N, features) as the first layer wants it."""
        if isinstance(self.input_shape, tuple) and x.dim() == 2:
            return x.reshape(len(x), *self.input_shape)
        return x

    def forward(self, x, s: list, ste: bool = False, trace: list | None = None,
                params: dict | None = None):
        """The integer network on integer inputs x (a float tensor holding integers), with
        divisors s (one per ReLU; None entries are chosen from this batch's accumulators,
        see `auto_s`). Returns (outputs, a_last): float outputs * a_last ~ the float logits.
        With ste, rounding passes gradients straight through (training); `trace` collects
        each ReLU's accumulators (for calibration), `params` each weighted step's (w, b)."""
        torch = _torch()
        F = torch.nn.functional
        rnd = _ste(torch.round) if ste else torch.round
        flo = _ste(torch.floor) if ste else torch.floor
        h = self._shape(x)
        u = torch.full((h.shape[1],), self.input_step, dtype=h.dtype)
        k_relu, a = 0, None
        # every value's interval (lookups tabulate every accumulator it allows)
        iv = tuple(float(v) for v in self.input_range) if self.input_range else (0.0, 0.0)
        outs = {-1: (h, u, iv)}   # each step's output, for residual shortcuts
        for k, st in enumerate(self.steps):
            m = st.module
            if st.kind in ("conv", "linear"):
                h, u, a, k_relu, iv = self._weighted(k, st, h, u, s, k_relu, (rnd, flo),
                                                     trace, params, iv, outs)
            elif st.kind == "avgpool":
                ks, sd, pd = _pool_args(m)
                h = F.avg_pool2d(h, ks, sd, pd, divisor_override=1)
                u = u / (ks[0] * ks[1])
                iv = (min(iv[0], 0) * ks[0] * ks[1], max(iv[1], 0) * ks[0] * ks[1])
                if st.relu:
                    s_k = self._s(s, k_relu, h, trace)
                    h, u = torch.clamp(flo(h / s_k), 0, self.clamp), u * s_k
                    k_relu, iv = k_relu + 1, (0.0, float(self.clamp))
            elif st.kind == "maxpool":
                ks, sd, pd = _pool_args(m)
                h = F.max_pool2d(h, ks, sd, pd)
            elif h.dim() == 4:  # flatten, channel by channel as torch does
                u = u.repeat_interleave(h.shape[2] * h.shape[3])
                h = h.flatten(1)
            outs[k] = (h, u, iv)
        return h, a

    def _weighted(self, k, st, h, u, s, k_relu, rounding, trace, params, iv, outs):
        """One Conv2d or Linear (and its shortcut, its ReLU or lookup): (h, u, a, divisors
        so far, the interval of h)."""
        torch = _torch()
        F = torch.nn.functional
        rnd, flo = rounding
        m = st.module
        W = m.weight.to(h.dtype)
        A = W * (u[None, :, None, None] if st.kind == "conv" else u[None, :])
        if k == self.last or st.act is not None:  # one a: one table for the whole layer
            a = A.abs().max().detach().clamp(min=1e-12) / self.wmax
            aw = a
        else:
            a = A.abs().amax(dim=tuple(range(1, A.dim()))).detach().clamp(min=1e-12) / self.wmax
            aw = a.reshape(-1, *([1] * (A.dim() - 1)))
        w = rnd(A / aw)
        b = rnd(m.bias.to(h.dtype) / a) if m.bias is not None else \
            torch.zeros(W.shape[0], dtype=h.dtype)
        r, hs, ivs = self._shortcut(k, st, outs, a, rnd) if st.skip is not None else \
            (None, None, None)

        def acc_of(bias):
            acc = F.conv2d(h, w, bias, m.stride, m.padding) if st.kind == "conv" else \
                F.linear(h, w, bias)
            if r is None:
                return acc
            if hs.shape != acc.shape:
                raise VoodooError(f"layer {k}: a shortcut of shape {list(hs.shape[1:])} joins "
                                  f"accumulators of shape {list(acc.shape[1:])}")
            return acc + r.reshape(1, -1, *([1] * (acc.dim() - 2))) * hs

        if st.relu:
            if s[k_relu] is None or trace is not None:
                with torch.no_grad():
                    s_k = self._s(s, k_relu, acc_of(b), trace)
            else:
                s_k = s[k_relu]
            b = b + s_k // 2
        if params is not None:
            params[k] = (w.detach().clone(), b.detach().clone(),
                         None if r is None else r.detach().clone())
        acc = acc_of(b)
        lo, hi = _acc_bounds(w, b, iv, st.kind == "conv" and any(m.padding), r, ivs)
        if st.act is not None:
            return self._lookup(k, st, acc, a, s, k_relu, trace, (lo, hi))
        if not st.relu:
            return acc, (a.expand(W.shape[0]) if a.dim() == 0 else a), a, k_relu, (lo, hi)
        return torch.clamp(flo(acc / s_k), 0, self.clamp), a * s_k, a, k_relu + 1, \
            (0.0, float(self.clamp))

    def _shortcut(self, k, st, outs, a, rnd):
        """A residual shortcut into this layer's accumulators (in units of a): the source's
        integers times r = round(u_source / a) per channel, (r, source, its interval)."""
        hs, us, ivs = outs[st.skip]
        n = st.module.weight.shape[0]
        if us.shape[0] != n:
            raise VoodooError(f"layer {k}: a shortcut of {us.shape[0]} channels joins a layer "
                              f"of {n}")
        r = rnd(us / (a.expand(n) if a.dim() == 0 else a))
        return r, hs, ivs

    def _lookup(self, k, st, acc, a, s, k_relu, trace, bounds):
        """An activation as a table over every accumulator the inputs allow (`table`)."""
        torch = _torch()
        af = float(a)
        if s[k_relu] is None or trace is not None:
            x = acc.detach().numpy().reshape(-1) * af
            # the divisor's scale: |f(acc a)| / a, in accumulator units
            eff = torch.from_numpy(np.abs(_finite(st.act, x, lookup_values(st.act, x))) / af)
            s_k = self._s(s, k_relu, eff, trace)
        else:
            s_k = s[k_relu]
        lo, T = table(st.act, int(np.floor(bounds[0])), int(np.ceil(bounds[1])), af, s_k,
                      self.clamp)
        self.tables[k] = (lo, T)
        self.lookup_scales[k] = (af, int(s_k))
        # clamped as the netlist's lut clamps (the bounds hold every accumulator anyway)
        idx = np.clip(acc.detach().numpy().astype(np.int64) - lo, 0, len(T) - 1)
        h = torch.from_numpy(T[idx].astype(np.float64)).to(acc.dtype)
        u = (a * s_k).expand(acc.shape[1])
        return h, u, a, k_relu + 1, (float(T.min()), float(T.max()))

    def _s(self, s, k, acc, trace) -> int:
        """The divisor of ReLU k: given, or chosen from its accumulators (auto_s)."""
        if trace is not None:
            trace.append(acc.detach())
        return s[k] if s[k] is not None else auto_s(acc, self.clamp)

    # -- the float model and the integer one -----------------------------------------------
    def float_logits(self, x):
        """The float model on integer inputs: it sees x * input_step."""
        torch = _torch()
        dtype = next(self.model.parameters()).dtype
        with torch.no_grad():
            return self.model(self._shape(torch.as_tensor(x).to(dtype) * self.input_step))

    def integer_outputs(self, x, s: list[int]) -> np.ndarray:
        """The exact integer outputs (float64 holds every value of these sizes exactly)."""
        torch = _torch()
        with torch.no_grad():
            out, _ = self.forward(torch.as_tensor(np.asarray(x), dtype=torch.float64), s)
        return out.numpy().astype(np.int64)

    def integer_model(self, s: list[int], input_range: tuple[int, int] | None = None
                      ) -> IntStack:
        """The integer nn.Sequential (float64 modules holding the integers) for divisors s.
        With the inputs' range, biases that put a neuron beyond where its inputs can move it
        are pulled in (`_tighten`): the same outputs, accumulators a map can hold."""
        torch = _torch()
        nn = torch.nn
        layers, captured = [], self._integer_params(s)
        if input_range is not None:
            captured = self._tighten(captured, list(s), input_range)
        for k, st in enumerate(self.steps):
            m = st.module
            if st.kind in ("conv", "linear"):
                w, b, r = captured[k]
                own = st.skip is not None and \
                    self._layer_index(st.skip) == self._layer_index(k - 1)
                if own:  # a shortcut from the layer's own input: lines it already has
                    w = _fold_shortcut(k, st, w, r)
                new = nn.Conv2d(m.in_channels, m.out_channels, m.kernel_size, m.stride,
                                m.padding) if st.kind == "conv" else \
                    nn.Linear(m.in_features, m.out_features)
                new = new.to(torch.float64)
                with torch.no_grad():
                    new.weight.copy_(w)
                    new.bias.copy_(b)
                layers.append(new)
                if st.skip is not None and not own:  # it joins the accumulators
                    layers.append(Shortcut(self._layer_index(st.skip), r))
            elif st.kind == "avgpool":
                ks, sd, pd = _pool_args(m)
                layers.append(nn.AvgPool2d(ks, sd, pd, divisor_override=1))
            elif st.kind == "maxpool":
                ks, sd, pd = _pool_args(m)
                layers.append(nn.MaxPool2d(ks, sd, pd))
            else:
                layers.append(nn.Flatten())
            if st.relu:
                layers.append(nn.ReLU())
            if st.act is not None:
                layers.append(Lookup(*self.tables[k]))
        relu_s = [int(v) for v, st in zip(s, [st for st in self.steps
                                              if st.relu or st.act is not None]) if st.relu]
        return IntStack(nn.Sequential(*layers), relu_s, [self.clamp] * len(relu_s),
                        self.input_shape if isinstance(self.input_shape, tuple) else None)

    def _tighten(self, params: dict, s: list[int], input_range) -> dict:
        """Biases clipped where a neuron is constant: a relu whose accumulator can never
        reach s is 0 for every input, one that always reaches s*L is L; moving its bias to
        the edge of that keeps every value and shrinks the accumulator's range. The range
        of each layer's inputs is one interval for all (it holds 0: sums over a part of a
        window, at the borders, stay inside it)."""
        lo, hi = (float(v) for v in input_range)
        out, k_relu = dict(params), 0
        ivs = {-1: (lo, hi)}   # each step's output interval, for shortcuts
        for k, st in enumerate(self.steps):
            if st.kind in ("avgpool",):
                ks, _, _ = _pool_args(st.module)
                lo, hi = lo * ks[0] * ks[1], hi * ks[0] * ks[1]
            if st.kind not in ("conv", "linear"):
                if st.relu:
                    lo, hi, k_relu = 0.0, float(self.clamp), k_relu + 1
                ivs[k] = (lo, hi)
                continue
            w, b, r = params[k]
            flat = w.reshape(w.shape[0], -1)
            pos, neg = flat.clamp(min=0).sum(1), flat.clamp(max=0).sum(1)
            a_hi, a_lo = b + pos * hi + neg * lo, b + pos * lo + neg * hi
            if r is not None:  # the shortcut's share (r >= 0)
                a_lo, a_hi = a_lo + r * ivs[st.skip][0], a_hi + r * ivs[st.skip][1]
            if st.act is not None:  # a table: its values, biases untouched
                T = self.tables[k][1]
                lo, hi, k_relu = float(T.min()), float(T.max()), k_relu + 1
            elif st.relu and lo <= 0 <= hi:
                top = s[k_relu] * self.clamp
                b = b - (a_hi + 1).clamp(max=0) - (a_lo - top).clamp(min=0)
                out[k] = (w, b, r)
                lo, hi, k_relu = 0.0, float(self.clamp), k_relu + 1
            elif st.relu:
                lo, hi, k_relu = 0.0, float(self.clamp), k_relu + 1
            else:
                lo, hi = float(a_lo.min()), float(a_hi.max())
            ivs[k] = (lo, hi)
        return out

    def _layer_index(self, step: int) -> int:
        """The integer model's vector (interop/torch_import.py's layers: every step but a
        Flatten) holding a step's output; -1: the input."""
        return sum(st.kind != "flatten" for st in self.steps[:step + 1]) - 1 if step >= 0 \
            else -1

    def _integer_params(self, s: list[int]) -> dict[int, tuple]:
        """The integer (w, b) of every weighted step, as forward computes them."""
        torch = _torch()
        got: dict[int, tuple] = {}
        shape = self.input_shape if isinstance(self.input_shape, tuple) else (self.input_shape,)
        with torch.no_grad():
            self.forward(torch.zeros((1, *shape), dtype=torch.float64), list(s), params=got)
        return got


def _fold_shortcut(k: int, st: Step, w, r):
    """w with a shortcut from the layer's own input folded in: r on the diagonal of a
    Linear, on the centre tap of channel c -> c of a shape-keeping Conv2d (stride 1, an odd
    kernel padded by half of it): the same sums, and one line per pair of neurons."""
    w = w.clone()
    m = st.module
    if st.kind == "linear":
        idx = np.arange(w.shape[0])
        w[idx, idx] += r
        return w
    ky, kx = m.kernel_size
    if m.in_channels != m.out_channels or tuple(m.stride) != (1, 1) \
            or tuple(m.padding) != (ky // 2, kx // 2) or not ky % 2 or not kx % 2:
        raise VoodooError(f"layer {k}: a shortcut from a convolution's own input that does "
                          "not keep its shape (stride 1, odd kernel padded by half)")
    idx = np.arange(w.shape[0])
    w[idx, idx, ky // 2, kx // 2] += r
    return w


def _acc_bounds(w, b, iv, padded: bool, r=None, ivs=None) -> tuple[float, float]:
    """An interval holding every accumulator `w . h + b (+ r h_s)` with h in iv (a padded
    convolution's border sums fewer terms: iv then holds 0), h_s in ivs."""
    lo, hi = (min(iv[0], 0.0), max(iv[1], 0.0)) if padded else iv
    flat = w.reshape(w.shape[0], -1)
    pos, neg = flat.clamp(min=0).sum(1), flat.clamp(max=0).sum(1)
    a_lo, a_hi = b + pos * lo + neg * hi, b + pos * hi + neg * lo
    if r is not None:  # r >= 0: scales are positive
        a_lo, a_hi = a_lo + r * ivs[0], a_hi + r * ivs[1]
    return float(a_lo.min()), float(a_hi.max())


MAX_TABLE = 4_000_000   # accumulators a lookup may tabulate


def table(act, lo: int, hi: int, a: float, s: int, clamp: int) -> tuple[int, np.ndarray]:
    """(lo, T): T[acc - lo] = clamp(round(f(acc * a) / (a * s)), -clamp or 0, clamp) for
    every accumulator lo..hi (negative values only where f takes them)."""
    name = f"the activation {type(act).__name__}{_label('', act)}"
    if hi - lo + 1 > MAX_TABLE:
        raise VoodooError(f"{name}: its layer's accumulators span {hi - lo + 1:,} values, "
                          f"more than a lookup table of {MAX_TABLE:,}\n    hint: fewer "
                          "weight bits, a smaller input range, or ReLU")
    x = np.arange(lo, hi + 1, dtype=np.float64) * a
    f = _finite(act, x, lookup_values(act, x))
    q = np.round(f / (a * s))
    return lo, np.clip(q, -clamp if f.min() < 0 else 0, clamp).astype(np.int64)


def _finite(act, x: np.ndarray, f: np.ndarray) -> np.ndarray:
    """f, the activation's values at x, if all finite."""
    if not np.all(np.isfinite(f)):
        raise VoodooError(f"the activation {type(act).__name__}{_label('', act)} is not finite "
                          f"at {float(x[~np.isfinite(f)][0]):g}, a value its input takes\n    "
                          "hint: an activation read as a lookup must be defined on every "
                          "value the layer before it can give")
    return f


def Shortcut(src: int, r):
    """The integer model's residual shortcut: the accumulators of the layer it follows get
    r (per channel) times the values of vector `src` (-1: the input), as extra lines
    (interop/torch_import.py reads `shortcut_src` and `shortcut_weights`)."""
    torch = _torch()
    m = torch.nn.Identity()
    m.shortcut_src = int(src)
    m.shortcut_weights = np.asarray(r.detach().numpy() if hasattr(r, "detach") else r,
                                    dtype=np.float64).round().astype(np.int64)
    return m


def Lookup(lo: int, T: np.ndarray):
    """The integer model's lookup after a layer: h = T[clamp(acc, LO, HI) - LO] over the
    window LO..HI where T changes (outside it T is constant), as the netlist's `lut` gate
    (interop/torch_import.py reads `lut_lo` and `lut_values`)."""
    changes = np.flatnonzero(np.diff(T))
    first, last = (int(changes[0]), int(changes[-1]) + 1) if changes.size else (0, 0)
    return _lookup_class()(lo + first, T[first:last + 1])


_LOOKUP = []


def _lookup_class():
    if not _LOOKUP:
        torch = _torch()

        class LookupModule(torch.nn.Module):
            def __init__(self, lut_lo: int, lut_values: np.ndarray):
                super().__init__()
                self.lut_lo, self.lut_values = int(lut_lo), np.asarray(lut_values, np.int64)

            def forward(self, x):
                i = torch.clamp(x, self.lut_lo, self.lut_lo + len(self.lut_values) - 1)
                return torch.from_numpy(self.lut_values)[(i - self.lut_lo).long()].to(x.dtype)

        _LOOKUP.append(LookupModule)
    return _LOOKUP[0]


def _ste(fn):
    def apply(t):
        return t + (fn(t) - t).detach()
    return apply


def auto_s(acc, clamp: int) -> int:
    """A divisor from accumulators: the 99.9th percentile of the positive ones reaches L."""
    torch = _torch()
    pos = acc[acc > 0]
    if pos.numel() == 0:
        return 1
    top = float(torch.quantile(pos.double()[:1_000_000], 0.999))
    return max(1, int(round(top / clamp)))


def calibrate(q: QuantStack, x, score, n_cand: int = 24, progress=None) -> list[int]:
    """One divisor per ReLU, layer by layer: each the candidate with the best score of the
    whole integer network (later layers' divisors from their accumulators), ties to the
    smaller. `score(outputs) -> float` reads the integer outputs of the rows of x."""
    torch = _torch()
    x = torch.as_tensor(np.asarray(x), dtype=torch.float64)
    s: list = [None] * q.n_relu
    # a lookup's ties go to the larger divisor: a bounded activation (Sigmoid, Tanh) is
    # then spread over its levels rather than clamped to a constant
    lookups = [st.act is not None for st in q.steps if st.relu or st.act is not None]
    for k in range(q.n_relu):
        trace: list = []
        with torch.no_grad():
            q.forward(x, s, trace=trace)
        acc = trace[k]
        pos = acc[acc > 0]
        if pos.numel() == 0:
            s[k] = 1
            continue
        top = float(pos.max()) / q.clamp
        p99 = float(torch.quantile(pos.double()[:1_000_000], 0.99)) / q.clamp
        lo, hi = max(1.0, p99 / 8), max(1.0, top)
        cands = sorted(set(np.unique(np.geomspace(lo, max(hi, lo), n_cand).round()
                                     .astype(int)).tolist()))
        best, best_score = cands[0], -np.inf
        for c in cands:
            trial = list(s)
            trial[k] = c
            with torch.no_grad():
                out, _ = q.forward(x, trial)
            got = score(out.numpy())
            if got > best_score or (got == best_score and lookups[k]):
                best, best_score = c, got
            if progress is not None:
                progress()
        s[k] = int(best)
    return s
