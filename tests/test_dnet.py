"""The .dnet front end: golden parses, JSON round trips, the reference, ranges, the CLI."""
import glob
import json
import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import ROOT
from dsl import load
from dsl.diagnostics import CompileError
from dsl.ir import Identity, Lut, Prev, Product, Relu, Spike, Step
from dsl.jsonio import dumps, from_json, loads
from dsl.parser import parse
from dsl.random_net import mlp
from dsl.reference import evaluate

CIRCUITS = sorted(glob.glob(os.path.join(ROOT, "circuits", "*.dnet")))
GOLDEN = os.path.join(ROOT, "tests", "golden")


# ------------------------------------------------------------------------- golden parses
@pytest.mark.parametrize("path", CIRCUITS, ids=os.path.basename)
def test_golden_parse(path):
    """Each circuit parses to the IR recorded in tests/golden (set VOODOO_REGOLD=1 to update)."""
    net = load(path)
    text = dumps(net) + "\n"
    golden = os.path.join(GOLDEN, os.path.basename(path).replace(".dnet", ".json"))
    if os.environ.get("VOODOO_REGOLD"):
        os.makedirs(GOLDEN, exist_ok=True)
        with open(golden, "w") as f:
            f.write(text)
    with open(golden) as f:
        assert text == f.read()


def test_xor_structure():
    net = load(os.path.join(ROOT, "circuits", "xor.dnet"))
    h_or, h_and, y = (net.by_name(n) for n in ("h_or", "h_and", "y"))
    a, b = net.by_name("a").id, net.by_name("b").id
    assert h_or.gate == Step(1) and h_and.gate == Step(2) and y.gate == Identity()
    assert h_or.weights == {a: 1, b: 1} and y.weights == {h_or.id: 1, h_and.id: -1}
    assert [net.nodes[o].name for o in net.outputs] == ["y"]
    out = evaluate(net, [[0, 0], [0, 1], [1, 0], [1, 1]]).last_outputs()[:, 0].tolist()
    assert out == [0, 1, 1, 0]


def test_syntax_forms():
    net = parse("""
        network forms     # every connection form
        input x[3] : -2..2
        neuron d[2] : relu(s=3, max=4)
        lines x[0:2] -> d dense [[1, -2], [3, 0]]
        lines x[2] -> d all -1
        neuron s[2] : step(t=1)
        lines d -> s sparse { 0 -> 1 : 5, 1 -> 0 : -7, }
        neuron g[2] : identity
        lines s -> g diag [2, -3]
        bias g = [4, -4]
        bias d = 1
        neuron l : lut(-1..1, [7, 8, 9]) = -x[0] + 2*x[1] - 3
        neuron p : product(l, g[1])
        output g, l, p, d[1:]
    """, "forms.dnet")
    n = {x.name: x for x in net.nodes}
    x0, x1, x2 = (n[f"x[{i}]"].id for i in range(3))
    assert n["d[0]"].weights == {x0: 1, x1: -2, x2: -1} and n["d[0]"].bias == 1
    assert n["d[1]"].weights == {x0: 3, x2: -1}  # the zero weight is no line
    assert n["s[0]"].weights == {n["d[1]"].id: -7} and n["s[1]"].weights == {n["d[0]"].id: 5}
    assert n["g[1]"].weights == {n["s[1]"].id: -3} and n["g[1]"].bias == -4
    assert n["l"].gate == Lut(-1, (7, 8, 9)) and n["l"].bias == -3
    assert n["l"].weights == {x0: -1, x1: 2}
    assert n["p"].gate == Product(n["l"].id, n["g[1]"].id)
    assert [net.nodes[o].name for o in net.outputs] == ["g[0]", "g[1]", "l", "p", "d[1]"]
    assert net.name == "forms"


def test_forward_references_and_topological_order():
    net = parse("output y\nneuron y : identity = h\nneuron h : relu(s=1, max=3) = x\ninput x : 0..5",
                "fwd.dnet")
    assert [n.name for n in net.nodes] == ["x", "h", "y"]
    assert evaluate(net, [[5]]).last_outputs().tolist() == [[3]]


def test_relu_max_inferred_from_range():
    net = parse("input x : 0..9\nneuron h : relu(s=2) = x - 1\noutput h", "r.dnet")
    assert net.by_name("h").gate == Relu(2, 4)


# --------------------------------------------------------------------------------- JSON
@pytest.mark.parametrize("path", CIRCUITS, ids=os.path.basename)
def test_json_round_trip(path):
    net = load(path)
    again = loads(dumps(net), "again.json")
    assert dumps(again) == dumps(net)
    xs = _samples(net, 20, seed=1)
    assert np.array_equal(evaluate(net, xs).value, evaluate(again, xs).value)


def test_json_products_before_their_operands():
    """A hand-written document may name a product before its operands (declared after
    every vector then); a dumped one keeps its order (products declared in place)."""
    doc = {"format": "voodoonet.netlist", "version": 1, "name": "fwd", "vectors": [
        {"name": "p", "size": 2, "gate": {"kind": "product", "a": ["x[0]", "x[1]"],
                                          "b": ["y", "y"]}},
        {"name": "q", "size": None, "gate": {"kind": "product", "a": "x[1]", "b": "y"}},
        {"name": "x", "size": 2, "gate": {"kind": "input", "lo": -3, "hi": 3}},
        {"name": "y", "size": None, "gate": {"kind": "input", "lo": 0, "hi": 5}},
        {"name": "r", "size": None, "gate": {"kind": "identity"}}],
        "lines": [["q", "r", 2]], "outputs": ["p[0]", "p[1]", "q", "r"]}
    net = from_json(doc)
    assert evaluate(net, [[2, -3, 4]]).last_outputs().tolist() == [[8, -12, -12, -24]]
    again = loads(dumps(net), "again.json")
    assert dumps(again) == dumps(net)
    net = parse("input x[2] : -3..3\ninput y : 0..5\nneuron p[2] : product(x, y)\n"
                "neuron s : product(x[0], y)\nneuron r : identity = x[1]\noutput p, s, r",
                "order.dnet")
    assert [n.name for n in net.nodes][3:] == ["p[0]", "p[1]", "s", "r"]
    assert dumps(loads(dumps(net), "again.json")) == dumps(net)


JSON_CASES = [
    ("{", "invalid JSON"),
    ('{"format": "other"}', "not a voodoonet.netlist document"),
    ('{"format": "voodoonet.netlist", "version": 9}', "unsupported version 9"),
    ('{"format": "voodoonet.netlist", "version": 1}', "missing list of vectors"),
    ('{"format": "voodoonet.netlist", "version": 1, "steps": "x", "vectors": []}', "steps must be an integer"),
    ('{"format": "voodoonet.netlist", "version": 1, "vectors": [{"size": 1}]}', "a vector needs a name"),
    ('{"format": "voodoonet.netlist", "version": 1, "vectors": [{"name": "a", "size": "2", "gate": {}}]}', "size must be an integer"),
    ('{"format": "voodoonet.netlist", "version": 1, "vectors": [{"name": "a", "size": 2}]}', "a vector needs a gate"),
    ('{"format": "voodoonet.netlist", "version": 1, "vectors": [{"name": "a", "size": 2, "gate": {"kind": "input"}}]}', "an input needs integer lo and hi"),
    ('{"format": "voodoonet.netlist", "version": 1, "vectors": [{"name": "a", "size": null, "gate": {"kind": "lut", "lo": 0}}]}', "a lut needs an integer lo"),
    ('{"format": "voodoonet.netlist", "version": 1, "vectors": [{"name": "a", "size": null, "gate": {"kind": "relu", "s": "4"}}]}', "s must be an integer"),
    ('{"format": "voodoonet.netlist", "version": 1, "vectors": [{"name": "a", "size": 2, "gate": {"kind": "product", "a": "x", "b": "x"}}]}', "a product is a scalar"),
    ('{"format": "voodoonet.netlist", "version": 1, "vectors": [{"name": "a", "size": null, "gate": {"kind": "product", "a": "x!", "b": "x"}}]}', "bad element reference 'x!'"),
    ('{"format": "voodoonet.netlist", "version": 1, "vectors": [], "lines": [["a", "b"]]}', "a line is [source, destination, weight]"),
    ('{"format": "voodoonet.netlist", "version": 1, "vectors": [], "bias": [1]}', "bias must be an object"),
    ('{"format": "voodoonet.netlist", "version": 1, "vectors": [{"name": "a", "size": null, "gate": {"kind": "identity"}}], "bias": {"a": 1.5}}', "a bias must be an integer"),
    ('{"format": "voodoonet.netlist", "version": 1, "vectors": [], "outputs": "y"}', "outputs must be a list"),
    ('{"format": "voodoonet.netlist", "version": 1, "vectors": [{"name": "a", "size": null, "gate": {"kind": "identity"}}], "outputs": ["b"]}', "unknown name 'b'"),
]


@pytest.mark.parametrize("text,message", JSON_CASES, ids=[m for _, m in JSON_CASES])
def test_json_errors(text, message):
    with pytest.raises(CompileError) as ei:
        loads(text, "net.json")
    assert str(ei.value).startswith("net.json")
    assert message in str(ei.value)


def test_json_deep_nesting():
    with pytest.raises(CompileError) as ei:
        loads("[" * 100_000 + "]" * 100_000, "deep.json")
    assert "deep.json" in str(ei.value)


# ---------------------------------------------------------------------------- reference
OPEN_STEPS = 24


def _samples(net, n, seed):
    rng = np.random.default_rng(seed)
    lo = [net.nodes[i].gate.lo for i in net.inputs]
    hi = [net.nodes[i].gate.hi for i in net.inputs]
    steps = OPEN_STEPS if net.open else net.steps  # an open netlist: a run of some steps
    shape = (n, steps, len(lo)) if net.multi_step else (n, len(lo))
    xs = rng.integers(lo, np.array(hi) + 1, size=shape)
    xs[0] = lo  # the range edges are where mistakes hide
    xs[1] = hi
    return xs.tolist()


def loop_eval(net, sample):
    """An independent evaluator: plain Python ints and loops, gates from docs/dnet.md."""
    steps = sample if net.multi_step else [sample]
    membrane = {n.id: n.gate.init for n in net.nodes if isinstance(n.gate, Spike)}
    out = []
    before = None
    for xs in steps:
        v, a = {}, {}
        for k, nid in enumerate(net.inputs):
            v[nid] = a[nid] = int(xs[k])
        for n in net.nodes:
            if n.id in v:
                continue
            g = n.gate
            if isinstance(g, Prev):  # the value its node had at the step before
                v[n.id] = a[n.id] = g.init if before is None else before[g.src]
                continue
            if isinstance(g, Product):
                a[n.id] = v[n.id] = v[g.a] * v[g.b]
                continue
            total = n.bias
            for s in sorted(n.weights):
                total += n.weights[s] * v[s]
            a[n.id] = total
            if isinstance(g, Identity):
                y = total
            elif isinstance(g, Relu):
                q = total // g.s
                y = 0 if q < 0 else (g.L if q > g.L else q)
            elif isinstance(g, Step):
                y = 1 if total >= g.t else 0
            elif isinstance(g, Lut):
                i = total
                if i < g.lo:
                    i = g.lo
                if i > g.lo + len(g.table) - 1:
                    i = g.lo + len(g.table) - 1
                y = g.table[i - g.lo]
            elif isinstance(g, Spike):
                u = membrane[n.id] + total
                y = 1 if u >= g.threshold else 0
                if y:
                    u = u - g.threshold if g.reset is None else g.reset
                membrane[n.id] = u - g.leak if u - g.leak > 0 else 0
            v[n.id] = y
        out.append(([v[i] for i in range(len(net.nodes))], [a[i] for i in range(len(net.nodes))]))
        before = v
    return out


@pytest.mark.parametrize("path", CIRCUITS, ids=os.path.basename)
def test_reference_matches_loops_on_circuits(path):
    net = load(path)
    xs = _samples(net, 30, seed=7)
    res = evaluate(net, xs)
    for b, sample in enumerate(xs):
        for t, (vals, accs) in enumerate(loop_eval(net, sample)):
            assert res.value[b, t].tolist() == vals
            assert res.acc[b, t].tolist() == accs


def test_spike_counter_semantics():
    net = load(os.path.join(ROOT, "circuits", "spike_counter.dnet"))
    pulses = [1, 1, 1, 1, 0, 1, 1, 0, 1]
    res = evaluate(net, [[[p] for p in pulses]])
    every3 = res.value[0, :, net.by_name("every3").id].tolist()
    burst = res.value[0, :, net.by_name("burst").id].tolist()
    assert every3 == [0, 0, 1, 0, 0, 0, 1, 0, 0]
    assert burst == [0, 1, 0, 1, 0, 0, 1, 0, 0]


def test_softmax_and_rmsnorm_examples():
    sm = load(os.path.join(ROOT, "circuits", "softmax.dnet"))
    out = evaluate(sm, [[3, 1, 0]]).last_outputs()[0].tolist()
    assert out == [8 * (64 // 11), 2 * (64 // 11), 1 * (64 // 11)]
    rn = load(os.path.join(ROOT, "circuits", "rmsnorm.dnet"))
    import math
    x = [3, -3, 1]
    g = math.isqrt(768 // (9 + 9 + 1))
    assert evaluate(rn, [x]).last_outputs()[0].tolist() == [v * g for v in x]


def test_big_values_stay_exact():
    """Past int64 headroom the reference switches to Python ints and stays exact."""
    net = parse("input x : 0..2000000000\nneuron p : product(x, x)\n"
                "neuron q : product(p, p)\noutput q", "big.dnet")
    x = 1999999999
    assert int(evaluate(net, [[x]]).last_outputs()[0, 0]) == x ** 4


def test_inputs_outside_declared_range_are_rejected():
    from dsl.diagnostics import VoodooError

    net = load(os.path.join(ROOT, "circuits", "xor.dnet"))
    with pytest.raises(VoodooError, match="input b = 2 is outside its declared range 0..1"):
        evaluate(net, [[0, 2]])


# ------------------------------------------------------------------ property tests
net_params = st.fixed_dictionaries({
    "seed": st.integers(0, 10**6),
    "sizes": st.lists(st.integers(1, 6), min_size=2, max_size=4),
    "in_range": st.sampled_from([(0, 1), (0, 3), (-3, 3), (-8, 15)]),
    "weight": st.integers(1, 9),
    "gates": st.sampled_from([("relu",), ("step",), ("lut",), ("relu", "step", "lut", "identity")]),
    "out_gate": st.sampled_from(["identity", "relu", "lut"]),
})


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(net_params, st.integers(0, 2**31))
def test_reference_agrees_with_loops(params, sample_seed):
    net = mlp(**params)
    xs = _samples(net, 8, sample_seed)
    res = evaluate(net, xs)
    for b, sample in enumerate(xs):
        ((vals, accs),) = loop_eval(net, sample)
        assert res.value[b, 0].tolist() == vals
        assert res.acc[b, 0].tolist() == accs


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(net_params, st.integers(0, 2**31))
def test_ranges_never_underestimate(params, sample_seed):
    net = mlp(**params)
    res = evaluate(net, _samples(net, 64, sample_seed))
    for n in net.nodes:
        a, v = net.acc_range[n.id], net.value_range[n.id]
        assert a.lo <= res.acc[:, :, n.id].min() and res.acc[:, :, n.id].max() <= a.hi
        assert v.lo <= res.value[:, :, n.id].min() and res.value[:, :, n.id].max() <= v.hi


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 5), st.integers(0, 3), st.sampled_from([0, 1, 2, None]),
       st.lists(st.lists(st.integers(-2, 3), min_size=2, max_size=2), min_size=1, max_size=12))
def test_spike_ranges_never_underestimate(threshold, leak, reset, seq):
    r = "subtract" if reset is None else reset
    net = parse(f"steps {len(seq)}\ninput x[2] : -2..3\n"
                f"neuron s : spike(threshold={threshold}, leak={leak}, reset={r}) = x[0] + 2*x[1]\n"
                "output s", "spk.dnet")
    res = evaluate(net, [seq])
    sid = net.by_name("s").id
    states = loop_eval(net, seq if len(seq) > 1 else seq[0])
    assert res.value[0, :, sid].tolist() == [vals[sid] for vals, _ in states]
    st_range = net.state_range[sid]
    # replay the membrane to check its range
    g = net.by_name("s").gate
    v = g.init
    for x0, x1 in seq:
        u = v + x0 + 2 * x1
        assert st_range.lo <= u <= st_range.hi
        if u >= g.threshold:
            u = u - g.threshold if g.reset is None else g.reset
        v = max(u - g.leak, 0)
        assert st_range.lo <= v <= st_range.hi


# -------------------------------------------------------------------------------- CLI
def _cli(*args, cwd=None):
    return subprocess.run([sys.executable, os.path.join(ROOT, "build.py"), *args],
                          capture_output=True, text=True, cwd=cwd)


def test_cli_check_circuits():
    r = _cli("check", *CIRCUITS)
    assert r.returncode == 0, r.stderr
    assert r.stdout.count("network '") == len(CIRCUITS)


def test_cli_bad_file_has_position_and_no_traceback(tmp_path):
    bad = tmp_path / "bad.dnet"
    bad.write_bytes(b"neuron ((( \x00")
    r = _cli("check", "bad.dnet", cwd=tmp_path)
    assert r.returncode != 0
    assert "bad.dnet:1:" in r.stderr
    assert "Traceback" not in r.stderr + r.stdout


def test_cli_garbage_bytes(tmp_path):
    bad = tmp_path / "garbage.dnet"
    bad.write_bytes(bytes(range(256)) * 40)
    r = _cli("check", str(bad))
    assert r.returncode == 1 and "garbage.dnet:1:1: error: unexpected" in r.stderr
    assert "Traceback" not in r.stderr


def test_cli_eval_and_export(tmp_path):
    xor = os.path.join(ROOT, "circuits", "xor.dnet")
    r = _cli("eval", xor, "--input", "1,0", "--input", "1,1")
    assert r.returncode == 0 and r.stdout.splitlines() == ["input 1,0: y=1", "input 1,1: y=0"]
    r = _cli("eval", xor, "--input", "1,0,1")
    assert r.returncode == 1 and "3 values, but" in r.stderr and "Traceback" not in r.stderr
    r = _cli("eval", xor, "--input", "1,x")
    assert r.returncode == 1 and "expected comma-separated integers" in r.stderr
    out = tmp_path / "xor.json"
    r = _cli("export", xor, "--json", "-o", str(out))
    assert r.returncode == 0
    doc = json.loads(out.read_text())
    assert doc["format"] == "voodoonet.netlist" and from_json(doc).n_connections == 6
    r = _cli("eval", str(out), "--input", "0,1")
    assert r.stdout.strip() == "input 0,1: y=1"


def test_cli_help_is_instant_and_does_not_import_engine():
    code = ("import sys, runpy; sys.argv=['build.py','--help']\n"
            "try:\n runpy.run_path(%r, run_name='__main__')\nexcept SystemExit: pass\n"
            "assert 'vizdoom' not in sys.modules and 'numpy' not in sys.modules, 'heavy import'\n"
            % os.path.join(ROOT, "build.py"))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "compile" in r.stdout and "museum" in r.stdout


def test_cli_ten_megabytes_of_nesting(tmp_path):
    bad = tmp_path / "nest.dnet"
    bad.write_bytes(b"input x : 0..1\nbias x = " + b"[" * (10 * 1024 * 1024))
    r = _cli("check", str(bad))
    assert r.returncode == 1 and "nest.dnet:2:" in r.stderr and "Traceback" not in r.stderr
