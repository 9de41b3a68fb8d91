"""Issue 15 items 11, 15, 16: one sound range per node, tightened where cheap (identity
chains folded, squares, small input spaces enumerated), used by the light check and the
door check alike; checking costs work linear in the netlist; huge values are refused with a
message, never a crash on Python's int-to-str limit."""
import itertools
import os
import subprocess
import sys
import tracemalloc

import pytest

from conftest import ROOT
from dsl.diagnostics import CompileError
from dsl.parser import parse
from dsl.random_net import mlp
from dsl.reference import evaluate


def exact_ranges(net):
    xs = [list(x) for x in itertools.product(*(range(lo, hi + 1)
                                               for lo, hi in net.input_ranges()))]
    return evaluate(net, xs)


CANCEL = """
input x : 0..100
neuron a : identity = 300*x
neuron b : identity = 300*x
neuron y : relu(s=100, max=1000) = a - b + x + 50
output y
"""


def test_identity_chains_are_folded():
    """a - b is 0 for every x: the accumulator of y is x + 50, not -29950..30150."""
    net = parse(CANCEL, "cancel.dnet")
    assert str(net.acc_range[net.by_name("y").id]) == "50..150"


def test_light_and_door_checks_agree_on_a_folded_chain(tmp_path):
    """The light check passed this netlist (its light really spans 50..150) and the door
    check refused it ("plane heights -29950..."); now both use the one range, it compiles
    and the engine agrees with the reference on every input."""
    from dsl.lower import lower_products
    from engine.runner import MapRunner
    from mapgen.compile import compile_netlist, write_wad

    net = parse(CANCEL, "cancel.dnet")
    cm = compile_netlist(net)
    y = net.by_name("y").id
    lane = next(l for l in cm.circuit.lanes if l.node == y)
    light = cm.circuit.light(cm.circuit.acc_light[y])
    assert (lane.plane_lo, lane.plane_hi) == tuple(net.acc_range[y]) == (50, 150)
    assert light.lo <= lane.plane_lo and lane.plane_hi <= light.hi
    path = str(tmp_path / "c.wad")
    write_wad(path, [cm])
    ref = evaluate(net, [[v] for v in range(0, 101, 7)]).last_outputs().tolist()
    with MapRunner(path, cm.manifest) as runner:
        assert [runner.infer([v]) for v in range(0, 101, 7)] == ref
    assert lower_products(net) is net


def test_square_of_a_signed_value():
    net = parse("input x : -3..3\nneuron p : product(x, x)\noutput p", "sq.dnet")
    assert str(net.value_range[net.by_name("p").id]) == "0..9"


def test_small_input_spaces_are_enumerated_exactly():
    src = """
    input x[2] : 0..3
    neuron h1 : step(t=3) = x[0] + x[1]
    neuron h2 : step(t=3) = x[1] + x[0]
    neuron y : identity = 40*h1 - 40*h2 + x[0]
    output y
    """
    net = parse(src, "corr.dnet")
    assert str(net.acc_range[net.by_name("y").id]) == "0..3"  # intervals say -40..43


@pytest.mark.parametrize("seed", range(20))
def test_ranges_are_sound_and_exact_when_enumerated(seed):
    net = mlp(seed, [2, 3, 2], in_range=(-2, 3), weight=4, gates=("relu", "step", "lut",
                                                                 "identity"))
    res = exact_ranges(net)
    for n in net.nodes:
        a, v = net.acc_range[n.id], net.value_range[n.id]
        got_a = (int(res.acc[:, 0, n.id].min()), int(res.acc[:, 0, n.id].max()))
        got_v = (int(res.value[:, 0, n.id].min()), int(res.value[:, 0, n.id].max()))
        assert (a.lo, a.hi) == got_a and (v.lo, v.hi) == got_v, n.name


@pytest.mark.parametrize("seed", range(10))
def test_folded_ranges_are_sound_past_the_enumeration_limit(seed):
    """Too many input combinations to enumerate: folded intervals, still never short."""
    import random
    rng = random.Random(seed)
    net = mlp(seed, [7, 4, 3, 2], in_range=(-3, 5), weight=3,
              gates=("identity", "relu", "identity"))
    xs = [[rng.randint(-3, 5) for _ in range(7)] for _ in range(300)]
    res = evaluate(net, xs)
    for n in net.nodes:
        a = net.acc_range[n.id]
        assert a.lo <= res.acc[:, 0, n.id].min() and res.acc[:, 0, n.id].max() <= a.hi


# ------------------------------------------------------------------------ huge values (16)
HUGE = [
    ("input x : 0..2147483647\nneuron p0 : product(x, x)\n"
     + "".join(f"neuron p{i} : product(p{i - 1}, p{i - 1})\n" for i in range(1, 9))
     + "output p8\n", "the value of 'p3' can reach ~10^149, beyond 2^256"),
    ("input x : 0..1\nneuron n0 : identity = 32767*x\n"
     + "".join(f"neuron n{i} : identity = 32767*n{i - 1}\n" for i in range(1, 950))
     + "output n949\n", "the accumulator of 'n17' can reach ~10^80, beyond 2^256"),
]


@pytest.mark.parametrize("src,message", HUGE, ids=["products", "weights"])
def test_huge_values_are_refused_not_crashed(tmp_path, src, message):
    f = tmp_path / "huge.dnet"
    f.write_text(src)
    for cmd in (["check", str(f)], ["eval", str(f), "-i", "1"], ["export", str(f)]):
        r = subprocess.run([sys.executable, os.path.join(ROOT, "build.py"), *cmd],
                           capture_output=True, text=True)
        assert r.returncode == 1 and message in r.stderr, r.stderr
        assert "internal error" not in r.stderr


def test_largest_input_range_checks_and_evaluates(tmp_path):
    f = tmp_path / "wide.dnet"
    f.write_text("input x : 0..2147483647\nneuron p : product(x, x)\noutput p\n")
    r = subprocess.run([sys.executable, os.path.join(ROOT, "build.py"), "eval", str(f),
                        "-i", "2147483647"], capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout.strip() == f"input 2147483647: p={2147483647 ** 2}"


# ------------------------------------------------------------------------ linear work (15)
def python_calls(fn) -> int:
    """Python-level function calls made by fn(): a deterministic count of work."""
    count = 0

    def prof(frame, event, arg):
        nonlocal count
        if event == "call":
            count += 1

    sys.setprofile(prof)
    try:
        fn()
    except CompileError:
        pass
    finally:
        sys.setprofile(None)
    return count


def _outputs(n):
    return f"input x[{n}] : 0..1\noutput x\n"


def _unknown(n):
    return "input x : 0..1\n" + "".join(f"neuron n{i} : identity = x + zz{i}\n"
                                        for i in range(n)) + "output n0\n"


def _products(n):
    return "input x : 0..3\nneuron p0 : product(x, x)\n" + "".join(
        f"neuron p{i} : product(p{i - 1}, p{i - 1})\n" for i in range(1, n)) + f"output p{n - 1}\n"


@pytest.mark.parametrize("make,n", [(_outputs, 2000), (_unknown, 400), (_products, 12)],
                         ids=["outputs", "unknown-names", "products"])
def test_checking_work_grows_linearly(make, n):
    """Twice the netlist, at most about twice the work (the issue's cases were quadratic or
    exponential: 80,000 outputs took 141 s, 20,000 unknown names hung, 27 products ran
    past a minute)."""
    small = python_calls(lambda: parse(make(n), "a.dnet"))
    large = python_calls(lambda: parse(make(2 * n), "b.dnet"))
    assert large <= 2.5 * small, (small, large)


def test_eval_of_a_wide_identity_layer_needs_no_dense_matrix():
    """`neuron h[100000] : identity` fed by one input wanted a 74.5 GiB matrix."""
    src = "input x : 0..1\nneuron h[100000] : identity\nlines x -> h all 1\noutput h\n"
    net = parse(src, "wide.dnet")
    tracemalloc.start()
    try:
        res = evaluate(net, [[1], [0]])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert res.last_outputs()[0].sum() == 100000 and res.last_outputs()[1].sum() == 0
    assert peak < 100 * 2**20, peak
