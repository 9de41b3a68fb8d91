"""Recurrence in the language: prev(x), init, feedback, done, steps open (docs/dnet.md,
"State across steps"): semantics against an independent step-by-step interpreter, ranges
that hold at every step, and one negative test per refusal. Engine runs are in
tests/test_recurrence_engine.py."""
import json
import os

import pytest

from dsl.diagnostics import CompileError, VoodooError
from dsl.ir import Identity, Input, Lut, Prev, Product, Relu, Spike, Step
from dsl.parser import parse, parse_file
from dsl.random_net import recurrent, recurrent_text
from dsl.reference import evaluate, stop_step
from dsl.sequence import plan_steps, random_sequence, reference_run

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def interpret(net, rows):
    """Every node's value at every step, one node at a time with Python ints: written from
    docs/dnet.md without dsl/reference.py. None in a row: that input is fed back."""
    prev_vals, mem, out = None, {}, []
    for t, row in enumerate(rows):
        val = {}
        for k, nid in enumerate(net.inputs):
            v = row[k]
            val[nid] = prev_vals[net.feedback[nid]] if v is None else v
        for n in net.nodes:
            g = n.gate
            if isinstance(g, Input):
                continue
            if isinstance(g, Prev):
                val[n.id] = g.init if t == 0 else prev_vals[g.src]
                continue
            if isinstance(g, Product):
                val[n.id] = val[g.a] * val[g.b]
                continue
            acc = n.bias + sum(w * val[s] for s, w in n.weights.items())
            if isinstance(g, Identity):
                y = acc
            elif isinstance(g, Relu):
                y = min(max(acc // g.s, 0), g.L)
            elif isinstance(g, Step):
                y = 1 if acc >= g.t else 0
            elif isinstance(g, Lut):
                y = g.table[min(max(acc, g.lo), g.hi) - g.lo]
            elif isinstance(g, Spike):
                u = mem.get(n.id, g.init) + acc
                y = 1 if u >= g.threshold else 0
                if y:
                    u = u - g.threshold if g.reset is None else g.reset
                mem[n.id] = max(u - g.leak, 0)
            val[n.id] = y
        out.append(val)
        prev_vals = val
    return out


def same_as_interpreter(net, rows):
    res = evaluate(net, [rows])
    ref = interpret(net, rows)
    for t, vals in enumerate(ref):
        for nid, v in vals.items():
            assert int(res.value[0, t, nid]) == v, (net.nodes[nid].name, t)
    return res


# -- the worked examples of docs/dnet.md -------------------------------------------------
def test_counter_counts_and_says_done_at_the_right_step():
    net = parse_file(os.path.join(ROOT, "circuits", "counter.dnet"))
    assert net.open and net.done is not None
    seq = plan_steps(net, [], 100)
    res, steps = reference_run(net, seq)
    assert steps == 10
    c = net.by_name("c").id
    assert [int(v) for v in res.value[0, :steps, c]] == list(range(1, 11))
    same_as_interpreter(net, seq[:20])


def test_running_maximum_is_the_largest_input_so_far():
    net = parse_file(os.path.join(ROOT, "circuits", "running_max.dnet"))
    xs = [3, 1, 7, 2, 9, 0, 4]
    res = same_as_interpreter(net, [[x] for x in xs])
    got = [int(v) for v in res.outputs[0, :, 0]]
    assert got == [max(xs[:t + 1]) for t in range(len(xs))]
    assert tuple(net.value_range[net.by_name("m").id]) == (0, 9)


def test_elman_cell_by_hand():
    net = parse_file(os.path.join(ROOT, "circuits", "elman.dnet"))
    rows = [[3, 0], [1, 2], [0, 3], [2, 2]]
    res = same_as_interpreter(net, rows)
    # Step 0 by hand: prev(h) = init [0, 3, 0]; h0 = relu(3*3 - 0 + 0 + 3 + 1) / 4 = 13 // 4.
    assert int(res.value[0, 0, net.by_name("h[0]").id]) == 3
    W, U, b = [[3, -1], [1, 2], [-2, 3]], [[1, 1, 0], [0, 2, -1], [1, -1, 2]], [1, -2, 2]
    h = [0, 3, 0]
    for t, x in enumerate(rows):
        h = [min(max((sum(w * v for w, v in zip(W[i], x)) + sum(u * v for u, v in zip(U[i], h))
                      + b[i]) // 4, 0), 7) for i in range(3)]
        assert [int(res.value[0, t, net.by_name(f"h[{i}]").id]) for i in range(3)] == h


def test_feedback_input_takes_its_node_of_the_step_before():
    net = parse("input n : 0..9\nfeedback n = c\nneuron c : relu(s=1, max=9) = n + 2\n"
                "neuron d : step(t=9) = c\ndone d\noutput c\n")
    assert net.outputs == [net.by_name("c").id, net.by_name("d").id]  # done is read too
    seq = plan_steps(net, [[1]], 10)
    res, steps = reference_run(net, seq)
    assert steps == 4 and [int(v) for v in res.value[0, :steps, net.by_name("c").id]] == [3, 5, 7, 9]
    same_as_interpreter(net, seq)


def test_prev_of_prev_and_of_a_slice_and_in_products_and_operations():
    net = parse("""steps 6
input x[3] : 0..3
init x = [1, 2, 3]
neuron a : identity = prev(prev(x[1])) + 2*prev(x[2])
neuron p[2] : product(prev(x[0:2]), x[1:3])
neuron m : max(x[0], prev(m))
neuron s : identity = dot(prev(x), x)
output a, p, m, s
""")
    rows = [[1, 2, 3], [0, 1, 3], [3, 3, 0], [2, 0, 1], [1, 1, 1], [0, 0, 0]]
    same_as_interpreter(net, rows)


@pytest.mark.parametrize("seed", range(24))
def test_random_recurrent_nets_equal_the_interpreter_and_stay_in_range(seed):
    net = recurrent(seed, feedback=seed % 2 == 0, done=seed % 3 == 0)
    seq = random_sequence(net, 60, seed)
    res = same_as_interpreter(net, seq)
    for nid, r in enumerate(net.value_range):
        col = res.value[0, :, nid]
        assert r.lo <= int(col.min()) and int(col.max()) <= r.hi, net.nodes[nid].name
    done = [] if net.done is None else [int(v) for v in res.value[0, :, net.done]]
    assert stop_step(net, res) == (done.index(1) + 1 if 1 in done else 60)


def test_the_json_form_round_trips_a_recurrent_netlist():
    from dsl.jsonio import dumps, loads

    for seed in range(6):
        net = recurrent(seed, feedback=True, done=seed % 2 == 0)
        again = loads(dumps(net))
        assert dumps(again) == dumps(net)
        seq = random_sequence(net, 12, seed)
        assert (evaluate(net, [seq]).value == evaluate(again, [seq]).value).all()
    doc = json.loads(dumps(recurrent(1, feedback=True, done=True)))
    assert doc["steps"] == "open" and doc["feedback"] == {"f": "h0"} and doc["done"] == "stop"
    assert any(v["gate"]["kind"] == "prev" for v in doc["vectors"])


# -- ranges at every step ------------------------------------------------------------------
def test_fixed_steps_keep_ranges_as_tight_as_unrolling():
    text = "neuron c : relu(s=1, max=50) = prev(c) + 1\noutput c\n"
    fixed = parse("steps 5\n" + text)
    assert tuple(fixed.value_range[fixed.by_name("c").id]) == (1, 5)
    opened = parse("steps open\n" + text)
    assert tuple(opened.value_range[opened.by_name("c").id]) == (1, 50)


def test_a_contraction_settles_without_a_clamp():
    # s = floor((prev(s) + x) / 2) with x in 0..8, from 0: 4, 6, 7, then (7 + 8) // 2 = 7.
    net = parse("input x : 0..8\nneuron s : relu(s=2) = prev(s) + x\noutput s\n")
    assert tuple(net.value_range[net.by_name("s").id]) == (0, 7)


def test_growth_is_refused_naming_the_node_and_the_fix():
    with pytest.raises(CompileError) as e:
        parse("input x : 0..3\nneuron acc : identity = prev(acc) + x\noutput acc\n", "g.dnet")
    text = str(e.value)
    assert "g.dnet:2:8" in text and "'acc'" in text and "grows at every step" in text
    assert "clamp it" in text and "steps T" in text


def test_growth_within_a_clamp_is_widened_and_proven():
    # relu without a max: the range grows by 1 a step until the max 500 stops it; the
    # ascent gives up before that and the widening jumps to the clamp.
    net = parse("input x : 0..1\nneuron c : relu(s=1, max=500) = prev(c) + x\noutput c\n")
    assert tuple(net.value_range[net.by_name("c").id]) == (0, 500)


# -- refusals ---------------------------------------------------------------------------------
BAD = [
    ("input x : 0..1\nneuron a : identity = b + x\nneuron b : identity = a\noutput a\n",
     "cycle: a -> b -> a", "prev(...)"),
    ("input x : 0..1\nneuron a : identity = x\nlines x -> prev(a) all 1\noutput a\n",
     "lines cannot end at 'a.prev'", "add lines to x itself"),
    ("input x : 0..1\nneuron a : identity = x\nfeedback a = x\noutput a\n",
     "feedback goes into inputs; 'a' is not one", "feedback INPUT = NODE"),
    ("input x : 0..1\nneuron a : relu(s=1, max=5) = x + 3\nfeedback x = a\noutput a\n",
     "'a' ranges over 3..4, but input 'x' it feeds back into holds 0..1", "declare the input"),
    ("input x[2] : 0..1\nneuron a : identity = x[0]\nfeedback x = a\noutput a\n",
     "feedback of 1 values into 2 inputs", "vector of the input's size"),
    ("input x : 0..3\nneuron a : identity = x\ndone a\noutput a\n",
     "done 'a' ranges over 0..3", "proven 0/1"),
    ("input x : 0..3\nneuron a : identity = x\ninit a = 2\noutput a\n",
     "nothing reads prev(a)", "first step"),
    ("steps 3\nsteps open\ninput x : 0..1\noutput x\n", "steps is already given", "once"),
    ("input x : 0..1\nneuron a : step(t=1) = x\ndone a\ndone a\noutput a\n",
     "done is already given", "one 0/1 node"),
    ("input x : 0..1\nneuron a : identity = prev(q)\noutput a\n", "unknown name 'q'", ""),
    ("input x[2] : 0..1\nneuron a : identity = prev(x[2])\noutput a\n",
     "index 2 is out of range for 'x.prev'", "use 0..1"),
    ("input x[2] : 0..1\nneuron a : identity = x[0]\ninit x = [1, 2, 3]\n"
     "neuron b : identity = prev(x[1])\noutput a, b\n", "init has 3 values", "one value per"),
]


@pytest.mark.parametrize("text,message,hint", BAD)
def test_each_refusal_is_positioned_with_its_fix(text, message, hint):
    with pytest.raises(CompileError) as e:
        parse(text, "bad.dnet")
    out = str(e.value)
    assert message in out and hint in out and "bad.dnet:" in out


def test_planning_a_run_refuses_what_cannot_run():
    net = parse_file(os.path.join(ROOT, "circuits", "running_max.dnet"))
    with pytest.raises(VoodooError, match="x is not fed back"):
        plan_steps(net, [[1]], 5)
    with pytest.raises(VoodooError, match="first step's inputs"):
        plan_steps(net, [], 5)
    with pytest.raises(VoodooError, match="at most 10000 steps"):
        plan_steps(net, [[1]], 10_001)
    with pytest.raises(VoodooError, match="2 --input rows for 1 steps"):
        plan_steps(net, [[1], [2]], 1)
    fixed = parse("steps 3\ninput x : 0..1\nneuron y : identity = prev(x)\noutput y\n")
    with pytest.raises(VoodooError, match="runs 3 steps but --input gives 2"):
        plan_steps(fixed, [[1], [0]])
    with pytest.raises(VoodooError, match="x = None is not an integer$"):
        evaluate(net, [[[1], [None]]])
    fb = parse("input n : 0..9\nfeedback n = c\nneuron c : relu(s=1, max=9) = n + 1\noutput c\n")
    with pytest.raises(VoodooError, match="fed back, after the first step"):
        evaluate(fb, [[[None]]])


# -- the graph API --------------------------------------------------------------------------
def test_graph_states_saturate_feed_back_and_end_a_run():
    from dsl.graph import Graph, GraphError

    g = Graph("acc", steps="open")
    x = g.input("x", 0, 3)
    s = g.state("s", 0, 10, init=4)
    total = g.name(s + x - 1, "s")          # beyond 0..10 it saturates
    g.done(g.step(total, 10))
    g.output(total)
    net = g.build()
    rows = [[3]] * 6
    res = same_as_interpreter(net, rows)
    assert [int(v) for v in res.value[0, :, net.by_name("s").id]] == [6, 8, 10, 10, 10, 10]
    assert stop_step(net, res) == 3
    g = Graph("fb")
    n = g.input("n", 0, 7)
    c = g.name(g.clamp(n + 3, 0, 7), "c")
    g.feedback(n, c)
    g.output(c)
    net = g.build()
    res, steps = reference_run(net, plan_steps(net, [[0]], 4))
    assert [int(v) for v in res.value[0, :, net.by_name("c").id]] == [3, 6, 7, 7]
    g = Graph("never")
    g.state("q", 0, 3)
    g.output(g.input("x", 0, 1), "y")
    with pytest.raises(GraphError, match="state 'q' is never given its value"):
        g.build()


def test_graph_and_dnet_delay_are_prev_chains_with_the_value_range():
    net = parse("steps 6\ninput y : 0..3\nneuron d : delay(y, 3)\noutput d\n")
    assert tuple(net.value_range[net.by_name("d").id]) == (0, 3)
    assert sum(isinstance(n.gate, Prev) for n in net.nodes) == 3
    rows = [[1], [2], [3], [0], [2], [1]]
    res = same_as_interpreter(net, rows)
    assert [int(v) for v in res.outputs[0, :, 0]] == [0, 0, 0, 1, 2, 3]


def test_lowering_simulates_what_the_reference_computes_step_by_step():
    from dsl.lower import lower_products
    from mapgen.circuit import lower, simulate

    for seed in range(8):
        net = recurrent(seed, feedback=seed % 2 == 1)
        c = lower(net)
        low = lower_products(net)
        seq = random_sequence(net, 20, seed)
        res = evaluate(low, [seq])
        state = None
        for t, x in enumerate(seq):
            state = simulate(c, x, state)
            for n in low.nodes:
                assert state[c.value_light[n.id]] == int(res.value[0, t, n.id]), (seed, t, n.name)


def test_eval_prints_every_step_and_where_the_run_ends(capsys):
    import build

    assert build.main(["eval", os.path.join(ROOT, "circuits", "counter.dnet"), "--steps",
                       "50"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert sum(x.startswith("step ") for x in lines) == 10 and lines[-1] == "done: d = 1 at step 9"


def test_onnx_and_torch_exports_unroll_recurrence_and_feedback():
    import numpy as np
    import onnxruntime as ort
    import torch

    from interop.export_onnx import onnx_bytes
    from interop.export_torch import torch_source

    for seed in range(6):
        net = recurrent(seed, feedback=seed % 2 == 0, done=seed % 3 == 0)
        seq = random_sequence(net, 15, seed)
        ref = evaluate(net, [seq]).outputs[0].astype(np.int64)
        fed = np.array([[int(any(v is None for v in r)) for r in seq]], dtype=np.int64)
        x = np.array([[[0 if v is None else v for v in r] for r in seq]], dtype=np.int64)
        feeds = {"x": x, **({"fed": fed} if net.feedback else {})}
        got = ort.InferenceSession(onnx_bytes(net, 15)).run(None, feeds)[0]
        assert (got[0] == ref).all(), seed
        ns = {}
        exec(torch_source(net, 15), ns)
        out = ns["Net"]()(torch.tensor(x), torch.tensor(fed) if net.feedback else None)
        assert (out.numpy()[0] == ref).all(), seed
    with pytest.raises(VoodooError, match="give the steps to unroll"):
        onnx_bytes(recurrent(0))
