"""The lowering pass, without the engine: circuits compute exactly what the reference does."""
import glob
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import ROOT
from dsl import load
from dsl.ir import Lut, Relu, Step
from dsl.lower import lower_products
from dsl.random_net import mlp
from dsl.reference import evaluate
from mapgen.circuit import lower, simulate, staircase

CIRCUITS = [p for p in sorted(glob.glob(os.path.join(ROOT, "circuits", "*.dnet")))
            if "spike" not in p]


def _check(net, xs):
    c = lower(net)
    low = c.net
    res = evaluate(low, xs)
    for b, x in enumerate(xs):
        levels = simulate(c, x)
        for n in low.nodes:
            assert levels[c.value_light[n.id]] == res.value[b, 0, n.id], n.name
            if n.id in c.acc_light:
                assert levels[c.acc_light[n.id]] == res.acc[b, 0, n.id], n.name
    # Every light stays inside its proven bounds at the end (bounds cover partial sums too).
        for light in c.lights:
            assert light.lo <= levels[light.tag] <= light.hi


def _inputs(net, n, seed):
    rng = np.random.default_rng(seed)
    r = net.input_ranges()
    xs = [[lo for lo, _ in r], [hi for _, hi in r]]
    xs += [[int(rng.integers(lo, hi + 1)) for lo, hi in r] for _ in range(n)]
    return xs


@pytest.mark.parametrize("path", CIRCUITS, ids=os.path.basename)
def test_circuits_lower_exactly(path):
    net = load(path)
    if net.multi_step:  # a run: every step's lights from the step before's
        from dsl.sequence import random_sequence

        for seed in (3, 4):
            _check_run(net, random_sequence(net, 20, seed))
        return
    _check(net, _inputs(net, 40, 3))


def _check_run(net, seq):
    check_lowered_run(lower(net), seq)


def check_lowered_run(c, seq):
    """Every node's value light after every step of the run, as simulated, equals the
    reference's, and every light stays within its proven bounds."""
    res = evaluate(c.net, [seq])
    levels = None
    for t, x in enumerate(seq):
        levels = simulate(c, x, levels)
        for n in c.net.nodes:
            assert levels[c.value_light[n.id]] == res.value[0, t, n.id], (t, n.name)
        for light in c.lights:
            assert light.lo <= levels[light.tag] <= light.hi


def test_product_lowering_is_exact_everywhere():
    from dsl.parser import parse

    net = parse("input a : -7..9\ninput b : -5..6\nneuron p : product(a, b)\noutput p", "p.dnet")
    low = lower_products(net)
    xs = [[a, b] for a in range(-7, 10) for b in range(-5, 7)]
    assert evaluate(low, xs).last_outputs()[:, 0].tolist() == [a * b for a, b in xs]


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10**6), st.lists(st.integers(1, 6), min_size=2, max_size=4),
       st.sampled_from([(0, 1), (0, 3), (-3, 3), (-2, 7)]),
       st.sampled_from([("relu",), ("step",), ("lut",), ("relu", "step", "lut", "identity")]),
       st.sampled_from(["identity", "relu", "lut", "step"]))
def test_random_networks_lower_exactly(seed, sizes, in_range, gates, out_gate):
    net = mlp(seed, sizes, in_range=in_range, gates=gates, out_gate=out_gate)
    _check(net, _inputs(net, 10, seed))


@pytest.mark.parametrize("gate,lo,hi", [
    (Relu(4, 7), -50, 43), (Relu(1, 3), 2, 9), (Relu(3, 5), -9, -1),
    (Step(2), -3, 5), (Step(-4), -3, 5), (Lut(-2, (5, 0, 0, 7, 1)), -6, 6),
])
def test_staircase_matches_gate(gate, lo, hi):
    from dsl.reference import gate_value

    base, doors = staircase(gate, lo, hi)
    thresholds = [t for t, _ in doors]
    assert thresholds == sorted(set(thresholds))
    for v in range(lo, hi + 1):
        assert base + sum(d for t, d in doors if v >= t) == gate_value(gate, v)


def test_identity_neurons_have_no_lane_and_compose_weights():
    from dsl.parser import parse

    net = parse("input x[2] : 0..3\nneuron i : identity = 2*x[0] - x[1] + 1\n"
                "neuron r : relu(s=1, max=20) = 3*i + 2\noutput r", "id.dnet")
    c = lower(net)
    lane_nodes = {c.net.nodes[l.node].name for l in c.lanes}
    assert lane_nodes == {"x[0]", "x[1]", "r"}
    r_acc = c.acc_light[c.net.by_name("r").id]
    x0 = next(l for l in c.lanes if c.net.nodes[l.node].name == "x[0]")
    assert dict(x0.doors[0].adds)[r_acc] == 6        # 3 * 2
    assert c.light(r_acc).reset == 3 * 1 + 2         # 3 * bias(i) + bias(r)


def test_weight_groups_share_lines_and_solo_connections_keep_theirs():
    from dsl.parser import parse

    net = parse("input x : 0..2\nneuron o[4] : identity\nlines x -> o dense [[1], [1], [1], [-2]]\n"
                "output o", "g.dnet")
    c = lower(net)
    # the lane may be cut into sub-lanes (mapgen/carry.py): they share its doors' lines
    doors = [d for ln in c.lanes for d in ln.doors]
    assert [len(d.lines) for d in doors] == [3, 3]   # value, the +1 group, the -2 one
    (group,) = c.groups.values()
    assert len(group) == 3
    c2 = lower(net, solo={("x", "o[1]")})
    doors = [d for ln in c2.lanes for d in ln.doors]
    assert [len(d.lines) for d in doors] == [4, 4]
    solo_tag = c2.acc_light[c2.net.by_name("o[1]").id]
    assert (solo_tag, 1) in doors[0].lines
    for circuit in (c, c2):
        for x in range(3):
            levels = simulate(circuit, [x])
            assert [levels[circuit.acc_light[circuit.net.by_name(f"o[{k}]").id]]
                    for k in range(4)] == [x, x, x, -2 * x]


def test_tags_are_placed_for_short_hash_chains():
    """A crossing walks its tag's bucket chain (tag % 256) through every sector's tag list
    (docs/physics.md, "Where a tic goes"): each light's group tags are in bucket order, so
    a chain's tags in one sector lie side by side; value lights (one line at every door
    passed) and door tags share the cold buckets, apart from the weight groups."""
    from mapgen import physics as P
    from mapgen.circuit import bucket_order

    c = lower(mlp(3, [6, 12, 8, 3], weight=2), place=False)
    assert c.groups, "the test needs weight groups"
    assert any(len(l.groups) > 1 for l in c.lights)
    for light in c.lights:
        assert light.groups == sorted(light.groups, key=bucket_order)
        assert P.cold(light.tag) == (light.role == "value"), (light.tag, light.role)
    assert not any(P.cold(g) for g in c.groups)
    assert all(P.cold(lane.door_tag) for lane in c.lanes)
    assert [P.cold(t) for t in (0, 31, 32, 255, 256, 287, 288)] == [True, True, False, False,
                                                                     True, True, False]
    assert sorted(bucket_order(t) for t in (300, 44, 556, 45)) == [(44, 44), (44, 300),
                                                                    (44, 556), (45, 45)]


def test_tags_are_placed_where_they_walk_least():
    """By default (mapgen/tags.py) the tags are moved between buckets while that lowers
    (walks a step) x (entries walked): the same machine, fewer entries walked, never more
    than the lowering's own numbering."""
    import random

    from mapgen import physics as P
    from mapgen import tags
    from mapgen.circuit import bucket_order

    for seed, sizes in ((1, [5, 40, 3]), (2, [3, 6, 60, 2]), (4, [30, 4])):
        net = mlp(seed, sizes, weight=3)   # wide layers: big groups, or many value lights
        e0, w0 = tags.load(lower(net, place=False))
        e1, w1 = tags.load(lower(net))
        assert tags.walk_cost(e1, w1) <= tags.walk_cost(e0, w0)   # never worse, by the count
    net = mlp(3, [6, 12, 8, 3], weight=2)
    for first in (1, 700):
        cold, placed = lower(net, first_tag=first, place=False), lower(net, first_tag=first)
        e0, w0 = tags.load(cold)
        e1, w1 = tags.load(placed)
        assert sorted(e0.values()) == sorted(e1.values())
        assert sorted(w0.values()) == sorted(w1.values())
        assert tags.walk_cost(e1, w1) < tags.walk_cost(e0, w0)
        every = set(e1) | set(w1)
        assert len(every) == len(set(e0) | set(w0))
        assert all(first <= t <= P.MAX_TAG - tags.RESERVED for t in every)
        assert min(every) == first    # modding/extract finds where a map's tags start
        for light in placed.lights:
            assert light.groups == sorted(light.groups, key=bucket_order)
        rng = random.Random(first)
        for _ in range(5):
            x = [rng.randint(0, 3) for _ in net.inputs]
            a, b = simulate(cold, x), simulate(placed, x)
            for n in net.nodes:
                if n.id in cold.acc_light:
                    assert a[cold.acc_light[n.id]] == b[placed.acc_light[n.id]]
                    assert a[cold.value_light[n.id]] == b[placed.value_light[n.id]]
