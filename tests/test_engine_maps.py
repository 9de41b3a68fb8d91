"""Compiled networks in the engine: every output and every intermediate equals the reference.

Each map is built by the real pipeline, run in ViZDoom, and read back in debug mode (every
accumulator and value light), compared with `==` against the integer reference.
"""
import glob
import os
import random

import pytest

from conftest import NEEDS_TILES, ROOT
from dsl import load
from dsl.lower import lower_products
from dsl.random_net import mlp
from mapgen.compile import compile_netlist, write_wad
from engine.runner import MapRunner, reference_labels

CIRCUITS = [p for p in sorted(glob.glob(os.path.join(ROOT, "circuits", "*.dnet")))
            if "spike" not in p and "mnist" not in p
            and os.path.basename(p) not in NEEDS_TILES]   # one map each


def edge_and_random_inputs(net, n, seed):
    rng = random.Random(seed)
    r = net.input_ranges()
    xs = [[lo for lo, _ in r], [hi for _, hi in r]]
    xs += [[rng.randint(lo, hi) for lo, hi in r] for _ in range(n)]
    xs.append([rng.choice((lo, hi)) for lo, hi in r])  # a mix of edges
    return xs


def run_exact(tmp_path, net, xs, name="net.wad", carry="glide", split=True):
    cm = compile_netlist(net, carry=carry, split=split)
    path = os.path.join(str(tmp_path), name)
    write_wad(path, [cm])
    low = lower_products(net)
    from dsl.reference import evaluate
    ref = evaluate(net, xs).last_outputs().tolist()
    with MapRunner(path, cm.manifest) as runner:
        for x, want in zip(xs, ref):
            got = runner.infer(x)
            assert got == want, f"outputs for {x}"
            every = runner.read_all()
            expected = reference_labels(net, low, x)
            assert every == {k: expected[k] for k in every}, f"intermediates for {x}"
            assert len(every) == len(expected)
    return cm


@pytest.mark.parametrize("path", CIRCUITS, ids=os.path.basename)
def test_circuit_in_engine(tmp_path, path):
    net = load(path)
    if net.multi_step:  # a run of 16 steps, every light read back at every step
        from dsl.sequence import plan_steps, random_sequence
        from engine.runner import compare_sequence

        cm = compile_netlist(net)
        wad = os.path.join(str(tmp_path), "seq.wad")
        write_wad(wad, [cm])
        with MapRunner(wad, cm.manifest) as runner:
            got = compare_sequence(runner, net, lower_products(net),
                                   plan_steps(net, random_sequence(net, 16, 11), 16), debug=True)
        assert got and all(c.exact for c in got), path
        return
    run_exact(tmp_path, net, edge_and_random_inputs(net, 4, 11))


GATE_MIXES = [("relu",), ("step",), ("lut",), ("relu", "step", "lut", "identity")]
RANGES = [(0, 1), (0, 3), (-3, 3), (-2, 7), (0, 15)]


@pytest.mark.parametrize("seed", range(50))
def test_random_network_in_engine(tmp_path, seed):
    rng = random.Random(seed)
    sizes = [rng.randint(1, 7) for _ in range(rng.randint(2, 4))]
    net = mlp(seed, sizes, in_range=rng.choice(RANGES), weight=rng.randint(1, 6),
              gates=rng.choice(GATE_MIXES), out_gate=rng.choice(["identity", "relu", "lut", "step"]))
    run_exact(tmp_path, net, edge_and_random_inputs(net, 2, seed))


def test_museum_and_tiled_wads_are_deterministic(tmp_path):
    from demos.museum import build
    from mapgen.tiles import compile_tiles, plan_tiles
    a, b = tmp_path / "a.wad", tmp_path / "b.wad"
    for path in (a, b):
        mm = build()
        write_wad(str(path), [mm.compiled], mm.net)
    assert a.read_bytes() == b.read_bytes()
    net = load(os.path.join(ROOT, "circuits", "mlp3.dnet"))
    for path in (a, b):
        tiles = plan_tiles(net, n_tiles=3)
        write_wad(str(path), compile_tiles(tiles, "mlp3"), net, tiles)
    assert a.read_bytes() == b.read_bytes()


def wide_net(seed):
    rng = random.Random(1000 + seed)
    sizes = [rng.randint(2, 6) for _ in range(rng.randint(2, 4))]
    return mlp(1000 + seed, sizes, in_range=rng.choice([(0, 15), (-8, 15)]),
               weight=rng.randint(6, 12), zero_fraction=0.05,
               gates=rng.choice([("relu",), ("lut",), ("relu", "lut")]),
               out_gate=rng.choice(["relu", "lut"]), wide=True)


@pytest.mark.parametrize("seed", range(12))
def test_random_wide_network_in_engine(tmp_path, seed):
    """Large requantisation divisors and sparse lookup tables: doors far apart, ramps."""
    net = wide_net(seed)
    run_exact(tmp_path, net, edge_and_random_inputs(net, 3, seed))


def test_wide_networks_do_climb_ramps():
    """In the conveyor geometry a rise too high for one step is a ramp of stairs; gliding
    lanes rise in one step (steep: the WAD's player class steps that high)."""
    ramps = sum(s.kind == "ramp" for seed in range(12)
                for g in compile_netlist(wide_net(seed), carry="conveyor").layout.lanes
                for s in g.segments)
    assert ramps >= 30, ramps
    # whole lanes (split=False): sub-lanes of one door each have no rise to climb
    steep = [compile_netlist(wide_net(seed), split=False) for seed in range(12)]
    assert not any(s.kind == "ramp" for cm in steep for g in cm.layout.lanes
                   for s in g.segments)
    assert sum(cm.step_height > 24 for cm in steep) >= 6, [cm.step_height for cm in steep]


def test_same_input_builds_identical_wads(tmp_path):
    net = load(os.path.join(ROOT, "circuits", "hello.dnet"))
    a, b = tmp_path / "a.wad", tmp_path / "b.wad"
    write_wad(str(a), [compile_netlist(net)])
    write_wad(str(b), [compile_netlist(load(os.path.join(ROOT, "circuits", "hello.dnet")))])
    assert a.read_bytes() == b.read_bytes()


def test_spiking_sequences_in_engine(tmp_path):
    """A spiking netlist over its time steps: membranes persist between steps and a new
    sequence starts them afresh; every value and membrane exact at every step."""
    from dsl.reference import evaluate
    net = load(os.path.join(ROOT, "circuits", "spike_counter.dnet"))
    seqs = [[[1], [1], [1], [1], [0], [1], [1], [0], [1]], [[0]] * 9, [[1]] * 9,
            [[1], [0], [1], [1], [1], [0], [0], [1], [1]]]
    run_sequences_exact(tmp_path, net, seqs)


def run_sequences_exact(tmp_path, net, seqs, name="seq.wad"):
    """Each sequence from a fresh start, every output and light exact at every step;
    returns the last step's outputs of each sequence."""
    from dsl.reference import evaluate
    cm = compile_netlist(net)
    path = os.path.join(str(tmp_path), name)
    write_wad(path, [cm])
    low = lower_products(net)
    last = []
    with MapRunner(path, cm.manifest) as runner:
        for xs in seqs:
            ref = evaluate(net, [xs])
            for t, x in enumerate(xs):
                got = runner.infer(x, first=(t == 0))
                assert got == ref.value[0, t, net.outputs].tolist(), (xs, t)
                every = runner.read_all()
                want = reference_labels(net, low, xs, step=t)
                assert every == {k: want[k] for k in every} and len(every) == len(want)
            last.append(got)
    return last


def test_wide_requantisation_climbs_ramps_exactly(tmp_path):
    """Door thresholds far apart (relu s=30 and 100, a lut with sparse steps, a step gate
    far from zero) need ramps of stairs between doors; every value still exact."""
    from dsl.parser import parse
    net = parse("""
        input x[3] : 0..15
        neuron a : relu(s=30, max=6) = 9*x[0] + 5*x[1] - 3*x[2] + 11
        neuron b : relu(s=100, max=3) = 20*x[0] + 13*x[2] - 40
        neuron c : lut(-100..100, [""" + ", ".join(
            str(0 if v < -37 else 5 if v < 12 else -2 if v < 61 else 9) for v in range(-100, 101))
        + """]) = 7*x[1] - 3*x[0] - 20
        neuron d : step(t=150) = 11*x[2] + 4*x[1]
        neuron o[2] : identity
        lines a -> o sparse { 0 -> 0 : 3 }
        bias o = [1, -2]
        neuron y : identity = a - 2*b + c + 5*d
        output y, a, b, c, d
    """, "ramps.dnet")
    xs = edge_and_random_inputs(net, 10, 5) + [[15, 0, 0], [0, 15, 15], [7, 7, 7], [15, 15, 0]]
    cm = run_exact(tmp_path, net, xs, "conveyor.wad", carry="conveyor")
    assert any(s.kind == "ramp" for g in cm.layout.lanes for s in g.segments)
    run_exact(tmp_path, net, xs, "glide.wad")   # sub-lanes where the cost model cuts
    # whole lanes, steep: one step of up to step_height
    cm = run_exact(tmp_path, net, xs, "whole.wad", split=False)
    assert cm.step_height > 24 and not any(s.kind == "ramp" for g in cm.layout.lanes
                                            for s in g.segments)


def test_leak_after_reset_above_the_input_range(tmp_path):
    """Issue 15 item 24: reset=2 lies above the membrane's integration range 0..1; the leak
    lane must still subtract the whole leak from it (the engine fired 1,1,1, not 1,0,0)."""
    from dsl.parser import parse
    net = parse("network leakreset\nsteps 3\ninput x : 0..1\n"
                "neuron s : spike(threshold=1, leak=3, reset=2) = x\noutput s\n", "lr.dnet")
    assert net.state_range[net.by_name("s").id].hi >= 2
    run_sequences_exact(tmp_path, net, [[[1], [0], [0]], [[1], [1], [0]], [[0], [0], [1]]])


@pytest.mark.parametrize("seed", range(8))
def test_random_spiking_layers_with_wide_leak_and_reset_in_engine(tmp_path, seed):
    """Random spiking layers whose leaks, resets and initial membranes exceed what the
    inputs alone would put in the membrane: all exact at every step."""
    from dsl.random_net import spiking
    rng = random.Random(500 + seed)
    steps = rng.randint(3, 6)
    net = spiking(500 + seed, n_in=rng.randint(1, 3), n_out=rng.randint(2, 4), steps=steps,
                  in_range=rng.choice([(0, 1), (0, 3), (-2, 3)]), leak=rng.randint(3, 9),
                  reset=rng.randint(4, 12), init=rng.randint(0, 8))
    ranges = net.input_ranges()
    seqs = [[[lo for lo, _ in ranges]] * steps, [[hi for _, hi in ranges]] * steps]
    seqs += [[[rng.randint(lo, hi) for lo, hi in ranges] for _ in range(steps)]
             for _ in range(3)]
    run_sequences_exact(tmp_path, net, seqs)
