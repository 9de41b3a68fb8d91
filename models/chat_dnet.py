"""The chat model's netlist: `to_dnet(model)` writes the .dnet text whose reference is the
model's integer forward, step by step (models/chat_lm.py, docs/chat.md).

The netlist is recurrent (`steps open`): the state S and z of every layer and head, the
router's running sums A, the step counter, the "reply has started" flag and the
repetition counts are nodes read with `prev(...)` on the next step; the chosen character y
is fed back as the next input (`feedback c = y`) and the network ends the reply itself
(`done done`: the newline was chosen, or the context is full). Every product of two
values is either a `product` (two quarter-square lookups in a map) or, where both values
have few levels, one lookup of a mixed key (`a * (range of b) + b`); the router's one-hot
selects the chosen expert's values inside the lookups themselves (an unchosen expert's
accumulator is pushed below its table, where every table is 0). `to_dnet(model,
recurrent=False)` writes one step instead, the previous values as inputs `prev_NAME` and
every recurrent node an output: the same numbers, checked step by step where a reference
without recurrence runs it (tests/test_chat_dnet.py). demos/chat_census.py counts the dolls and
doors a map would build, per part.
"""
from __future__ import annotations

import numpy as np

from dsl.diagnostics import VoodooError
from models.chat_corpus import NEWLINE
from models.chat_lm import ChatConfig, ChatLM, _decayed, _rdiv, gate_table, noise_range, \
    tables
from models.transformer import _Writer, _ints, _write_norm

LIGHT_LIMIT = 32767


class _Net(_Writer):
    """The writer, and the previous-step references of the netlist being written."""

    def __init__(self, model: ChatLM, recurrent: bool):
        super().__init__()
        self.model, self.cfg, self.recurrent = model, model.cfg, recurrent
        self.prevs: dict[str, tuple[int | None, int, int]] = {}

    def prev(self, name: str, size: int | None, lo: int, hi: int) -> str:
        """prev(name), or the input that stands for it in a one-step netlist."""
        self.prevs[name] = (size, lo, hi)
        return f"prev({name})" if self.recurrent else f"prev_{name}"

    def table(self, name: str, lo: int, values) -> None:
        self(f"table {name} = lut({lo}..{lo + len(values) - 1}, "
             f"[{', '.join(str(int(v)) for v in values)}])")

    def column(self, src: str, dst: str, weights) -> None:
        """Lines from one scalar to every element of dst, one weight each."""
        weights = [int(v) for v in np.ravel(weights)]
        if any(weights):
            self(f"lines {src} -> {dst} dense [{', '.join(f'[{v}]' for v in weights)}]")


def to_dnet(model: ChatLM, name: str = "chat", comment: str = "",
            recurrent: bool = True) -> str:
    """The model's integer form as .dnet text (docs/chat.md, "Names in the netlist")."""
    cfg = model.cfg
    w = _Net(model, recurrent)
    for line in (comment.splitlines() if comment else []):
        w(f"# {line}")
    w(f"network {name}")
    w(f"# {cfg}")
    if recurrent:
        w("steps open")
    w()
    _write_tables(w)
    _write_front(w)
    _write_router(w)
    for layer in range(cfg.layers):
        _write_layer(w, layer)
    w()
    w("# ---- the head: final LayerNorm, logits")
    yf = _write_norm(w, cfg, f"h{cfg.layers}", "f")
    W, b = (_ints(t) for t in model.head_folded())
    w.vec("logits", cfg.vocab, "identity")
    w.dense(yf, "logits", W)
    w.bias("logits", b)
    _write_choice(w)
    _write_ends(w)
    return "\n".join(w.lines) + "\n"


# -------------------------------------------------------------------------------- tables
def _write_tables(w: _Net) -> None:
    cfg, m = w.cfg, w.model
    w("# ---- lookup tables (docs/chat.md)")
    for t in tables(cfg).values():
        w.table(t.name, t.lo, t.values)
    for d in sorted({int(v) for l in range(cfg.layers) for v in m.decays(l).flatten()}):
        t = gate_table(cfg, d)
        w.table(t.name, t.lo, t.values)
    V, T, d = cfg.vocab, cfg.context, cfg.d_model
    w.table("gen", 0, [int(k >= V or k == NEWLINE) for k in range(2 * V)])
    tok, pos = (w.i.numpy() for w in m.embeddings())
    w.table("tok", 0, [tok[c, j] for j in range(d) for c in range(V)])
    w.table("pos", 0, [pos[t, j] for j in range(d) for t in range(T)])
    w.table("kv", 0, _mixed(cfg.qk_max, -cfg.v_max, cfg.v_max,
                            lambda a, b: _rdiv(a * b, cfg.kv_div)))
    w.table("gs", 0, _mixed(cfg.gate_max, -cfg.state_max, cfg.state_max,
                            lambda g, s: _decayed(g, s, cfg.gate_unit)))
    w.table("gz", 0, _mixed(cfg.gate_max, 0, cfg.z_max,
                            lambda g, z: _decayed(g, z, cfg.gate_unit)))
    w()


def _mixed(a_max: int, b_lo: int, b_hi: int, fn) -> list[int]:
    """fn(a, b) for a in 0..a_max, b in b_lo..b_hi, at key a * (b_hi - b_lo + 1) + b - b_lo:
    a function of two values as one lookup of a weighted sum of them."""
    return [fn(a, b) for a in range(a_max + 1) for b in range(b_lo, b_hi + 1)]


# --------------------------------------------------------------------------- the front
def _write_front(w: _Net) -> None:
    """Inputs, the step counter t, the flag gen, the embedding h0."""
    cfg = w.cfg
    V, T, d = cfg.vocab, cfg.context, cfg.d_model
    lo, hi = noise_range(cfg)
    w("# ---- inputs: the character (fed back from y once the prompt is given) and the noise")
    w(f"input c : 0..{V - 1}")
    w(f"input noise[{V}] : {lo}..{hi}")
    w(f"# t: the step 1, 2, ... (clamped at {T}); gen: 1 from the prompt's newline on")
    w(f"neuron t : relu(s=1, max={T}) = {w.prev('t', None, 0, T)} + 1")
    w(f"neuron gen : lut(gen) = c + {V}*{w.prev('gen', None, 0, 1)}")
    w("# h0 = tok[c] + pos[t - 1]: each element a lookup of one table at key j*V + c")
    w.vec("tok", d, "lut(tok)")
    w(f"lines c -> tok all 1")
    w.bias("tok", [j * V for j in range(d)])
    w.vec("pe", d, "lut(pos)")
    w(f"lines t -> pe all 1")
    w.bias("pe", [j * T - 1 for j in range(d)])
    w.vec("h0", d, "identity")
    w.diag("tok", "h0", d)
    w.diag("pe", "h0", d)


def _write_router(w: _Net) -> None:
    """xr = clamp(round(h0 / s), -X, X) + X; A = prev(A) + xr; mean = rho A / t in the log
    domain; hidden relu; logits; the one-hot route0.. of the largest (ties: the first)."""
    cfg, m = w.cfg, w.model
    d, E, X, s, rho = cfg.d_model, cfg.experts, cfg.router_in_max, cfg.s_router_in, \
        cfg.router_mean_scale
    w()
    w("# ---- the router over the running mean of h0")
    w.requant("h0", "xr", d, None, s * X, s, 0, 2 * X)
    w.vec("A", d, f"relu(s=1, max={cfg.sum_max})")
    w.diag(w.prev("A", d, 0, cfg.sum_max), "A", d)
    w.diag("xr", "A", d)
    w.vec("lA", d, "lut(logp)")
    w.diag("A", "lA", d)
    w("neuron lt : lut(log) = t")
    w.vec("mean", d, "lut(mean)")
    w.diag("lA", "mean", d)
    w("lines lt -> mean all -1")
    W1, b1 = _ints(m.router["W1"]), _ints(m.router["b1"])
    w(f"# hidden = clamp(round((W1 (mean - {rho * X}) + b1) / {cfg.s_router}), 0, "
      f"{cfg.router_max})")
    w.vec("rh", cfg.router_hidden, f"relu(s={cfg.s_router}, max={cfg.router_max})")
    w.dense("mean", "rh", W1)
    w.bias("rh", b1 - rho * X * W1.sum(1) + cfg.s_router // 2)
    w.vec("rl", E, "identity")
    w.dense("rh", "rl", _ints(m.router["W2"]))
    w.bias("rl", _ints(m.router["b2"]))
    if E == 2:
        w("neuron route0 : step(t=0) = rl[0] - rl[1]")
        w("neuron route1 : identity = 1 - route0")
        return
    for i in range(E):
        for j in range(i + 1, E):
            w(f"neuron rb{i}_{j} : step(t=0) = rl[{i}] - rl[{j}]")
    for i in range(E):  # route_i: rl_i beats every later one and is beaten by no earlier
        terms = " + ".join(f"rb{i}_{j}" for j in range(i + 1, E))
        neg = " - ".join(f"rb{j}_{i}" for j in range(i))
        expr = (terms or "0") + (f" - {neg} + {i}" if neg else "")
        w(f"neuron route{i} : step(t={E - 1}) = {expr}")


# ------------------------------------------------------------------------------ layers
def _bound(W: np.ndarray, b: np.ndarray, lo, hi) -> np.ndarray:
    """The largest accumulator W x + b of each row over lo <= x <= hi."""
    return b + np.where(W > 0, W * hi, W * lo).sum(-1)


def _gated(w: _Net, name: str, size: int, gate: str, e: int, B: int, src: str, W, b) -> None:
    """A vector of expert e whose accumulator is pushed B below its table unless the
    router chose e: W src + b - B (1 - route_e)."""
    w(f"neuron {name} : {gate}" if size is None else f"neuron {name}[{size}] : {gate}")
    w.dense(src, name, W)
    w.bias(name, np.asarray(b) - B)
    w(f"lines route{e} -> {name} all {B}")


def _gate_floor(cfg: ChatConfig, decays) -> int:
    """Below this key every gate table the layer uses is 0 (a table that is 0 everywhere,
    decay 0 or 1, sets no floor): where an unchosen expert's gate is pushed."""
    tabs = [gate_table(cfg, int(dd)) for dd in sorted({int(v) for v in decays.flatten()})]
    return min((t.lo for t in tabs if any(t.values)), default=0)


def clamped_qk(cfg) -> bool:
    """Whether q and k go through a clamp to 0..qk_max. The router's one-hot makes every
    expert but one give 0, which the interval analysis cannot see: it bounds q by
    experts * qk_max, and a readout (a head's dh products q z, or q S) by dh times that
    times z's or S's bound. Where that proof passes a light's 16 bits (the micro:bit size:
    1 head of 40, 3 experts, 0..43,200), the clamp, which never binds, gives the proof the
    true range."""
    EQ = cfg.experts * cfg.qk_max
    z = cfg.gate_max * cfg.z_max // cfg.gate_unit + EQ
    return cfg.head_dim * EQ * max(z, cfg.state_max) > LIGHT_LIMIT


def _write_layer(w: _Net, l: int) -> None:
    cfg, m = w.cfg, w.model
    d, E, Vm, sv = cfg.d_model, cfg.experts, cfg.v_max, cfg.s_v
    tabs = tables(cfg)
    w()
    w(f"# ---- layer {l}: LayerNorm, q k v g of every expert (the chosen one's pass)")
    y = _write_norm(w, cfg, f"h{l}", f"a{l}")
    ymax = cfg.norm_max * max(tabs["rsqrt"].values)
    W = {n: (_ints(a), _ints(b)) for n, (a, b) in m.folded(l, "1", "qkvg").items()}
    hi = {n: max(_bound(W[n][0][e], W[n][1][e], -ymax, ymax).max() for e in range(E))
          for n in W}
    # Each vector's push B: its largest accumulator lands below its table (or its relu's
    # first step) when the router does not choose its expert.
    B = {"q": 1 + hi["q"] - tabs["qk"].lo, "k": 1 + hi["k"] - tabs["qk"].lo,
         "v": 1 + hi["v"] + Vm * sv + sv,
         "g": 1 + hi["g"] - _gate_floor(cfg, m.decays(l))}
    for e in range(E):
        for n in "qk":
            _gated(w, f"{n}{l}_{e}", d, "lut(qk)", e, B[n], y, W[n][0][e], W[n][1][e])
        _gated(w, f"v{l}_{e}", d, f"relu(s={sv}, max={2 * Vm})", e, B["v"], y, W["v"][0][e],
               W["v"][1][e] + Vm * sv + sv // 2)
        for i, dec in enumerate(m.decays(l)[e].tolist()):
            _gated(w, f"g{l}_{e}_{i}", None, f"lut(gate{dec})", e, B["g"], y,
                   W["g"][0][e][i:i + 1], W["g"][1][e][i:i + 1])
    for n in "qkv":
        # q and k are an identity of the experts' sum unless the readout's proof needs
        # their true range (clamped_qk): the same values, a doll each.
        kind = f"relu(s=1, max={cfg.qk_max})" if n in "qk" and clamped_qk(cfg) else "identity"
        w.vec(f"{n}{l}", d, kind)
        for e in range(E):
            w.diag(f"{n}{l}_{e}", f"{n}{l}", d)
    w.bias(f"v{l}", [-Vm] * d)
    w.vec(f"g{l}", d, "identity")
    for e in range(E):
        for i in range(d):
            w(f"lines g{l}_{e}_{i} -> g{l}[{i}] all 1")
    for hd in range(cfg.heads):
        _write_state(w, l, hd)
    _write_output(w, l)
    _write_mlp(w, l)


def _write_state(w: _Net, l: int, hd: int) -> None:
    """S = trunc(g S / G) + round(k v / kv_div), z = trunc(g z / G) + k, per head; the
    logs of the readout's numerators q.S[:, j] (their positive and negative parts) and of
    its denominator q.z."""
    cfg = w.cfg
    dh, Sm, Zm, Vm = cfg.head_dim, cfg.state_max, cfg.z_max, cfg.v_max
    a0, a1 = hd * dh, (hd + 1) * dh
    tag = f"{l}_{hd}"
    pairs = [(i, j) for i in range(dh) for j in range(dh)]
    w(f"# layer {l} head {hd}: the state S{tag}[i*{dh} + j] and z{tag}[i]")
    w.vec(f"kv{tag}", dh * dh, "lut(kv)")
    w(f"lines k{l}[{a0}:{a1}] -> kv{tag} sparse {{" + ", ".join(
        f"{i} -> {i * dh + j} : {2 * Vm + 1}" for i, j in pairs) + "}")
    w(f"lines v{l}[{a0}:{a1}] -> kv{tag} sparse {{" + ", ".join(
        f"{j} -> {i * dh + j} : 1" for i, j in pairs) + "}")
    w.bias(f"kv{tag}", [Vm] * (dh * dh))
    w.vec(f"sd{tag}", dh * dh, "lut(gs)")
    w(f"lines g{l}[{a0}:{a1}] -> sd{tag} sparse {{" + ", ".join(
        f"{i} -> {i * dh + j} : {2 * Sm + 1}" for i, j in pairs) + "}")
    w.diag(w.prev(f"S{tag}", dh * dh, -Sm, Sm), f"sd{tag}", dh * dh)
    w.bias(f"sd{tag}", [Sm] * (dh * dh))
    w.vec(f"S{tag}", dh * dh, "identity")
    w.diag(f"sd{tag}", f"S{tag}", dh * dh)
    w.diag(f"kv{tag}", f"S{tag}", dh * dh)
    w.vec(f"zd{tag}", dh, "lut(gz)")
    w.diag(f"g{l}[{a0}:{a1}]", f"zd{tag}", dh, Zm + 1)
    w.diag(w.prev(f"z{tag}", dh, 0, Zm), f"zd{tag}", dh)
    w.vec(f"z{tag}", dh, "identity")
    w.diag(f"zd{tag}", f"z{tag}", dh)
    w.diag(f"k{l}[{a0}:{a1}]", f"z{tag}", dh)
    for i in range(dh):
        w(f"neuron qs{tag}_{i}[{dh}] : product(q{l}[{a0 + i}], S{tag}[{i * dh}:{(i + 1) * dh}])")
    w(f"neuron qz{tag}[{dh}] : product(q{l}[{a0}:{a1}], z{tag})")
    for part in "pn":
        w.vec(f"l{part}{tag}", dh, f"lut(log{part})")
        for i in range(dh):
            w.diag(f"qs{tag}_{i}", f"l{part}{tag}", dh)
    w(f"neuron ld{tag} : lut(log) = " + " + ".join(f"qz{tag}[{i}]" for i in range(dh)))


def _write_output(w: _Net, l: int) -> None:
    """o = DIV(lp - ld) - DIV(ln - ld), each part per expert (0 unless chosen), then
    r = h + Wo_e o + bo_e."""
    cfg, m = w.cfg, w.model
    d, dh, E = cfg.d_model, cfg.head_dim, cfg.experts
    tabs = tables(cfg)
    B = 1 + max(tabs["logp"].values) - tabs["div"].lo
    wr = {k: v.i.numpy() for k, v in m.writes(l).items()}
    w(f"# layer {l}: the division, per expert, and the residual r{l}")
    for e in range(E):
        for part in "pn":
            name = f"o{part}{l}_{e}"
            w.vec(name, d, "lut(div)")
            for hd in range(cfg.heads):
                a0, a1 = hd * dh, (hd + 1) * dh
                w.diag(f"l{part}{l}_{hd}", f"{name}[{a0}:{a1}]", dh)
                w(f"lines ld{l}_{hd} -> {name}[{a0}:{a1}] all -1")
            w(f"lines route{e} -> {name} all {B}")
            w.bias(name, [-B] * d)
    w.vec(f"r{l}", d, "identity")
    w.diag(f"h{l}", f"r{l}", d)
    for e in range(E):
        w.dense(f"op{l}_{e}", f"r{l}", wr["Wo"][e])
        w.dense(f"on{l}_{e}", f"r{l}", -wr["Wo"][e])
        w.column(f"route{e}", f"r{l}", wr["bo"][e])


def _write_mlp(w: _Net, l: int) -> None:
    cfg, m = w.cfg, w.model
    d, E, M = cfg.d_model, cfg.experts, cfg.mlp
    tabs = tables(cfg)
    w(f"# layer {l}: LayerNorm, the GELU MLP of every expert, h{l + 1} = r{l} + W2 f + b2")
    y = _write_norm(w, cfg, f"r{l}", f"m{l}")
    ymax = cfg.norm_max * max(tabs["rsqrt"].values)
    W1, b1 = (_ints(t) for t in m.folded(l, "2", ("1",))["1"])
    B = 1 + max(_bound(W1[e], b1[e], -ymax, ymax).max() for e in range(E)) - tabs["gelu"].lo
    wr = {k: v.i.numpy() for k, v in m.writes(l).items()}
    w.vec(f"h{l + 1}", d, "identity")
    w.diag(f"r{l}", f"h{l + 1}", d)
    for e in range(E):
        _gated(w, f"f{l}_{e}", M, "lut(gelu)", e, B, y, W1[e], b1[e])
        w.dense(f"f{l}_{e}", f"h{l + 1}", wr["W2"][e])
        w.column(f"route{e}", f"h{l + 1}", wr["b2"][e])


# -------------------------------------------------------------------------- the choice
def _write_choice(w: _Net) -> None:
    """score = clamp(floor((logit + bias) / s) + noise - penalty * rc, 0, max); the largest
    score by a tree of max(a, b) = b + relu(a - b); best = [score >= max]; o = the first
    best, when gen; y = its index."""
    cfg, m = w.cfg, w.model
    V, s, top = cfg.vocab, cfg.s_choice, cfg.choice_max
    w()
    w("# ---- the choice: scores, their maximum, the first best character")
    w.vec("sc", V, f"relu(s={s}, max={top})")
    w.diag("logits", "sc", V)
    w.diag("noise", "sc", V, s)
    w.diag("rc", "sc", V, -cfg.penalty_units * s)
    w.bias("sc", [int(m.choice_bias)] * V)
    vals = [{f"sc[{k}]": 1} for k in range(V)]
    level = 0
    while len(vals) > 1:
        nxt = []
        for k in range(0, len(vals) - 1, 2):
            a, b = vals[k], vals[k + 1]
            name = f"mx{level}_{k // 2}"
            w(f"neuron {name} : relu(s=1, max={top}) = " + _affine(_sub(a, b)))
            nxt.append({**b, name: 1})
        if len(vals) % 2:
            nxt.append(vals[-1])
        vals, level = nxt, level + 1
    w.vec("best", V, "step(t=0)")  # best_k = [sc_k - max >= 0]
    top_sc = {int(r[3:-1]): wt for r, wt in vals[0].items() if r.startswith("sc[")}
    entries = [(j, k, int(j == k) - top_sc.get(j, 0)) for k in range(V)
               for j in sorted(set(top_sc) | {k})]
    w("lines sc -> best sparse {" + ", ".join(f"{j} -> {k} : {v}" for j, k, v in entries
                                              if v) + "}")
    for ref, wt in vals[0].items():
        if not ref.startswith("sc["):
            w(f"lines {ref} -> best all {-wt}")
    w.vec("o", V, "step(t=2)")
    w.diag("best", "o", V)
    w("lines best -> o sparse {" + ", ".join(f"{j} -> {k} : -1" for k in range(V)
                                             for j in range(k)) + "}")
    w("lines gen -> o all 1")
    w(f"neuron y : relu(s=1, max={V - 1}) = " + " + ".join(f"{k}*o[{k}]" for k in range(1, V)))
    w.vec("rc", V, f"relu(s=1, max={cfg.repeat_max})")
    w.diag(w.prev("rc", V, 0, cfg.repeat_max), "rc", V)
    w.diag(w.prev("o", V, 0, 1), "rc", V)


def _sub(a: dict, b: dict) -> dict:
    out = dict(a)
    for k, v in b.items():
        out[k] = out.get(k, 0) - v
    return {k: v for k, v in out.items() if v}


def _affine(terms: dict) -> str:
    parts = []
    for k, v in terms.items():
        sign = "-" if v < 0 else "+"
        mag = "" if abs(v) == 1 else f"{abs(v)}*"
        parts.append(f"{sign} {mag}{k}")
    text = " ".join(parts)
    return text[2:] if text.startswith("+ ") else text


def _write_ends(w: _Net) -> None:
    cfg = w.cfg
    T = cfg.context
    w(f"neuron done : step(t={T}) = {T}*o[{NEWLINE}] + t")
    if w.recurrent:
        w("output y, done, o")
        w("feedback c = y")
        w("done done")
        return
    state = ["t", "gen", "A"] + [f"{n}{l}_{h}" for l in range(cfg.layers)
                                 for h in range(cfg.heads) for n in "Sz"] + ["rc", "o"]
    w("output y, done, " + ", ".join(state))
    for name, (size, lo, hi) in w.prevs.items():
        w(f"input prev_{name}{'' if size is None else f'[{size}]'} : {lo}..{hi}")


# ---------------------------------------------------------------------------- netlists
def netlist(model: ChatLM, name: str = "chat", recurrent: bool = True, check: bool = True):
    """The validated Netlist of `to_dnet(model)`; with `check`, refused if an accumulator's
    proven range cannot live in a light."""
    from dsl.parser import parse

    net = parse(to_dnet(model, name, recurrent=recurrent), f"{name}.dnet")
    if check:
        check_ranges(net)
    return net


def check_ranges(net) -> None:
    for n in net.nodes:
        r = net.acc_range[n.id]
        if max(abs(r.lo), abs(r.hi)) > LIGHT_LIMIT:
            raise VoodooError(f"{net.source}: the accumulator of '{n.name}' can reach {r} "
                              f"(proven range), beyond the light levels -32768..32767 that "
                              f"hold it in a map\n    hint: smaller weights into it, or a "
                              f"smaller state (gate_max, kv_div) or d_model")


def step_inputs(net, model: ChatLM, c: int, noise_t, prev: dict) -> list[int]:
    """One step's inputs of the one-step netlist, in its input order: the character, the
    noise and every previous value `prev_NAME` (from `prev`, by node name; 0 if absent)."""
    vals = {"c": c, **{f"noise[{k}]": int(v) for k, v in enumerate(noise_t)}}
    vals.update({f"prev_{k}": v for k, v in prev.items()})
    return [int(vals.get(net.nodes[i].name, 0)) for i in net.inputs]


def run_steps(net, model: ChatLM, prompt: str, seed: int | None = None) -> list[dict]:
    """The one-step netlist's reference run on a prompt, step after step: each step's
    every node value (by name); the recurrent values and the fed-back character are carried
    here, in Python, as a runner without recurrence must. A test harness."""
    from dsl.reference import evaluate
    from models.chat_corpus import encode
    from models.chat_lm import noise

    cfg = model.cfg
    ids = encode(prompt + "\n")
    nz = noise(cfg, seed, cfg.context)
    recurrent = {n.name[len("prev_"):] for n in (net.nodes[i] for i in net.inputs)
                 if n.name.startswith("prev_")}
    prev: dict = {}
    out, c = [], ids[0]
    for t in range(cfg.context):
        vals = evaluate(net, [step_inputs(net, model, c, nz[t], prev)]).named(0, 0)
        out.append(vals)
        if vals["done"]:
            break
        prev = {k: v for k, v in vals.items() if k in recurrent}
        c = ids[t + 1] if t + 1 < len(ids) else vals["y"]
    return out
