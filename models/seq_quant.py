"""Quantising a float layer stack into the integer network a netlist computes.

Owns the scheme for float `nn.Sequential` stacks of `Conv2d` and `Linear` layers (each
optionally followed by `ReLU`), `AvgPool2d`, `MaxPool2d` and `Flatten` (docs/mnist.md,
"The convolutional model"): the one quantisation path of models/cnn.py (the MNIST CNN,
with quantisation-aware training) and interop/onnx_import.py (float ONNX graphs).

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
    AvgPool2d: h = the window's sum (integers stay integers), u = u / window size;
        a ReLU after it requantises the sum: h = clamp(floor(h / s), 0, L), u = u * s
    MaxPool2d: h = the window's maximum, u unchanged;  Flatten: u repeats per position

`s` (one integer per ReLU) is the only free choice: `calibrate` picks each in turn by the
score of the whole integer network (accuracy, or agreement with the float model). The
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


def steps_of(model) -> list[Step]:
    """The layers of a float nn.Sequential as quantisation steps, validated."""
    nn = _torch().nn
    kinds = ((nn.Conv2d, "conv"), (nn.Linear, "linear"), (nn.AvgPool2d, "avgpool"),
             (nn.MaxPool2d, "maxpool"), (nn.Flatten, "flatten"))
    steps: list[Step] = []
    for name, m in model.named_children():
        kind = next((v for cls, v in kinds if type(m) is cls), None)
        if kind is not None:
            steps.append(Step(kind, m))
        elif isinstance(m, nn.ReLU):
            if not steps or steps[-1].relu or steps[-1].kind not in ("conv", "linear",
                                                                     "avgpool"):
                raise VoodooError(f"layer {name} (ReLU) does not follow a Conv2d, Linear or "
                                  "AvgPool2d\n    hint: put each ReLU right after one of "
                                  "those (before a max pool: the same function)")
            steps[-1].relu = True
        elif isinstance(m, (nn.Identity, nn.Dropout)):
            continue  # nothing at inference
        else:
            raise VoodooError(f"layer {name} ({type(m).__name__}) cannot be quantised\n    "
                              "hint: the layers are Conv2d, Linear, ReLU, AvgPool2d, "
                              "MaxPool2d and Flatten")
    weighted = [k for k, s in enumerate(steps) if s.kind in ("conv", "linear")]
    if not weighted:
        raise VoodooError("the model has no Conv2d or Linear layer to quantise")
    if steps[weighted[-1]].relu or any(s.kind != "flatten" for s in steps[weighted[-1] + 1:]):
        raise VoodooError("the model must end with a Conv2d or Linear layer without ReLU "
                          "(its outputs are the logits)")
    return steps


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
                 clamp: int = 15):
        self.model = model
        self.steps = steps_of(model)
        # (channels, height, width) of an image input, or the number of flat inputs
        self.input_shape = int(input_shape) if np.ndim(input_shape) == 0 else \
            tuple(int(v) for v in input_shape)
        self.input_step = float(input_step)
        self.wmax = 2 ** (weight_bits - 1) - 1
        self.clamp = int(clamp)
        self.n_relu = sum(s.relu for s in self.steps)
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
        for k, st in enumerate(self.steps):
            m = st.module
            if st.kind in ("conv", "linear"):
                h, u, a, k_relu = self._weighted(k, st, h, u, s, k_relu, (rnd, flo), trace,
                                                 params)
            elif st.kind == "avgpool":
                ks, sd, pd = _pool_args(m)
                h = F.avg_pool2d(h, ks, sd, pd, divisor_override=1)
                u = u / (ks[0] * ks[1])
                if st.relu:
                    s_k = self._s(s, k_relu, h, trace)
                    h, u = torch.clamp(flo(h / s_k), 0, self.clamp), u * s_k
                    k_relu += 1
            elif st.kind == "maxpool":
                ks, sd, pd = _pool_args(m)
                h = F.max_pool2d(h, ks, sd, pd)
            elif h.dim() == 4:  # flatten, channel by channel as torch does
                u = u.repeat_interleave(h.shape[2] * h.shape[3])
                h = h.flatten(1)
        return h, a

    def _weighted(self, k, st, h, u, s, k_relu, rounding, trace, params):
        """One Conv2d or Linear (and its ReLU): (h, u, a, ReLUs so far)."""
        torch = _torch()
        F = torch.nn.functional
        rnd, flo = rounding
        m = st.module
        W = m.weight.to(h.dtype)
        A = W * (u[None, :, None, None] if st.kind == "conv" else u[None, :])
        if k == self.last:
            a = A.abs().max().detach().clamp(min=1e-12) / self.wmax
            aw = a
        else:
            a = A.abs().amax(dim=tuple(range(1, A.dim()))).detach().clamp(min=1e-12) / self.wmax
            aw = a.reshape(-1, *([1] * (A.dim() - 1)))
        w = rnd(A / aw)
        b = rnd(m.bias.to(h.dtype) / a) if m.bias is not None else \
            torch.zeros(W.shape[0], dtype=h.dtype)

        def acc_of(bias):
            return F.conv2d(h, w, bias, m.stride, m.padding) if st.kind == "conv" else \
                F.linear(h, w, bias)

        if st.relu:
            if s[k_relu] is None or trace is not None:
                with torch.no_grad():
                    s_k = self._s(s, k_relu, acc_of(b), trace)
            else:
                s_k = s[k_relu]
            b = b + s_k // 2
        if params is not None:
            params[k] = (w.detach().clone(), b.detach().clone())
        acc = acc_of(b)
        if not st.relu:
            return acc, (a.expand(W.shape[0]) if a.dim() == 0 else a), a, k_relu
        return torch.clamp(flo(acc / s_k), 0, self.clamp), a * s_k, a, k_relu + 1

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
                w, b = captured[k]
                new = nn.Conv2d(m.in_channels, m.out_channels, m.kernel_size, m.stride,
                                m.padding) if st.kind == "conv" else \
                    nn.Linear(m.in_features, m.out_features)
                new = new.to(torch.float64)
                with torch.no_grad():
                    new.weight.copy_(w)
                    new.bias.copy_(b)
                layers.append(new)
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
        return IntStack(nn.Sequential(*layers), [int(v) for v in s], [self.clamp] * self.n_relu,
                        self.input_shape if isinstance(self.input_shape, tuple) else None)

    def _tighten(self, params: dict, s: list[int], input_range) -> dict:
        """Biases clipped where a neuron is constant: a relu whose accumulator can never
        reach s is 0 for every input, one that always reaches s*L is L; moving its bias to
        the edge of that keeps every value and shrinks the accumulator's range. The range
        of each layer's inputs is one interval for all (it holds 0: sums over a part of a
        window, at the borders, stay inside it)."""
        lo, hi = (float(v) for v in input_range)
        out, k_relu = dict(params), 0
        for k, st in enumerate(self.steps):
            if st.kind in ("avgpool",):
                ks, _, _ = _pool_args(st.module)
                lo, hi = lo * ks[0] * ks[1], hi * ks[0] * ks[1]
            if st.kind not in ("conv", "linear"):
                if st.relu:
                    lo, hi, k_relu = 0.0, float(self.clamp), k_relu + 1
                continue
            w, b = params[k]
            flat = w.reshape(w.shape[0], -1)
            pos, neg = flat.clamp(min=0).sum(1), flat.clamp(max=0).sum(1)
            a_hi, a_lo = b + pos * hi + neg * lo, b + pos * lo + neg * hi
            if st.relu and lo <= 0 <= hi:
                top = s[k_relu] * self.clamp
                b = b - (a_hi + 1).clamp(max=0) - (a_lo - top).clamp(min=0)
                out[k] = (w, b)
                lo, hi, k_relu = 0.0, float(self.clamp), k_relu + 1
            elif st.relu:
                lo, hi, k_relu = 0.0, float(self.clamp), k_relu + 1
            else:
                lo, hi = float(a_lo.min()), float(a_hi.max())
        return out

    def _integer_params(self, s: list[int]) -> dict[int, tuple]:
        """The integer (w, b) of every weighted step, as forward computes them."""
        torch = _torch()
        got: dict[int, tuple] = {}
        shape = self.input_shape if isinstance(self.input_shape, tuple) else (self.input_shape,)
        with torch.no_grad():
            self.forward(torch.zeros((1, *shape), dtype=torch.float64), list(s), params=got)
        return got


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
            if got > best_score:
                best, best_score = c, got
            if progress is not None:
                progress()
        s[k] = int(best)
    return s
