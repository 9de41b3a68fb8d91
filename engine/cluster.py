"""Engine work on a Ray cluster: the samples of a run, in chunks, streamed through the maps
of a WAD, on Ray actors that each hold an engine.

The same scheduler as engine/tiled.py's local processes (`Stream`, with `run_chunk` in
every engine), with actors placed wherever the cluster has CPUs; `run_engines` picks one or
the other. An actor that dies (its engine killed, its node gone) costs only the chunk it
was running, which runs again on another actor. Results come back in input order and are
the same integers a local run gives. Ray is imported only here, and only when a run asks
for it (`--ray auto|ADDRESS`): nothing else in the project loads it. docs/throughput.md
says how to start a cluster and what each worker needs.
"""
from __future__ import annotations

import os
from contextlib import contextmanager

from dsl.diagnostics import VoodooError
from dsl.ir import Netlist

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# What a worker does not need of the project (the working directory is shipped to it).
EXCLUDES = [".git", ".venv", "wads", "*.wad", "__pycache__", ".pytest_cache", ".hypothesis", "docs/img"]


def check_workers(n: int) -> int:
    if n < 1:
        raise VoodooError(f"--workers {n}: give at least 1 engine process")
    return n


def run_engines(wad: str, infos, tiles, net: Netlist, X, *, workers: int = 2,
                ray: str | None = None, pipeline: bool = True, chunk: int = 20, progress=None,
                watch=None, costs: list[float] | None = None) -> tuple[list[list[int]], int]:
    """Every row of X through the maps of `wad`: in local engine processes
    (engine.tiled.run_tiled), or as Ray actors with `ray` (then Ray is imported, and only
    then). Outputs in input order, and the engine tics."""
    kw = dict(chunk=chunk, progress=progress, pipeline=pipeline, watch=watch, costs=costs)
    if ray:
        with cluster(ray, num_cpus=workers) as r:
            return run_ray(r, wad, infos, tiles, net, X, workers, **kw)
    from engine.tiled import run_tiled

    return run_tiled(wad, infos, tiles, net, X, workers=workers, **kw)


def start_local(ray, num_cpus: int | None = None) -> None:
    """A Ray cluster on this machine only: its workers find the project's code where it is
    (no copy to unpack per worker, so actors start in a fraction of a second)."""
    from ray.job_config import JobConfig

    # Ray starts its workers at niceness 15, and an engine started by a worker inherits it:
    # the engines then lose every contended tic to the driver and to other jobs (measured:
    # two actors took 41% longer than two local processes for the same work).
    ray.init(num_cpus=num_cpus, include_dashboard=False, log_to_driver=False,
             job_config=JobConfig(code_search_path=[ROOT]),
             _system_config={"worker_niceness": 0})
    # Part of starting the cluster: its worker processes are up and have loaded our code
    # before any run is timed against local processes.
    ready = ray.remote(num_cpus=1)(_worker_pid)
    ray.get([ready.remote() for _ in range(int(ray.cluster_resources().get("CPU", 1)))])


def _worker_pid() -> int:
    return os.getpid()


@contextmanager
def cluster(address: str, num_cpus: int | None = None):
    """Connect to Ray and disconnect after. `address` 'auto': the cluster running on this
    machine (`ray start --head`), or else a new local one of `num_cpus` CPUs; otherwise a
    head's 'host:port' or 'ray://host:10001'. The project's code is shipped to the workers
    of a cluster we did not start (runtime_env working_dir)."""
    try:
        import ray
    except ImportError:
        raise VoodooError("--ray needs the `ray` package: pip install -r requirements.txt") \
            from None
    if ray.is_initialized():  # a caller (the bench, a test) started it: use it as it is
        yield ray
        return
    env = {"working_dir": ROOT, "excludes": EXCLUDES}
    if address != "auto":
        _answers(address)
    try:
        if address == "auto":
            try:
                ray.init(address="auto", runtime_env=env, log_to_driver=False)
            except ConnectionError:
                start_local(ray, num_cpus)
        else:
            ray.init(address=address, runtime_env=env, log_to_driver=False)
    except (ConnectionError, ValueError, RuntimeError) as e:
        raise VoodooError(f"--ray {address}: could not connect to a Ray cluster: {e}\n"
                          "    hint: start one with `ray start --head` (docs/throughput.md), "
                          "or use --ray auto") from None
    try:
        yield ray
    finally:
        ray.shutdown()


def _answers(address: str, timeout: float = 5.0) -> None:
    """Fail at once, with a hint, when nothing listens at a head's address: Ray itself
    keeps retrying for minutes."""
    import socket

    host, _, port = address.removeprefix("ray://").rpartition(":")
    if not host or not port.isdigit():
        raise VoodooError(f"--ray {address}: give 'auto' or a head's address as HOST:PORT "
                          "(e.g. 10.0.0.5:6379, or ray://10.0.0.5:10001 for Ray Client)")
    try:
        socket.create_connection((host, int(port)), timeout=timeout).close()
    except OSError as e:
        raise VoodooError(f"--ray {address}: no Ray head answers there ({e.strerror or e})\n"
                          "    hint: start one with `ray start --head` on that machine "
                          "(docs/throughput.md), or use --ray auto") from None


class ShardWorker:
    """A Ray actor's state: one engine on its own copy of the WAD (sent as bytes, so a
    worker needs no shared disk), started on its stage's first map and kept between
    chunks (engine/tiled.py)."""

    def __init__(self, wad_bytes: bytes, infos: list[dict], io: list[tuple[list, list]],
                 pipeline: bool, first_map: int = 0):
        import tempfile

        from engine.doom import Engine
        from engine.tiled import map_name

        self.dir = tempfile.mkdtemp(prefix="voodoonet-ray-")
        self.wad = os.path.join(self.dir, "map.wad")
        with open(self.wad, "wb") as f:
            f.write(wad_bytes)
        self.infos, self.io, self.pipeline = infos, io, pipeline
        self.engine = Engine(self.wad, map_name(first_map))
        self.runners: dict = {}  # engine.tiled.run_chunk keeps its map's runner here

    def ready(self) -> tuple[int, str, list[str]]:
        """(this actor's pid, its node's id, the directories it and its engine keep), once
        its engine runs."""
        import ray

        return (os.getpid(), ray.get_runtime_context().get_node_id(),
                [self.dir, self.engine._dir])

    def run(self, chunk: list[tuple[int, dict]], maps: list[int] | None = None
            ) -> list[tuple[int, dict, int]]:
        from engine.tiled import run_chunk

        return run_chunk(self.engine, self.wad, self.infos, self.io, chunk, self.pipeline,
                         self.runners, maps)

    def close(self) -> None:
        import shutil

        self.engine.close()
        shutil.rmtree(self.dir, ignore_errors=True)


class RayEngines:
    """engine.tiled.Stream's backend of Ray actors (ShardWorker), anywhere on the cluster.
    An actor that dies (its engine killed, its node gone) fails the call it was running;
    its replacement is placed wherever the cluster has a CPU, or waits until one is free."""

    def __init__(self, ray, wad: str, infos: list[dict], io, pipeline: bool):
        with open(wad, "rb") as f:
            self.wad_ref = ray.put(f.read())
        self.ray, self.args = ray, (infos, io, pipeline)
        self.Actor = ray.remote(num_cpus=1, max_restarts=0)(ShardWorker)
        self.actors: dict[int, object] = {}
        self.up: set[int] = set()   # workers whose actor has started
        self.pending: dict[object, tuple] = {}   # ObjectRef -> (worker, event kind, task)
        # Each actor's directories: an actor that is killed (stopped, its node gone, the
        # run's end) never runs close(), and a node's end takes its engines' watchers with
        # it; those on this machine are removed here once their actor is gone.
        self.dirs: dict[int, list[str]] = {}

    def start(self, w, first_map: int) -> None:
        a = self.Actor.remote(self.wad_ref, *self.args, first_map)
        self.actors[w.id] = a
        self.pending[a.ready.remote()] = (w, "ready", None)

    def submit(self, w, task: tuple, chunk, maps: list[int]) -> None:
        self.pending[self.actors[w.id].run.remote(chunk, maps)] = (w, "done", task)

    def events(self, timeout: float) -> list[tuple]:
        import time

        if not self.pending:
            time.sleep(min(timeout, 0.2))
            return []
        ready, _ = self.ray.wait(list(self.pending), num_returns=1, timeout=timeout)
        if ready:  # and whatever else is ready by now
            ready, _ = self.ray.wait(list(self.pending), num_returns=len(self.pending),
                                     timeout=0)
        out = []
        for ref in ready:
            w, kind, task = self.pending.pop(ref)
            try:
                value = self.ray.get(ref)
                if kind == "ready":   # (pid, node, its directories): the stream takes
                    pid, node, self.dirs[w.id] = value     # (pid, node)
                    value = (pid, node)
                out.append((w, kind, value, task))
                self.up.add(w.id)
            except Exception as e:  # RayActorError, RayTaskError(EngineError), ...
                out.append((w, "failed", _first_line(e), task))
        return out

    def stop(self, w) -> None:
        self.pending = {r: v for r, v in self.pending.items() if v[0] is not w}
        a = self.actors.pop(w.id, None)
        if a is not None:
            self.ray.kill(a, no_restart=True)
        self._remove_dirs(w.id)

    def _remove_dirs(self, wid: int) -> None:
        import shutil

        for d in self.dirs.pop(wid, []):
            shutil.rmtree(d, ignore_errors=True)   # (on another machine: not here)

    def close(self) -> None:
        live = [a for k, a in self.actors.items() if k in self.up]
        try:  # engines closed before their actors go, or the engine processes outlive them
            if live:
                self.ray.wait([a.close.remote() for a in live], num_returns=len(live),
                              timeout=30)
        finally:
            for a in self.actors.values():   # and those never placed
                self.ray.kill(a, no_restart=True)
            self.actors.clear()
            for wid in list(self.dirs):
                self._remove_dirs(wid)


def _first_line(e: Exception) -> str:
    text = str(e).strip().splitlines()
    useful = [t for t in text if "Error" in t and not t.startswith(" ")]
    return (useful[-1] if useful else text[0] if text else type(e).__name__)[:300]


def run_ray(ray, wad: str, infos: list[dict], tiles, net: Netlist, X, workers: int,
            chunk: int = 20, progress=None, pipeline: bool = True, watch=None,
            costs: list[float] | None = None, start_grace: float | None = None
            ) -> tuple[list[list[int]], int]:
    """engine.tiled.run_tiled on a Ray cluster (`ray` from `cluster()`): `workers` actors,
    each with its own engine, streamed through the tiles; outputs in input order and the
    total engine tics."""
    from engine.tiled import Stream, chunked, collect, plan_stages, tile_cost

    io = [(t.inputs, t.outputs) for t in tiles]
    stages, per = plan_stages(costs or [tile_cost(i) for i in infos], max(1, workers))
    backend = RayEngines(ray, wad, infos, io, pipeline)
    finished = Stream(backend, stages, per, chunked(net, X, chunk), progress=progress,
                      watch=watch, start_grace=start_grace).run()
    return collect(finished, net, len(X))
