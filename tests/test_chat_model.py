"""The chat model without a map (models/chat_corpus.py, models/chat_lm.py, docs/chat.md):
the corpus and its checked-in files, the bounds that make the state a contraction, each
lookup against the real function it rounds, the three forwards, the choice, the noise
generator, decoding, and refusals."""
import math

import numpy as np
import pytest
import torch

from dsl.diagnostics import VoodooError
from models import chat_corpus
from models.chat_lm import (ChatConfig, ChatLM, _decayed, _Ops, _rdiv, _V, choose, gate_table,
                            generate, gumbel_table, noise, noise_range, tables)

TINY = ChatConfig(d_model=4, heads=2, layers=2, experts=3, mlp=6, router_hidden=5)


@pytest.fixture(scope="module")
def tiny():
    torch.manual_seed(0)
    return ChatLM(TINY, seed=3)


# -------------------------------------------------------------------------- the corpus
def test_corpus_files_are_what_the_generator_writes():
    train, held = chat_corpus.split()
    assert chat_corpus.load("train") == train
    assert chat_corpus.load("heldout") == held
    size = sum(len(t) for t in train + held)
    assert size >= 20_000
    assert not set(train) & set(held)  # no held-out exchange is trained on


def test_corpus_vocabulary_and_lengths():
    V = chat_corpus.VOCAB
    assert len(V) >= 40 and " " in V and "\n" in V and len(set(V)) == len(V)
    for t in chat_corpus.load("train") + chat_corpus.load("heldout"):
        assert len(t) <= chat_corpus.CONTEXT and t.count("\n") == 2 and t.endswith("\n")
        assert chat_corpus.decode(chat_corpus.encode(t)) == t
    with pytest.raises(ValueError, match="outside the vocabulary"):
        chat_corpus.encode("HELLO")


# ---------------------------------------------------------------------- bounds, tables
@pytest.mark.parametrize("cfg", [ChatConfig(), TINY, ChatConfig(gate_unit=16, gate_max=15,
                                                                 kv_div=2, v_max=5)])
def test_the_state_update_is_a_contraction_within_its_bound(cfg):
    """For every state |s| <= Smax, gate g <= g_max and increment, the next state stays
    within Smax (S) and 0..Zmax (z): so it does at every step, by induction from 0."""
    Sm, Zm, G = cfg.state_max, cfg.z_max, cfg.gate_unit
    kvs = {_rdiv(k * v, cfg.kv_div) for k in range(cfg.qk_max + 1)
           for v in range(-cfg.v_max, cfg.v_max + 1)}
    for g in range(cfg.gate_max + 1):
        for s in range(-Sm, Sm + 1):
            assert all(abs(_decayed(g, s, G) + kv) <= Sm for kv in kvs)
            assert abs(_decayed(g, s, G)) <= abs(s)
        for z in range(Zm + 1):
            assert all(0 <= _decayed(g, z, G) + k <= Zm for k in range(cfg.qk_max + 1))
    # and the bound is the least one: one less fails for the largest increment
    s = Sm - 1
    assert _decayed(cfg.gate_max, s, G) + max(kvs) > s


def test_each_lookup_rounds_its_function():
    c = ChatConfig()
    t = tables(c)

    def at(name, a):
        tb = t[name]
        return tb.values[min(max(a, tb.lo), tb.hi) - tb.lo]

    for a in range(-4000, 4000, 7):
        x = a / c.s_qkv
        elu1 = math.exp(x) if x < 0 else x + 1
        assert abs(at("qk", a) - min(c.qk_max, c.qk_scale * elu1)) <= 0.5
        y = a / c.s_mlp
        gelu = 0.5 * y * (1 + math.erf(y / math.sqrt(2)))
        assert abs(at("gelu", a) - min(c.gelu_max, c.gelu_scale * gelu)) <= 0.5
    for n in range(1, len(t["log"].values), 13):
        assert abs(at("log", n) - math.log(n) / c.beta) <= 0.5
        assert at("logp", n) == at("log", n) == at("logn", -n) or n > c.num_max
    for dd in range(-200, 100):
        exact = min(c.out_max, c.out_scale * c.kv_div * math.exp(c.beta * dd))
        assert abs(at("div", dd) - exact) <= 0.5
    for d in (0, 5, 16):
        g = gate_table(c, d)
        for a in range(-3000, 3000, 11):
            exact = c.gate_unit / (1 + math.exp(-a / c.s_qkv)) * d / c.decay_unit
            val = g.values[min(max(a, g.lo), g.hi) - g.lo]
            assert val == min(c.gate_max, math.floor(exact + 0.5))
    # every table an unchosen expert can be pushed below is 0 there (docs/chat.md)
    assert t["qk"].values[0] == t["gelu"].values[0] == t["div"].values[0] == 0
    assert all(gate_table(c, d).values[0] == 0 for d in range(c.decay_unit + 1))


def test_log_domain_division_is_near_the_quotient():
    """o = DIV(LOGP(num) - LOG(den)) - DIV(LOGN(num) - LOG(den)) against P kv_div num / den:
    within the rounding of two logs (beta / 2 each) and of the result; 0 for num = 0."""
    c = ChatConfig()
    t = tables(c)

    def at(name, a):
        tb = t[name]
        return tb.values[min(max(a, tb.lo), tb.hi) - tb.lo]

    for den in range(1, c.den_max + 1, 37):
        for num in range(-c.num_max, c.num_max + 1, 7):
            ld = at("log", den)
            got = at("div", at("logp", num) - ld) - at("div", at("logn", num) - ld)
            exact = c.out_scale * c.kv_div * num / den
            clamped = max(-c.out_max, min(c.out_max, exact))
            assert abs(got - clamped) <= 0.5 + abs(clamped) * (math.exp(c.beta) - 1) + 1e-9
            if num == 0:
                assert got == 0


# ----------------------------------------------------------------------- the forwards
def test_qat_values_are_the_integer_forward(tiny):
    x = torch.randint(0, TINY.vocab, (3, 12), generator=torch.Generator().manual_seed(1))
    i = tiny(x, mode="int")
    q = tiny(x, mode="qat")
    assert i.dtype == torch.int64
    assert torch.equal(q.detach(), i.float())


def test_the_closed_form_float_forward_is_the_recurrent_one(tiny):
    """The parallel float forward (every step at once) computes the same real numbers as
    the step-by-step float forward; float sums in another order differ in the last bits,
    hence the float tolerance (the integer forwards are compared with ==)."""
    x = torch.randint(0, TINY.vocab, (3, 30), generator=torch.Generator().manual_seed(2))
    a = tiny(x, mode="float")
    b = tiny(x, mode="float", recurrent=True)
    assert torch.allclose(a, b, rtol=1e-4, atol=1e-3)
    with pytest.raises(VoodooError, match="parallel"):
        tiny(x, mode="int", recurrent=False)


def test_the_float_forward_routes_as_the_integers_do(tiny):
    """Every step's expert in the float forward (at once and step by step) is the one the
    integer router picks (the qat forward's route is the integer one): the float model
    trains each expert on the steps the map gives it."""
    x = torch.randint(0, TINY.vocab, (4, 30), generator=torch.Generator().manual_seed(5))
    routes = {}
    for mode, rec in (("qat", None), ("float", False), ("float", True)):
        aux: list = []
        with torch.no_grad():
            tiny(x, mode=mode, aux=aux, recurrent=rec)
        hard = torch.stack([a[1] for a in aux]).reshape(-1, TINY.experts)
        if rec is False:  # one record of every step at once: (batch, steps, experts)
            hard = hard.reshape(4, 30, -1).transpose(0, 1).reshape(-1, TINY.experts)
        routes[(mode, rec)] = hard
    assert routes[("qat", None)].sum(-1).eq(1).all()
    assert len(set(routes[("qat", None)].argmax(-1).tolist())) > 1   # both experts used
    assert torch.equal(routes[("float", True)], routes[("qat", None)])
    assert torch.equal(routes[("float", False)], routes[("qat", None)])


def test_rounding_noise_is_seeded_float_only_and_a_rounding_wide(tiny):
    x = torch.randint(0, TINY.vocab, (2, 12), generator=torch.Generator().manual_seed(6))
    with torch.no_grad():
        clean = tiny(x, mode="float")
        torch.manual_seed(4)
        a = tiny(x, mode="float", noise=1.0)
        torch.manual_seed(4)
        b = tiny(x, mode="float", noise=1.0)
        assert torch.equal(a, b) and not torch.equal(a, clean)
        assert torch.equal(tiny(x, mode="int", noise=1.0), tiny(x, mode="int"))
        ops = _Ops(TINY, "float")
        ops.noise = 1.0
        v = ops.quant(_V(torch.zeros(1000), None), 1, -5, 5).f
        assert v.abs().max() <= 0.5 and v.std() > 0.25   # uniform on -1/2..1/2


def test_gradients_reach_every_parameter_in_float_and_qat(tiny):
    x = torch.randint(0, TINY.vocab, (4, 10), generator=torch.Generator().manual_seed(3))
    for mode in ("float", "qat"):
        tiny.zero_grad()
        tiny(x, mode=mode).sum().backward()
        dead = [n for n, p in tiny.named_parameters() if p.grad is None]
        assert not dead, (mode, dead)


def test_bad_modes_and_configs_are_refused(tiny):
    with pytest.raises(VoodooError, match="mode"):
        tiny(torch.zeros(1, 2, dtype=torch.long), mode="half")
    with pytest.raises(VoodooError, match="gate_max"):
        ChatConfig(gate_max=8).validate()
    with pytest.raises(VoodooError, match="multiple of heads"):
        ChatConfig(d_model=8, heads=3).validate()


# ------------------------------------------------------------------------- the choice
def test_choice_takes_the_first_best_when_generating():
    c = ChatConfig()
    logits = torch.zeros(1, c.vocab, dtype=torch.long)
    logits[0, 7] = logits[0, 3] = 100
    zeros = np.zeros((1, c.vocab), dtype=np.int64)
    _, o = choose(c, 0, logits, zeros, zeros, 1)
    assert o[0].tolist() == [int(k == 3) for k in range(c.vocab)]  # ties: the first
    _, o = choose(c, 0, logits, zeros, zeros, 0)
    assert not o.any()  # a prompt step writes nothing
    counts = zeros.copy()
    counts[0, 3] = 1  # 3 was written before: the penalty moves the choice to 7
    _, o = choose(c, 0, logits, zeros, counts, 1)
    assert o[0, 7] == 1 and o.sum() == 1
    nz = zeros.copy()
    nz[0, 11] = c.choice_max  # noise is data: enough of it picks any character
    _, o = choose(c, 0, logits, nz, zeros, 1)
    assert o[0, 11] == 1 and o.sum() == 1


def test_noise_is_seeded_gumbel_in_range():
    c = ChatConfig()
    assert not noise(c, None, 5).any()
    a, b = noise(c, 7, 6), noise(c, 7, 6)
    assert np.array_equal(a, b) and not np.array_equal(a, noise(c, 8, 6))
    lo, hi = noise_range(c)
    assert a.min() >= lo and a.max() <= hi and lo <= 0 <= hi
    table = gumbel_table(c).values
    assert list(table) == sorted(table)  # increasing in u: a Gumbel quantile function
    mean = sum(table) / len(table) * c.s_choice / c.logit_unit / c.temperature
    assert abs(mean - 0.5772) < 0.1  # the Gumbel mean (Euler's constant), in nats


def test_generate_is_deterministic_and_ends_itself(tiny):
    a = generate(tiny, "what is a doll?")
    b = generate(tiny, "what is a doll?")
    assert a == b and a.steps <= TINY.context
    assert a.ended or a.steps == TINY.context
    s1, s2 = generate(tiny, "hi", seed=1), generate(tiny, "hi", seed=1)
    assert s1 == s2
    texts = {generate(tiny, "hi", seed=k).text for k in range(6)}
    assert len(texts) > 1  # the seed matters
    f = generate(tiny, "hi", mode="float")
    assert isinstance(f.text, str)


def test_generate_refuses_prompts_that_leave_no_room(tiny):
    with pytest.raises(VoodooError, match="at most 46"):
        generate(tiny, "x" * 47)
    with pytest.raises(ValueError, match="outside the vocabulary"):
        generate(tiny, "WHAT?")


def test_the_residual_stream_has_zero_mean_exactly(tiny):
    """Every write into the residual stream sums to 0 over the channels, in integers too,
    so a LayerNorm's mean is 0 at every step (docs/chat.md, "LayerNorm")."""
    from models.chat_lm import _Ops

    tok, pos = tiny.embeddings()
    assert not tok.i.sum(1).any() and not pos.i.sum(1).any()
    for layer in range(TINY.layers):
        for w in tiny.writes(layer).values():
            assert not w.i.sum(1).any()
    ops = _Ops(TINY, "int")
    st = tiny.initial_state(ops, 2)
    h = tiny._embed(ops, torch.tensor([3, 9]), 0)
    assert not h.i.sum(-1).any()
