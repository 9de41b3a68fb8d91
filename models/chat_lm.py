"""A character chat model with gated linear attention and a mixture of experts, whose
integer forward is exactly what its netlist computes, step by step.

The architecture (issue 21, docs/chat.md): a token embedding plus a learned position
embedding (context 48); per layer LayerNorm -> gated linear attention -> residual ->
LayerNorm -> GELU MLP -> residual; the attention is recurrent, a state S (per head a
dh x dh matrix) and z (dh) updated every step with a per-channel gate g = sigmoid(x Wg) *
decay (decay learned per channel):

    S = g * S + k v^T,   z = g * z + k   (g broadcast over rows),   out = (q^T S) / (q^T z)

with q = elu(x Wq) + 1, k = elu(x Wk) + 1, v = x Wv, then Wo. A router over the running
mean of the input vectors (d -> hidden ReLU -> experts logits, argmax) picks one of the
experts at every step, each a whole set of block weights for both layers (the state belongs
to the layer: the chosen expert writes it). A final LayerNorm and a head give the logits;
a reply is decoded greedily with a repetition penalty, or sampled with Gumbel noise that
is given as data, and ends at a newline.

One set of float parameters held "in integer units" gives three forwards, as in
models/transformer.py:

- ``mode="float"``: real numbers, the clamps kept, no rounding (training);
- ``mode="int"``: exact int64 integers, weights rounded: equal, number for number, to
  `dsl.reference.evaluate` on the netlist of models/chat_dnet.py;
- ``mode="qat"``: the integer values with straight-through gradients.

    from models.chat_lm import ChatConfig, ChatLM, generate
    model = ChatLM(ChatConfig(d_model=8, layers=2, experts=2))
    logits = model(x)                     # x (batch, steps) character ids; (batch, steps, V)
    ints = model(x, mode="int")           # exact int64 logits
    reply = generate(model, "what is a doll?")          # greedy, repetition penalty
    reply = generate(model, "hi", seed=3)               # Gumbel-max with seeded noise
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np
import torch
from torch import nn

from dsl.diagnostics import VoodooError
from models.chat_corpus import CONTEXT, NEWLINE, VOCAB, decode, encode
from models.transformer import Table, _Ops as _TransformerOps, _V, _norm, _round, \
    _ste_round, integer, norm_tables


@dataclass(frozen=True)
class ChatConfig:
    vocab: int = len(VOCAB)
    context: int = CONTEXT      # T: positions 0..T-1; a run ends at step T at the latest
    d_model: int = 8
    heads: int = 1              # the state is one dh x dh matrix per head, dh = d / heads
    layers: int = 2
    experts: int = 2
    mlp: int = 16               # GELU MLP width
    router_hidden: int = 32
    # LayerNorm, as docs/transformer.md ("Norms"): u = clamp(round(z / s_norm), -N, N),
    # rho = min(rho_max, round(K sqrt(d / sum u^2))), y = u rho
    norm_max: int = 8
    s_norm: int = 48
    norm_k: int = 24            # K: a normalised value of 1.0 is K
    rho_max: int = 16
    # q, k = min(qk_max, round(qk_scale * (elu(acc / s_qkv) + 1))); v = clamp(round(acc /
    # s_v), -v_max, v_max); g = min(gate_max, round(G sigmoid(acc / s_qkv) decay))
    s_qkv: int = 256
    qk_max: int = 8
    qk_scale: float = 4.0
    v_max: int = 7
    s_v: int = 192
    gate_unit: int = 4          # G: g / G is the gate times the decay
    gate_max: int = 3           # g <= gate_max < G: every state update is a contraction
    decay_unit: int = 16        # the decay is a fixed-point factor d / decay_unit
    kv_div: int = 7             # S adds round(k v / kv_div)
    # the division out = num / den in the log domain
    beta: float = 0.08          # one LOG unit is beta nats
    out_scale: int = 4          # P: the attention output is P (mean v + v_max), 0..2 P v_max
    log_max: int = 0            # the logs of the readout saturate at this key (0: at num_max
                                # and den_max): a log lookup's lane climbs to its last key
    # MLP: f = min(gelu_max, round(gelu_scale * gelu(acc / s_mlp)))
    s_mlp: int = 256
    gelu_scale: int = 8
    gelu_max: int = 24
    # router: A += clamp(round(h / s_router_in), -X, X) + X, mean = rho A / t - rho X,
    # hidden = clamp(round((W1 mean + b1) / s_router), 0, router_max)
    s_router_in: int = 32
    router_in_max: int = 2      # X
    router_mean_scale: int = 8  # rho
    s_router: int = 64
    router_max: int = 15
    # head and the choice of the next character (docs/chat.md, "The choice")
    logit_unit: int = 16        # a logit of logit_unit is one nat
    s_choice: int = 8           # scores are logits / s_choice (half-nats by default)
    choice_max: int = 24        # scores clamp to 0..choice_max (a bias calibrated from data
                                # puts the largest logits near the top)
    penalty: float = 2.0        # nats per earlier generated occurrence of a character
    repeat_max: int = 3         # occurrences counted up to this many
    temperature: float = 0.3
    noise_levels: int = 256     # the generator's uniform values 0..255

    def validate(self) -> "ChatConfig":
        problems = []
        for k in ("vocab", "context", "d_model", "heads", "layers", "experts", "mlp",
                  "router_hidden", "norm_max", "s_norm", "norm_k", "rho_max", "s_qkv", "qk_max",
                  "v_max", "s_v", "gate_unit", "decay_unit", "kv_div", "out_scale",
                  "s_mlp", "gelu_scale", "gelu_max", "s_router_in", "router_in_max",
                  "router_mean_scale", "s_router", "router_max", "logit_unit", "s_choice",
                  "choice_max", "repeat_max", "noise_levels"):  # noqa: E501
            if getattr(self, k) < 1:
                problems.append(f"{k}={getattr(self, k)} must be at least 1")
        if self.d_model % self.heads:
            problems.append(f"d_model {self.d_model} is not a multiple of heads {self.heads}")
        if not 0 < self.gate_max < self.gate_unit:
            problems.append(f"gate_max {self.gate_max} must lie in 1..gate_unit-1 "
                            f"({self.gate_unit - 1}): the state must shrink every step")
        if self.log_max and self.log_max < max(self.context, self.sum_max):
            problems.append(f"log_max {self.log_max} must be 0 or at least the router's "
                            f"count and sums ({max(self.context, self.sum_max)})")
        if self.vocab < NEWLINE + 1 or self.beta <= 0 or self.temperature <= 0:
            problems.append("vocab must hold the newline, beta > 0, temperature > 0")
        if problems:
            raise VoodooError("chat config: " + "; ".join(problems))
        return self

    # -- derived bounds: each proven in docs/chat.md ("Ranges over any number of steps")
    @property
    def norm(self) -> str:
        """The LayerNorms' form for models.transformer._norm: every write into the residual
        stream has zero mean over the channels, exactly (`zero_mean`), so a LayerNorm's
        mean is 0 and it is computed as the RMS norm of h (docs/chat.md, "LayerNorm")."""
        return "rms"

    @property
    def head_dim(self) -> int:
        return self.d_model // self.heads

    @property
    def kv_max(self) -> int:
        """|round(k v / kv_div)| <= kv_max."""
        return _rdiv(self.qk_max * self.v_max, self.kv_div)

    @property
    def state_max(self) -> int:
        """The least Smax with |trunc(g s / G)| + kv_max <= Smax for every |s| <= Smax and
        g <= gate_max: then |S| <= Smax at every step, however many."""
        return _contraction_bound(self.gate_max, self.gate_unit, self.kv_max)

    @property
    def z_max(self) -> int:
        """The same bound for z (increments k <= qk_max, never negative)."""
        return _contraction_bound(self.gate_max, self.gate_unit, self.qk_max)

    @property
    def out_max(self) -> int:
        """|o| <= out_max: the attention output is P q.S / q.z, a weighted mean of v."""
        return self.out_scale * self.v_max

    @property
    def sum_max(self) -> int:
        """The router's running sums A (an increment of 0..2X per step)."""
        return 2 * self.router_in_max * self.context

    @property
    def mean_max(self) -> int:
        return 2 * self.router_mean_scale * self.router_in_max

    @property
    def num_max(self) -> int:
        """|q.S[:, j]| <= num_max (a numerator of the readout)."""
        return self.head_dim * self.qk_max * self.state_max

    @property
    def den_max(self) -> int:
        """0 <= q.z <= den_max (the readout's denominator)."""
        return self.head_dim * self.qk_max * self.z_max

    @property
    def log_keys(self) -> tuple[int, int]:
        """The last keys of the LOG and LOGP tables (LOGN's is minus LOGP's): beyond them
        a log holds its last value (`log_max`; the router's count and sums always fit)."""
        top_den, top_num = max(self.den_max, self.context), max(self.num_max, self.sum_max)
        if self.log_max:
            top_den, top_num = min(top_den, self.log_max), min(top_num, self.log_max)
        return top_den, top_num

    @property
    def penalty_units(self) -> int:
        return _round(self.penalty * self.logit_unit / self.s_choice)


def _rdiv(a: int, b: int) -> int:
    """round(a / b), half up, b > 0 (the rounding of every integer quotient here)."""
    return (2 * a + b) // (2 * b)


def _decayed(g: int, s: int, G: int) -> int:
    """g s / G rounded toward zero: a decayed value always shrinks (rounding to nearest
    would keep every |s| <= G / (2 (G - g)) forever)."""
    return abs(g * s) // G * (1 if g * s >= 0 else -1)


def _contraction_bound(g_max: int, G: int, inc: int) -> int:
    s = max(inc, 1)
    while _decayed(g_max, s, G) + inc > s:
        s += 1
    return s


# ------------------------------------------------------------------------ lookup tables
def _trimmed(name: str, fn, lo: int, hi: int) -> Table:
    """The table of fn on lo..hi with constant runs at both ends trimmed (a lut holds its
    edge values beyond its domain, so the function is the same everywhere)."""
    vals = [fn(a) for a in range(lo, hi + 1)]
    first = next((k for k in range(len(vals) - 1) if vals[k + 1] != vals[0]), 0)
    last = next((k for k in range(len(vals) - 1, 0, -1) if vals[k - 1] != vals[-1]),
                len(vals) - 1)
    return Table(name, lo + first, tuple(vals[first:last + 1]))


def _elu1(x: float) -> float:
    return math.exp(x) if x < 0 else x + 1.0


def _gelu(x: float) -> float:
    return 0.5 * x * (1.0 + math.erf(x / math.sqrt(2.0)))


def tables(cfg: ChatConfig) -> dict[str, Table]:
    """The lookups every model of a configuration shares (docs/chat.md); the gate tables
    hold the learned decays and belong to a model (`ChatLM.gate_tables`)."""
    c = cfg
    span = 40 * max(c.s_qkv, c.s_mlp)
    top_den, top_num = c.log_keys
    out = {
        "qk": _trimmed("qk", lambda a: min(c.qk_max, _round(c.qk_scale * _elu1(a / c.s_qkv))),
                       -span, span),
        "gelu": _trimmed("gelu", lambda a: min(c.gelu_max, _round(c.gelu_scale *
                                                                   _gelu(a / c.s_mlp))),
                         -span, span),
        "log": Table("log", 0, tuple(_round(math.log(max(n, 1)) / c.beta)
                                     for n in range(top_den + 1))),
        "div": _trimmed("div", lambda d: min(c.out_max, _round(c.out_scale * c.kv_div *
                                                               math.exp(c.beta * d))),
                        -4000, 4000),
        "mean": _trimmed("mean", lambda d: min(c.mean_max, _round(c.router_mean_scale *
                                                                  math.exp(c.beta * d))),
                         -4000, 4000),
    }
    # The logs of a numerator's positive and negative parts; a part that is 0 has a log
    # so low that every quotient of it is 0 (zero = below every table minus any LOG).
    zero = min(out["div"].lo, out["mean"].lo) - 1 - out["log"].values[-1]
    out["logp"] = Table("logp", 0, (zero,) + tuple(_round(math.log(n) / c.beta)
                                                   for n in range(1, top_num + 1)))
    out["logn"] = Table("logn", -top_num, tuple(_round(math.log(-n) / c.beta)
                                                for n in range(-top_num, 0)) + (zero,))
    for t in norm_tables(c).values():
        out[t.name] = Table(t.name, t.lo, tuple(min(v, c.rho_max) for v in t.values)) \
            if t.name == "rsqrt" else t
    return out


_TABLES: dict = {}


def _shared_tables(cfg: ChatConfig) -> dict[str, Table]:
    if cfg not in _TABLES:  # every forward step needs them: compute once per config
        _TABLES[cfg] = tables(cfg)
    return _TABLES[cfg]


_TENSORS: dict = {}


def _shared_tensors(cfg: ChatConfig) -> dict[str, torch.Tensor]:
    """The shared tables as index tensors, once per config: the float forward builds an
    integer _Ops for its route at every step (only read, never written)."""
    if cfg not in _TENSORS:
        _TENSORS[cfg] = {k: torch.tensor(t.values, dtype=torch.long)
                         for k, t in _shared_tables(cfg).items()}
    return _TENSORS[cfg]


def gate_table(cfg: ChatConfig, decay: int) -> Table:
    """g = min(gate_max, round(G sigmoid(acc / s_qkv) decay / decay_unit))."""
    G, s = cfg.gate_unit, cfg.s_qkv
    return _trimmed(f"gate{decay}",
                    lambda a: min(cfg.gate_max, _round(G / (1 + math.exp(-a / s)) * decay
                                                       / cfg.decay_unit)),
                    -40 * s, 40 * s)


def _float_fns(cfg: ChatConfig) -> dict:
    """The real function each table rounds: what the float forward computes instead."""
    c = cfg
    return {
        "qk": lambda a: torch.clamp(c.qk_scale * (torch.nn.functional.elu(a / c.s_qkv) + 1),
                                    max=c.qk_max),
        "gelu": lambda a: torch.clamp(c.gelu_scale * torch.nn.functional.gelu(a / c.s_mlp),
                                      max=c.gelu_max),
        "sq": lambda z: torch.clamp(z / c.s_norm, -c.norm_max, c.norm_max) ** 2,
        "rsqrt": lambda S: torch.clamp(c.norm_k * torch.sqrt(c.d_model / torch.clamp(S, min=1)),
                                       max=c.rho_max),
    }


# ------------------------------------------------------------------- paired arithmetic
class _Ops(_TransformerOps):
    """The transformer's paired float / integer arithmetic (models/transformer.py) with
    this model's tables; `_norm` of the transformer runs on it unchanged."""

    def __init__(self, cfg: ChatConfig, mode: str):  # noqa: the transformer's layer caps do not apply
        if mode not in ("float", "int", "qat"):
            raise VoodooError(f"mode {mode!r}: use float, int or qat")
        self.cfg, self.mode, self.scores = cfg, mode, None
        self.noise = 0.0     # float: the amplitude of the uniform noise each rounding adds
        self.fns = _float_fns(cfg)
        self.tables = _shared_tables(cfg)
        self._t = _shared_tensors(cfg)

    def _pair(self, f, i) -> _V:
        """As the transformer's; the float path of training may add a rounding's noise
        (uniform, `noise` wide) so that the float model learns what the integers keep."""
        if self.noise and i is None and f is not None:
            f = f + self.noise * (torch.rand_like(f) - 0.5)
        return super()._pair(f, i)

    def table(self, x: _V, name: str) -> _V:
        t = self.tables[name]
        f = None if x.f is None else self.fns[name](x.f)
        i = None if x.i is None else self._t[name][torch.clamp(x.i, t.lo, t.hi) - t.lo]
        return self._pair(f, i)

    def param(self, W) -> _V:
        """A parameter (a tensor, or a Fixed whose integers are given) as each path needs it:
        real (float), its integers straight-through (qat), the integers (int)."""
        if isinstance(W, Fixed):
            return _V(None if self.mode == "int" else W.f if self.mode == "float" else
                      W.f + (W.i.to(W.f.dtype) - W.f).detach(),
                      None if self.mode == "float" else W.i)
        return super().param(W)

    def lin_e(self, x: _V, W, b) -> _V:
        """Every expert's x @ W[e].T + b[e]: (batch, in) -> (batch, experts, out)."""
        return _linear(self, x, W, b, "...i,eoi->...eo")

    def rdiv(self, x: _V, den: int, toward_zero: bool = False) -> _V:
        """round(x / den), half up, or rounded toward zero: the state's roundings."""
        f = None if x.f is None else x.f / den
        i = None
        if x.i is not None:
            i = torch.div(x.i, den, rounding_mode="trunc") if toward_zero else \
                torch.div(2 * x.i + den, 2 * den, rounding_mode="floor")
        return self._pair(f, i)

    def ratio(self, num: _V, den: _V, name: str, scale: int, top: int,
              signed: bool = False) -> _V:
        """scale * num / den in the log domain (docs/chat.md, "The division"):
        TABLE(LOGP(num) - LOG(den)), minus TABLE(LOGN(num) - LOG(den)) when signed."""
        f = None if num.f is None else torch.clamp(scale * num.f / den.f.clamp(min=1e-3),
                                                   -top if signed else 0, top)
        i = None
        if num.i is not None:
            ld = self._look("log", den.i)
            i = self._look(name, self._look("logp", num.i) - ld)
            if signed:
                i = i - self._look(name, self._look("logn", num.i) - ld)
        return self._pair(f, i)

    def _look(self, name: str, a):
        t = self.tables[name]
        return self._t[name][torch.clamp(a, t.lo, t.hi) - t.lo]


# -------------------------------------------------------------------------- the module
SIG_H = 128.0  # typical magnitude of a residual value, in integer units


class ChatLM(nn.Module):
    """The model (module docstring); parameters in integer units. Expert weights are
    stacked: W[e] is expert e's (out, in) matrix."""

    def __init__(self, cfg: ChatConfig, seed: int = 0):
        super().__init__()
        self.cfg = c = cfg.validate()
        g = torch.Generator().manual_seed(seed)
        d, E, M, V, R = c.d_model, c.experts, c.mlp, c.vocab, c.router_hidden
        K, sd = float(c.norm_k), math.sqrt(c.d_model)

        self.scales: dict[int, float] = {}   # id(parameter) -> its typical magnitude

        def p(*shape, std=0.0, init=0.0):
            w = nn.Parameter(torch.randn(*shape, generator=g) * std + init)
            self.scales[id(w)] = max(std, abs(init), 1.0)
            return w

        self.embed = nn.ParameterDict(dict(tok=p(V, d, std=SIG_H), pos=p(c.context, d,
                                                                          std=SIG_H / 2)))
        self.router = nn.ParameterDict(dict(
            W1=p(R, d, std=2 * c.s_router / (c.router_mean_scale * c.router_in_max * sd)),
            b1=p(R, std=c.s_router),
            W2=p(E, R, std=1.0), b2=p(E)))
        w_in = c.s_qkv / (K * sd)
        blocks = []
        for _ in range(c.layers):
            blocks.append(nn.ParameterDict(dict(
                g1=p(E, d, init=1.0), n1=p(E, d), g2=p(E, d, init=1.0), n2=p(E, d),
                Wq=p(E, d, d, std=w_in), bq=p(E, d), Wk=p(E, d, d, std=w_in), bk=p(E, d),
                Wv=p(E, d, d, std=c.s_v * 3 / (K * sd)), bv=p(E, d),
                Wg=p(E, d, d, std=w_in / 2), bg=p(E, d, std=c.s_qkv / 2, init=c.s_qkv),
                decay=p(E, d, std=0.5, init=2.5),   # decay = sigmoid(this)
                Wo=p(E, d, d, std=SIG_H / (2 * 2 * c.out_scale * sd)), bo=p(E, d),
                W1=p(E, M, d, std=c.s_mlp / (K * sd)), b1=p(E, M),
                W2=p(E, d, M, std=SIG_H / (c.gelu_scale * 2 * math.sqrt(M))), b2=p(E, d))))
        self.blocks = nn.ModuleList(blocks)
        self.head = nn.ParameterDict(dict(g=p(d, init=1.0), n=p(d),
                                          W=p(V, d, std=2 * c.logit_unit / (K * sd)), b=p(V)))
        # Added to the logits before the choice's clamp (calibrate_choice sets it).
        self.register_buffer("choice_bias", torch.zeros((), dtype=torch.long))

    def param_groups(self, lr: float) -> list[dict]:
        """Adam groups whose step is lr times each parameter's magnitude: parameters in
        integer units span 1 (a decay's logit) to 64 (an embedding)."""
        groups: dict[float, list] = {}
        for w in self.parameters():
            groups.setdefault(self.scales.get(id(w), 1.0), []).append(w)
        return [{"params": ws, "lr": lr * s} for s, ws in sorted(groups.items())]

    # -- saving -------------------------------------------------------------------------
    def state(self) -> dict:
        return {"config": asdict(self.cfg), "weights": self.state_dict()}

    @classmethod
    def from_state(cls, state: dict) -> "ChatLM":
        m = cls(ChatConfig(**state["config"]))
        m.load_state_dict(state["weights"])
        return m

    # -- integer parameters the netlist holds -------------------------------------------
    def decays(self, layer: int) -> torch.Tensor:
        """(experts, d) the fixed-point decays d / decay_unit, as integers."""
        dq = self.cfg.decay_unit
        return torch.round(torch.sigmoid(self.blocks[layer]["decay"].detach()) * dq).long()

    def folded(self, layer: int, norm: str, names) -> dict:
        """Expert weights with the LayerNorm's gain and bias folded in: W diag(g), W n + b
        (each expert has its own norm parameters)."""
        return self.folded_of(self.blocks[layer], norm, names)

    @staticmethod
    def folded_of(blk, norm: str, names) -> dict:
        gain, shift = blk["g" + norm], blk["n" + norm]
        return {n: (blk["W" + n] * gain[:, None, :],
                    blk["b" + n] + torch.einsum("eoi,ei->eo", blk["W" + n], shift))
                for n in names}

    @torch.no_grad()
    def keep_in_lights(self, cap: float = 12000.0) -> None:
        """Scale down every row of a reader of a LayerNorm whose largest accumulator
        |b| + sum |W| y_max (W, b folded with the norm) exceeds `cap`: the netlist pushes an
        unchosen expert's accumulator by about that bound below its table, so twice it must
        stay within a light's -32768..32767 (models/chat_dnet.check_ranges). Training calls
        this after every step (a projection; the float forward is unchanged otherwise)."""
        c = self.cfg
        ymax = c.norm_max * c.rho_max
        for blk in self.blocks:
            for norm, names in (("1", "qkvg"), ("2", ("1",))):
                for n, (W, b) in self.folded_of(blk, norm, names).items():
                    bound = b.abs() + W.abs().sum(-1) * ymax
                    f = torch.clamp(cap / bound.clamp(min=1e-9), max=1.0)
                    blk["W" + n].mul_(f[..., None])
                    blk["b" + n].mul_(f)
        W, b = self.head_folded()
        f = torch.clamp(2 * cap / (b.abs() + W.abs().sum(-1) * ymax).clamp(min=1e-9), max=1.0)
        self.head["W"].mul_(f[:, None])
        self.head["b"].mul_(f)

    def head_folded(self):
        h = self.head
        return h["W"] * h["g"][None, :], h["b"] + h["W"] @ h["n"]

    # -- the forward ----------------------------------------------------------------------
    def forward(self, x, mode: str = "float", aux: list | None = None,
                recurrent: bool | None = None, noise: float = 0.0):
        """x: (batch, steps) character ids, the same steps every row (teacher forcing).
        Returns (batch, steps, vocab) logits: float (float, qat) or exact int64 (int).
        The float forward runs every step at once (the state's closed form, docs/chat.md)
        unless `recurrent`; int and qat run step by step. `aux` (a list) collects the
        router's probabilities and choices."""
        ops = _Ops(self.cfg, mode)
        ops.noise = noise if mode == "float" else 0.0
        x = torch.as_tensor(x).long()
        if recurrent is None:
            recurrent = mode != "float"
        if not recurrent:
            if mode != "float":
                raise VoodooError("only the float forward has a parallel form")
            return self._parallel(ops, x, aux)
        st = self.initial_state(ops, x.shape[0])
        out = [self.step(ops, st, x[:, t], t, aux) for t in range(x.shape[1])]
        if mode == "int":
            return torch.stack([o.i for o in out], 1)
        return torch.stack([o.f for o in out], 1)

    def initial_state(self, ops: _Ops, batch: int) -> dict:
        c = self.cfg
        H, dh = c.heads, c.head_dim

        def zeros(*shape):
            return _V(None if ops.mode == "int" else torch.zeros(*shape),
                      None if ops.mode == "float" else torch.zeros(*shape, dtype=torch.long))
        st = {"A": zeros(batch, c.d_model),
              "S": [zeros(batch, H, dh, dh) for _ in range(c.layers)],
              "z": [zeros(batch, H, dh) for _ in range(c.layers)]}
        if ops.mode == "float":  # the integer router's running sums, which it routes by
            st["Ai"] = torch.zeros(batch, c.d_model, dtype=torch.long)
        return st

    def embeddings(self) -> tuple[Fixed, Fixed]:
        """The token and position embeddings (zero mean over the channels)."""
        return zero_mean(self.embed["tok"], 1), zero_mean(self.embed["pos"], 1)

    def writes(self, layer: int) -> dict[str, Fixed]:
        """Expert weights that write into the residual stream: Wo, bo, W2, b2 (each of
        zero mean over the channels it writes)."""
        blk = self.blocks[layer]
        return {n: zero_mean(blk[n], 1) for n in ("Wo", "bo", "W2", "b2")}

    def _embed(self, ops: _Ops, c, pos) -> _V:
        tok, pe = (ops.param(w) for w in self.embeddings())
        return tok.map(lambda W: W[c]).zip(pe.map(lambda P: P[pos]), torch.add)

    def step(self, ops: _Ops, st: dict, c, t: int, aux: list | None = None) -> _V:
        """One step: character ids c (batch,) at position t; updates the state `st` in
        place and returns the logits (batch, vocab)."""
        pos = min(t, self.cfg.context - 1)
        h = self._embed(ops, c, pos)
        st["A"] = st["A"].zip(self._router_input(ops, h), torch.add)
        n = min(t + 1, self.cfg.context)
        hard = None
        if ops.mode == "float":
            st["Ai"] = st["Ai"] + self._int_router_input(c, pos)
            hard = self._int_route(st["Ai"], torch.full_like(st["Ai"], n))
        route = self._router(ops, st["A"], lambda a: torch.full_like(a, n), aux, hard)
        for layer in range(self.cfg.layers):
            h = self._layer(ops, layer, h, route,
                            lambda *qkvg, l=layer: self._attend(ops, st, l, *qkvg))
        return ops.lin(_norm(ops, h), *self.head_folded())

    def _parallel(self, ops: _Ops, x, aux) -> torch.Tensor:
        """The float forward of every step at once: the running sums are cumulative sums
        and the state is its closed form (_attend_parallel); the same numbers as the
        recurrent float forward, up to float rounding."""
        T = x.shape[1]
        pos = torch.arange(T).clamp(max=self.cfg.context - 1)
        h = self._embed(ops, x, pos)
        A = self._router_input(ops, h).map(lambda a: a.cumsum(1))
        n = torch.arange(1, T + 1).clamp(max=self.cfg.context).float()
        Ai = self._int_router_input(x, pos).cumsum(1)
        hard = self._int_route(Ai, n.long()[None, :, None].expand_as(Ai))
        route = self._router(ops, A, lambda a: n[None, :, None].expand_as(a), aux, hard)
        for layer in range(self.cfg.layers):
            h = self._layer(ops, layer, h, route, self._attend_parallel)
        return ops.lin(_norm(ops, h), *self.head_folded()).f

    def _router_input(self, ops: _Ops, h: _V) -> _V:
        """clamp(round(h / s), -X, X) + X in 0..2X: what the running sums A add up."""
        c = self.cfg
        s, X = c.s_router_in, c.router_in_max
        return ops.quant(h.map(lambda t: t + s * X), s, 0, 2 * X)

    def _int_router_input(self, c, pos) -> torch.Tensor:
        """The integer router input of characters c at positions pos (no gradient)."""
        ops = _Ops(self.cfg, "int")
        with torch.no_grad():
            return self._router_input(ops, self._embed(ops, c, pos)).i

    def _int_route(self, A: torch.Tensor, count: torch.Tensor) -> torch.Tensor:
        """The integer router's one-hot for integer running sums A: what the float
        forward routes by. The route is a discrete choice; a float route that differs
        from the map's (a fifth of the steps did) trains each expert on steps the map
        gives the other, and the integer forward lost half its accuracy to it."""
        with torch.no_grad():
            return self._router(_Ops(self.cfg, "int"), _V(None, A), lambda a: count,
                                None).i.float()

    def _router(self, ops: _Ops, A: _V, count, aux, hard=None) -> _V:
        """The router over the running mean A / count (docs/chat.md, "The router"): a
        one-hot (..., experts); its float path passes the softmax's gradient through,
        choosing `hard` (the integer route) when given."""
        c = self.cfg
        r, rho = self.router, c.router_mean_scale
        m = ops.ratio(A, A.map(count), "mean", rho, c.mean_max).map(
            lambda v: v - rho * c.router_in_max)
        hid = ops.quant(ops.lin(m, r["W1"], r["b1"]), c.s_router, 0, c.router_max)
        logits = ops.lin(hid, r["W2"], r["b2"])
        pick = _V()
        if logits.i is not None:
            pick.i = nn.functional.one_hot(logits.i.argmax(-1), c.experts)
        if logits.f is not None:
            prob = torch.softmax(logits.f, -1)
            if hard is None:
                hard = pick.i.float() if pick.i is not None else \
                    nn.functional.one_hot(logits.f.argmax(-1), c.experts).float()
            pick.f = hard + prob - prob.detach()
            if aux is not None:
                aux.append((prob, hard))
        return pick

    def _layer(self, ops: _Ops, layer: int, h: _V, route: _V, attend) -> _V:
        """One block, for any leading shape: q, k, v, g of every expert, the chosen
        expert's, `attend` (the state), the residual, the MLP."""
        c = self.cfg
        W = self.folded(layer, "1", "qkvg")
        y = _norm(ops, h)
        pre = {n: ops.lin_e(y, *W[n]) for n in "qkvg"}
        q = _pick(ops.table(pre["q"], "qk"), route)
        k = _pick(ops.table(pre["k"], "qk"), route)
        v = _pick(ops.quant(pre["v"], c.s_v, -c.v_max, c.v_max), route)
        g = _pick(self._gate(ops, layer, pre["g"]), route)
        o = attend(q, k, v, g)
        wr = self.writes(layer)
        h = h.zip(_pick(ops.lin_e(o, wr["Wo"], wr["bo"]), route), torch.add)
        W1, b1 = self.folded(layer, "2", ("1",))["1"]
        f = ops.table(ops.lin_e(_norm(ops, h), W1, b1), "gelu")
        return h.zip(_pick(_lin_each(ops, f, wr["W2"], wr["b2"]), route), torch.add)

    def _gate(self, ops: _Ops, layer: int, pre: _V) -> _V:
        """g = min(gate_max, round(G sigmoid(acc / s_qkv) d / decay_unit)), d the expert's
        and channel's fixed-point decay: one table per decay value."""
        c = self.cfg
        f = i = None
        if pre.f is not None:
            dec = torch.sigmoid(self.blocks[layer]["decay"])
            if ops.mode == "qat":
                dec = _ste_round(dec * c.decay_unit) / c.decay_unit
            f = torch.clamp(c.gate_unit * torch.sigmoid(pre.f / c.s_qkv) * dec, max=c.gate_max)
        if pre.i is not None:
            lo, tab = _gate_lookup(c)
            idx = torch.clamp(pre.i - lo, 0, tab.shape[1] - 1)
            i = tab[self.decays(layer).expand_as(idx), idx]
        return ops._pair(f, i)

    def _attend(self, ops: _Ops, st: dict, layer: int, q: _V, k: _V, v: _V, g: _V) -> _V:
        """The state update and the readout of one step (docs/chat.md, "The state"):
        returns o = P kv_div q.S / q.z (a weighted mean of v, times P), (batch, d)."""
        c = self.cfg
        H, dh = c.heads, c.head_dim
        q, k, v, g = (a.map(lambda t: t.reshape(t.shape[0], H, dh)) for a in (q, k, v, g))
        kv = ops.rdiv(k.zip(v, lambda a, b: a[..., :, None] * b[..., None, :]), c.kv_div)
        S = ops.rdiv(g.zip(st["S"][layer], lambda a, b: a[..., :, None] * b), c.gate_unit,
                     toward_zero=True).zip(kv, torch.add)
        z = ops.rdiv(g.zip(st["z"][layer], torch.mul), c.gate_unit, toward_zero=True).zip(
            k, torch.add)
        st["S"][layer], st["z"][layer] = S, z
        num = q.zip(S, lambda a, b: torch.einsum("bhi,bhij->bhj", a, b))
        den = q.zip(z, lambda a, b: (a * b).sum(-1, keepdim=True))
        o = ops.ratio(num, den.map(lambda d: d.expand(*d.shape[:-1], dh)), "div",
                      c.out_scale * c.kv_div, c.out_max, signed=True)
        return o.map(lambda t: t.reshape(t.shape[0], H * dh))

    def _attend_parallel(self, q: _V, k: _V, v: _V, g: _V) -> _V:
        """The float state in closed form, every step at once: S_t = sum over tau <= t of
        (prod of g over tau+1..t) k_tau v_tau^T, so q_t.S_t = sum_tau W[t, tau] v_tau with
        W[t, tau] = sum_i q_ti k_tau,i prod g_i, and q_t.z_t = sum_tau W[t, tau]."""
        c = self.cfg
        B, T, D = q.f.shape
        H, dh = c.heads, c.head_dim
        q, k, v, g = (a.f.reshape(B, T, H, dh) for a in (q, k, v, g))
        L = torch.log(torch.clamp(g / c.gate_unit, min=1e-9)).cumsum(1)
        mask = torch.tril(torch.ones(T, T, dtype=torch.bool))[None, :, :, None, None]
        decay = torch.exp((L[:, :, None] - L[:, None, :]).masked_fill(~mask, float("-inf")))
        W = torch.einsum("bthi,bshi,btshi->bhts", q, k, decay)
        mean_v = torch.einsum("bhts,bshj->bthj", W, v) / \
            W.sum(-1).clamp(min=1e-3).permute(0, 2, 1)[..., None]
        o = torch.clamp(c.out_scale * mean_v, -c.out_max, c.out_max)
        return _V(o.reshape(B, T, D), None)


def _pick(x: _V, route: _V) -> _V:
    """The chosen expert's values: sum_e route_e x[..., e, :] (route one-hot)."""
    return x.zip(route, lambda a, r: (a * r[..., None].to(a.dtype)).sum(-2))


def _lin_each(ops: _Ops, x: _V, W, b) -> _V:
    """Expert e's own input x[:, e] through its W[e], b[e]: (batch, experts, out)."""
    return _linear(ops, x, W, b, "...ei,eoi->...eo")


def _linear(ops: _Ops, x: _V, W, b, spec: str) -> _V:
    Wv, bv = ops.param(W), ops.param(b)
    return _V(None if x.f is None else torch.einsum(spec, x.f, Wv.f) + bv.f,
              None if x.i is None else torch.einsum(spec, x.i, Wv.i) + bv.i)


@dataclass
class Fixed:
    """A weight whose integers are given rather than rounded from it."""
    f: torch.Tensor
    i: torch.Tensor


def zero_mean(W: torch.Tensor, dim: int) -> Fixed:
    """W less its mean over `dim` (the residual channels it writes), with integers that sum
    to exactly 0 over `dim`: the others rounded (half to even), the last one minus their
    sum. Every write into the residual stream is one of these, so the stream's mean over
    the channels is 0 at every step in both forwards, and each LayerNorm's mean is 0
    (which loses nothing: every reader of the stream is a LayerNorm, blind to its mean)."""
    f = W - W.mean(dim, keepdim=True)
    i = integer(f)
    last = i.narrow(dim, i.shape[dim] - 1, 1)
    last.copy_(-(i.sum(dim, keepdim=True) - last))
    return Fixed(f, i)


_GATES: dict = {}


def _gate_lookup(cfg: ChatConfig):
    """(lo, tensor[decay, acc - lo]) of every gate table on one common domain."""
    if cfg not in _GATES:
        ts = [gate_table(cfg, d) for d in range(cfg.decay_unit + 1)]
        lo, hi = min(t.lo for t in ts), max(t.hi for t in ts)
        rows = [[t.values[min(max(a, t.lo), t.hi) - t.lo] for a in range(lo, hi + 1)]
                for t in ts]
        _GATES[cfg] = (lo, torch.tensor(rows, dtype=torch.long))
    return _GATES[cfg]


# ---------------------------------------------------------------- choosing a character
def gumbel_table(cfg: ChatConfig) -> Table:
    """noise(u) = round(T * (logit_unit / s_choice) * -ln(-ln((u + 1/2) / U))): Gumbel noise
    at temperature T in the choice's units, for the generator's uniform u in 0..U-1."""
    U, k = cfg.noise_levels, cfg.temperature * cfg.logit_unit / cfg.s_choice
    return Table("gumbel", 0, tuple(_round(-k * math.log(-math.log((u + 0.5) / U)))
                                    for u in range(U)))


def noise(cfg: ChatConfig, seed: int | None, steps: int) -> np.ndarray:
    """(steps, vocab) noise inputs: all 0 without a seed (greedy), else Gumbel noise from a
    64-bit linear congruential generator seeded with `seed` (the top 8 bits of each state
    are one uniform value u; docs/chat.md, "Sampling"). The noise is data: the network
    adds it to its scores and chooses."""
    out = np.zeros((steps, cfg.vocab), dtype=np.int64)
    if seed is None:
        return out
    table = gumbel_table(cfg).values
    x = (int(seed) * 0x9E3779B97F4A7C15 + 1) % 2 ** 64
    for t in range(steps):
        for k in range(cfg.vocab):
            x = (6364136223846793005 * x + 1442695040888963407) % 2 ** 64
            out[t, k] = table[(x >> 56) * cfg.noise_levels >> 8]
    return out


def noise_range(cfg: ChatConfig) -> tuple[int, int]:
    t = gumbel_table(cfg).values
    return min(min(t), 0), max(max(t), 0)


def choose(cfg: ChatConfig, bias: int, logits, noise_t, counts, gen):
    """The network's choice (docs/chat.md, "The choice"), exact integers:
    score = clamp(floor((logit + bias) / s_choice) + noise - penalty * count, 0, max);
    best = [score == max score]; the one-hot o marks the first best character when the
    step generates (gen), else nothing; returns (scores, o)."""
    logits, noise_t, counts = (torch.as_tensor(a, dtype=torch.long) for a in
                               (logits, noise_t, counts))
    score = torch.div(logits + bias, cfg.s_choice, rounding_mode="floor") + noise_t \
        - cfg.penalty_units * counts
    score = score.clamp(0, cfg.choice_max)
    best = (score == score.max(-1, keepdim=True).values).long()
    first = best * (best.cumsum(-1) == 1).long()
    return score, first * torch.as_tensor(gen, dtype=torch.long).reshape(-1, 1)


@dataclass
class Reply:
    prompt: str
    text: str                   # the characters the network wrote (the newline excluded)
    ended: bool                 # the network wrote a newline (else the context ran out)
    steps: int                  # steps run, prompt included
    trace: list | None = None   # per step: every recurrent value and output (int mode)


def generate(model: ChatLM, prompt: str, seed: int | None = None, mode: str = "int",
             trace: bool = False) -> Reply:
    """The reply to `prompt` (a newline is appended: the reply starts after it), decoded
    as the netlist decodes it: in `int` mode exactly its integers, step by step; `float`
    decodes the float model the same way (penalty and noise in nats). Refused when the
    prompt leaves no room in the context."""
    cfg = model.cfg
    ids = encode(prompt + "\n")
    if len(ids) >= cfg.context:
        raise VoodooError(f"prompt of {len(ids) - 1} characters: at most {cfg.context - 2} "
                          f"fit the context of {cfg.context} with a reply")
    ops = _Ops(cfg, mode)
    st = model.initial_state(ops, 1)
    nz = noise(cfg, seed, cfg.context)
    counts = torch.zeros(1, cfg.vocab, dtype=torch.long)
    gen, out, records = 0, [], []
    c = ids[0]
    with torch.no_grad():
        for t in range(cfg.context):
            gen = int(gen or c == NEWLINE)
            logits = model.step(ops, st, torch.tensor([c]), t)
            o = _choose_mode(model, mode, logits, nz[t], counts, gen)
            y = int((o[0] * torch.arange(cfg.vocab)).sum())
            done = bool(o[0, NEWLINE]) or t + 1 >= cfg.context
            if trace:
                records.append(_record(st, logits, o, y, gen, counts, t, done))
            counts = torch.clamp(counts + o, max=cfg.repeat_max)
            if gen:
                out.append(y)
            if done:
                break
            c = ids[t + 1] if t + 1 < len(ids) else y
    ended = bool(out) and out[-1] == NEWLINE
    return Reply(prompt, decode(out[:-1] if ended else out), ended, t + 1,
                 records if trace else None)


def _choose_mode(model: ChatLM, mode: str, logits: _V, noise_t, counts, gen):
    cfg = model.cfg
    if mode == "int" or mode == "qat":
        return choose(cfg, int(model.choice_bias), logits.i, noise_t[None], counts, gen)[1]
    # float: the same rule on real numbers (nats), the noise as the integer forward gets it
    unit = cfg.s_choice / cfg.logit_unit
    score = logits.f / cfg.logit_unit + torch.as_tensor(noise_t)[None] * unit \
        - cfg.penalty * counts
    return nn.functional.one_hot(score.argmax(-1), cfg.vocab) * int(gen)


def _record(st, logits, o, y, gen, counts, t, done) -> dict:
    return {"t": t + 1, "gen": gen, "A": st["A"].i[0].tolist(),
            "S": [s.i[0].flatten().tolist() for s in st["S"]],
            "z": [z.i[0].flatten().tolist() for z in st["z"]],
            "logits": logits.i[0].tolist(), "o": o[0].tolist(), "y": y,
            "counts": counts[0].tolist(), "done": int(done)}
