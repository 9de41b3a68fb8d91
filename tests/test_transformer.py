"""Transformers without the engine: the integer semantics of every piece against an
independent float computation (within the rounding docs/transformer.md states), the
integer torch forward against the netlist reference (==), the trained netlist, refusals,
the .dnet vector forms and the sub-lane split of the map compiler."""
import math
import os
from dataclasses import asdict

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import ROOT
from dsl import load
from dsl.diagnostics import CompileError, VoodooError
from dsl.jsonio import dumps, loads
from dsl.parser import parse
from dsl.random_net import mlp
from dsl.reference import evaluate
from mapgen.circuit import lower, simulate, split_lanes
from interop import from_torch
from models.transformer import Transformer, TransformerConfig, flat_inputs, tables, to_dnet

CFG = TransformerConfig(qk=5, s_qkv=32)
CAPS = st.integers(-20, 100)


# ------------------------------------------------------------ each piece vs float
@settings(deadline=None)  # the first example loads the parser
@given(CAPS, st.integers(-200, 200))
def test_exp_lookup_rounds_the_exponential(cap, s):
    t = tables(CFG, cap)["exp"]
    e = t.values[min(max(s, t.lo), t.hi) - t.lo]
    exact = CFG.exp_max * math.exp(CFG.beta * (min(s, cap) - cap))
    assert abs(e - exact) <= 0.5


@settings(deadline=None)  # the first example loads the parser
@given(CAPS, st.integers(0, CFG.tokens * CFG.exp_max))
def test_log_lookup_rounds_the_log_sum(cap, S):
    lam = tables(CFG, cap)["log"].values[S]
    exact = cap + math.log(max(S, 1) / CFG.exp_max) / CFG.beta
    assert abs(lam - exact) <= 0.5


@settings(deadline=None)  # the first example loads the parser
@given(st.integers(-300, 50))
def test_pexp_lookup_is_a_clamped_rounded_exponential(dd):
    t = tables(CFG)["pexp"]
    p = t.values[min(max(dd, t.lo), t.hi) - t.lo]
    exact = min(CFG.prob_max, CFG.prob_max * math.exp(CFG.beta * dd))
    assert abs(p - exact) <= 0.5


@settings(deadline=None)  # the first example loads the parser
@given(st.lists(st.integers(-40, 40), min_size=8, max_size=8), st.integers(0, 8))
def test_integer_softmax_row_is_near_the_float_softmax(scores, width):
    """With the cap at the row's largest score, every weight is within 1.5 of
    P * softmax(beta * s) (docs/transformer.md, "Softmax": 1/2 from each lookup's rounding
    and at most beta/2 of log error, which is below 1 for P = 7, beta = 0.35)."""
    s = np.array(scores[:width + 1] or [0])
    cap = int(s.max())
    tb = tables(CFG, cap)

    def look(name, v):
        t = tb[name]
        return t.values[min(max(int(v), t.lo), t.hi) - t.lo]

    lam = look("log", sum(look("exp", v) for v in s))
    p = np.array([look("pexp", v - lam) for v in s])
    z = np.exp(CFG.beta * (s - s.max()))
    assert np.all(np.abs(p - CFG.prob_max * z / z.sum()) <= 1.5)


@settings(deadline=None)  # the first example loads the parser
@given(st.integers(-5000, 5000), st.sampled_from([1, 2, 7, 16, 32]), st.integers(1, 7))
def test_requantisation_rounds_half_up_and_clamps(acc, s, Q):
    """q = clamp(floor((acc + s//2) / s), -Q, Q), written as a relu: identical, and within
    1/2 of clamp(acc / s) (exactly 1/2 only at a tie, rounded up)."""
    net = parse(f"input a : -5000..5000\nneuron r : relu(s={s}, max={2 * Q}) = a + "
                f"{Q * s + s // 2}\nneuron q : identity = r - {Q}\noutput q")
    q = int(evaluate(net, [[acc]]).last_outputs()[0, 0])
    assert q == min(max((acc + s // 2) // s, -Q), Q)
    assert abs(q - min(max(acc / s, -Q), Q)) <= 0.5


@settings(deadline=None)  # the first example loads the parser
@given(st.lists(st.integers(-60, 60), min_size=8, max_size=8), st.sampled_from(["rms", "layer"]))
def test_norm_pieces_match_float_normalisation(h, kind):
    """u = clamp(round(z / s)), rho = round(K sqrt(d / sum u^2)), y = u * rho: y is within
    |u| / 2 of K * u / rms(u) (the reciprocal square root's rounding)."""
    cfg = TransformerConfig(norm=kind)
    tb, d = tables(cfg), cfg.d_model
    h = np.array(h)
    z = h if kind == "rms" else d * h - h.sum()
    u = np.clip((z + cfg.s_norm // 2) // cfg.s_norm, -cfg.norm_max, cfg.norm_max)
    sq = tb["sq"]
    assert [sq.values[min(max(int(v), sq.lo), sq.hi) - sq.lo] for v in z] == (u * u).tolist()
    S = int((u * u).sum())
    rho = tb["rsqrt"].values[S]
    y = u * rho
    exact = cfg.norm_k * u * math.sqrt(d / max(S, 1))
    assert np.all(np.abs(y - exact) <= np.abs(u) / 2 + 1e-9)


# ------------------------------------------------ integer torch forward == reference
def _random_model(seed, **kw) -> Transformer:
    cfg = TransformerConfig(tokens=kw.pop("tokens", 4), qk=5, s_qkv=32, **kw)
    model = Transformer(cfg, seed)
    with torch.no_grad():  # weights of a few units, so that rounding keeps something
        for p in model.parameters():
            p.mul_(2)
    model.calibrate(torch.randint(0, 8, (64, cfg.tokens, cfg.features)))
    return model


CONFIGS = [dict(norm=n, mlp=m, attn_max=a, layers=L, heads=H, features=F)
           for n, m, a, L, H, F in [("none", 0, 0, 1, 2, 1), ("rms", 0, 0, 1, 1, 2),
                                    ("layer", 4, 5, 2, 2, 1), ("rms", 3, 4, 2, 1, 1),
                                    ("none", 5, 5, 2, 2, 2)]]
# one norm only (norm_at): before attention, or before the MLP
CONFIGS += [dict(norm="rms", norm_at="attn", mlp=4, heads=1, features=2),
            dict(norm="layer", norm_at="mlp", mlp=4, layers=1, heads=2, features=1)]
# parallel blocks: the MLP reads the block's input (its norm beside attention, not after it)
CONFIGS += [dict(norm="rms", norm_at="mlp", mlp=4, heads=1, features=2, parallel=True),
            dict(norm="layer", mlp=3, layers=2, heads=2, features=1, parallel=True)]


@pytest.mark.parametrize("kw", CONFIGS, ids=lambda kw: "-".join(f"{k}{v}" for k, v in kw.items()))
@pytest.mark.parametrize("seed", [0, 1])
def test_integer_forward_equals_reference(kw, seed):
    model = _random_model(seed, in_hi=7, **kw)
    net = from_torch(model)
    x = torch.randint(0, 8, (60, model.cfg.tokens, model.cfg.features),
                      generator=torch.Generator().manual_seed(seed))
    x[0] = 0
    x[1] = 7
    want = evaluate(net, flat_inputs(x).tolist()).last_outputs()
    got = model(x, mode="int").numpy()
    assert np.array_equal(got, want)
    assert len(np.unique(got)) > 3   # the models compute something
    qat = model(x, mode="qat").detach().numpy()
    assert np.array_equal(qat, got)  # straight-through rounding: the very same integers


def test_state_round_trip_and_config_errors():
    model = _random_model(3)
    again = Transformer.from_state(model.state())
    assert to_dnet(again) == to_dnet(model)
    with pytest.raises(VoodooError, match="not a multiple of heads"):
        TransformerConfig(d_model=6, heads=4).validate()
    with pytest.raises(VoodooError, match="norm='batch'"):
        TransformerConfig(norm="batch").validate()
    with pytest.raises(VoodooError, match="norm_at='input'"):
        TransformerConfig(norm="rms", norm_at="input").validate()


def test_out_of_range_design_is_refused_naming_node_and_fix():
    model = _random_model(0)
    with torch.no_grad():
        model.head["W"].mul_(2000)
    with pytest.raises(VoodooError) as e:
        from_torch(model)
    assert "'logits[" in str(e.value) and "-32768..32767" in str(e.value)
    assert "hint: smaller head weights" in str(e.value)
    model = _random_model(0)
    with torch.no_grad():
        model.embed["W"].mul_(800)
    with pytest.raises(VoodooError, match=r"'h0_0\[\d\]'.*\n    hint: smaller embedding"):
        from_torch(model)


# ---------------------------------------------------------------- the trained model
def test_checked_in_transformer_is_trained_and_exact_on_held_out():
    from models.seqtask import held_out

    path = os.path.join(ROOT, "circuits", "transformer.dnet")
    net = load(path)
    x, y = held_out(500)
    out = evaluate(net, x.reshape(len(x), -1).tolist()).last_outputs()
    assert (out.argmax(1) == y).mean() >= 0.98
    with open(path) as f:
        assert "agreement" in f.read(400)


# ------------------------------------------------------------------ vector forms
VEC = """network v
table sq = lut(-2..2, [4, 1, 0, 1, 4])
input q[4] : -2..2
input k[4] : -2..2
input c : 0..3
neuron s : identity = dot(q, k[0:4]) - 2*q[0]*k[1] + 3*dot(q[1:3], k[2:]) + 1
neuron e : lut(sq) = q[0]
neuron sc[4] : product(c, k)
neuron pq[2] : product(q[0:2], k[2:4])
output s, e, sc, pq
"""


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(-2, 2), min_size=8, max_size=8), st.integers(0, 3))
def test_vector_forms_compute_their_definition(qk, c):
    q, k = np.array(qk[:4]), np.array(qk[4:])
    for net in (parse(VEC, "v.dnet"), loads(dumps(parse(VEC, "v.dnet")))):
        out = evaluate(net, [qk + [c]]).last_outputs()[0].tolist()
        s = int(q @ k - 2 * q[0] * k[1] + 3 * (q[1:3] @ k[2:4]) + 1)
        assert out == [s, q[0] ** 2] + (c * k).tolist() + (q[:2] * k[2:]).tolist()


@pytest.mark.parametrize("src,where,text", [
    ("neuron s : identity = dot(q, k[0:3])", "3:23", "dot of vectors of different sizes (4 and 3)"),
    ("neuron s : identity = dog(q, k)", "3:23", "unknown function 'dog'"),
    ("neuron s : lut(sqq) = q[0]", "3:16", "unknown table 'sqq'"),
    ("neuron s[3] : product(q, k)", "3:23", "product operand 'q' has 4 elements but the product has 3"),
    ("neuron s : product(q[0:2], k[0:2])", "3:8", "a product of slices is a vector"),
    ("table t = relu(s=1)\nneuron s : identity = q[0]", "3:11", "table 't' must be a lut"),
    ("neuron s : identity = q[0]*kk[1]", "3:28", "unknown name 'kk'"),
    ("neuron s : identity = dot(q[2:9], k)", "3:27", "slice q[2:9] is out of range"),
])
def test_vector_form_errors_are_positioned(src, where, text):
    head = "input q[4] : -2..2\ninput k[4] : -2..2\n"
    with pytest.raises(CompileError) as e:
        parse(head + src + "\noutput s\n", "e.dnet")
    msg = str(e.value)
    assert f"e.dnet:{where}: error: {text}" in msg, msg


# --------------------------------------------------------------- sub-lane split
@pytest.mark.parametrize("budget", [1, 2, 5])
def test_split_lanes_compute_the_same_and_keep_phases(budget):
    nets = [load(os.path.join(ROOT, "circuits", f)) for f in ("softmax.dnet", "rmsnorm.dnet")]
    nets += [mlp(s, [3, 5, 4, 2], in_range=(0, 15), weight=4, gates=("relu", "lut"))
             for s in range(4)]
    rng = np.random.default_rng(budget)
    for net in nets:
        whole, split = lower(net, split=False), lower(net, door_budget=budget)
        assert split.n_phases == whole.n_phases
        assert all(len(ln.doors) <= budget for ln in split.lanes
                   if ln.source[0] in ("light", "input") and ln.role == "gate")
        # input lanes longer than the budget were split too (each input written to several)
        want = sum(-(-len(ln.doors) // budget) for ln in whole.lanes
                   if ln.source[0] == "input")
        assert len([ln for ln in split.lanes if ln.source[0] == "input"]) == want
        res = evaluate(split.net, [[int(rng.integers(lo, hi + 1)) for lo, hi in
                                    net.input_ranges()] for _ in range(8)])
        for b in range(8):
            x = res.value[b, 0, split.net.inputs].tolist()
            levels = simulate(split, x)
            for n in split.net.nodes:
                assert levels[split.value_light[n.id]] == res.value[b, 0, n.id], n.name
            for light in split.lights:
                assert light.lo <= levels[light.tag] <= light.hi


def test_split_lanes_refuses_a_budget_below_one():
    with pytest.raises(CompileError, match="door budget 0"):
        split_lanes(lower(load(os.path.join(ROOT, "circuits", "softmax.dnet"))).lanes, 0)


def test_cli_door_budget(tmp_path):
    import subprocess
    import sys

    def build(*args):
        return subprocess.run([sys.executable, os.path.join(ROOT, "build.py"), "compile",
                               os.path.join(ROOT, "circuits", "softmax.dnet"),
                               "-o", str(tmp_path / "s.wad"), *args],
                              capture_output=True, text=True)

    r = build("--door-budget", "2")
    assert r.returncode == 0 and "phases" in r.stdout, r.stderr
    one, default = build("--door-budget", "1"), build()
    tics = [int(p.stdout.split("tics per inference")[1].split()[0]) for p in (r, one, default)]
    # a door a sub-lane is as short as a step gets; the default compile cuts long lanes
    # where its cost model finds it cheaper (mapgen/carry.py): never slower than budget 2
    assert tics[1] <= tics[2] <= tics[0], tics
    r = build("--door-budget", "0")
    assert r.returncode != 0 and "--door-budget 0" in r.stderr and "Traceback" not in r.stderr


@pytest.mark.parametrize("norm_at", ["mlp", "both"])
def test_parallel_block_takes_the_mlp_and_its_norm_off_the_critical_path(norm_at):
    """parallel=True: the MLP (and the norm before it) read the block's input, so the map
    computes them beside attention: the norm before the MLP (3 levels) and the MLP (1) no
    longer add levels. Same weights: the two netlists differ only in what the MLP reads."""
    seq = _random_model(0, norm="rms", norm_at=norm_at, mlp=4, heads=1, features=2)
    par = Transformer(TransformerConfig(**{**asdict(seq.cfg), "parallel": True}))
    par.load_state_dict(seq.state_dict())
    n_seq, n_par = (lower(from_torch(m)).n_phases for m in (seq, par))
    assert n_par == n_seq - 4
    x = torch.randint(0, 8, (20, 4, 2), generator=torch.Generator().manual_seed(3))
    assert not torch.equal(seq(x, mode="int"), par(x, mode="int"))
