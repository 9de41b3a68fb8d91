"""Tiled runs: samples streamed through the maps of a tiled WAD (MAP01, MAP02, ...) over
engines that each keep their map loaded. Python carries values between tiles by name only.

The tiles are cut into **stages** of consecutive maps, one per engine when there are as
many engines as tiles (`plan_stages`); more engines replicate the costliest stages, fewer
give an engine several maps, which it then changes between for every chunk. A chunk of
samples goes through the stages in order, so while stage k works on chunk i, stage k+1
works on chunk i-1: with T tiles on T engines a run takes about as long as its slowest
tile alone, not T times it. An engine only ever works on one chunk of one stage at a time
and keeps its map between chunks.

One run of a multi-step netlist streams step by step (`stream_sequence`): every map has
its own engine, keeps its state from step to step, and runs step t as soon as the values
it takes are there, so map k works on step t+1 while map k+1 works on step t.

`Stream` is the scheduler, the same for local processes (`LocalEngines`, here) and Ray
actors (engine/cluster.py): a chunk whose engine fails (killed, crashed, its machine gone)
goes back to its stage's queue and is run again from its stage's inputs on another engine,
and the failed engine is replaced; a chunk's result for a stage is taken once, so nothing is
lost or counted twice, and a chunk that fails `retries` times ends the run with a message
naming it. Every sample comes back exactly once, in input order, or the run fails.
"""
from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass, field

from dsl.diagnostics import VoodooError
from dsl.ir import Netlist

from engine.doom import Engine, EngineError
from engine.runner import MapRunner

RETRIES = 2          # runs of one chunk on one stage after its first, before the run fails
START_FAILURES = 4   # engines in a row that fail to start before the run fails
STALL_SECONDS = 300  # with no engine running and none starting: the run fails
# An engine still starting after this long (a Ray actor with no CPU left for it, say) no
# longer keeps its stage waiting: other engines take the stage's chunks.
START_GRACE = 60.0


def map_name(k: int) -> str:
    return f"MAP{k + 1:02d}"


def tile_cost(info: dict) -> float:
    """Engine tics one inference costs a tile's map: batched beats when it has them."""
    pipe = info.get("pipeline")
    if pipe and pipe.get("batch", 1) > 1:
        return float(pipe.get("batch_period", pipe["beat_tics"] + 1))
    return float(info["inference_tics"] + 1)


def plan_stages(costs: list[float], engines: int) -> tuple[list[list[int]], list[int]]:
    """(stages as lists of tile indices, engines per stage). With engines >= tiles every
    tile is a stage and the spare engines go, one at a time, to the stage whose cost per
    engine is highest; with fewer engines, consecutive tiles are grouped so that the
    costliest group is as cheap as it can be."""
    n = len(costs)
    if engines >= n:
        stages, per = [[k] for k in range(n)], [1] * n
        for _ in range(engines - n):
            k = max(range(n), key=lambda j: (costs[j] / per[j], -j))
            per[k] += 1
        return stages, per
    # Fewest-bottleneck split into `engines` runs of consecutive tiles (n is small).
    best: dict[tuple[int, int], tuple[float, list[int]]] = {}

    def split(i: int, g: int) -> tuple[float, list[int]]:
        if (i, g) in best:
            return best[(i, g)]
        if g == 1:
            out = (sum(costs[i:]), [n])
        else:
            out = min(((max(sum(costs[i:j]), split(j, g - 1)[0]), [j] + split(j, g - 1)[1])
                       for j in range(i + 1, n - g + 2)), key=lambda t: t[0])
        best[(i, g)] = out
        return out

    cuts = [0] + split(0, engines)[1]
    return [list(range(a, b)) for a, b in zip(cuts, cuts[1:])], [1] * engines


def run_chunk(engine: Engine, wad: str, infos: list[dict], io, chunk: list[tuple[int, dict]],
              pipeline: bool = True, runners: dict | None = None, maps: list[int] | None = None
              ) -> list[tuple[int, dict, int]]:
    """Samples through the tiles `maps` (default: all) in order, in one engine (pipelined
    when the maps allow). Returns each sample's values by name and the engine tics spent
    on it (a pipelined run's tics shared out evenly). `runners`: the caller's runner of
    the map its engine is on, kept from chunk to chunk ({} with an engine just started);
    without it each tile's map is loaded again."""
    tics = 0
    for k in range(len(infos)) if maps is None else maps:
        runner = _runner_on(engine, wad, infos[k], map_name(k), runners)
        ins, outs = io[k]
        before = runner.tics
        got = runner.infer_many([[values[n] for n in ins] for _, values in chunk], pipeline)
        for (_, values), g in zip(chunk, got):
            values.update(zip(outs, g))
        tics += runner.tics - before
    share = [tics // len(chunk) + (j < tics % len(chunk)) for j in range(len(chunk))]
    return [(idx, values, t) for (idx, values), t in zip(chunk, share)]


def _runner_on(engine: Engine, wad: str, info: dict, name: str, runners: dict | None
               ) -> MapRunner:
    """A runner of map `name` in `engine`. Loading a map again costs as much as many
    inferences (the trained MNIST map: 0.74 s), so a one-map WAD is loaded once per engine:
    the runner that drove the map last is reused (every infer_many leaves the map as it
    found it: dolls parked, lights reset by the next inference), and an engine just started
    on the map needs no reload."""
    if runners is None:
        engine.change_map(name)
        return MapRunner(wad, info, name, engine=engine)
    if name in runners and engine.map_name == name:
        return runners[name]
    if runners or engine.map_name != name:  # the map was driven already, or is another one
        engine.change_map(name)
    runners.clear()  # the other maps' runners went with their maps
    runners[name] = MapRunner(wad, info, name, engine=engine)
    return runners[name]


# ------------------------------------------------------------------------------ scheduling
@dataclass
class Worker:
    """One engine of a run, as the scheduler sees it."""
    id: int
    stage: int
    handle: object = None       # the backend's (a process, a Ray actor)
    state: str = "starting"     # starting, idle, busy, dead
    task: tuple | None = None   # (chunk, stage) it works on
    pid: int | None = None      # its process (a local worker's, or a Ray actor's)
    node: str | None = None     # where it runs: "local", or a Ray node's id
    started: float = field(default_factory=time.monotonic)


class Stream:
    """Chunks through stages on a backend's engines (module docstring). The backend:
    `start(worker, first_map)`, `submit(worker, task, chunk, maps)`, `events(timeout)` ->
    [(worker, kind, payload, task)] with kind "ready" (payload: (pid, node), task None),
    "done" (the task's results) or "failed" (a message); `stop(worker)`, `close()`. A task
    is (chunk, stage)."""

    def __init__(self, backend, stages: list[list[int]], per_stage: list[int], chunks,
                 retries: int = RETRIES, progress=None, watch=None,
                 start_grace: float | None = None):
        self.backend, self.stages, self.chunks = backend, stages, chunks
        self.start_grace = START_GRACE if start_grace is None else start_grace
        self.retries, self.progress, self.watch = retries, progress, watch
        self.queues = [deque() for _ in stages]
        self.queues[0].extend(range(len(chunks)))
        self.values = {c: [(i, dict(v)) for i, v in ch] for c, ch in enumerate(chunks)}
        self.done: set[tuple[int, int]] = set()
        self.tics: dict[int, int] = {}   # sample -> engine tics over the stages done
        self.finished: dict[int, list] = {}
        self.failures: dict[tuple[int, int], int] = {}
        self.start_failures = 0
        self.workers = [Worker(k, s) for k, s in enumerate(
            s for s, n in enumerate(per_stage) for _ in range(n))]

    def run(self) -> dict[int, list]:
        try:
            for w in self.workers:
                self.backend.start(w, self.stages[w.stage][0])
            last = time.monotonic()
            while len(self.finished) < len(self.chunks):
                self._dispatch()
                events = self.backend.events(timeout=5.0)
                for w, kind, payload, task in events:
                    getattr(self, "_" + kind)(w, payload, task)
                if events:
                    last = time.monotonic()
                elif time.monotonic() - last > STALL_SECONDS and not any(
                        self._live(s) for s in range(len(self.stages))):
                    raise EngineError(f"no engine has been running for {STALL_SECONDS} s "
                                      "(every engine failed, and none could be started "
                                      "again)")
            return self.finished
        finally:
            self.backend.close()

    def _live(self, stage: int) -> bool:
        """Whether the stage has an engine that runs, or one about to."""
        now = time.monotonic()
        return any(w.stage == stage and (w.state in ("idle", "busy") or w.state == "starting"
                                         and now - w.started < self.start_grace)
                   for w in self.workers)

    def _dispatch(self) -> None:
        """Idle engines take their own stage's oldest ready chunk; a stage left with no
        live engine (its engines died and none could be started again) is served by any
        idle engine, which changes maps for it."""
        for w in self.workers:
            if w.state != "idle":
                continue
            order = [w.stage] + [s for s in range(len(self.stages))
                                 if s != w.stage and not self._live(s)]
            for s in order:
                if self.queues[s]:
                    c = self.queues[s].popleft()
                    w.state, w.task = "busy", (c, s)
                    self.backend.submit(w, (c, s), self.values[c], self.stages[s])
                    if self.watch:
                        self.watch("submit", w, (c, s))
                    break

    def _ready(self, w: Worker, where: tuple, _task=None) -> None:
        w.state, (w.pid, w.node) = "idle", where
        self.start_failures = 0
        if self.watch:
            self.watch("ready", w, None)

    def _done(self, w: Worker, results, task: tuple) -> None:
        if w.task == task:
            w.state, w.task = "idle", None
        c, s = task
        if task in self.done:  # a second result for a chunk and stage is never taken
            return
        self.done.add((c, s))
        self.values[c] = [(idx, values) for idx, values, _ in results]
        for idx, _, t in results:
            self.tics[idx] = self.tics.get(idx, 0) + t
        if s + 1 < len(self.stages):
            self.queues[s + 1].append(c)
        else:
            self.finished[c] = [(idx, values, self.tics[idx]) for idx, values, _ in results]
            if self.progress:
                self.progress(len(results))
        if self.watch:
            self.watch("done", w, task)

    def _failed(self, w: Worker, message: str, _task=None) -> None:
        """An engine failed: its chunk goes back to the front of its stage's queue (from
        the stage's inputs, which the driver still holds) and the engine is replaced."""
        if w.state == "dead":   # already replaced (a second report of the same failure)
            return
        task, was = w.task, w.state
        w.state, w.task = "dead", None
        self.backend.stop(w)
        if self.watch:
            self.watch("failed", w, task)
        if task is not None:
            c, s = task
            n = self.failures[task] = self.failures.get(task, 0) + 1
            if n > self.retries:
                a, b = self.chunks[c][0][0], self.chunks[c][-1][0]
                raise EngineError(f"samples {a}..{b} failed {n} times on tile(s) "
                                  f"{', '.join(map_name(k) for k in self.stages[s])}: "
                                  f"{message}")
            self.queues[s].appendleft(c)
        if was == "starting":
            self.start_failures += 1
            if self.start_failures >= START_FAILURES:
                raise EngineError(f"{START_FAILURES} engines in a row failed to start: {message}")
        fresh = Worker(len(self.workers), w.stage)
        self.workers.append(fresh)
        self.backend.start(fresh, self.stages[w.stage][0])


def chunked(net: Netlist, X, chunk: int) -> list[list[tuple[int, dict]]]:
    names_in = [net.nodes[i].name for i in net.inputs]
    work = [(i, dict(zip(names_in, map(int, x)))) for i, x in enumerate(X)]
    return [work[i:i + chunk] for i in range(0, len(work), chunk)]


def collect(finished: dict[int, list], net: Netlist, n: int) -> tuple[list[list[int]], int]:
    """Outputs in input order and the total tics; every sample exactly once, or an error."""
    names_out = [net.nodes[o].name for o in net.outputs]
    results: dict[int, list[int]] = {}
    tics = 0
    for done in finished.values():
        for idx, values, t in done:
            if idx in results:
                raise EngineError(f"sample {idx} came back twice")
            results[idx] = [values[name] for name in names_out]
            tics += t
    missing = [i for i in range(n) if i not in results]
    if missing:
        raise EngineError(f"{len(missing)} samples never came back (the first: {missing[0]})")
    return [results[i] for i in range(n)], tics


def run_tiled(wad: str, infos: list[dict], tiles, net: Netlist, X, workers: int = 2,
              chunk: int = 20, progress=None, pipeline: bool = True, watch=None,
              costs: list[float] | None = None, start_grace: float | None = None
              ) -> tuple[list[list[int]], int]:
    """Every sample of X through the tiles of `wad` (MAP01..), streamed over `workers`
    engine processes (module docstring). Returns the outputs in order and the total engine
    tics. `progress(n)` is called as samples finish; `watch(event, worker, task)` as
    engines start ("ready"), are given a task ("submit"), finish it ("done") or fail
    ("failed"); a task is (chunk, stage). Python only looks values up by name between tiles."""
    if any(info.get("wad_part") for info in infos):
        # an engine here moves from map to map within one file
        raise VoodooError(f"{wad}: its maps are in several files (a WAD too big for one); "
                          "it runs as a sequence, an engine per map, not streamed over "
                          "engines that change maps\n    hint: build it in fewer maps")
    io = [(t.inputs, t.outputs) for t in tiles]
    stages, per = plan_stages(costs or [tile_cost(i) for i in infos], workers)
    backend = LocalEngines(wad, infos, io, pipeline)
    finished = Stream(backend, stages, per, chunked(net, X, chunk), progress=progress,
                      watch=watch, start_grace=start_grace).run()
    return collect(finished, net, len(X))


# ------------------------------------------------------------------------------ local engines
class LocalEngines:
    """Stream's backend of engine processes on this machine: one process per worker, each
    with its own Engine, talking over a pipe."""

    def __init__(self, wad: str, infos: list[dict], io, pipeline: bool):
        import multiprocessing as mp

        self.ctx = mp.get_context("spawn")
        self.args = (wad, infos, io, pipeline)
        self.procs: dict[int, tuple] = {}   # worker id -> (worker, process, connection)
        self.tasks: dict[int, tuple] = {}   # worker id -> the task it was given last

    def start(self, w: Worker, first_map: int) -> None:
        parent, child = self.ctx.Pipe()
        p = self.ctx.Process(target=_stage_main, args=(child, *self.args, first_map),
                             daemon=True)
        p.start()
        child.close()
        self.procs[w.id] = (w, p, parent)

    def submit(self, w: Worker, task: tuple, chunk, maps: list[int]) -> None:
        self.tasks[w.id] = task
        try:
            self.procs[w.id][2].send((chunk, maps))
        except OSError:
            pass  # it died: its sentinel says so in events()

    def events(self, timeout: float) -> list[tuple]:
        from multiprocessing.connection import wait

        by_conn = {conn: w for w, _, conn in self.procs.values()}
        by_sentinel = {p.sentinel: w for w, p, _ in self.procs.values()}
        out = []
        for r in wait(list(by_conn) + list(by_sentinel), timeout):
            if r in by_conn:
                w = by_conn[r]
                try:
                    kind, payload = r.recv()
                except (EOFError, OSError):
                    continue  # the sentinel reports it
                out.append((w, kind, payload, None if kind == "ready" else self.tasks[w.id]))
            else:
                w = by_sentinel[r]
                if w.id in self.procs and not any(e[0] is w for e in out):
                    code = self.procs[w.id][1].exitcode
                    out.append((w, "failed", f"its engine process exited ({code})",
                                self.tasks.get(w.id)))
        return out

    def stop(self, w: Worker) -> None:
        entry = self.procs.pop(w.id, None)
        if entry:
            _end([entry[1]], patient=False)
            entry[2].close()

    def close(self) -> None:
        """Every worker told to stop; those still busy (a long chunk) are terminated
        together, so shutting down takes seconds whatever the count. Interrupted (an
        exception unwinding: a signal, a failed run), no worker is waited for: each is
        terminated at once, and kills its engine on the way out."""
        import sys

        patient = sys.exc_info()[0] is None
        entries = list(self.procs.values())
        self.procs.clear()
        for _, p, conn in entries:
            try:
                conn.send(None)
            except (OSError, ValueError):
                pass
        _end([p for _, p, _ in entries], patient=patient)
        for _, _, conn in entries:
            conn.close()


def _end(procs: list, patient: bool, grace: float = 10.0) -> None:
    """Wait for `procs` to exit (if `patient`: they were told to), then SIGTERM the rest at
    once (a worker kills its engine on the way out), then SIGKILL any still alive; one
    shared deadline per round, not one per process."""
    rounds = ([None] if patient else []) + ["terminate", "kill"]
    for how in rounds:
        if how:
            for p in procs:
                if p.is_alive():
                    getattr(p, how)()
        deadline = time.monotonic() + grace
        for p in procs:
            p.join(max(0.0, deadline - time.monotonic()) if how != "kill" else None)


def _term_with_parent() -> None:
    """Linux: SIGTERM this process when its parent exits, however the parent ends."""
    import ctypes
    import os
    import signal

    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)   # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
    if os.getppid() == 1:   # the parent is already gone
        os._exit(1)


def _stage_main(conn, wad: str, infos, io, pipeline: bool, first_map: int) -> None:
    """A local worker: an engine on its stage's first map, then chunks until told to stop.
    It reports "ready" once its engine runs, a chunk's results as "done", and an error as
    "failed" (and then exits: the driver starts a fresh engine)."""
    import os
    import signal
    import sys

    # Ctrl-C reaches every process of the terminal's group: the parent decides and ends
    # its workers (SIGTERM), which here becomes a normal exit that closes the engine. A
    # parent that is killed outright takes its workers along (SIGTERM when it goes).
    terminated = []

    def on_term(*_):
        terminated.append(True)
        sys.exit(1)

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, on_term)
    _term_with_parent()
    engine = None
    try:
        engine = Engine(wad, map_name(first_map))
        conn.send(("ready", (os.getpid(), "local")))
        runners: dict = {}
        while True:
            msg = conn.recv()
            if msg is None:
                break
            chunk, maps = msg
            try:
                conn.send(("done", run_chunk(engine, wad, infos, io, chunk, pipeline, runners,
                                             maps)))
            except EngineError as e:
                conn.send(("failed", str(e)))
                break
    except EngineError as e:
        conn.send(("failed", str(e)))
    except (EOFError, OSError):
        pass
    finally:
        if engine is not None:  # terminated: the chunk is abandoned, no need to wait for it
            engine.close(grace=0.0 if terminated else 10.0)


def run_sequence(wad: str, infos: list[dict], tiles, net: Netlist, seq: list,
                 stream: bool = True, runners: list[MapRunner] | None = None,
                 progress=None):
    """One run of a multi-step netlist through the maps of a tiled WAD, step by step
    (mapgen/tiles.SequenceCarry): an engine per map, each keeping its map loaded and its
    own state (membranes, prev doors) from step to step; streamed (`stream_sequence`)
    unless `stream` is False (then one map at a time, `carry_sequence`). Every output and
    every value that crosses maps is compared with the reference at every step; the first
    one that differs is named with its step. `runners`: the caller's open runners, one per
    map in order, used instead of starting engines (a map of 400,000 lines takes a minute
    to load, so several runs share them); `progress(t)` once step t is through every map."""
    from dsl.sequence import reference_run
    from engine.runner import Comparison
    from mapgen.tiles import carry_sequence

    fed_here = [set(info.get("feedback") or []) for info in infos]
    if stream:
        steps = stream_sequence(wad, infos, tiles, net, seq, fed_here, runners, progress)
    else:
        own = runners is None
        runners = [] if own else runners
        try:
            if own:
                for k, info in enumerate(infos):
                    runners.append(MapRunner(wad, info, map_name(k)))
            steps = carry_sequence(tiles, seq, net, lambda k, ins, t, fed: runners[k].infer(
                ins, first=t == 0, fed=fed), fed_here)
        finally:
            for r in runners if own else ():
                r.close()
    res, _ = reference_run(net, seq)
    out = []
    for t, values in enumerate(steps):
        ref = {n.name: int(res.value[0, t, n.id]) for n in net.nodes}
        wrong = next((n.name for n in net.nodes if values.get(n.name) is not None
                      and values[n.name] != ref[n.name]), None)
        out.append(Comparison([ref[net.nodes[i].name] for i in net.inputs],
                              [values[net.nodes[o].name] for o in net.outputs],
                              [ref[net.nodes[o].name] for o in net.outputs],
                              None if wrong is None else f"step {t}: {wrong} engine "
                              f"{values[wrong]} reference {ref[wrong]}"))
    return out


@dataclass(frozen=True)
class Link:
    """A hop of a streamed step's critical path: map `map` held until tic `need` of its
    step by `value`, which map `source` hands on at tic `hand` of its own."""
    map: int
    value: str
    need: int
    source: int
    hand: int


def step_chain(infos: list[dict]) -> tuple[int, list[Link]]:
    """The critical path of one streamed step in tics, from the manifests alone: a map runs
    a tic at a time and may run tic n once each input it wants by then (input_need; all at
    tic 0 in maps without it) is handed on (hand_on: read in that tic, there a tic later);
    what no map hands on in the step (the run's row, the step before's values) is there at
    once. Returns (the tics from the step's start to its last map's end, the hops that set
    them, first to last). A step of the micro:bit size takes about this many tics of its
    critical maps (docs/physics.md, "Inputs wanted late")."""
    made: dict[str, tuple[int, int]] = {}     # value -> (map, its hand tic)
    there: dict[str, float] = {}              # value -> tic of the step it is there
    held: dict[int, Link | None] = {}
    end = {}
    for k, info in enumerate(infos):
        ins = info.get("tile_inputs") or info["inputs"]
        outs = info.get("tile_outputs") or info["all_outputs"]
        need = [0] * len(ins)
        for slots, t in zip(info.get("input_slots", []), info.get("input_need", [])):
            for i in slots:
                need[i] = t
        start, held[k] = 0, None
        for name, n in zip(ins, need):
            if name in there and there[name] - n > start:
                start = there[name] - n
                held[k] = Link(k, name, n, *made[name])
        hand = {lab: t for b, t in zip(info["read_batches"], info.get("hand_on", []))
                for lab in b["labels"]}
        for mine, name in zip(info["all_outputs"], outs):
            made[name] = (k, hand.get(f"value:{mine}", info["inference_tics"]))
            there[name] = start + made[name][1] + 1
        end[k] = start + info["inference_tics"]
    k = max(end, key=lambda j: (end[j], j)) if end else None
    path = []
    while k is not None and held[k] is not None:
        path.append(held[k])
        k = held[k].source
    return (int(max(end.values())) if end else 0), path[::-1]


class _Stopped(Exception):
    """The run ended (done, or another map failed) before this value was handed on."""


class _Handed:
    """The values maps hand on, by step. A reader waits until its value is there; a value
    of a step the run never reaches (it ended, or failed) stops the reader instead."""

    def __init__(self):
        import threading

        self.cond = threading.Condition()
        self.steps: dict[int, dict] = {}
        self.last: int | None = None     # the step the done node ended the run at
        self.error: BaseException | None = None

    def put(self, t: int, values: dict) -> None:
        with self.cond:
            self.steps.setdefault(t, {}).update(values)
            self.cond.notify_all()

    def get(self, t: int, name: str) -> int:
        with self.cond:
            while name not in self.steps.get(t, {}):
                if self.ended(t):
                    raise _Stopped
                self.cond.wait()
            return self.steps[t][name]

    def ended(self, t: int) -> bool:
        return self.error is not None or (self.last is not None and t > self.last)

    def end(self, t: int | None = None, error: BaseException | None = None) -> None:
        with self.cond:
            if t is not None:
                self.last = t if self.last is None else min(self.last, t)
            self.error = self.error or error
            self.cond.notify_all()


def stream_sequence(wad: str, infos: list[dict], tiles, net: Netlist, seq: list,
                    fed_here: list[set], runners: list[MapRunner] | None = None,
                    progress=None) -> list[dict]:
    """carry_sequence with every map in its own engine at once: each map runs its steps
    in order as soon as its inputs are there, so while map k+1 works on step t, map k
    already works on step t+1 (unless it reads a value map k+1 hands on at step t: then
    it waits for it). A map hands its values on in the middle of a step, each batch once
    it is final (MapRunner.infer's `hand`): map k+1 may start while map k still rides,
    and a map whose inputs ride late starts its step once those of its first phase are
    there, asking for each of the others when it is wanted (MapRunner.infer). A
    thread per map drives its engine (the engine runs in its own process; the thread
    waits on it). Returns what carry_sequence does, or raises the first map's error."""
    import threading

    from mapgen.tiles import SequenceCarry

    rules, handed = SequenceCarry(tiles, net, fed_here, seq), _Handed()

    def drive(k: int) -> None:
        runner = None if runners is None else runners[k]
        try:
            runner = runner or MapRunner(wad, infos[k], map_name(k))
            named = dict(zip(runner.info["all_outputs"], tiles[k].outputs))
            for t, row in enumerate(seq):
                if handed.ended(t):
                    break
                # Each input is asked for when the map wants it (all at its step's start,
                # unless its inputs ride late), and each batch of values is handed on as
                # soon as the map has it final, so the maps that take it start while this
                # one still rides.
                out = dict(zip(tiles[k].outputs, runner.infer(
                    lambda i, t=t: rules.tile_input(k, t, i, handed.get),
                    first=t == 0, fed=rules.fed(k, row),
                    hand=lambda values, t=t: handed.put(
                        t, {named[name]: v for name, v in values.items()}))))
                if rules.done is not None and out.get(rules.done) == 1:
                    handed.end(t)
                if progress is not None and k == len(tiles) - 1:
                    progress(t)
        except _Stopped:
            pass
        except BaseException as e:  # noqa: BLE001 - handed to the caller, raised there
            handed.end(error=e)
        finally:
            if runner is not None and runners is None:
                runner.close()

    threads = [threading.Thread(target=drive, args=(k,), daemon=True)
               for k in range(len(tiles))]
    for th in threads:
        th.start()
    try:
        for th in threads:
            th.join()
    except BaseException as e:   # interrupted: the engines the threads drive end now
        from engine.doom import end_all

        handed.end(error=e)
        end_all()
        raise
    if handed.error is not None:
        raise handed.error
    n = len(seq) if handed.last is None else handed.last + 1
    steps: list[dict] = []
    for t in range(n):
        steps.append(rules.step_values(t, seq[t], handed.steps.get(t, {}),
                                       steps[-1] if steps else None))
    return steps
