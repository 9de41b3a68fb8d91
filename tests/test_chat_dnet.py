"""The chat model's netlist (models/chat_dnet.py, docs/chat.md): the one-step netlist's
reference, run step after step with the state carried, equals the integer forward in
every state element, logit and choice; the recurrent netlist is the same network with
prev(), feedback and done; the census of its map; the checked-in trained model."""
import dataclasses
import re

import pytest
import torch

from demos.chat_census import census
from dsl.diagnostics import VoodooError
from models.chat_dnet import netlist, run_steps, to_dnet
from models.chat_lm import ChatConfig, ChatLM, generate, tables

TINY = ChatConfig(d_model=4, heads=2, layers=2, experts=3, mlp=6, router_hidden=5)


@pytest.fixture(scope="module")
def tiny():
    torch.manual_seed(0)
    return ChatLM(TINY, seed=5)


@pytest.fixture(scope="module")
def tiny_net(tiny):
    return netlist(tiny, "tiny", recurrent=False)


def _compare(steps, trace, cfg) -> list[str]:
    """Every recurrent value and output of every step: netlist vs integer forward."""
    bad = []
    dh = cfg.head_dim

    def eq(k, name, a, b):
        if a != b:
            bad.append(f"step {k}: {name} netlist {a} forward {b}")
    for k, (a, b) in enumerate(zip(steps, trace)):
        for name in ("t", "gen", "y", "done"):
            eq(k, name, a[name], b[name])
        for j, v in enumerate(b["logits"]):
            eq(k, f"logits[{j}]", a[f"logits[{j}]"], v)
        for j in range(cfg.vocab):
            eq(k, f"o[{j}]", a[f"o[{j}]"], b["o"][j])
            eq(k, f"rc[{j}]", a[f"rc[{j}]"], b["counts"][j])
        for j, v in enumerate(b["A"]):
            eq(k, f"A[{j}]", a[f"A[{j}]"], v)
        for layer in range(cfg.layers):
            for h in range(cfg.heads):
                for j in range(dh * dh):
                    eq(k, f"S{layer}_{h}[{j}]", a[f"S{layer}_{h}[{j}]"],
                       b["S"][layer][h * dh * dh + j])
                for j in range(dh):
                    eq(k, f"z{layer}_{h}[{j}]", a[f"z{layer}_{h}[{j}]"], b["z"][layer][h * dh + j])
    if len(steps) != len(trace):
        bad.append(f"the netlist ran {len(steps)} steps, the forward {len(trace)}")
    return bad


@pytest.mark.parametrize("prompt,seed", [("what is a doll?", None), ("hi", 4)])
def test_netlist_equals_the_integer_forward_at_every_step(tiny, tiny_net, prompt, seed):
    steps = run_steps(tiny_net, tiny, prompt, seed)
    reply = generate(tiny, prompt, seed, trace=True)
    assert _compare(steps, reply.trace, TINY) == []
    assert len(steps) >= len(prompt) + 2  # the prompt, its newline, a reply


def test_logs_that_saturate_stay_exact_and_shorten_the_lanes():
    """With `log_max` the readout's log tables end at that key (the micro:bit size's lanes
    then fit a map): the netlist still equals the integer forward at every step, and the
    log lookups' staircases climb no higher than log_max."""
    from mapgen.circuit import staircase

    cfg = dataclasses.replace(TINY, log_max=192)
    assert cfg.num_max > cfg.log_max and cfg.den_max > cfg.log_max
    t = tables(cfg)
    assert (t["log"].hi, t["logp"].hi, t["logn"].lo) == (192, 192, -192)
    torch.manual_seed(0)
    model = ChatLM(cfg, seed=5)
    net = netlist(model, "sat", recurrent=False)
    steps = run_steps(net, model, "what is a doll?", None)
    assert _compare(steps, generate(model, "what is a doll?", trace=True).trace, cfg) == []
    tops = [staircase(n.gate, *net.acc_range[n.id])[1][-1][0] for n in net.nodes
            if n.name.startswith(("lp", "ld"))]
    assert tops and max(tops) <= 192
    with pytest.raises(VoodooError, match="log_max"):
        dataclasses.replace(TINY, log_max=100).validate()


def test_the_recurrent_netlist_is_the_one_step_netlist_with_prev(tiny):
    """Both forms are one network: the one-step form is the recurrent one with each
    prev(X) an input prev_X, every recurrent node an output, and no run statements."""
    rec = to_dnet(tiny, "tiny")
    one = to_dnet(tiny, "tiny", recurrent=False)
    assert "steps open" in rec and "feedback c = y" in rec and "done done" in rec
    prevs = set(re.findall(r"prev\((\w+)\)", rec))
    assert prevs == {"t", "gen", "A", "rc", "o"} | {f"{n}{l}_{h}" for n in "Sz"
                                                   for l in range(2) for h in range(2)}
    body = [ln for ln in rec.splitlines()
            if ln not in ("steps open", "feedback c = y", "done done", "output y, done, o")]
    body = [re.sub(r"prev\((\w+)\)", r"prev_\1", ln) for ln in body]
    extra = [ln for ln in one.splitlines() if ln.startswith(("input prev_", "output "))]
    assert sorted(body + extra) == sorted(one.splitlines())


def test_census_counts_every_doll_of_the_map(tiny_net):
    c = census(tiny_net)
    parts = {k: v for k, v in c.items() if k != "total"}
    assert "other" not in parts
    for key in ("dolls", "doors", "lines"):
        assert sum(v[key] for v in parts.values()) == c["total"][key]
    assert c["total"]["levels"] > 20
    # a product is two lanes: the readout has 2 per product element
    n_products = 2 * 2 * (TINY.head_dim * TINY.head_dim + TINY.head_dim)
    assert parts["state readout products (q S, q z)"]["dolls"] <= 2 * n_products


# One head of 32 and 3 experts: the readout's proof with q and k bounded by experts * 8
# passes a light's 16 bits (as the micro:bit size does), so q and k are clamped.
WIDE = ChatConfig(d_model=32, heads=1, layers=1, experts=3, mlp=4, router_hidden=4)


def test_a_readout_too_wide_to_prove_gets_q_and_k_clamped_and_stays_exact(monkeypatch):
    import models.chat_dnet as cd

    torch.manual_seed(0)
    model = ChatLM(WIDE, seed=3)
    model.keep_in_lights()
    assert cd.clamped_qk(WIDE) and not cd.clamped_qk(TINY)
    net = netlist(model, "wide", recurrent=False)
    steps = run_steps(net, model, "hi", 2)
    assert _compare(steps, generate(model, "hi", 2, trace=True).trace, WIDE) == []
    monkeypatch.setattr(cd, "clamped_qk", lambda cfg: False)
    with pytest.raises(VoodooError, match=r"accumulator of 'ld0_0'.*beyond the light"):
        netlist(model, "wide", recurrent=False)
