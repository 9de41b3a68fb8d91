"""Two-sided lanes (mapgen.circuit.plan_pivots): a lookup or prev node's doors at or below
its pivot ride a second lane counting down on a mirror light. The same values as one lane
(simulated for arbitrary pivots, and in the engine), fewer crossings, and the tile
planner counts their dolls."""
import os
import random
import sys

import pytest

from dsl.ir import Lut, Prev
from dsl.lower import lower_products
from dsl.random_net import mlp, recurrent
from dsl.reference import evaluate
from dsl.sequence import random_sequence
from mapgen.circuit import lower, simulate

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import crossings as C  # noqa: E402
from test_circuit import check_lowered_run  # noqa: E402


def _random_pivots(net, rng) -> dict[str, int]:
    """A pivot anywhere in (and a little beyond) each lookup's and prev node's range."""
    low = lower_products(net)
    out = {}
    for n in low.nodes:
        if isinstance(n.gate, (Lut, Prev)) and not n.is_input:
            r = low.value_range[n.id] if n.is_prev else low.acc_range[n.id]
            out[n.name] = rng.randint(r.lo - 2, r.hi + 2)
    return out


@pytest.mark.parametrize("seed", range(12))
def test_any_pivot_computes_what_one_lane_does(seed):
    rng = random.Random(seed)
    if seed % 2:
        net = recurrent(seed, n_hidden=5, feedback=seed % 4 == 1)
        seqs = [random_sequence(net, 12, seed)]
    else:
        net = mlp(seed, [4, 6, 5, 3], gates=("lut",), out_gate="lut", wide=seed % 4 == 0)
        seqs = [[[rng.randint(net.nodes[i].gate.lo, net.nodes[i].gate.hi) for i in net.inputs]]
                for _ in range(8)]
    c = lower(net, pivots=_random_pivots(net, rng), split=seed % 3 == 0)
    assert any(lane.negated for lane in c.lanes)
    for seq in seqs:
        check_lowered_run(c, seq)


def test_a_pivot_at_the_constant_cuts_a_symmetric_lookup_s_crossings():
    from dsl.parser import parse

    sq = ", ".join(str(u * u) for u in range(-9, 10))
    net = parse("steps 20\ninput x : -4..4\ninput y : -5..5\n"
                f"neuron q : lut(-9..9, [{sq}]) = x + y\noutput q\n")
    seq = random_sequence(net, 20, 3)
    one, two = lower(net, split=False), lower(net, pivots=True, split=False)
    assert len(two.lanes) == len(one.lanes) + 1
    n_one, n_two = {}, {}
    s1 = s2 = None
    for x in seq:
        s1, s2 = simulate(one, x, s1, n_one), simulate(two, x, s2, n_two)
    q = net.by_name("q").id
    # the two sides never both ride: the value light's proven range stays 0..81
    assert [(li.lo, li.hi) for li in two.lights if li.tag == two.value_light[q]] == [(0, 81)]
    assert n_two[q] == sum(abs(a + b) for a, b in seq)      # |x + y|, counted from 0
    assert n_one[q] == sum(a + b + 9 for a, b in seq)       # from the bottom of the range
    assert sum(n_one.values()) == sum(C.crossings(net, seq).values())


def test_the_planner_counts_the_second_lane():
    from mapgen.tiles import estimate

    net = recurrent(5, n_hidden=5)
    for pivots in (False, True):
        c = lower(net, pivots=pivots, split=False)
        assert estimate(net, pivots=pivots).dolls == len(c.lanes), pivots


@pytest.mark.parametrize("seed", [1, 2])
def test_two_sided_lanes_in_the_engine(tmp_path, seed):
    """Every light read back at every step of a run, prev lanes two-sided included."""
    from dsl.sequence import plan_steps
    from engine.runner import MapRunner, compare_sequence
    from mapgen.compile import compile_netlist, write_wad

    net = recurrent(seed + 20, n_hidden=5, feedback=seed == 2)
    cm = compile_netlist(net, pivots=_random_pivots(net, random.Random(seed)))
    assert any(lane.negated for lane in cm.circuit.lanes)
    wad = os.path.join(str(tmp_path), "pivots.wad")
    write_wad(wad, [cm])
    with MapRunner(wad, cm.manifest) as runner:
        got = compare_sequence(runner, net, lower_products(net),
                               plan_steps(net, random_sequence(net, 10, seed), 10), debug=True)
    assert got and all(c.exact for c in got)


def test_a_two_sided_lookup_in_the_engine(tmp_path):
    from engine.runner import MapRunner
    from mapgen.compile import compile_netlist, write_wad

    net = mlp(7, [3, 5, 4], gates=("lut",), in_range=(-3, 3), out_gate="lut")
    cm = compile_netlist(net, pivots=True)
    assert any(lane.negated for lane in cm.circuit.lanes)
    wad = os.path.join(str(tmp_path), "lut.wad")
    write_wad(wad, [cm])
    rng = random.Random(7)
    xs = [[rng.randint(-3, 3) for _ in range(3)] for _ in range(6)]
    want = evaluate(net, xs).last_outputs().tolist()
    with MapRunner(wad, cm.manifest) as runner:
        assert [runner.infer(x) for x in xs] == want


def test_extract_refuses_two_sided_lanes_by_name(tmp_path):
    from mapgen.compile import compile_netlist, write_wad
    from modding.extract import ExtractError, extract_wad

    net = recurrent(4, n_hidden=5)
    cm = compile_netlist(net, pivots=_random_pivots(net, random.Random(4)))
    wad = str(tmp_path / "two.wad")
    write_wad(wad, [cm], net)
    with pytest.raises(ExtractError, match="two-sided"):
        extract_wad(wad)
