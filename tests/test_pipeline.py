"""Pipelined inference (program.plan_pipeline, checks.check_pipeline, MapRunner.infer_many)
and Ray (engine/cluster.py): overlapped inferences are exact, equal the simple schedule,
and a schedule that overlaps wrongly is refused by the static checks."""
import dataclasses
import glob
import os
import subprocess
import sys

import numpy as np
import pytest

from conftest import ROOT
from dsl import load
from dsl.diagnostics import CompileError
from dsl.random_net import mlp
from dsl.reference import evaluate
from engine.runner import MapRunner
from mapgen import program
from mapgen.checks import check_pipeline
from mapgen.compile import compile_netlist, write_wad

GATES = ("relu", "step", "lut", "identity")


def random_net(layers: int, seed: int):
    """A dense net of `layers` weight layers with a mix of gates (identity outputs)."""
    sizes = [3] + [4] * (layers - 1) + [2]
    return mlp(100 * layers + seed, sizes, gates=GATES, name=f"p{layers}_{seed}")


def inputs(net, n: int, seed: int) -> list[list[int]]:
    rng = np.random.default_rng(seed)
    r = net.input_ranges()
    xs = [[lo for lo, _ in r], [hi for _, hi in r]]
    return xs + [[int(rng.integers(lo, hi + 1)) for lo, hi in r] for _ in range(n - 2)]


def run_both(tmp_path, cm, xs):
    """(pipelined, simple) outputs of one map, and the engine tics each took."""
    path = str(tmp_path / f"{cm.circuit.net.name}.wad")
    write_wad(path, [cm])
    with MapRunner(path, cm.manifest) as r:
        t0 = r.tics
        piped = r.infer_many(xs, pipeline=True)
        t1 = r.tics
        simple = r.infer_many(xs, pipeline=False)
        return piped, simple, t1 - t0, r.tics - t1


# --------------------------------------------------------------------------- in the engine

@pytest.mark.parametrize("layers", [1, 2, 3, 4, 5])
@pytest.mark.parametrize("seed", [0, 1])
def test_pipelined_equals_reference_and_simple(tmp_path, layers, seed):
    net = random_net(layers, seed)
    cm = compile_netlist(net)
    xs = inputs(net, 12, seed)
    want = evaluate(net, xs).last_outputs().tolist()
    piped, simple, tics_p, tics_s = run_both(tmp_path, cm, xs)
    assert piped == want
    assert simple == want
    pipe = cm.schedule.pipeline
    assert pipe is not None and pipe.ii == 1  # a layered net overlaps one phase per beat
    if len(cm.schedule.phases) > 1:
        assert tics_p < tics_s


@pytest.mark.parametrize("layers, n", [(1, 7), (3, 23), (5, 30)])
def test_batches_of_beats_equal_single_beats_and_the_reference(tmp_path, layers, n):
    """The batch script runs k overlapping beats per round trip: outputs equal one beat per
    round trip, the simple schedule and the reference, for n not a multiple of k (a short
    last batch, the drain inside a batch), and the engine takes the tics the batch period
    predicts, fewer than single beats."""
    net = random_net(layers, layers + 10)
    cm = compile_netlist(net)
    k = cm.manifest["pipeline"]["batch"]
    assert k > 1 and n % k
    xs = inputs(net, n, layers)
    want = evaluate(net, xs).last_outputs().tolist()
    path = str(tmp_path / "b.wad")
    write_wad(path, [cm])
    with MapRunner(path, cm.manifest) as r:
        t0 = r.tics
        assert r.infer_many(xs, batch=1) == want
        t1 = r.tics
        assert r.infer_many(xs) == want
        pipe = cm.manifest["pipeline"]
        beats = n + max(pipe["lags"])
        sizes = [min(k, beats - b) for b in range(0, beats, k)]
        assert t1 - t0 == beats * (pipe["beat_tics"] + 1)
        assert r.tics - t1 == sum(1 + (m - 1) * pipe["batch_period"] + pipe["beat_tics"]
                                  for m in sizes)
        assert pipe["batch_period"] < pipe["beat_tics"] + 1
        assert r.infer_many(xs, batch=3) == want
        assert r.infer_many(xs, pipeline=False) == want


def _timed_statements(script: str) -> dict[int, list[tuple[int, str]]]:
    """Statements of a generated script by batch beat (0 outside `if (n > j)` blocks):
    (tic, text), the tic counted by its Delays; inputs and USER slots named by position
    within their beat."""
    import re

    out: dict[int, list] = {}
    tic, beat = 0, 0
    for line in script.splitlines():
        line = line.split("//", 1)[0].strip()
        if m := re.fullmatch(r"Delay\((\d+)\);", line):
            tic += int(m[1])
        elif m := re.fullmatch(r"if \(n > (\d+)\)", line):
            beat = int(m[1])
        elif line == "}":
            beat = 0
        elif line and line != "{" and "ack = seq" not in line:
            out.setdefault(beat, []).append((tic, line))
    return out


def test_batch_beats_run_script_4_batch_period_apart():
    """Each beat j of the batch script is script 4's statements, batch_period * j tics
    later: the beats check_pipeline proves, overlapped as fit_batch_period chose."""
    import re

    from mapgen.program import SCRIPT_BATCH, SCRIPT_PIPE

    cm = compile_netlist(random_net(3, 5))
    pipe, k = cm.manifest["pipeline"], cm.manifest["pipeline"]["batch"]
    n_in, n_out = len(cm.circuit.net.inputs), len(pipe["lags"])
    acs = cm.acs
    one = acs[acs.index(f"script {SCRIPT_PIPE} (int seq)"):]
    one = _timed_statements(one[one.index("{") + 1:one.index("ack = seq;")])[0]
    batch = acs[acs.index(f"script {SCRIPT_BATCH} (int seq, int n)"):]
    beats = _timed_statements(batch[batch.index("{") + 1:batch.index("ack = seq;\n")])
    assert sorted(beats) == list(range(k))
    for j, got in beats.items():
        def local(m, j=j):
            return (f"inputs[{int(m[1]) - j * n_in}]" if m[0].startswith("queue")
                    else f"user{int(m[2]) - j * n_out}")
        got = [(t - j * pipe["batch_period"], re.sub(r"queue\[(\d+)\]|user(\d+)", local, s))
               for t, s in got]
        assert got == one
    assert pipe["batch_period"] < cm.schedule.pipeline.period


@pytest.mark.parametrize("name, ii", [("softmax", 2), ("rmsnorm", 3)])
def test_skip_connections_pipeline_with_a_longer_interval(tmp_path, name, ii):
    """A light written by two phases stays busy for longer: the beat gets more slots."""
    net = load(os.path.join(ROOT, "circuits", f"{name}.dnet"))
    cm = compile_netlist(net)
    assert cm.schedule.pipeline.ii == ii
    xs = inputs(net, 8, 3)
    piped, simple, _, _ = run_both(tmp_path, cm, xs)
    assert piped == simple == evaluate(net, xs).last_outputs().tolist()


def _wrong_softmax():
    """softmax with the beat interval forced to 1 slot: its quarter-square lights are read
    two phases after their first writers, so inferences overlap on them."""
    cm = compile_netlist(load(os.path.join(ROOT, "circuits", "softmax.dnet")))
    cm.schedule.pipeline = program.plan_pipeline(cm.layout, cm.schedule, ii=1)
    return cm


def test_checks_refuse_a_wrong_overlap_that_the_engine_gets_wrong(tmp_path):
    cm = _wrong_softmax()
    problems = check_pipeline(cm.layout, cm.schedule)
    assert problems and all("pipelined beat" in p.message for p in problems)
    assert any("while inference" in p.message for p in problems)
    # ... and the schedule the checks refuse really computes wrong answers in the engine.
    src = program.acs_source(cm.layout, cm.schedule, "wrong")
    from mapgen.compile import compile_acs
    cm.behavior = compile_acs(src, "wrong.acs")
    cm.manifest = program.manifest(cm.layout, cm.schedule, "wrong")
    net = cm.circuit.net
    xs = inputs(net, 10, 5)
    piped, simple, _, _ = run_both(tmp_path, cm, xs)
    want = evaluate(load(os.path.join(ROOT, "circuits", "softmax.dnet")), xs).last_outputs()
    assert simple == want.tolist()
    assert piped != simple


# ------------------------------------------------------------------------- static checks

def test_compile_refuses_a_wrong_pipeline(monkeypatch):
    plan = program.plan_pipeline
    monkeypatch.setattr(program, "plan_pipeline", lambda lay, s: plan(lay, s, ii=1))
    with pytest.raises(CompileError) as e:
        compile_netlist(load(os.path.join(ROOT, "circuits", "softmax.dnet")))
    assert "pipelined beat: the acc light of" in str(e.value)


def _with_events(cm, change):
    """cm's schedule with one event of its beat replaced: change(events) -> events."""
    good = cm.schedule.pipeline
    sched = dataclasses.replace(cm.schedule)
    sched.pipeline = dataclasses.replace(good, events=change(list(good.events)))
    return check_pipeline(cm.layout, sched)


def _moved(kind, lane_pick, delta):
    def change(events):
        k = next(i for i, e in enumerate(events) if e.kind == kind and lane_pick(e))
        events[k] = dataclasses.replace(events[k], tic=events[k].tic + delta)
        return events
    return change


@pytest.fixture(scope="module")
def mlp3():
    # whole lanes: rides of several tics, for the faults below to be made in (the pipelines
    # of the default compiles, sub-lanes and all, are checked by test_good_pipelines_pass)
    return compile_netlist(load(os.path.join(ROOT, "circuits", "mlp3.dnet")), split=False)


def test_good_pipelines_pass(mlp3):
    """The other circuits' compiles (run_all checks their pipelines; the beat's presence
    is asserted where tests/test_program.py compiles each of them) are not made again."""
    assert check_pipeline(mlp3.layout, mlp3.schedule) == []
    for path in sorted(glob.glob(os.path.join(ROOT, "circuits", "mnist*.dnet"))):
        cm = compile_netlist(load(path))  # run_all includes check_pipeline
        # A run of steps (spiking, recurrent) goes step by step: no pipelined beat.
        assert (cm.schedule.pipeline is None) == cm.circuit.net.multi_step, path


def test_a_doll_parked_before_it_stopped_is_caught(mlp3):
    p = _with_events(mlp3, _moved("park", lambda e: True, -2))
    assert len(p) == 1 and "parked at tic" in p[0].message and "may ride until" in p[0].message


def test_doors_moved_under_a_riding_doll_are_caught(mlp3):
    h = next(i for i, g in enumerate(mlp3.layout.lanes) if g.lane.phase == 1)
    p = _with_events(mlp3, _moved("copy", lambda e: e.what == h, +3))
    assert any("doors move at tics" in d.message and "blocks the move" in d.message for d in p)


def test_a_doll_released_before_its_doors_land_is_caught(mlp3):
    h = next(i for i, g in enumerate(mlp3.layout.lanes) if g.lane.phase == 1)
    p = _with_events(mlp3, _moved("release", lambda e: e.what == h, -1))
    assert any("doors move at tics" in d.message for d in p)
    assert any("reset at tic" in d.message for d in p)  # its lights were still being freed


def test_two_moves_of_one_plane_are_caught(mlp3):
    def twice(events):
        e = next(e for e in events if e.kind == "copy")
        return sorted(events + [dataclasses.replace(e, order=e.order + 1)],
                      key=lambda e: (e.tic, e.order))
    p = _with_events(mlp3, twice)
    assert any("second plane move" in d.message for d in p)


def test_a_beat_too_short_is_caught(mlp3):
    """A beat that ends before its slowest doll is back: the next release comes too early."""
    good = mlp3.schedule.pipeline
    sched = dataclasses.replace(mlp3.schedule)
    last = max(e.tic for e in good.events if e.kind == "park")
    sched.pipeline = dataclasses.replace(good, beat_tics=good.beat_tics - (last - 2))
    p = check_pipeline(mlp3.layout, sched)
    # caught as a doll not back by the next release, or (short lanes: a beat of 2 tics)
    # as the next writes moving doors while it still rides
    assert any("before it is back" in d.message or "while its doll rides" in d.message
               for d in p), [d.message for d in p]


def test_spiking_nets_are_not_pipelined():
    cm = compile_netlist(load(os.path.join(ROOT, "circuits", "spike_counter.dnet")))
    assert cm.schedule.pipeline is None and cm.manifest["pipeline"] is None
    assert "script 4 " not in cm.acs


# ------------------------------------------------------------------------------ commands

def cli(*args):
    return subprocess.run([sys.executable, os.path.join(ROOT, "build.py"), *args],
                          capture_output=True, text=True, env={**os.environ, "VOODOO_QUIET": "1"})


def test_run_tiled_pipelined_and_simple(tmp_path):
    hello = os.path.join(ROOT, "circuits", "hello.dnet")
    out = []
    for flag in ([], ["--no-pipeline"]):
        r = cli("run", hello, "--random", "9", "--tiles", "2", "-o", str(tmp_path / "h.wad"),
                *flag)
        assert r.returncode == 0, r.stderr
        assert r.stdout.splitlines()[-1] == "9/9 EXACT"
        out.append(r.stdout.splitlines()[1:])
    assert out[0] == out[1]


def test_bad_workers_is_a_clear_error(tmp_path):
    r = cli("run", os.path.join(ROOT, "circuits", "xor.dnet"), "--random", "3", "--tiles", "1",
            "--workers", "0", "-o", str(tmp_path / "x.wad"))
    assert r.returncode != 0 and "--workers 0" in r.stderr and "Traceback" not in r.stderr


def test_a_ray_address_where_nothing_answers_is_a_clear_error(tmp_path):
    """Ray itself would retry for minutes; the run says what is wrong at once."""
    xor = os.path.join(ROOT, "circuits", "xor.dnet")
    for address, says in [("127.0.0.1:1", "no Ray head answers there"),
                          ("nonsense", "HOST:PORT")]:
        r = cli("run", xor, "--random", "3", "--ray", address, "-o", str(tmp_path / "x.wad"))
        assert r.returncode == 1 and says in r.stderr and "Traceback" not in r.stderr


NO_RAY = """
import sys
sys.path.insert(0, {root!r})
import build
for name, (module, _) in build.COMMANDS.items():
    __import__(module)
import demos.mnist, engine.cluster, engine.tiled, engine.runner
rc = build.main(["run", {xor!r}, "--random", "4", "-o", {wad!r}])
assert rc == 0, rc
print("ray" in sys.modules, sorted(m for m in sys.modules if m.split(".")[0] == "ray"))
"""


def test_nothing_imports_ray_without_the_flag(tmp_path):
    code = NO_RAY.format(root=ROOT, xor=os.path.join(ROOT, "circuits", "xor.dnet"),
                         wad=str(tmp_path / "x.wad"))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env={**os.environ, "VOODOO_QUIET": "1"})
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[-1] == "False []"


# ----------------------------------------------------------------------------------- Ray

def test_ray_twenty_mnist_digits_equal_the_local_run(tmp_path):
    import ray

    from engine.cluster import run_engines, start_local
    from mapgen.tiles import compile_tiles, plan_tiles
    from models.datasets import load_split
    from models.quantize import load_mnist_small

    net, transform = load_mnist_small()
    split = load_split()
    X = transform(split.test_images[np.random.default_rng(0).permutation(2000)[:20]]).tolist()
    tiles = plan_tiles(net, n_tiles=2)
    maps = compile_tiles(tiles, "MNIST small")
    wad = str(tmp_path / "mnist.wad")
    write_wad(wad, maps, net, tiles)
    infos = [m.manifest for m in maps]
    local, _ = run_engines(wad, infos, tiles, net, X, workers=2, chunk=5)
    start_local(ray, num_cpus=2)
    try:
        remote, tics = run_engines(wad, infos, tiles, net, X, workers=2, ray="auto", chunk=5)
    finally:
        ray.shutdown()
    assert remote == local == evaluate(net, X).last_outputs().tolist()
    assert tics > 0


def test_the_batch_period_is_tight(tmp_path, monkeypatch):
    """fit_batch_period's interval is the shortest that works: one tic shorter, the checks
    refuse it, and the engine running it anyway gets answers wrong."""
    from mapgen import checks
    from mapgen import compile as mc

    fit = checks.fit_batch_period

    def one_short(layout, sched):
        fit(layout, sched)
        sched.pipeline.batch_period -= 1

    net = load(os.path.join(ROOT, "circuits", "mlp3.dnet"))
    monkeypatch.setattr(mc, "run_all", one_short)  # compile without the proof
    cm = compile_netlist(net)
    assert any("while its doll rides" in d.message
               for d in check_pipeline(cm.layout, cm.schedule))
    xs = inputs(net, 20, 4)
    want = evaluate(net, xs).last_outputs().tolist()
    path = str(tmp_path / "short.wad")
    write_wad(path, [cm])
    with MapRunner(path, cm.manifest) as r:
        got = r.infer_many(xs)
        assert r.infer_many(xs, batch=1) == want  # single beats keep the runner's period
    assert sum(g != w for g, w in zip(got, want)) > len(xs) // 2


# -- issue 25 item 2: neurons without doors whose sums come from two phases -----------------
CONSTGATE = """network constgate
input x : 0..3
neuron a : relu(s=1, max=5) = x + 1
neuron b : relu(s=1, max=9) = a + 1
"""


@pytest.mark.parametrize("tail", [
    "neuron y : step(t=1) = a + b\noutput y",                        # a gate kept constant
    "neuron dead : identity = a + b\nneuron y : identity = b - a\noutput y",  # read by nobody
    "neuron c : lut(0..20, [4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4])"
    " = a + b\nneuron y : identity = b + c\noutput y",                 # a constant lut
    "neuron dead : max(a, b)\nneuron y : identity = b\noutput y",      # a dead max
])
def test_lights_nobody_reads_in_the_beat(tmp_path, tail):
    net = load_text(CONSTGATE + tail)
    cm = compile_netlist(net)  # the planner used to refuse these (so did --no-pipeline)
    xs = [[0], [3], [1], [2], [3], [0], [2]]
    want = evaluate(net, xs).last_outputs().tolist()
    piped, simple, _, _ = run_both(tmp_path, cm, xs)
    assert piped == want and simple == want


@pytest.mark.parametrize("seed", range(6))
def test_random_nets_with_dead_and_constant_neurons(tmp_path, seed):
    """Random MLPs with dead identities and maxes and constant steps and luts fed from two
    layers: pipelined, batched and one at a time equal the reference, and a debug read of
    every light after a one-at-a-time inference is exact (their lights are still kept)."""
    from dsl.random_net import with_dead_and_constant
    from engine.runner import _first_divergence, reference_labels

    net = with_dead_and_constant(seed, [3, 4, 4, 2], gates=GATES)
    cm = compile_netlist(net)
    xs = inputs(net, 11, seed)
    want = evaluate(net, xs).last_outputs().tolist()
    path = str(tmp_path / "d.wad")
    write_wad(path, [cm])
    with MapRunner(path, cm.manifest) as r:
        assert r.infer_many(xs) == want
        assert r.infer_many(xs, batch=1) == want
        assert r.infer_many(xs, pipeline=False) == want
        lowered = cm.circuit.net
        assert _first_divergence(lowered, r.read_all(), reference_labels(net, lowered, xs[-1])) \
            is None


def load_text(text: str):
    from dsl.parser import parse

    return parse(text, "constgate.dnet")
