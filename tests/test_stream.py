"""Streaming through tiles (engine/tiled.py): stages, replicas, and what happens when an
engine fails. The scheduler is tested against a backend that computes each tile with the
reference and fails where told; then in real engines, one of which is killed mid-run."""
import os
import signal

import numpy as np
import pytest

from conftest import ROOT
from dsl import load
from dsl.reference import evaluate
from engine.doom import EngineError
from engine.tiled import Stream, chunked, collect, plan_stages
from mapgen.tiles import plan_tiles


def test_stages_one_per_tile_and_spare_engines_to_the_costliest():
    assert plan_stages([3, 1, 2], 3) == ([[0], [1], [2]], [1, 1, 1])
    assert plan_stages([3, 1, 2], 5) == ([[0], [1], [2]], [2, 1, 2])
    assert plan_stages([1, 1], 1) == ([[0, 1]], [1])


def test_fewer_engines_group_consecutive_tiles_around_the_slowest():
    stages, per = plan_stages([1, 1, 4, 1, 1], 3)
    assert stages == [[0, 1], [2], [3, 4]] and per == [1, 1, 1]
    stages, _ = plan_stages([5, 1, 1, 1], 2)
    assert stages == [[0], [1, 2, 3]]


class Reference:
    """A Stream backend whose 'engines' run each tile with the reference, instantly, and
    fail as scripted: `fail` maps (chunk's first sample, stage's first tile, attempt) to a
    failure, `twice` to a duplicated result."""

    def __init__(self, tiles, fail=(), twice=(), dead_on_start=0):
        self.tiles, self.fail, self.twice = tiles, set(fail), set(twice)
        self.dead_on_start = dead_on_start
        self.queue, self.attempts, self.started = [], {}, []

    def start(self, w, first_map):
        self.started.append((w.id, first_map))
        if self.dead_on_start > 0:
            self.dead_on_start -= 1
            self.queue.append((w, "failed", "could not start", None))
        else:
            self.queue.append((w, "ready", (1000 + w.id, "ref"), None))

    def submit(self, w, task, chunk, maps):
        key = (chunk[0][0], maps[0])
        n = self.attempts[key] = self.attempts.get(key, 0) + 1
        if (*key, n) in self.fail:
            self.queue.append((w, "failed", f"engine killed on {key}", task))
            return
        out = []
        for idx, values in chunk:
            values = dict(values)
            for k in maps:
                t = self.tiles[k]
                got = evaluate(t.net, [[values[n] for n in t.inputs]]).last_outputs()[0]
                values.update(zip(t.outputs, map(int, got)))
            out.append((idx, values, 1))
        self.queue.append((w, "done", out, task))
        if (*key, n) in self.twice:
            self.queue.append((w, "done", out, task))

    def events(self, timeout):
        out, self.queue = self.queue, []
        return out

    def stop(self, w):
        pass

    def close(self):
        pass


def _setup(n_tiles=3, samples=10, chunk=2):
    net = load(os.path.join(ROOT, "circuits", "mlp3.dnet"))
    tiles = plan_tiles(net, n_tiles=n_tiles)
    X = np.random.default_rng(1).integers(0, 4, size=(samples, 4)).tolist()
    return net, tiles, X, chunked(net, X, chunk)


def _run(backend, tiles, chunks, engines, **kw):
    stages, per = plan_stages([1.0] * len(tiles), engines)
    return Stream(backend, stages, per, chunks, **kw).run()


def test_a_failed_chunk_runs_again_and_every_sample_comes_back_once():
    net, tiles, X, chunks = _setup()
    # chunk of samples 2-3 fails on tile 2 once, samples 6-7 twice on tile 1; samples 4-5
    # come back twice from tile 3: each taken once.
    ref = Reference(tiles, fail={(2, 1, 1), (6, 0, 1), (6, 0, 2)}, twice={(4, 2, 1)})
    seen = []
    finished = _run(ref, tiles, chunks, 3, watch=lambda e, w, t: seen.append((e, w.stage)))
    got, tics = collect(finished, net, len(X))
    assert got == evaluate(net, X).last_outputs().tolist()
    assert tics == 3 * len(X)     # each sample once through each tile
    assert seen.count(("failed", 1)) == 1 and seen.count(("failed", 0)) == 2
    assert ("ready", 1) in seen[seen.index(("failed", 1)):]   # a fresh engine for tile 2


def test_a_chunk_that_keeps_failing_ends_the_run_with_its_name():
    net, tiles, X, chunks = _setup()
    ref = Reference(tiles, fail={(4, 1, n) for n in range(1, 9)})
    with pytest.raises(EngineError, match=r"samples 4\.\.5 failed 3 times on tile\(s\) MAP02: "
                                          r"engine killed on \(4, 1\)"):
        _run(ref, tiles, chunks, 3)


def test_engines_that_never_start_end_the_run():
    net, tiles, X, chunks = _setup()
    with pytest.raises(EngineError, match="4 engines in a row failed to start"):
        _run(Reference(tiles, dead_on_start=99), tiles, chunks, 2)


def test_a_stage_left_without_engines_is_served_by_another():
    """Tile 2's engine fails and its replacement never comes up: tile 1's engine takes
    tile 2's chunks too (it changes maps for them), and the run still ends exact."""
    net, tiles, X, chunks = _setup(n_tiles=2)

    class Lonely(Reference):
        def start(self, w, first_map):
            if w.id >= 2:   # replacements are never placed (their node is gone)
                self.started.append((w.id, first_map))
                return
            super().start(w, first_map)

    ref = Lonely(tiles, fail={(2, 1, 1)})
    # the grace is START_GRACE (60 s) in a real run; these 'engines' start at once
    got, _ = collect(_run(ref, tiles, chunks, 2, start_grace=1.0), net, len(X))
    assert got == evaluate(net, X).last_outputs().tolist()
    assert (2, 1) in ref.started


def _descendants(pid: int) -> list[int]:
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        try:
            for task in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{task}/children") as f:
                    kids = [int(c) for c in f.read().split()]
                out += kids
                todo += kids
        except OSError:
            pass
    return out


def _game_processes(pid: int) -> list[int]:
    """The ViZDoom game processes below `pid` (the engines themselves)."""
    games = []
    for p in _descendants(pid):
        try:
            with open(f"/proc/{p}/cmdline", "rb") as f:
                argv0 = f.read().split(b"\0")[0]
        except OSError:
            continue
        if os.path.basename(argv0) == b"vizdoom":
            games.append(p)
    return games


def test_killing_an_engine_mid_run_loses_no_inference(tmp_path):
    """Two tiles on two engine processes; once the second tile's engine has been given a
    chunk, its game process is killed (SIGKILL): the chunk runs again on a fresh engine,
    and every output is exact, each sample once."""
    from engine.tiled import run_tiled
    from mapgen.compile import write_wad
    from mapgen.tiles import compile_tiles

    net, tiles, X, _ = _setup(n_tiles=2, samples=16)
    maps = compile_tiles(tiles, "mlp3")
    wad = str(tmp_path / "mlp3.wad")
    write_wad(wad, maps)
    events, killed = [], []

    def watch(event, w, task):
        events.append((event, w.stage if task is None else task[1]))
        if event == "submit" and task[1] == 1 and not killed:
            killed.append(_game_processes(w.pid)[0])
            os.kill(killed[0], signal.SIGKILL)

    got, tics = run_tiled(wad, [m.manifest for m in maps], tiles, net, X, workers=2, chunk=2,
                          watch=watch)
    assert killed and ("failed", 1) in events
    assert got == evaluate(net, X).last_outputs().tolist()
    assert events.count(("done", 1)) == 8   # 8 chunks through tile 2: none lost, none twice


class _ReadyTogether:
    """Real engine processes (LocalEngines) whose first "ready" events are held until
    every engine has started: one engine starting seconds later than the other (a loaded
    machine) would otherwise let the first run every chunk before the second could take
    any, and no schedule could overlap them."""

    def __init__(self, backend, engines: int):
        self.backend, self.engines, self.held = backend, engines, []

    def __getattr__(self, name):
        return getattr(self.backend, name)

    def events(self, timeout: float) -> list[tuple]:
        out = self.backend.events(timeout)
        if self.engines is None:
            return out
        self.held += [e for e in out if e[1] == "ready"]
        out = [e for e in out if e[1] != "ready"]
        if len(self.held) < self.engines:
            return out
        self.engines = None
        return self.held + out


def test_stages_work_at_the_same_time(tmp_path):
    """While tile 2's engine runs chunk i, tile 1's runs a later chunk (streaming): some
    task of stage 2 and some task of stage 1 on a later chunk were both under way at once."""
    import time

    from engine.tiled import LocalEngines
    from mapgen.compile import write_wad
    from mapgen.tiles import compile_tiles

    net, tiles, X, chunks = _setup(n_tiles=2, samples=24, chunk=3)
    maps = compile_tiles(tiles, "mlp3")
    wad = str(tmp_path / "mlp3.wad")
    write_wad(wad, maps)
    span: dict[tuple, list] = {}

    def watch(event, w, task):
        if event in ("submit", "done"):
            span.setdefault(task, []).append(time.monotonic())

    backend = LocalEngines(wad, [m.manifest for m in maps],
                           [(t.inputs, t.outputs) for t in tiles], True)
    finished = _run(_ReadyTogether(backend, 2), tiles, chunks, 2, watch=watch)
    got, _ = collect(finished, net, len(X))
    assert got == evaluate(net, X).last_outputs().tolist()
    assert any(c0 > c1 and a0 < b1 and a1 < b0
               for (c1, s1), (a1, b1) in span.items() if s1 == 1
               for (c0, s0), (a0, b0) in span.items() if s0 == 0)


# ------------------------------------------------------------------ multi-step runs, streamed
def _recurrent_tiles(tmp_path, seed, n):
    from dsl.random_net import recurrent
    from mapgen.compile import load_wad, write_wad
    from mapgen.tiles import compile_tiles

    net = recurrent(seed, n_hidden=4, feedback=True)
    tiles = plan_tiles(net, n_tiles=n)
    path = str(tmp_path / f"rnn{seed}.wad")
    write_wad(path, compile_tiles(tiles, net.name), net, tiles)
    return net, load_wad(path)


def test_a_recurrent_run_streams_through_its_maps_step_by_step(tmp_path):
    """Three maps, each in its own engine at once, prev values and a fed-back input crossing
    between them: every step exact, and the same as one map at a time."""
    from dsl.sequence import random_sequence
    from engine.tiled import run_sequence

    net, lw = _recurrent_tiles(tmp_path, 4, 3)
    seq = random_sequence(net, 30, 4)
    streamed = run_sequence(lw.path, lw.infos, lw.tiles, net, seq)
    in_turn = run_sequence(lw.path, lw.infos, lw.tiles, net, seq, stream=False)
    assert len(streamed) == 30 and all(c.exact for c in streamed)
    assert [c.engine for c in streamed] == [c.engine for c in in_turn]


def test_a_map_that_fails_mid_sequence_ends_the_streamed_run(tmp_path, monkeypatch):
    """The second map's engine fails at step 5: the run raises its error (no map waits
    forever for a value that never comes) and every engine is closed."""
    from dsl.sequence import random_sequence
    from engine import tiled
    from engine.runner import MapRunner

    net, lw = _recurrent_tiles(tmp_path, 2, 2)
    calls, closed = {}, []
    infer, close = MapRunner.infer, MapRunner.close

    def failing(self, x, first=False, fed=False, hand=None):
        n = calls[self.engine.map_name] = calls.get(self.engine.map_name, 0) + 1
        if self.engine.map_name == "MAP02" and n == 6:
            raise EngineError("MAP02: killed for the test")
        return infer(self, x, first, fed, hand)

    monkeypatch.setattr(MapRunner, "infer", failing)
    monkeypatch.setattr(MapRunner, "close", lambda self: (closed.append(1), close(self)))
    with pytest.raises(EngineError, match="MAP02: killed for the test"):
        tiled.run_sequence(lw.path, lw.infos, lw.tiles, net, random_sequence(net, 40, 2))
    assert calls["MAP02"] == 6 and len(closed) == 2


def test_maps_of_a_spiking_run_work_at_the_same_time(tmp_path, monkeypatch):
    """Two maps, the second reading the first: while MAP02 works on step t, MAP01 works on
    a later step (some such pair of steps was under way at once), every step exact."""
    import time

    from dsl.parser import parse
    from dsl.random_net import spiking_text
    from dsl.sequence import random_sequence
    from engine.runner import MapRunner
    from engine.tiled import run_sequence
    from mapgen.compile import load_wad, write_wad
    from mapgen.tiles import compile_tiles

    net = parse(spiking_text(5, n_in=2, n_out=3, steps=16))
    tiles = plan_tiles(net, n_tiles=2)
    path = str(tmp_path / "spk.wad")
    write_wad(path, compile_tiles(tiles, net.name), net, tiles)
    lw = load_wad(path)
    import threading

    span, infer, map02_started = {}, MapRunner.infer, threading.Event()

    def timed(self, x, first=False, fed=False, hand=None):
        key = (self.engine.map_name, len([k for k in span if k[0] == self.engine.map_name]))
        if key[0] == "MAP02":
            map02_started.set()
        elif key[1] == 1:
            # MAP01's step 1 waits until MAP02 is under way (its engine may start slowly on
            # a loaded machine): a runner that overlaps the maps then has both at once; one
            # that runs the maps one after the other times out here and fails below.
            map02_started.wait(300)
        a = time.monotonic()
        out = infer(self, x, first, fed, hand)
        if self.engine.map_name == "MAP02":
            # MAP02 dawdles over each step, so a streaming run has MAP01 on a later step
            # meanwhile however loaded the machine is (one map after the other never does).
            time.sleep(0.5)
        span[key] = (a, time.monotonic())
        return out

    monkeypatch.setattr(MapRunner, "infer", timed)
    got = run_sequence(lw.path, lw.infos, lw.tiles, net, random_sequence(net, 16, 5))
    assert len(got) == 16 and all(c.exact for c in got)
    assert any(t0 > t1 and a0 < b1 and a1 < b0
               for (m1, t1), (a1, b1) in span.items() if m1 == "MAP02"
               for (m0, t0), (a0, b0) in span.items() if m0 == "MAP01")


@pytest.mark.parametrize("n", [60, 3])
def test_a_map_hands_values_on_while_it_rides(tmp_path, n):
    """Outputs are read the tic their last writer lane has ended (manifest hand_on), a
    batch per tic: n shallow outputs are final two phases before the deep one and handed on
    mid-step; every value handed, early or late, is the reference's. With 3 outputs script
    2 also copies them to USER slots, in declared order (the deep one first), in its last
    tic: the deep one is taken from that copy, not raced by a read script."""
    from dsl.parser import parse
    from engine.runner import MapRunner
    from mapgen.compile import compile_netlist, write_wad

    shallow = [f"s{i}" for i in range(n)]
    text = "network early\ninput a : 0..3\ninput b : 0..3\n" + "".join(
        f"neuron {s} : step(t={1 + i % 5}) = a + b\n" for i, s in enumerate(shallow)) + (
        "neuron d1 : relu = a + b - 1\nneuron d2 : relu = d1 - 1\nneuron d3 : relu = d2 - 1\n"
        f"output d3, {', '.join(shallow)}\n")
    net = parse(text)
    cm = compile_netlist(net)
    info = cm.manifest
    assert len(info["hand_on"]) == 1 + -(-n // 58)
    assert info["hand_on"][0] < info["hand_on"][-1] == info["inference_tics"]
    assert (info["outputs"] == []) == (n > 58)      # else also copied to USER slots
    tics, at = [], 0
    for tic in info["hand_on"]:
        at = max(at, tic) + 1
        tics.append(at)
    path = str(tmp_path / "early.wad")
    write_wad(path, [cm])
    # Read scripts started in a step: never in its last tic where script 2 copies outputs.
    reads = len(info["hand_on"]) - (1 if info["outputs"] else 0)
    with MapRunner(path, info) as runner:
        read_batch = runner._read_batch
        for x in ([0, 0], [1, 2], [3, 3], [2, 0]):
            handed, t0, started = [], runner.engine.tic(), []
            runner._read_batch = lambda b, calls=(): (started.append(1), read_batch(b, calls))[1]
            out = runner.infer(x, hand=lambda v: handed.append((runner.engine.tic() - t0, v)))
            runner._read_batch = read_batch
            assert len(started) == reads
            res = evaluate(net, [x])
            assert out == [int(res.value[0, -1, o]) for o in net.outputs]
            assert [t for t, _ in handed] == tics
            assert {k: v for _, vals in handed for k, v in vals.items()} == dict(
                zip(info["all_outputs"], out))
            assert runner.read_outputs() == out    # after the step: the same batches
