"""bench/crossings.py: the doors a run passes, counted from the reference's values, agree
with the lowered circuit's own simulation (mapgen.circuit.simulate) lane by lane."""
import os
import subprocess
import sys

import pytest

from dsl.random_net import mlp, recurrent
from dsl.sequence import random_sequence
from mapgen.circuit import lower, simulate

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import crossings as C  # noqa: E402


def _nonzero(counts: dict[int, int]) -> dict[int, int]:
    return {k: v for k, v in counts.items() if v}


def _simulated(net, seq) -> dict[int, int]:
    c = lower(net, split=False)
    passed: dict[int, int] = {}
    state = None
    for x in seq:
        state = simulate(c, x, state, passed)
    return passed


@pytest.mark.parametrize("seed", range(6))
def test_feed_forward_counts_match_the_simulated_map(seed):
    import random

    net = mlp(seed, [4, 6, 5, 3], gates=("relu", "step", "lut"))
    rng = random.Random(seed)
    for _ in range(5):
        x = [rng.randint(net.nodes[i].gate.lo, net.nodes[i].gate.hi) for i in net.inputs]
        assert _nonzero(C.crossings(net, [x])) == _simulated(net, [x])


@pytest.mark.parametrize("seed", range(6))
def test_runs_count_prev_lanes_and_fed_back_inputs_as_the_map_does(seed):
    net = recurrent(seed, n_hidden=4, feedback=seed % 2 == 1)
    seq = random_sequence(net, 12, seed)
    counted = C.crossings(net, seq)
    assert sum(counted.values()) > 0
    assert _nonzero(counted) == _simulated(net, seq)


def test_the_command_prints_the_total_of_its_counts():
    path = os.path.join(ROOT, "circuits", "hello.dnet")
    out = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "crossings.py"), path,
                          "--runs", "3"], capture_output=True, text=True, check=True).stdout
    from dsl.parser import parse_file

    import random

    net = parse_file(path)
    rng = random.Random(0)
    runs = [[rng.randint(net.nodes[i].gate.lo, net.nodes[i].gate.hi) for i in net.inputs]
            for _ in range(3)]
    total = sum(sum(C.crossings(net, [x]).values()) for x in runs)
    last = out.strip().splitlines()[-1]
    assert last.startswith(f"crossings: {total / 3:,.0f} a step"), out
