"""Engine work on a Ray cluster: the samples of a run, in shards, through every map of a
WAD, each shard on a Ray actor that holds its own engine.

The same work as engine/tiled.py's local processes (`run_chunk` is shared), fanned out to
whatever machines the cluster has; `run_engines` picks one or the other. Results come back in input order and are the same
integers a local run gives. Ray is imported only here, and only when a run asks for it
(`--ray auto|ADDRESS`): nothing else in the project loads it. docs/throughput.md says how to
start a cluster and what each worker needs.
"""
from __future__ import annotations

import os
from contextlib import contextmanager

from dsl.diagnostics import VoodooError
from dsl.ir import Netlist

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# What a worker does not need of the project (the working directory is shipped to it).
EXCLUDES = [".git", "wads", "*.wad", "__pycache__", ".pytest_cache", ".hypothesis", "docs/img"]


def check_workers(n: int) -> int:
    if n < 1:
        raise VoodooError(f"--workers {n}: give at least 1 engine process")
    return n


def run_engines(wad: str, infos, tiles, net: Netlist, X, *, workers: int = 2,
                ray: str | None = None, pipeline: bool = True, chunk: int = 20, progress=None
                ) -> tuple[list[list[int]], int]:
    """Every row of X through the maps of `wad`: in local engine processes
    (engine.tiled.run_tiled), or as Ray actors with `ray` (then Ray is imported, and only
    then). Outputs in input order, and the engine tics."""
    if ray:
        with cluster(ray, num_cpus=workers) as r:
            return run_ray(r, wad, infos, tiles, net, X, workers, chunk=chunk,
                           progress=progress, pipeline=pipeline)
    from engine.tiled import run_tiled

    return run_tiled(wad, infos, tiles, net, X, workers=workers, chunk=chunk, progress=progress,
                     pipeline=pipeline)


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
    worker needs no shared disk)."""

    def __init__(self, wad_bytes: bytes, infos: list[dict], io: list[tuple[list, list]],
                 pipeline: bool):
        import tempfile

        from engine.doom import Engine

        self.dir = tempfile.mkdtemp(prefix="voodoonet-ray-")
        self.wad = os.path.join(self.dir, "map.wad")
        with open(self.wad, "wb") as f:
            f.write(wad_bytes)
        self.infos, self.io, self.pipeline = infos, io, pipeline
        self.engine = Engine(self.wad, "MAP01")
        self.runners: dict = {}  # engine.tiled.run_chunk keeps its map's runner here

    def run(self, chunk: list[tuple[int, dict]]) -> list[tuple[int, dict, int]]:
        from engine.tiled import run_chunk

        return run_chunk(self.engine, self.wad, self.infos, self.io, chunk, self.pipeline,
                         self.runners)

    def close(self) -> None:
        import shutil

        self.engine.close()
        shutil.rmtree(self.dir, ignore_errors=True)


def run_ray(ray, wad: str, infos: list[dict], tiles, net: Netlist, X, workers: int,
            chunk: int = 20, progress=None, pipeline: bool = True) -> tuple[list[list[int]], int]:
    """engine.tiled.run_tiled on a Ray cluster (`ray` from `cluster()`): `workers` actors,
    each with its own engine; outputs in input order and the total engine tics."""
    from ray.util import ActorPool

    names_in = [net.nodes[i].name for i in net.inputs]
    names_out = [net.nodes[o].name for o in net.outputs]
    io = [(t.inputs, t.outputs) for t in tiles]
    work = [(i, dict(zip(names_in, map(int, x)))) for i, x in enumerate(X)]
    chunks = [work[i:i + chunk] for i in range(0, len(work), chunk)]
    with open(wad, "rb") as f:
        wad_ref = ray.put(f.read())
    Actor = ray.remote(num_cpus=1)(ShardWorker)
    actors = [Actor.remote(wad_ref, infos, io, pipeline) for _ in range(max(1, workers))]
    results: dict[int, list[int]] = {}
    total_tics = 0
    try:
        pool = ActorPool(actors)
        for done in pool.map_unordered(lambda a, c: a.run.remote(c), chunks):
            for idx, values, tics in done:
                results[idx] = [values[n] for n in names_out]
                total_tics += tics
            if progress:
                progress(len(done))
    finally:
        try:  # engines closed before their actors go, or the engine processes outlive them
            ray.get([a.close.remote() for a in actors], timeout=30)
        finally:
            for a in actors:
                ray.kill(a)
    return [results[i] for i in range(len(X))], total_tics
