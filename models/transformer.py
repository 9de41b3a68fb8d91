"""Small transformers whose integer forward is exactly what their netlist computes.

The semantics of every piece (token-wise linear maps, q.k scores, the integer softmax,
the weighted sum of values, residual adds, RMSNorm / LayerNorm, the ReLU MLP, the head,
causal masking) are in docs/transformer.md; this module implements them three ways from one
set of float parameters held "in integer units":

- ``mode="float"``: no rounding anywhere (the same formulas with real numbers): training;
- ``mode="int"``: exact int64 integers, weights rounded to integers: equal, number for
  number, to `dsl.reference.evaluate` on the netlist `to_dnet` writes;
- ``mode="qat"``: the integer values with straight-through gradients (each rounded value
  is ``float + (int - float).detach()``), for quantisation-aware fine-tuning.

API (what a model that builds on this one needs)::

    from models.transformer import TransformerConfig, Transformer, to_dnet
    cfg = TransformerConfig(tokens=8, features=1, in_lo=0, in_hi=15, d_model=8, heads=2,
                            layers=1, mlp=0, classes=8, norm="rms")   # norm: rms|layer|none
    model = Transformer(cfg)          # a torch.nn.Module; x: (batch, tokens, features)
    logits = model(x)                 # float forward (train with any torch optimiser)
    model.calibrate(x)                # each layer's score cap, from data (before qat)
    logits = model(x, mode="qat")     # integer values, straight-through gradients
    ints = model(x, mode="int")       # exact int64 logits
    from models.seqtask import fit
    fit(model, x, y)                  # float epochs, calibrate, quantisation-aware epochs
    text = to_dnet(model)             # readable .dnet (tables, dot(), product vectors)
    from interop import from_torch
    net = from_torch(model)           # the validated Netlist (ranges proven; refused if a
                                      # range cannot live in a map, naming node and fix)
    model = Transformer.from_state(torch.load(path))   # config + weights, saved by .state()

Inputs are integers in in_lo..in_hi, `features` per token, declared token by token as
`x0[F], x1[F], ...`; the outputs are `classes` logits read from the last token (causal
self-attention, so the last token sees the whole sequence). Only what the outputs need is
built: the last layer computes attention for the last token alone.
"""
from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass

import numpy as np
import torch
from torch import nn

from dsl.diagnostics import VoodooError

NORMS = ("none", "rms", "layer")
NORM_SITES = ("both", "attn", "mlp")


@dataclass(frozen=True)
class TransformerConfig:
    tokens: int = 8          # T: sequence length
    features: int = 1        # F: integers per token
    in_lo: int = 0
    in_hi: int = 15
    d_model: int = 8
    heads: int = 2
    layers: int = 1
    mlp: int = 0             # hidden width of each layer's ReLU MLP (0: no MLP)
    classes: int = 8         # logits of the head, read from the last token
    norm: str = "none"       # pre-norm before attention and MLP: none | rms | layer
    norm_at: str = "both"    # where the norm is: both | attn (before attention) | mlp
    # Parallel block (GPT-J, PaLM): the MLP reads the block's input, not the residual after
    # attention, h' = h + attn(a) + mlp(a'); in a map the MLP (and a norm before it) then
    # runs beside attention instead of after it: 1 dependency level fewer (4 with the norm).
    parallel: bool = False
    qk: int = 3              # q and k are integers in -qk..qk
    v: int = 3               # values in -v..v
    s_qkv: int = 16          # requantisation divisor of q, k, v
    beta: float = 0.35       # a score unit is beta natural-log units of attention weight
    exp_max: int = 15        # E: exp lookup values 0..E
    prob_max: int = 7        # P: attention weights 0..P (P means 1)
    attn_max: int = 0        # A > 0: requantise the attention output to -A..A; 0: keep it
    s_attn: int = 8
    mlp_max: int = 7         # hidden ReLU values 0..mlp_max
    s_mlp: int = 16
    norm_max: int = 4        # N: normalised inputs -N..N before the 1/rms product
    s_norm: int = 8
    norm_k: int = 3          # K: a normalised value of 1.0 is K

    def validate(self) -> "TransformerConfig":
        problems = []
        if self.norm not in NORMS:
            problems.append(f"norm={self.norm!r}: use one of {', '.join(NORMS)}")
        if self.norm_at not in NORM_SITES:
            problems.append(f"norm_at={self.norm_at!r}: use one of {', '.join(NORM_SITES)}")
        if self.heads < 1 or self.d_model % self.heads:
            problems.append(f"d_model {self.d_model} is not a multiple of heads {self.heads}")
        for k in ("tokens", "features", "d_model", "layers", "classes", "qk", "v", "s_qkv",
                  "exp_max", "prob_max", "s_attn", "mlp_max", "s_mlp", "norm_max", "s_norm",
                  "norm_k"):
            if getattr(self, k) < 1:
                problems.append(f"{k}={getattr(self, k)} must be at least 1")
        if self.in_lo > self.in_hi or self.beta <= 0 or self.mlp < 0 or self.attn_max < 0:
            problems.append("in_lo <= in_hi, beta > 0, mlp >= 0 and attn_max >= 0 are required")
        if problems:
            raise VoodooError("transformer config: " + "; ".join(problems))
        return self

    def normed(self, site: str) -> bool:
        """Whether the pre-norm before `site` ("attn" or "mlp") is there (one norm costs
        three dependency levels in a map: a cheaper placement keeps only one of them)."""
        return self.norm != "none" and self.norm_at in ("both", site)

    @property
    def head_dim(self) -> int:
        return self.d_model // self.heads

    @property
    def cap(self) -> int:
        """c: the largest score q.k can reach; the exp lookup is 1.0 (E) there."""
        return self.head_dim * self.qk * self.qk


# ------------------------------------------------------------------------ lookup tables
def _round(x: float) -> int:
    """Round half up, the rounding of every table (float64 in, exact int out)."""
    return int(math.floor(x + 0.5))


@dataclass(frozen=True)
class Table:
    """An integer function on lo..hi (clamped outside, like a `lut` gate) and the real
    function it rounds, used by the float forward."""
    name: str
    lo: int
    values: tuple[int, ...]

    @property
    def hi(self) -> int:
        return self.lo + len(self.values) - 1


def tables(cfg: TransformerConfig, cap: int | None = None) -> dict[str, Table]:
    """Every lookup a layer uses (docs/transformer.md): exp and log (around the layer's
    score cap c), pexp, and for a norm the square and the reciprocal square root."""
    E, P, b = cfg.exp_max, cfg.prob_max, cfg.beta
    c = cfg.cap if cap is None else int(cap)
    w_exp = math.ceil(math.log(2 * E) / b) + 1       # below c - w_exp every exp rounds to 0
    w_p = math.ceil(math.log(2 * P) / b) + 1
    out = {
        "exp": Table("exp", c - w_exp, tuple(_round(E * math.exp(b * (s - c)))
                                            for s in range(c - w_exp, c + 1))),
        "log": Table("log", 0, tuple(_round(c + math.log(max(S, 1) / E) / b)
                                     for S in range(0, cfg.tokens * E + 1))),
        "pexp": Table("pexp", -w_p, tuple(min(P, _round(P * math.exp(b * dd)))
                                          for dd in range(-w_p, 1))),
    }
    # The binary digits of a requantised value v + V in 0..2V, as lookups of the relu's
    # accumulator (the netlist multiplies p by v digit by digit, see _write_head).
    sv = cfg.s_qkv
    for m in range((2 * cfg.v).bit_length()):
        out[f"vbit{m}"] = Table(f"vbit{m}", 0, tuple((min(a // sv, 2 * cfg.v) >> m) & 1
                                                     for a in range(0, 2 * cfg.v * sv + 1)))
    if cfg.norm != "none":
        out.update(norm_tables(cfg))
    return out


def norm_tables(cfg) -> dict[str, Table]:
    """The lookups of a norm (docs/transformer.md, "Norms"): the square of the requantised
    value and the reciprocal square root. `cfg` needs d_model, norm_max, s_norm, norm_k."""
    N, s, d = cfg.norm_max, cfg.s_norm, cfg.d_model
    lo = -(N + 1) * s
    return {"sq": Table("sq", lo, tuple(min(max((z + s // 2) // s, -N), N) ** 2
                                        for z in range(lo, -lo + 1))),
            "rsqrt": Table("rsqrt", 0, tuple(_round(cfg.norm_k * math.sqrt(d / max(S, 1)))
                                             for S in range(0, d * N * N + 1)))}


def _float_fn(cfg: TransformerConfig, name: str):
    """The real function a norm's table rounds (the float forward's version of the lookup;
    the float forward's softmax is the exact one, see _attention)."""
    return {
        "sq": lambda z: torch.clamp(z / cfg.s_norm, -cfg.norm_max, cfg.norm_max) ** 2,
        "rsqrt": lambda S: cfg.norm_k * torch.sqrt(cfg.d_model / torch.clamp(S, min=1)),
    }[name]


# ------------------------------------------------------------------- paired arithmetic
class _V:
    """A value in the float path (f), the exact integer path (i), or both (qat)."""
    __slots__ = ("f", "i")

    def __init__(self, f=None, i=None):
        self.f, self.i = f, i

    def map(self, fn) -> "_V":
        return _V(None if self.f is None else fn(self.f), None if self.i is None else fn(self.i))

    def zip(self, other: "_V", fn) -> "_V":
        return _V(None if self.f is None else fn(self.f, other.f),
                  None if self.i is None else fn(self.i, other.i))


def _ste_round(t):
    return t + (torch.round(t) - t).detach()


class _Ops:
    def __init__(self, cfg: TransformerConfig, mode: str):
        if mode not in ("float", "int", "qat"):
            raise VoodooError(f"mode {mode!r}: use float, int or qat")
        self.cfg, self.mode = cfg, mode
        self.scores: list | None = None   # calibration collects row maxima here
        self.layer(cfg.cap)

    def layer(self, cap: int) -> None:
        """Use the lookups of a layer whose score cap is `cap`."""
        self.tables = tables(self.cfg, cap)
        self._t = {k: torch.tensor(t.values, dtype=torch.long) for k, t in self.tables.items()}

    def _ste(self, f, i):
        return f + (i.to(f.dtype) - f).detach() if self.mode == "qat" else f

    def param(self, W) -> _V:
        """A parameter as the path needs it: real, rounded (straight-through), integer."""
        return _V(None if self.mode == "int" else W if self.mode == "float" else _ste_round(W),
                  None if self.mode == "float" else integer(W))

    def lin(self, x: _V, W, b) -> _V:
        """x @ W.T + b: real weights (float), rounded weights (int, qat)."""
        f = i = None
        if x.f is not None:
            Wf, bf = (W, b) if self.mode == "float" else (_ste_round(W), _ste_round(b))
            f = x.f @ Wf.T + bf
        if x.i is not None:
            i = x.i @ integer(W).T + integer(b)
        return _V(f, i)

    def quant(self, x: _V, s: int, lo: int, hi: int, half: bool = True) -> _V:
        """clamp(floor((x + s//2) / s), lo, hi) (half) or clamp(floor(x / s), lo, hi)."""
        f = None if x.f is None else torch.clamp(x.f / s, lo, hi)
        i = None if x.i is None else torch.clamp(
            torch.div(x.i + (s // 2 if half else 0), s, rounding_mode="floor"), lo, hi)
        return self._pair(f, i)

    def _pair(self, f, i) -> _V:
        """A rounded value: the integer, and in qat its straight-through float."""
        return _V(None if f is None else f if i is None else self._ste(f, i), i)

    def table(self, x: _V, name: str) -> _V:
        t = self.tables[name]
        f = None if x.f is None else _float_fn(self.cfg, name)(x.f)
        i = None if x.i is None else self._t[name][torch.clamp(x.i, t.lo, t.hi) - t.lo]
        return self._pair(f, i)


def integer(W) -> torch.Tensor:
    """The integer a weight stands for (round half to even, as torch.round)."""
    return torch.round(W.detach()).long()


# -------------------------------------------------------------------------- the module
class Transformer(nn.Module):
    """Causal transformer over `tokens` integer tokens, parameters in integer units."""

    def __init__(self, cfg: TransformerConfig, seed: int = 0):
        super().__init__()
        self.cfg = cfg.validate()
        g = torch.Generator().manual_seed(seed)
        d, F, T, M = cfg.d_model, cfg.features, cfg.tokens, cfg.mlp
        span = max(abs(cfg.in_lo), abs(cfg.in_hi), 1)
        sig_h = 20.0                                     # typical residual magnitude
        sig_a = sig_h if not cfg.normed("attn") else float(cfg.norm_k)
        sig_m = sig_h if not cfg.normed("mlp") else float(cfg.norm_k)

        def p(*shape, std=0.0, init=0.0):
            return nn.Parameter(torch.randn(*shape, generator=g) * std + init)

        self.embed = nn.ParameterDict(dict(
            W=p(d, F, std=sig_h / (span * math.sqrt(F))), b=p(d), pos=p(T, d, std=5.0)))
        blocks = []
        for _ in range(cfg.layers):
            qkv = cfg.s_qkv * cfg.qk / (3 * sig_a * math.sqrt(d))
            o_in = cfg.attn_max or cfg.prob_max * cfg.v / 2
            blk = dict(Wq=p(d, d, std=qkv), bq=p(d), Wk=p(d, d, std=qkv), bk=p(d),
                       Wv=p(d, d, std=qkv), bv=p(d), Wo=p(d, d, std=sig_h / (o_in * math.sqrt(d))),
                       bo=p(d), g1=p(d, init=1.0), n1=p(d))
            if M:
                blk.update(W1=p(M, d, std=cfg.s_mlp * cfg.mlp_max / (2 * sig_m * math.sqrt(d))),
                           b1=p(M), W2=p(d, M, std=8 / (cfg.mlp_max * math.sqrt(M))), b2=p(d),
                           g2=p(d, init=1.0), n2=p(d))
            blocks.append(nn.ParameterDict(blk))
        self.blocks = nn.ModuleList(blocks)
        # Each layer's score cap c (docs/transformer.md): set by `calibrate` from data.
        self.register_buffer("caps", torch.full((cfg.layers,), cfg.cap, dtype=torch.long))
        self.head = nn.ParameterDict(dict(W=p(cfg.classes, d, std=2 / math.sqrt(d)),
                                          b=p(cfg.classes)))

    # -- saving -------------------------------------------------------------------------
    def state(self) -> dict:
        return {"config": asdict(self.cfg), "weights": self.state_dict()}

    @classmethod
    def from_state(cls, state: dict) -> "Transformer":
        m = cls(TransformerConfig(**state["config"]))
        m.load_state_dict(state["weights"])
        return m

    def calibrate(self, x, quantile: float = 0.9, mode: str = "float") -> list[int]:
        """Set each layer's score cap c to the `quantile` of its rows' largest scores on x,
        so that the exp lookup's window sits where the scores are. Returns the caps."""
        caps = []
        with torch.no_grad():
            for layer in range(self.cfg.layers):
                ops = _Ops(self.cfg, mode)
                ops.scores = []
                self.forward(x, mode, ops)
                top = ops.scores[layer]
                caps.append(int(round(float(torch.quantile(top, quantile)))))
                self.caps[layer] = caps[-1]
        return caps

    # -- the forward ----------------------------------------------------------------------
    def forward(self, x, mode: str = "float", ops: "_Ops | None" = None):
        """x: (batch, tokens, features) integers (any dtype). Returns (batch, classes)
        logits: float tensors (float, qat) or exact int64 (int)."""
        ops = ops or _Ops(self.cfg, mode)
        x = torch.as_tensor(x)
        v = _V(None if mode == "int" else x.to(torch.float32),
               None if mode == "float" else x.long())
        e = self.embed
        h = ops.lin(v, e["W"], e["b"]).zip(ops.param(e["pos"]), torch.add)
        for blk, cap in zip(self.blocks, self.caps.tolist()):
            ops.layer(cap)
            h = self._block(ops, h, blk)
        last = h.map(lambda t: t[:, -1, :])
        out = ops.lin(last, self.head["W"], self.head["b"])
        return out.i if mode == "int" else out.f

    def _block(self, ops: _Ops, h: _V, blk) -> _V:
        cfg = self.cfg
        W = _folded(cfg, blk, "1", ("q", "k", "v"))
        a = _norm(ops, h) if cfg.normed("attn") else h
        q = ops.quant(ops.lin(a, *W["q"]), cfg.s_qkv, -cfg.qk, cfg.qk)
        k = ops.quant(ops.lin(a, *W["k"]), cfg.s_qkv, -cfg.qk, cfg.qk)
        val = ops.quant(ops.lin(a, *W["v"]), cfg.s_qkv, -cfg.v, cfg.v)
        o = _attention(ops, q, k, val)
        if cfg.attn_max:
            o = ops.quant(o, cfg.s_attn, -cfg.attn_max, cfg.attn_max)
        h_in = h
        h = h.zip(ops.lin(o, blk["Wo"], blk["bo"]), torch.add)
        if cfg.mlp:
            W = _folded(cfg, blk, "2", ("1",))
            src = h_in if cfg.parallel else h
            a = _norm(ops, src) if cfg.normed("mlp") else src
            m = ops.quant(ops.lin(a, *W["1"]), cfg.s_mlp, 0, cfg.mlp_max, half=False)
            h = h.zip(ops.lin(m, blk["W2"], blk["b2"]), torch.add)
        return h


def _folded(cfg: TransformerConfig, blk, norm: str, names) -> dict:
    """Consumer weights with the norm's gain and bias folded in: W diag(g), W n + b."""
    out = {}
    for n in names:
        Wn, bn = blk["W" + n], blk["b" + n]
        if not cfg.normed({"1": "attn", "2": "mlp"}[norm]):
            out[n] = (Wn, bn)
        else:
            gain, shift = blk["g" + norm], blk["n" + norm]
            out[n] = (Wn * gain[None, :], bn + (Wn @ shift if cfg.norm == "layer" else 0 * bn))
    return out


def _norm(ops: _Ops, h: _V) -> _V:
    """RMSNorm / LayerNorm of each token (docs/transformer.md, "Norms")."""
    cfg = ops.cfg
    d = cfg.d_model
    z = h if cfg.norm == "rms" else h.map(lambda t: d * t - t.sum(-1, keepdim=True))
    u = ops.quant(z, cfg.s_norm, -cfg.norm_max, cfg.norm_max)
    S = ops.table(z, "sq").map(lambda t: t.sum(-1))
    rho = ops.table(S, "rsqrt")
    return u.zip(rho, lambda a, r: a * r[..., None])


def _attention(ops: _Ops, q: _V, k: _V, v: _V) -> _V:
    """Causal multi-head attention with the integer softmax (docs/transformer.md)."""
    cfg = ops.cfg
    T, H, dh = cfg.tokens, cfg.heads, cfg.head_dim

    def heads(t):
        return t.reshape(t.shape[0], T, H, dh)

    s = q.map(heads).zip(k.map(heads), lambda a, b: torch.einsum("bigc,bjgc->bgij", a, b))
    mask = torch.tril(torch.ones(T, T, dtype=torch.long))
    if ops.scores is not None:  # calibration: each row's largest score
        t = s.f.detach() if s.f is not None else s.i.float()
        ops.scores.append(t.masked_fill(mask == 0, float("-inf")).amax(-1).flatten())
    p = _V()
    if s.i is not None:  # the integer softmax: exp lookup, sum, log lookup, exp lookup
        e = ops.table(_V(None, s.i), "exp").i * mask
        lam = ops.table(_V(None, e.sum(-1)), "log").i
        p.i = ops.table(_V(None, s.i - lam[..., None]), "pexp").i * mask
    if s.f is not None:  # the float forward's softmax is the exact one, scaled by P
        z = (cfg.beta * s.f).masked_fill(mask == 0, float("-inf"))
        p.f = ops._ste(cfg.prob_max * torch.softmax(z, -1), p.i) if p.i is not None \
            else cfg.prob_max * torch.softmax(z, -1)
    o = p.zip(v.map(heads), lambda a, b: torch.einsum("bgij,bjgc->bigc", a, b))
    return o.map(lambda t: t.reshape(t.shape[0], T, H * dh))


# ------------------------------------------------------------------------ the netlist
class _Writer:
    """Collects .dnet lines; every name and shape follows docs/transformer.md."""

    def __init__(self):
        self.lines: list[str] = []

    def __call__(self, text: str = "") -> None:
        self.lines.append(text)

    def vec(self, name: str, size: int, gate: str) -> None:
        self(f"neuron {name}[{size}] : {gate}")

    def dense(self, src: str, dst: str, W: np.ndarray) -> None:
        if np.any(W):
            rows = ", ".join("[" + ", ".join(str(int(v)) for v in row) + "]" for row in W)
            self(f"lines {src} -> {dst} dense [{rows}]")

    def diag(self, src: str, dst: str, n: int, w: int = 1) -> None:
        self(f"lines {src} -> {dst} diag [{', '.join([str(w)] * n)}]")

    def bias(self, dst: str, b) -> None:
        b = [int(v) for v in np.ravel(b)]
        if any(b):
            self(f"bias {dst} = " + (str(b[0]) if len(set(b)) == 1 else
                                    "[" + ", ".join(map(str, b)) + "]"))

    def requant(self, src: str, dst: str, n: int, W, b, s: int, lo: int, hi: int,
                half: bool = True) -> None:
        """dst = clamp(floor((W src + b [+ s//2]) / s), lo, hi): a relu over 0..hi-lo whose
        value minus -lo is dst (an identity of the raw relu, folded away by the compiler)."""
        raw = f"{dst}_r" if lo else dst
        self.vec(raw, n, f"relu(s={s}, max={hi - lo})")
        if W is None:
            self.diag(src, raw, n)
        else:
            self.dense(src, raw, W)
        self.bias(raw, np.asarray(b) - lo * s + (s // 2 if half else 0))
        if lo:
            self.vec(dst, n, "identity")
            self.diag(raw, dst, n)
            self.bias(dst, [lo] * n)


def _ints(t) -> np.ndarray:
    return integer(t).numpy()


def to_dnet(model: Transformer, name: str = "transformer", comment: str = "") -> str:
    """The model's integer form as readable .dnet text (docs/transformer.md)."""
    cfg = model.cfg
    w = _Writer()
    for line in (comment.splitlines() if comment else []):
        w(f"# {line}")
    w(f"network {name}")
    w(f"# {cfg}")
    w()
    for layer, cap in enumerate(model.caps.tolist()):
        for t in tables(cfg, cap).values():
            if t.name in ("exp", "log"):  # around the layer's score cap
                w(f"table {t.name}{layer} = lut({t.lo}..{t.hi}, [{', '.join(map(str, t.values))}])")
    for t in tables(cfg).values():
        if t.name not in ("exp", "log"):
            w(f"table {t.name} = lut({t.lo}..{t.hi}, [{', '.join(map(str, t.values))}])")
    w()
    e = model.embed
    Win, bin_, pos = _ints(e["W"]), _ints(e["b"]), _ints(e["pos"])
    for t in range(cfg.tokens):
        w(f"input x{t}[{cfg.features}] : {cfg.in_lo}..{cfg.in_hi}")
    for t in range(cfg.tokens):
        w.vec(f"h0_{t}", cfg.d_model, "identity")
        w.dense(f"x{t}", f"h0_{t}", Win)
        w.bias(f"h0_{t}", bin_ + pos[t])
    for layer, blk in enumerate(model.blocks):
        last = layer == cfg.layers - 1
        rows = [cfg.tokens - 1] if last else list(range(cfg.tokens))
        _write_layer(w, cfg, layer, blk, rows, int(model.caps[layer]))
    w()
    w("# the head: logits from the last token")
    w(f"neuron logits[{cfg.classes}] : identity")
    w.dense(f"h{cfg.layers}_{cfg.tokens - 1}", "logits", _ints(model.head["W"]))
    w.bias("logits", _ints(model.head["b"]))
    w("output logits")
    return "\n".join(w.lines) + "\n"


def _write_norm(w: _Writer, cfg: TransformerConfig, src: str, tag: str) -> str:
    """u = clamp(round(z / s), -N, N), rho = rsqrt(sum sq(z)), y = u * rho; returns y."""
    d, N, s = cfg.d_model, cfg.norm_max, cfg.s_norm
    z = src
    if cfg.norm == "layer":  # z = d*h - sum(h): centred, exact (scale d)
        z = f"z{tag}"
        w.vec(z, d, "identity")
        w.dense(src, z, d * np.eye(d, dtype=int) - np.ones((d, d), dtype=int))
    w.requant(z, f"u{tag}", d, None, 0, s, -N, N)
    w.vec(f"sq{tag}", d, "lut(sq)")
    w.diag(z, f"sq{tag}", d)
    w(f"neuron rho{tag} : lut(rsqrt) = " + " + ".join(f"sq{tag}[{c}]" for c in range(d)))
    w(f"neuron y{tag}[{d}] : product(u{tag}, rho{tag})")
    return f"y{tag}"


def _write_layer(w: _Writer, cfg: TransformerConfig, l: int, blk, rows: list[int],
                 cap: int) -> None:
    """One block: attention for the query tokens `rows` (keys and values of every token),
    the residual add, the MLP (docs/transformer.md)."""
    d, T, H = cfg.d_model, cfg.tokens, cfg.heads
    W = {n: (_ints(a), _ints(b)) for n, (a, b) in _folded(cfg, blk, "1", "qkv").items()}
    w()
    w(f"# ---- layer {l}: q, k, v of each token (integers in -{cfg.qk}..{cfg.qk}, "
      f"values -{cfg.v}..{cfg.v})")
    src = {}
    for t in range(T):
        src[t] = _write_norm(w, cfg, f"h{l}_{t}", f"{l}_{t}") if cfg.normed("attn") \
            else f"h{l}_{t}"
        for n in ("k", "q") if t in rows else ("k",):
            w.requant(src[t], f"{n}{l}_{t}", d, W[n][0], W[n][1], cfg.s_qkv, -cfg.qk, cfg.qk)
        _write_value_bits(w, cfg, f"{l}_{t}", src[t], *W["v"])
    B = cfg.head_dim * cfg.qk ** 2 - min(tables(cfg, cap)["log"].values) - tables(cfg)["pexp"].lo
    for i in rows:
        w()
        w(f"# layer {l}, query token {i}: scores, integer softmax, weighted sum of values")
        w.vec(f"o{l}_{i}", d, "identity")
        for g in range(H):
            _write_head(w, cfg, l, g, i, B)
        o = f"o{l}_{i}"
        if cfg.attn_max:
            w.requant(o, f"oc{l}_{i}", d, None, 0, cfg.s_attn, -cfg.attn_max, cfg.attn_max)
            o = f"oc{l}_{i}"
        mid = f"r{l}_{i}" if cfg.mlp else f"h{l + 1}_{i}"
        w(f"# residual: {mid} = h{l}_{i} + Wo {o} + bo")
        w.vec(mid, d, "identity")
        w.diag(f"h{l}_{i}", mid, d)
        w.dense(o, mid, _ints(blk["Wo"]))
        w.bias(mid, _ints(blk["bo"]))
        if cfg.mlp:
            _write_mlp(w, cfg, l, i, blk, mid)


def _write_value_bits(w: _Writer, cfg: TransformerConfig, tag: str, src: str, W, b) -> None:
    """v = clamp(round((W a + b) / s), -V, V) as the binary digits of v + V (one lookup of
    the same accumulator each), so that p * v needs no product level (_write_head)."""
    d, V, s = cfg.d_model, cfg.v, cfg.s_qkv
    bits = (2 * V).bit_length()
    w(f"# v{tag} = " + " + ".join(f"{1 << m}*vb{tag}_{m}" for m in range(bits)) + f" - {V}")
    for m in range(bits):
        w.vec(f"vb{tag}_{m}", d, f"lut(vbit{m})")
        w.dense(src, f"vb{tag}_{m}", W)
        w.bias(f"vb{tag}_{m}", np.asarray(b) + V * s + s // 2)


def _write_head(w: _Writer, cfg: TransformerConfig, l: int, g: int, i: int, B: int) -> None:
    """Scores, the integer softmax and o = sum_j p_j v_j for one head and query token.
    p * v = sum_m 2^m p * bit_m - V p, and p * bit = PEXP(s - lam - B + B bit): B is large
    enough that PEXP(anything - B) = 0, so one lookup level gives every product."""
    dh, V = cfg.head_dim, cfg.v
    a, b = g * dh, (g + 1) * dh
    tag = f"{l}_{g}_{i}"
    for j in range(i + 1):  # causal: token i attends to tokens 0..i
        w(f"neuron s{tag}_{j} : identity = dot(q{l}_{i}[{a}:{b}], k{l}_{j}[{a}:{b}])")
        w(f"neuron e{tag}_{j} : lut(exp{l}) = s{tag}_{j}")
    w(f"neuron lam{tag} : lut(log{l}) = " + " + ".join(f"e{tag}_{j}" for j in range(i + 1)))
    w(f"# o{l}_{i}[{a}:{b}] = sum_j p_j * v{l}_j[{a}:{b}], digit by digit: "
      f"pb_j_m = p_j * vb{l}_j_m = pexp(s_j - lam - {B} + {B}*vb{l}_j_m)")
    for j in range(i + 1):
        w(f"neuron p{tag}_{j} : lut(pexp) = s{tag}_{j} - lam{tag}")
        w(f"lines p{tag}_{j} -> o{l}_{i}[{a}:{b}] all {-V}")
        for m in range((2 * V).bit_length()):
            pb = f"pb{tag}_{j}_{m}"
            w.vec(pb, dh, "lut(pexp)")
            w(f"lines s{tag}_{j} -> {pb} all 1")
            w(f"lines lam{tag} -> {pb} all -1")
            w.diag(f"vb{l}_{j}_{m}[{a}:{b}]", pb, dh, B)
            w.bias(pb, [-B] * dh)
            w.diag(pb, f"o{l}_{i}[{a}:{b}]", dh, 1 << m)


def _write_mlp(w: _Writer, cfg: TransformerConfig, l: int, i: int, blk, mid: str) -> None:
    """The MLP of query token i: reads `mid` (the residual after attention) or, in a
    parallel block, the block's input h{l}_{i}; adds W2 f + b2 to `mid`."""
    d, M = cfg.d_model, cfg.mlp
    W1, b1 = (_ints(t) for t in _folded(cfg, blk, "2", ("1",))["1"])
    src = f"h{l}_{i}" if cfg.parallel else mid
    a = _write_norm(w, cfg, src, f"m{l}_{i}") if cfg.normed("mlp") else src
    w(f"# MLP: f = relu(s={cfg.s_mlp}, max={cfg.mlp_max}) of W1 {a} + b1; "
      f"h{l + 1}_{i} = {mid} + W2 f + b2")
    w.requant(a, f"f{l}_{i}", M, W1, b1, cfg.s_mlp, 0, cfg.mlp_max, half=False)
    w.vec(f"h{l + 1}_{i}", d, "identity")
    w.diag(mid, f"h{l + 1}_{i}", d)
    w.dense(f"f{l}_{i}", f"h{l + 1}_{i}", _ints(blk["W2"]))
    w.bias(f"h{l + 1}_{i}", _ints(blk["b2"]))


def netlist(model: Transformer, name: str = "transformer", check: bool = True):
    """The validated Netlist of `to_dnet(model)`; with `check`, refused (VoodooError) if a
    proven range cannot live in a map (see check_ranges)."""
    from dsl.parser import parse

    net = parse(to_dnet(model, name), f"{name}.dnet")
    if check:
        check_ranges(net)
    return net


def flat_inputs(x) -> np.ndarray:
    """(batch, tokens, features) -> (batch, tokens * features), the netlist's input order."""
    x = np.asarray(x)
    return x.reshape(x.shape[0], -1)


# Light levels hold -32768..32767 (mapgen/physics.py); every accumulator lives in one.
LIGHT_LIMIT = 32767
_FIXES = {  # by the role a node's name starts with (docs/transformer.md, "Names")
    "h": "smaller embedding weights or input range, or requantise the attention output "
         "(attn_max > 0)",
    "r": "requantise the attention output (attn_max > 0) or use smaller Wo",
    "q": "a larger s_qkv or smaller weights into q, k, v",
    "s": "a smaller qk (scores span head_dim * qk^2)",
    "o": "a smaller v or prob_max, or fewer tokens",
    "logits": "smaller head weights, or requantise the attention output (attn_max > 0)",
}
_FIXES["k"] = _FIXES["v"] = _FIXES["f"] = _FIXES["q"]


def check_ranges(net) -> None:
    """Refuse a transformer netlist whose proven ranges break an engine limit, naming the
    first node (in dependency order) and the configuration change that fixes it."""
    for n in net.nodes:
        r = net.acc_range[n.id]
        if max(abs(r.lo), abs(r.hi)) > LIGHT_LIMIT:
            role = re.match(r"[a-z]*", n.group).group(0)
            fix = _FIXES.get(role, "smaller weights or ranges before this node")
            raise VoodooError(f"{net.source}: the accumulator of '{n.name}' can reach {r} "
                              f"(proven range), beyond the light levels -32768..32767 that "
                              f"hold it in a map\n    hint: {fix}")
