"""The graph API and the .dnet operations: every operation, exhaustively over its whole
input domain, against plain Python in the exact reference; refusals; positioned errors;
the graph and its .dnet are the same netlist; .dnet operations lower like the graph's."""
import itertools

import pytest

from dsl.diagnostics import CompileError
from dsl.graph import Graph, GraphError
from dsl.lower import lower_products
from dsl.parser import parse
from dsl.reference import evaluate

A, B = range(-3, 5), range(0, 6)      # the operands' domains below


def outputs_over(g, domain):
    """The netlist's outputs for every input of the domain (also through the lowering the
    map compiler uses), as {input tuple: outputs}."""
    net = g.build()
    xs = [list(x) for x in domain]
    got = evaluate(net, xs).last_outputs().tolist()
    assert evaluate(lower_products(net), xs).last_outputs().tolist() == got
    return {tuple(x): out for x, out in zip(xs, got)}


def two_operand_graph():
    g = Graph("ops2")
    a, b = g.input("a", A.start, A.stop - 1), g.input("b", B.start, B.stop - 1)
    c = g.input("c", 0, 1)
    ops = {
        "add": g.add(a, b), "sub": g.sub(a, b), "scale": g.scale(a, -3),
        "lt": g.lt(a, b), "le": g.le(a, b), "eq": g.eq(a, b), "lt_const": g.lt(a, 2),
        "select": g.select(c, a, b), "select_const": g.select(c, 7, a),
        "min": g.min(a, b), "max": g.max(a, b), "min3": g.min(a, b, 1), "max3": g.max(a, 2, b),
        "clamp": g.clamp(a + b, 0, 4), "product": g.product(a, b),
        "lookup": g.lookup(lambda u, v: (u * u - 3 * v) % 7 - 2, a, b),
        "switch": g.switch(b, [a, 3, a + b, 7, -a, c]),
        "switch_const": g.switch(b, [5, -1, 0, 2, 2, 9]),
        "argmax_index": sum((k * v for k, v in enumerate(g.argmax([a, b, 2, a - 1]))), 0),
    }
    for name, v in ops.items():
        g.output(v, name)
    return g, list(ops)


def python_ops2(a, b, c):
    vals = [a, b, 2, a - 1]
    return {
        "add": a + b, "sub": a - b, "scale": -3 * a, "lt": int(a < b), "le": int(a <= b),
        "eq": int(a == b), "lt_const": int(a < 2), "select": a if c else b,
        "select_const": 7 if c else a, "min": min(a, b), "max": max(a, b),
        "min3": min(a, b, 1), "max3": max(a, 2, b), "clamp": min(max(a + b, 0), 4),
        "product": a * b, "lookup": (a * a - 3 * b) % 7 - 2,
        "switch": [a, 3, a + b, 7, -a, c][b], "switch_const": [5, -1, 0, 2, 2, 9][b],
        "argmax_index": vals.index(max(vals)),
    }


def test_two_operand_operations_exhaustively():
    g, names = two_operand_graph()
    got = outputs_over(g, itertools.product(A, B, range(2)))
    assert len(got) == len(A) * len(B) * 2
    for (a, b, c), out in got.items():
        want = python_ops2(a, b, c)
        assert dict(zip(names, out)) == want, (a, b, c)


def test_logic_equals_and_argmax_exhaustively():
    g = Graph("logic")
    p, q, r = g.input("p", 0, 1), g.input("q", 0, 1), g.input("r", 0, 1)
    u, v = g.input("u", 0, 2), g.input("v", -1, 1)
    outs = {
        "and": g.and_(p, q, r), "or": g.or_(p, q, r), "not": g.not_(q), "xor": g.xor(p, q),
        "parity": g.xor(p, q, r), "eq_edges": g.equals([p, u, v], [1, 2, -1]),
        "eq_inner": g.equals([u, v, q], [1, 0, 0]), "eq_never": g.equals([u, v], [3, 0]),
    }
    hot = g.argmax([u, v, p + q, 1])
    gated = g.argmax([u, v], gate=r)
    for name, val in outs.items():
        g.output(val, name)
    g.output(hot, "hot")
    g.output(gated, "gated")
    got = outputs_over(g, itertools.product(range(2), range(2), range(2), range(3), range(-1, 2)))
    for (P, Q, R, U, V), out in got.items():
        vals = [U, V, P + Q, 1]
        want = [P & Q & R, P | Q | R, 1 - Q, P ^ Q, P ^ Q ^ R, int((P, U, V) == (1, 2, -1)),
                int((U, V, Q) == (1, 0, 0)), 0]
        want += [int(k == vals.index(max(vals))) for k in range(4)]
        want += [R * int(k == [U, V].index(max(U, V))) for k in range(2)]
        assert out == want, (P, Q, R, U, V)


@pytest.mark.parametrize("k", [1, 2])
def test_delay_over_every_sequence(k):
    g = Graph("delay", steps=4)
    x = g.input("x", 0, 2)
    g.output(g.delay(x, k), "past")
    g.output(g.delay(g.lt(0, x), k), "past_bit")
    net = g.build()
    seqs = [list(map(list, zip(s))) for s in itertools.product(range(3), repeat=4)]
    res = evaluate(net, seqs)
    for n, s in enumerate(seqs):
        xs = [v[0] for v in s]
        for t in range(4):
            before = xs[t - k] if t >= k else 0
            assert res.value[n, t, net.outputs].tolist() == [before, int(before > 0)], (xs, t)


def test_to_dnet_is_the_netlist_with_the_users_names():
    g, names = two_operand_graph()
    text = g.to_dnet()
    for name in names + ["a", "b", "c"]:
        assert f" {name} " in text or f" {name}\n" in text or f"{name}," in text
    net, again = g.build(), parse(text, "again.dnet")
    xs = [list(x) for x in itertools.product(A, B, range(2))]
    assert (evaluate(net, xs).value == evaluate(again, xs).value).all()
    assert [n.name for n in net.nodes] == [n.name for n in again.nodes]


def test_vectors_keep_their_names():
    g = Graph("vec")
    x = g.inputs("x", 3, 0, 3)
    g.output(g.argmax(x), "best")
    g.output([x[i] + 1 for i in range(3)], "plus")
    net = g.build()
    assert [net.nodes[o].name for o in net.outputs] == [
        "best[0]", "best[1]", "best[2]", "plus[0]", "plus[1]", "plus[2]"]
    assert "neuron best[3] : step(t=2)" in g.to_dnet()


@pytest.mark.parametrize("make,message", [
    (lambda g, a, b: g.select(a, a, b), "select's condition has range 0..9; it must be a proven 0/1"),
    (lambda g, a, b: g.and_(a, b), "an 'and' operand has range 0..9"),
    (lambda g, a, b: g.switch(a, [1, 2, 3]), "switch index has range 0..9 but there are 3 values"),
    (lambda g, a, b: g.lookup(lambda *v: 0, a, b, a, b, a), "lookup over a domain of 100000"),
    (lambda g, a, b: g.delay(a), "delay needs a netlist with several time steps"),
    (lambda g, a, b: g.clamp(a, 3, 1), "clamp range 3..1 is empty"),
    (lambda g, a, b: g.select(g.lt(a, b), 40000 * a, b), "select (then) needs a weight 40000, beyond"),
    (lambda g, a, b: g.equals([a, b], [1]), "equals compares 2 values with 1 constants"),
    (lambda g, a, b: g.output(a + b), "an output that is a sum needs a name"),
    (lambda g, a, b: g.input("a", 0, 1), "the name 'a' is already used"),
])
def test_refusals_name_the_reason(make, message):
    g = Graph("bad")
    a, b = g.input("a", 0, 9), g.input("b", 0, 9)
    with pytest.raises(GraphError) as e:
        make(g, a, b)
    assert message in str(e.value)
    assert "hint:" in str(e.value) or "name" in message


def test_values_beyond_32_bits_are_refused():
    g = Graph("huge")
    h = g.input("h", 0, 2**30)
    with pytest.raises(GraphError, match="reaches 0..1152921504606846976, beyond 32-bit"):
        g.product(h, h)


def test_select_refuses_a_constant_beyond_the_weight_limit():
    g = Graph("wide")
    a, b, c = g.input("a", 0, 30000), g.input("b", -30000, 0), g.input("c", 0, 1)
    with pytest.raises(GraphError, match="needs a weight 60000, beyond the engine's 32767"):
        g.select(c, a, b)


# -- the operations written in .dnet ----------------------------------------------------------
DNET_OPS = """
input a : -3..4
input b : 0..5
input c : 0..1
input x[3] : 0..2
neuron s  : select(c, a, b)
neuron s7 : select(c, 7, a)
neuron w  : switch(b, a, 3, b, 7, -1, c)
neuron wc : switch(b, [5, -1, 0, 2, 2, 9])
neuron e  : equals(x, [1, 0, 2])
neuron lt : lt(a, b)
neuron le : le(a, 2)
neuron eq : eq(a, b)
neuron mn : min(a, b, 1)
neuron mx : max(a, b)
neuron k  : argmax(a, b, 2)
neuron cl : clamp(s, 0..3)
neuron n  : not(c)
neuron o  : or(c, e, lt)
neuron an : and(c, lt)
neuron xr : xor(c, lt, e)
neuron y  : identity = s + 2*mx - w
output s, s7, w, wc, e, lt, le, eq, mn, mx, k, cl, n, o, an, xr, y
"""


def test_dnet_operations_exhaustively():
    net = parse(DNET_OPS, "ops.dnet")
    dom = [list(v) for v in itertools.product(A, B, range(2), range(3), range(3), range(3))]
    got = evaluate(net, dom).last_outputs().tolist()
    for (a, b, c, x0, x1, x2), out in zip(dom, got):
        s = a if c else b
        e = int((x0, x1, x2) == (1, 0, 2))
        lt = int(a < b)
        mx = max(a, b)
        w = [a, 3, b, 7, -1, c][b]
        want = [s, 7 if c else a, w, [5, -1, 0, 2, 2, 9][b], e, lt, int(a <= 2), int(a == b),
                min(a, b, 1), mx, [a, b, 2].index(max(a, b, 2)), min(max(s, 0), 3), 1 - c,
                c | e | lt, c & lt, c ^ lt ^ e, s + 2 * mx - w]
        assert out == want, (a, b, c, x0, x1, x2)


def test_dnet_and_graph_lower_the_same_way():
    net = parse("input c : 0..1\ninput a : -3..4\ninput b : 0..5\n"
                "neuron s : select(c, a, b)\nneuron m : max(a, b)\noutput s, m", "t.dnet")
    g = Graph("t")
    c, a, b = g.input("c", 0, 1), g.input("a", -3, 4), g.input("b", 0, 5)
    g.output(g.select(c, a, b), "s")
    g.output(g.max(a, b), "m")
    gnet = g.build()

    def shape(n):
        return sorted((repr(x.gate), sorted(x.weights.values()), x.bias) for x in n.nodes)
    assert shape(net) == shape(gnet)
    assert [n.name for n in net.nodes if "__" in n.name] == [
        "s__select_then", "s__select_else", "m__max"]


@pytest.mark.parametrize("text,where,message", [
    ("input a : 0..3\ninput b : 0..1\nneuron y : select(a, b, b)\noutput y", "3:12",
     "select: select's condition has range 0..3; it must be a proven 0/1 value"),
    ("input a : 0..1\nneuron y : select(a, b)\noutput y", "2:12", "select needs different arguments"),
    ("input a : 0..1\nneuron y : select(a, a, bb)\noutput y", "2:25", "unknown name 'bb'"),
    ("input a : 0..1\nneuron y : select(c=a, a, a)\noutput y", "2:12",
     "select takes positional arguments only"),
    ("input a : 0..1\nneuron y[2] : not(a)\noutput y", "2:8", "the result of not is a scalar"),
    ("input a : 0..1\nneuron y : not(a) = a\noutput y", "2:21", "not takes its operands as arguments"),
    ("input a : 0..1\nneuron y : not(a)\nlines a -> y all 1\noutput y", "3:14",
     "lines cannot end at 'y', an operation's result"),
    ("input a : 0..1\nneuron y : delay(a, 1)\noutput y", "2:12",
     "delay: delay needs a netlist with several time steps"),
    ("input a : 0..9\nneuron y : switch(a, [1, 2])\noutput y", "2:12",
     "switch: switch index has range 0..9 but there are 2 values"),
    ("input a : 0..1\nneuron y : max(a, z)\nneuron z : min(y, a)\noutput z", "",
     "cycle: "),
])
def test_dnet_operation_errors_are_positioned(text, where, message):
    with pytest.raises(CompileError) as e:
        parse(text, "bad.dnet")
    shown = str(e.value)
    assert message in shown, shown
    if where:
        assert f"bad.dnet:{where}: error: {message}" in shown, shown
    assert "hint:" in shown


def test_every_problem_is_reported_at_once():
    text = ("input c : 0..3\ninput a : 0..1\nneuron y : select(c, a, a)\n"
            "neuron z : selekt(a, a, a)\noutput y\n")
    with pytest.raises(CompileError) as e:
        parse(text, "bad.dnet")
    shown = str(e.value)
    assert "bad.dnet:4:12: error: unknown gate 'selekt'\n    hint: did you mean 'select'?" in shown
    assert "bad.dnet:3:12: error: select: select's condition has range 0..3" in shown


# -- issue 25 item 1: slices (and whole vectors) as operation operands --------------------------
SLICE_OPS = """
network slices
input x[3] : 0..2
input c : 0..1
neuron e  : equals(x[1:3], [1, 2])
neuron m  : max(x[0:2], 1)
neuron n  : min(x)
neuron k  : argmax(x[1:3])
neuron k3 : argmax(x[:2], x[2])
neuron an : and(c, e)
neuron w  : switch(c, x[1:])
output e, m, n, k, k3, an, w
"""


def test_dnet_slices_are_operation_operands():
    net = parse(SLICE_OPS, "slices.dnet")
    dom = [list(v) for v in itertools.product(range(3), range(3), range(3), range(2))]
    got = evaluate(net, dom).last_outputs().tolist()
    assert evaluate(lower_products(net), dom).last_outputs().tolist() == got
    for (x0, x1, x2, c), out in zip(dom, got):
        e = int((x1, x2) == (1, 2))
        assert out == [e, max(x0, x1, 1), min(x0, x1, x2), [x1, x2].index(max(x1, x2)),
                       [x0, x1, x2].index(max(x0, x1, x2)), c & e, [x1, x2][c]], (x0, x1, x2, c)


def test_graph_lists_are_operation_operands():
    g = Graph("slices")
    x = g.inputs("x", 3, 0, 2)
    g.output(g.max(x[0:2], 1), "m")
    g.output(g.min(x), "n")
    g.output(g.equals([x[0], x[1:3]], [0, 1, 2]), "e")
    got = outputs_over(g, itertools.product(range(3), repeat=3))
    for (x0, x1, x2), out in got.items():
        assert out == [max(x0, x1, 1), min(x0, x1, x2), int((x0, x1, x2) == (0, 1, 2))]


@pytest.mark.parametrize("make", [
    lambda g, x: g.lt(x[0:2], 1), lambda g, x: g.select(x[0:1], 1, 2),
    lambda g, x: g.product(x[0:2], x[1:3]), lambda g, x: g.clamp(x, 0, 1)])
def test_graph_refuses_a_list_where_one_value_goes(make):
    g = Graph("t")
    x = g.inputs("x", 3, 0, 2)
    with pytest.raises(GraphError, match="an operand is a list .* where one value is needed"):
        make(g, x)


@pytest.mark.parametrize("text,where,message", [
    ("input x[3] : 0..2\nneuron y : lt(x[0:2], 1)\noutput y", "2:15",
     "lt: x[0:2] is a slice where one value is needed"),
    ("input x[3] : 0..2\nneuron y : select(x[1:], 1, 2)\noutput y", "2:19",
     "select: x[1:] is a slice where one value is needed"),
    ("input x[3] : 0..2\nneuron y : max(x[2:5], 1)\noutput y", "2:16",
     "slice x[2:5] is out of range or empty (size 3)"),
    ("input x[3] : 0..2\nneuron y : argmax(x[0:1])\noutput y", "2:12",
     "argmax needs different arguments"),
    ("input x[3] : 0..1\nneuron y : equals(x[0:2], [1])\noutput y", "2:12",
     "equals: equals compares 2 values with 1 constants"),
])
def test_dnet_slice_operand_errors_are_positioned(text, where, message):
    test_dnet_operation_errors_are_positioned(text, where, message)
