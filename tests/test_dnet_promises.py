"""The language keeps docs/dnet.md's promises (issue 37, items 11-13 and 16-19): what it
accepts it honours, what it refuses it refuses with a positioned message, and what the doc
calls valid builds. Each test was written against a failure of the code before its fix."""
import json
import time

import pytest

from dsl.diagnostics import CompileError
from dsl.ir import Prev
from dsl.jsonio import dumps, loads
from dsl.parser import parse
from dsl.reference import evaluate
from dsl.sequence import plan_steps, reference_run


def values(net, rows, name):
    """name's value at every step of one run of `rows`."""
    res = evaluate(net, [rows])
    return [int(v) for v in res.value[0, :, net.by_name(name).id]]


def refused(text, *needles, file="bad.dnet"):
    with pytest.raises(CompileError) as e:
        parse(text, file)
    out = str(e.value)
    for n in needles:
        assert n in out, out
    return out


def nested_prev(k: int, inner: str) -> str:
    return "prev(" * k + inner + ")" * k


# -- 11: an operation's result takes no lines and no bias, a maxpool's neither ----------------
POOL = "input x[4] : 0..3\ninput y : 0..3\nneuron m[1] : maxpool(x, in=[1, 2, 2], kernel=2)\n"


def test_a_bias_on_a_maxpool_neuron_is_refused_not_ignored():
    refused(POOL + "bias m = 1\noutput m\n", "bad.dnet:4:", "lines cannot end at 'm[0]', an "
            "operation's result")


def test_lines_into_a_maxpool_neuron_are_refused_not_added():
    refused(POOL + "lines y -> m all 1\noutput m\n", "bad.dnet:4:",
            "lines cannot end at 'm[0]', an operation's result")


# -- 12: long prev chains are proven, and names in messages stay short ------------------------
def test_a_hundred_step_delay_in_an_open_netlist_is_proven():
    net = parse("steps open\ninput x : 1..3\nneuron y : delay(x, 100)\noutput y\n")
    assert tuple(net.value_range[net.by_name("y").id]) == (1, 3)
    assert sum(isinstance(n.gate, Prev) for n in net.nodes) == 100
    rows = [[1 + t % 3] for t in range(130)]
    assert values(net, rows, "y") == [1] * 100 + [r[0] for r in rows[:30]]


def test_a_written_prev_chain_longer_than_the_ascent_is_proven():
    net = parse(f"steps open\ninput x : 0..3\nneuron y : identity = {nested_prev(80, 'x')} + x"
                "\noutput y\n")
    assert tuple(net.value_range[net.by_name("y").id]) == (0, 6)
    rows = [[t % 4] for t in range(90)]
    assert values(net, rows, "y") == [r[0] + (rows[t - 80][0] if t >= 80 else 0)
                                      for t, r in enumerate(rows)]


def test_a_9999_step_delay_builds_quickly_with_short_names():
    t0 = time.process_time()
    net = parse("steps open\ninput x : 0..3\nneuron y : delay(x, 9999)\noutput y\n")
    assert time.process_time() - t0 < 20
    assert tuple(net.value_range[net.by_name("y").id]) == (0, 3)
    assert max(len(n.name) for n in net.nodes) < 64


@pytest.mark.parametrize("steps,top", [(65, 195), (200, 600)])
def test_fixed_steps_prove_a_growing_sum_for_exactly_those_steps(steps, top):
    net = parse(f"steps {steps}\ninput x : 0..3\nneuron a : identity = prev(a) + x\noutput a\n")
    assert tuple(net.value_range[net.by_name("a").id]) == (0, top)


def test_a_growing_loop_through_a_long_chain_is_refused_with_short_names():
    out = refused(f"steps open\ninput x : 0..3\nneuron a : identity = {nested_prev(300, 'a')}"
                  " + x\noutput a\n", "bad.dnet:3:8: error: the range of 'a' grows at every "
                  "step", "clamp it")
    assert len(out) < 1000, out[:2000]


def test_a_delay_on_its_own_loop_is_refused_with_the_way_to_write_it():
    out = refused("steps open\ninput x : 0..3\nneuron d : delay(a, 300)\n"
                  "neuron a : relu(s=1, max=9) = d + x\noutput a\n", "cycle: d -> a -> d",
                  "write the loop with prev(...)")
    assert len(out) < 1000


# -- 13: init of what nothing reads; prev nested deeply ---------------------------------------
def test_init_of_an_element_nothing_reads_through_prev_is_an_error():
    refused("steps open\ninput x : 0..3\nneuron h[3] : relu(s=1, max=7)\nlines x -> h all 1\n"
            "neuron y : identity = prev(h[0]) + h[1]\ninit h[2] = 4\noutput y\n",
            "bad.dnet:6:", "init of 'h[2]', but nothing reads prev(h[2])")


def test_init_of_the_elements_that_are_read_is_accepted():
    net = parse("steps open\ninput x : 0..3\nneuron h[3] : relu(s=1, max=7)\n"
                "lines x -> h all 1\nneuron y : identity = prev(h[0]) + prev(h[2])\n"
                "init h[0] = 4\ninit h[2] = 5\noutput y\n")
    assert values(net, [[1], [2]], "y") == [9, 2]


@pytest.mark.parametrize("where", ["sum", "lines", "operation"])
def test_prev_nested_two_thousand_deep_builds(where):
    deep = nested_prev(2000, "x")
    body = {"sum": f"neuron y : identity = {deep} + x\n",
            "lines": f"neuron y : identity = x\nlines {deep} -> y all 1\n",
            "operation": f"neuron y : max(x, {deep})\n"}[where]
    net = parse("steps open\ninput x : 1..3\n" + body + "output y\n")
    rows = [[2]] * 3
    assert values(net, rows, "y") == [2, 2, 2]
    assert max(len(n.name) for n in net.nodes) < 64


# -- 16: a vector relu without max keeps each element's clamp in JSON -------------------------
def test_the_json_form_keeps_each_elements_relu_max():
    net = parse("network r\ninput x[2] : 0..3\nneuron h[2] : relu(s=1)\nlines x -> h diag [1, 5]\n"
                "output h\n")
    again = loads(dumps(net))
    assert [n.gate.L for n in again.nodes if n.group == "h"] == [3, 15]
    x = [[3, 3]]
    assert evaluate(again, x).last_outputs().tolist() == [[3, 15]]
    assert dumps(again) == dumps(net)


# -- 17: prev(x) beside delay(x, K) --------------------------------------------------------
def test_prev_beside_a_delay_of_the_same_value_reads_its_own_init():
    net = parse("steps 5\ninput x : 2..3\nneuron y : delay(x, 2)\nneuron z : identity = "
                "prev(x)\noutput y, z\n")
    rows = [[3]] * 5
    assert values(net, rows, "z") == [0, 3, 3, 3, 3]
    assert values(net, rows, "y") == [2, 2, 3, 3, 3]


def test_init_beside_a_delay_of_the_same_value_is_accepted():
    net = parse("network d\nsteps 5\ninput x : 2..3\nneuron y : delay(x, 2)\n"
                "neuron z : identity = prev(x)\ninit x = 1\noutput y, z\n")
    rows = [[3]] * 5
    assert values(net, rows, "z") == [1, 3, 3, 3, 3]
    assert values(net, rows, "y") == [2, 2, 3, 3, 3]
    again = loads(dumps(net))
    assert values(again, rows, "z") == [1, 3, 3, 3, 3]


# -- 18: operations on loops whose ranges grow for a long time ------------------------------
def test_a_counter_to_forty_ended_by_equals_builds_and_stops():
    net = parse("input x : 0..1\nneuron c : relu(s=1, max=40) = prev(c) + 1\n"
                "neuron e : equals(c, [16])\ndone e\noutput c\n")
    res, steps = reference_run(net, plan_steps(net, [[0]] * 100))
    assert steps == 16 and int(res.value[0, 15, net.by_name("c").id]) == 16


@pytest.mark.parametrize("op", ["max(prev(c), x)", "min(prev(c), 20)", "lt(prev(c), x)",
                                "switch(x, prev(c), 7)", "eq(prev(c), 33)"])
def test_operations_on_a_slowly_growing_loop_node_build(op):
    net = parse("steps open\ninput x : 0..1\nneuron c : relu(s=1, max=50) = prev(c) + 1\n"
                f"neuron o : {op}\noutput o\n")
    rows = [[t % 2] for t in range(60)]
    c = [min(t + 1, 50) for t in range(60)]
    pc = [0] + c[:-1]
    want = {"max(prev(c), x)": [max(p, r[0]) for p, r in zip(pc, rows)],
            "min(prev(c), 20)": [min(p, 20) for p in pc],
            "lt(prev(c), x)": [int(p < r[0]) for p, r in zip(pc, rows)],
            "switch(x, prev(c), 7)": [7 if r[0] else p for p, r in zip(pc, rows)],
            "eq(prev(c), 33)": [int(p == 33) for p in pc]}[op]
    assert values(net, rows, "o") == want


# -- 19: valid nets the builder refused -----------------------------------------------------
def test_prev_without_steps_is_open_for_operations_too():
    # A spike cannot fire in one step: built for one step, not(prev(s)) was a constant.
    net = parse("input x : 0..1\nneuron s : spike(threshold=3) = x\n"
                "neuron n : not(prev(s))\noutput s, n\n")
    assert net.open
    assert values(net, [[1]] * 5, "n") == [1, 1, 1, 0, 1]


def test_delay_without_steps_beside_prev_is_open():
    net = parse("input x : 0..3\nneuron s : relu(s=1, max=3) = x + prev(s)\n"
                "neuron d : delay(x, 2)\noutput s, d\n")
    assert net.open
    assert values(net, [[1], [2], [3], [0]], "d") == [0, 0, 1, 2]


def test_a_delay_as_long_as_the_run_is_its_low_end():
    net = parse("steps 3\ninput x : 1..3\nneuron d : delay(x, 3)\noutput d\n")
    assert values(net, [[3], [2], [3]], "d") == [1, 1, 1]


@pytest.mark.parametrize("op", ["select(s, c, 3)", "max(c, s)", "min(c, 9)", "switch(s, c, 2)"])
def test_an_operation_fed_back_into_its_input_fits_the_input(op):
    net = parse(f"input c : 0..9\ninput s : 0..1\nfeedback c = y\nneuron y : {op}\noutput y\n")
    assert tuple(net.value_range[net.by_name("y").id]) == (0, 9)
    rows = [[4, 1], [None, 0], [None, 1]]
    res, _ = reference_run(net, rows)
    assert res.value.shape[1] == 3


def test_lowering_products_keeps_a_prev_lanes_proven_range():
    from dsl.lower import lower_products

    net = parse("steps open\ninput a : 1..7\ninput b : 1..8\nneuron p : identity = a*b\n"
                "neuron y : identity = prev(p) + a\noutput y\n")
    assert tuple(net.value_range[net.by_name("p.prev").id]) == (0, 56)
    low = lower_products(net)
    assert tuple(low.value_range[low.by_name("p.prev").id]) == (0, 56)
    assert tuple(low.value_range[low.by_name("y").id]) == (1, 63)


def test_the_json_form_of_a_netlist_with_operations_on_loops_loads_again():
    net = parse("network j\ninput x : 0..1\nneuron c : relu(s=1, max=40) = prev(c) + 1\n"
                "neuron e : equals(c, [16])\nneuron m : max(prev(c), x)\ndone e\noutput c, m\n")
    doc = json.loads(dumps(net))
    again = loads(json.dumps(doc))
    rows = [[t % 2] for t in range(30)]
    assert values(again, rows, "m") == values(net, rows, "m")


def test_init_of_a_vector_read_through_a_zero_column_round_trips():
    # `lines prev(h) -> ...` names every element, a zero column too; the JSON form spells
    # the init on the whole prev vector.
    net = parse("network z\nsteps open\ninput x : 0..3\nneuron h[2] : relu(s=1, max=7)\n"
                "lines x -> h all 1\nlines prev(h) -> h dense [[0, 1], [0, 1]]\n"
                "init h = [3, 2]\noutput h\n")
    again = loads(dumps(net))
    assert dumps(again) == dumps(net)
    assert values(again, [[1], [1]], "h[0]") == values(net, [[1], [1]], "h[0]") == [3, 4]


def test_a_bit_that_turns_one_late_stays_a_bit_for_operations_on_its_prev():
    # d is 0 for 23 steps: its prev range grew once, late; an extrapolated leap past 1
    # would make select and not refuse it.
    net = parse("steps open\ninput x : 2..5\ninput y : 0..3\n"
                "neuron c : relu(s=1, max=42) = prev(c) + 1\nneuron d : equals(c, [24])\n"
                "neuron o : select(prev(d), x, y)\nneuron n : not(prev(d))\ndone d\n"
                "output o, n\n")
    rows = [[2 + t % 4, t % 4] for t in range(30)]
    res, steps = reference_run(net, rows)
    assert steps == 24
    o = [int(v) for v in res.value[0, :steps, net.by_name("o").id]]
    assert o == [r[1] for r in rows[:steps]]


def test_run_of_a_vector_relu_without_max_is_exact(tmp_path, capsys):
    """`run`'s reference reads the netlist the WAD embeds (JSON): it must clamp each
    element where the map does."""
    import build

    path = tmp_path / "r.dnet"
    path.write_text("network r\ninput x[2] : 0..3\nneuron h[2] : relu(s=1)\n"
                    "lines x -> h diag [1, 5]\noutput h\n")
    code = build.main(["run", str(path), "-o", str(tmp_path / "r.wad"), "-i", "3,3", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["results"][0]["engine"] == out["results"][0]["reference"] == [3, 15]


def test_an_operation_on_a_sum_that_grows_is_proven_for_fixed_steps_refused_if_open():
    text = "input x : 0..3\nneuron a : identity = prev(a) + x\nneuron m : max(prev(a), 5)\n" \
           "output m\n"
    net = parse("steps 200\n" + text)
    assert tuple(net.value_range[net.by_name("a.prev").id]) == (0, 597)
    rows = [[3]] * 200
    assert values(net, rows, "m")[-1] == 597
    refused("steps open\n" + text, "bad.dnet:3:8: error: the range of 'a' keeps growing",
            "clamp it")
