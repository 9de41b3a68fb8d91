"""GZDoom parity (issue 15 item 23): the same WADs in GZDoom and in ViZDoom compute the same
numbers, tic by tic.

The probe (engine/gzdoom.py: an ACS library loaded with -file, logging every tic) is tested
here in ViZDoom on every run. The parity tests need a GZDoom binary built from source
(docs/gzdoom.md) named by $GZDOOM; without it they skip, saying so. For hello, the museum and
a sample of MNIST digits they compare: the final outputs (GZDoom == ViZDoom == reference),
and on every tic of every inference, aligned on the tic each engine acknowledged it, every
light level and the floor and ceiling of every door sector.
"""
from __future__ import annotations

import os
import shutil
import warnings

import numpy as np
import pytest

from conftest import ROOT
from dsl import load
from dsl.reference import evaluate
from engine import gzdoom as gz
from engine.runner import reference_labels
from mapgen.compile import compile_netlist, write_wad

# Set but wrong is a failure (whoever set it expects the tests to run); unset is a loud skip.
GZDOOM = os.environ.get("GZDOOM", "")
if not GZDOOM:
    warnings.warn("GZDoom parity tests SKIPPED: set GZDOOM to a gzdoom binary built as in "
                  "docs/gzdoom.md")
needs_gzdoom = pytest.mark.skipif(
    not GZDOOM, reason="GZDOOM is not set: the GZDoom parity tests did NOT run (build GZDoom "
                       "with docs/gzdoom.md, then GZDOOM=/path/to/gzdoom)")


def _hello():
    net = load(os.path.join(ROOT, "circuits", "hello.dnet"))
    rng = np.random.default_rng(5)
    xs = [[int(rng.integers(lo, hi + 1)) for lo, hi in net.input_ranges()] for _ in range(4)]
    return net, compile_netlist(net), [[lo for lo, _ in net.input_ranges()]] + xs


def _museum():
    from demos.museum import build, pattern

    mm = build()
    return mm.net, mm.compiled, [pattern(d) for d in (7, 8, 1, 0)]


def _mnist():
    from models.datasets import load_split
    from models.quantize import load_mnist_small

    net, transform = load_mnist_small()
    split = load_split()
    pick = np.random.default_rng(0).permutation(len(split.test_labels))[:3]
    X = transform(split.test_images[pick])
    return net, compile_netlist(net), [[int(v) for v in row] for row in X]


MAPS = {"hello": _hello, "museum": _museum, "mnist": _mnist}


def _setup(tmp_path, name):
    net, cm, xs = MAPS[name]()
    wad, probe = str(tmp_path / f"{name}.wad"), str(tmp_path / "probe.wad")
    write_wad(wad, [cm])
    pm = gz.probe_map(cm.layout, len(cm.manifest["outputs"]))
    gz.write_probe(probe, pm)
    return net, cm, xs, wad, probe, pm


def test_probe_reads_every_light_as_the_reference_says(tmp_path):
    """The probe itself, in ViZDoom: at each acknowledged tic its ack and outputs are the
    runner's, and every light it logs holds the reference's accumulator or value."""
    net, cm, xs, wad, probe, pm = _setup(tmp_path, "hello")
    log, outs = gz.run_vizdoom(wad, probe, cm.manifest, xs)
    tr = gz.parse_log(log, pm)
    labels = {tag: label for batch in cm.schedule.read_batches for tag, label in batch}
    for seq, x in enumerate(xs, 1):
        row = tr.at(tr.ack_tic(seq))
        assert row["A"][2:] == outs[seq - 1]
        assert outs[seq - 1] == evaluate(net, [x]).last_outputs()[0].tolist()
        want = reference_labels(net, cm.circuit.net, x)
        got = {labels[tag]: v for tag, v in zip(pm.lights, row["L"]) if tag in labels}
        assert got and got == {k: want[k] for k in got}
    assert tr.ack_tic(2) > tr.ack_tic(1)


def _rest_gaps(tr, layout) -> list[float]:
    """How far short of the nearest stop point each doll rested whenever it stood still
    (x equal on two tics in a row), leaving out its parking point and tics before it had a
    TID (the probe reads x = 0 then)."""
    from mapgen import checks

    from mapgen import physics as P

    tics = sorted(tr.tics)
    gaps = []
    for i, g in enumerate(layout.lanes):
        stops = [x for x, _ in checks.stop_points(g)]
        # On gliding lanes a doll that finds a door closed bounces back west, and the
        # Thing_Stop of the next portal it crosses stops it within one tic's ride west of
        # that portal (it crosses lines only westward there, which never trigger them).
        portals = [s.x0 for s in g.segments[2:]] if g.glide else []
        xs = [tr.tics[t]["X"][i] / 65536 for t in tics]
        for a, b in zip(xs, xs[1:]):
            if a == b and a != 0 and a != g.start[0]:
                gap = min((s - a for s in stops), key=abs)
                if not 0 <= gap <= P.MOVE_SUBSTEP and any(
                        0 < p - a <= P.DOLL_SPEED for p in portals):
                    continue   # a bounced doll's rest
                gaps.append(gap)
    return gaps


def test_blocked_dolls_rest_within_one_substep_of_contact(tmp_path):
    """Item 21's model in ViZDoom: a doll stopped by a door or the end wall rests at most
    MOVE_SUBSTEP short of contact, never past it, so STOP_CLEARANCE keeps lines out of reach."""
    from mapgen import physics as P

    net, cm, xs, wad, probe, pm = _setup(tmp_path, "hello")
    log, _ = gz.run_vizdoom(wad, probe, cm.manifest, xs)
    gaps = _rest_gaps(gz.parse_log(log, pm), cm.layout)
    assert len(gaps) > 100
    assert all(0 <= gap <= P.MOVE_SUBSTEP for gap in gaps), sorted(gaps)[-5:]


def test_timeline_is_the_runners_pukes():
    info = {"init_tics": 24, "inference_tics": 23, "input_scripts": [10, 11], "infer_script": 2,
            "begin_script": None}
    line = gz.timeline(info, [[1, 2, 3, 4, -5], [0, 0, 0, 0, 0]], margin=10)
    assert line == ("wait 36; puke 10 1 2 3 4; puke 11 -5; puke 2 1; wait 34; "
                    f"puke 10 0 0 0 0; puke 11 0; puke 2 2; wait 34; wait {gz.TAIL}; quit")


def _compare(tr_gz, tr_vz, seq: int, window: int) -> list[str]:
    """Differences between the engines on the `window` tics up to each one's ack."""
    a, b = tr_gz.ack_tic(seq), tr_vz.ack_tic(seq)
    bad = []
    for d in range(window):
        ga, vb = tr_gz.at(a - d), tr_vz.at(b - d)
        for kind in ("A", "L", "C", "F"):
            if ga[kind] != vb[kind]:
                diff = [k for k, (u, v) in enumerate(zip(ga[kind], vb[kind])) if u != v]
                bad.append(f"inference {seq}, {d} tics before its ack: {kind}{diff[:5]} "
                           f"gzdoom {[ga[kind][k] for k in diff[:5]]} "
                           f"vizdoom {[vb[kind][k] for k in diff[:5]]}")
    return bad


@needs_gzdoom
@pytest.mark.parametrize("name", list(MAPS))
def test_gzdoom_equals_vizdoom_tic_by_tic(tmp_path, name):
    assert os.access(GZDOOM, os.X_OK), f"GZDOOM={GZDOOM} is not an executable"
    assert shutil.which("xvfb-run") or os.environ.get("DISPLAY"), "install xvfb (docs/gzdoom.md)"
    net, cm, xs, wad, probe, pm = _setup(tmp_path, name)
    info = cm.manifest
    log_vz, outs_vz = gz.run_vizdoom(wad, probe, info, xs)
    log_gz = gz.run_gzdoom(GZDOOM, wad, probe, gz.timeline(info, xs))
    tr_vz, tr_gz = gz.parse_log(log_vz, pm), gz.parse_log(log_gz, pm)
    ref = evaluate(net, xs).last_outputs().tolist()
    window = info["inference_tics"] + 1
    problems = []
    for seq in range(1, len(xs) + 1):
        outs_gz = tr_gz.at(tr_gz.ack_tic(seq))["A"][2:]
        assert outs_gz == outs_vz[seq - 1] == ref[seq - 1], f"inference {seq}"
        problems += _compare(tr_gz, tr_vz, seq, window)
    assert not problems, "\n".join(problems[:20])
    from mapgen import physics as P

    gaps = _rest_gaps(tr_gz, cm.layout)
    assert gaps and all(0 <= gap <= P.MOVE_SUBSTEP for gap in gaps), sorted(gaps)[-5:]
    _report_stops(name, cm, tr_gz, tr_vz, len(xs), window)


def _report_stops(name, cm, tr_gz, tr_vz, n, window):
    """Item 21's measurement, printed (pytest -s): where each engine rests a blocked doll,
    and how far apart the same doll is on the same tic of an inference. Lines keep STOP_CLEARANCE from every
    stop point, so none of this changes a count."""
    worst = 0.0
    for seq in range(1, n + 1):
        a, b = tr_gz.ack_tic(seq), tr_vz.ack_tic(seq)
        for d in range(window):
            xg, xv = tr_gz.at(a - d)["X"], tr_vz.at(b - d)["X"]
            worst = max(worst, max(abs(u - v) for u, v in zip(xg, xv)) / 65536)
    g, v = _rest_gaps(tr_gz, cm.layout), _rest_gaps(tr_vz, cm.layout)
    print(f"{name}: blocked dolls rest {min(g):g}..{max(g):g} units short of contact in GZDoom, "
          f"{min(v):g}..{max(v):g} in ViZDoom; the same doll on the same tic differs by up to "
          f"{worst:g} units")


@needs_gzdoom
def test_gzdoom_runs_a_batch_of_overlapping_beats_as_the_reference(tmp_path):
    """Script 5 in GZDoom: beats batch_period apart (a lane's next copy in the tic its doll
    is parked, output reads first in the tic where the next beat resets them), every
    output of every beat equal to the reference, and to ViZDoom running the same batch."""
    from engine.runner import MapRunner

    net, cm, xs, wad, _, _ = _setup(tmp_path, "hello")
    info, pipe = cm.manifest, cm.manifest["pipeline"]
    lag = max(pipe["lags"])
    assert pipe["batch_period"] < pipe["beat_tics"] + 1 and pipe["batch"] > lag + 2
    rng = np.random.default_rng(9)
    xs = [[int(rng.integers(lo, hi + 1)) for lo, hi in net.input_ranges()]
          for _ in range(pipe["batch"] - lag)]
    entering = xs + [xs[-1]] * lag  # the drain, as MapRunner.infer_many sends it
    n_out = len(pipe["lags"])
    pm = gz.probe_map(cm.layout, n_out * len(entering))
    probe = str(tmp_path / "probe_batch.wad")
    gz.write_probe(probe, pm)
    tr = gz.parse_log(gz.run_gzdoom(GZDOOM, wad, probe, gz.batch_timeline(info, entering)), pm)
    users = tr.at(tr.ack_tic(1))["A"][2:]
    got = [[users[(b + pipe["lags"][o]) * n_out + o] for o in range(n_out)]
           for b in range(len(xs))]
    assert got == evaluate(net, xs).last_outputs().tolist()
    with MapRunner(wad, info) as r:
        assert r.infer_many(xs) == got


def _labelled(cm, pm, row) -> dict[str, int]:
    """The probe's lights of one logged tic, by their read labels ('value:h[3]', ...)."""
    labels = {tag: label for batch in cm.schedule.read_batches for tag, label in batch}
    return {labels[tag]: v for tag, v in zip(pm.lights, row["L"]) if tag in labels}


@needs_gzdoom
def test_gzdoom_tictactoe_replies_equal_the_reference(tmp_path):
    """A whole game in GZDoom, played through the map's own controls (the pad and MOVE
    scripts, which copy O's board back into its inputs inside the map): after every MOVE,
    every light of the machine equals the reference for the position, O's reply included."""
    import random

    from demos.tictactoe import SCRIPT_MOVE, SCRIPT_PAD, STRATEGIES, build, reference_reply
    from demos.tictactoe_policy import full, winner

    t = build()
    cm, info = t.compiled, t.compiled.manifest
    wad, probe = str(tmp_path / "ttt.wad"), str(tmp_path / "probe.wad")
    write_wad(wad, [cm])
    pm = gz.probe_map(cm.layout, 0, planes=False, on_ack=True)
    gz.write_probe(probe, pm)
    x, o, rng, positions = [0] * 9, [0] * 9, random.Random(3), []
    parts = [f"wait {info['init_tics'] + 14}"]
    while not winner(x, o) and not full(x, o):
        cell = STRATEGIES["greedy"](x, o, rng)
        x[cell] = 1
        positions.append((list(x), list(o)))
        reply = reference_reply(t.net, x, o)["move"] - 1
        if reply >= 0:
            o[reply] = 1
        parts += [f"puke {SCRIPT_PAD + cell}", "wait 2", f"puke {SCRIPT_MOVE}",
                  f"wait {info['inference_tics'] + 12}"]
    # The console runs some tics ahead of the map's Timer(): time for the last reply.
    tr = gz.parse_log(gz.run_gzdoom(GZDOOM, wad, probe,
                                    "; ".join(parts + [f"wait {gz.TAIL}", "quit"])), pm)
    assert len(positions) >= 3
    low = cm.circuit.net
    for seq, (px, po) in enumerate(positions, 1):
        got = _labelled(cm, pm, tr.at(tr.ack_tic(seq)))
        want = reference_labels(t.net, low, px + po)
        assert got == {k: want[k] for k in got} and len(got) == len(want), f"move {seq}"
    print(f"tic-tac-toe in GZDoom: {len(positions)} replies, every light equal to the reference")


@needs_gzdoom
def test_gzdoom_brainlevel_decisions_equal_the_reference(tmp_path):
    """The brain level plays its own seeded episodes in GZDoom (nobody drives it); at every
    decision the probe logs every light: the observation the glue wrote into the inputs,
    and every node the dolls computed from it, each equal to the reference, the one-hot
    decision included."""
    from demos.brainlevel import policy
    from demos.brainlevel.demo import build_wad

    pol = policy.load()
    wad, probe = str(tmp_path / "brain.wad"), str(tmp_path / "probe.wad")
    cm = build_wad(wad, pol).compiled
    pm = gz.probe_map(cm.layout, 0, planes=False, on_ack=True)
    gz.write_probe(probe, pm)
    tr = gz.parse_log(gz.run_gzdoom(GZDOOM, wad, probe, "wait 1200; quit", timeout=900), pm)
    low = cm.circuit.net
    inputs = [f"value:{low.nodes[i].name}" for i in low.inputs]
    acks = sorted({row["A"][0] for row in tr.tics.values() if row["A"][0] > 0})
    assert len(acks) >= 5 and acks == list(range(1, len(acks) + 1)), acks
    wins = [f"value:win[{k}]" for k in range(5)]
    for seq in acks:
        got = _labelled(cm, pm, tr.at(tr.ack_tic(seq)))
        x = [got[k] for k in inputs]
        want = reference_labels(pol.net, low, x)
        assert got == {k: want[k] for k in got}, f"decision {seq}"
        assert sum(got[w] for w in wins) == 1
        assert [got[w] for w in wins].index(1) == policy.decide(pol.net, x)
    print(f"brain level in GZDoom: {len(acks)} decisions, every light equal to the reference")


@needs_gzdoom
def test_gzdoom_keeps_recurrent_state_as_vizdoom_does(tmp_path):
    """A recurrent map with a fed-back input: state kept in door planes from step to step
    and the fed step's script, in GZDoom: every step's outputs equal to the reference and
    to ViZDoom, and every light and door plane equal on every tic of every step."""
    from dsl.parser import parse
    from dsl.sequence import reference_run

    net = parse("input x[2] : 0..3\ninput n : 0..7\nfeedback n = h[0]\n"
                "neuron h[2] : relu(s=2, max=7)\n"
                "lines x -> h dense [[2, -1], [1, 2]]\nlines prev(h) -> h dense [[1, 1], [-1, 2]]\n"
                "lines n -> h dense [[1], [0]]\nbias h = [0, 1]\ninit h = [3, 0]\noutput h\n")
    rng = np.random.default_rng(4)
    steps = 12
    seq = [[int(rng.integers(0, 4)), int(rng.integers(0, 4)), 2 if t < 2 else None]
           for t in range(steps)]
    fed = [row[2] is None for row in seq]
    res, _ = reference_run(net, seq)
    ref = res.value[0][:, net.outputs].tolist()
    xs = [[0 if v is None else v for v in row] for row in seq]
    cm = compile_netlist(net)
    wad, probe = str(tmp_path / "rnn.wad"), str(tmp_path / "probe.wad")
    write_wad(wad, [cm])
    pm = gz.probe_map(cm.layout, len(cm.manifest["outputs"]))
    gz.write_probe(probe, pm)
    info = cm.manifest
    log_vz, outs_vz = gz.run_vizdoom(wad, probe, info, xs, sequence=True, fed=fed)
    log_gz = gz.run_gzdoom(GZDOOM, wad, probe, gz.timeline(info, xs, sequence=True, fed=fed))
    tr_vz, tr_gz = gz.parse_log(log_vz, pm), gz.parse_log(log_gz, pm)
    problems = []
    for seq_no in range(1, steps + 1):
        assert tr_gz.at(tr_gz.ack_tic(seq_no))["A"][2:] == outs_vz[seq_no - 1] == \
            ref[seq_no - 1], f"step {seq_no - 1}"
        problems += _compare(tr_gz, tr_vz, seq_no, info["inference_tics"] + 1)
    assert not problems, "\n".join(problems[:20])
    assert len({tuple(r) for r in ref}) > 2  # the state does move
