"""A real Ray cluster on this machine: a head and two worker nodes, each started with
`ray start` by the test (a process tree of its own, with its own resources: one CPU and a
resource naming it), joined by address as a remote cluster is, the project's code shipped
to them as a job's working directory. Tiles stream over actors on both nodes and every
output is exact; then an engine is killed mid-run, and then a worker node leaves mid-run:
no inference is lost, wrong or counted twice.

The cluster runs with token authentication off (RAY_AUTH_MODE=disabled, for every process
of it) in a temporary directory of its own, and is stopped by ending the `ray start`
processes this test started; nothing else on the machine is touched.
"""
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time

import numpy as np
import pytest

from conftest import ROOT
from dsl import load
from dsl.reference import evaluate
from test_stream import _game_processes

RAY = os.path.join(os.path.dirname(sys.executable), "ray")
STORE = str(100 * 1024 * 1024)   # object store per node: the WAD and chunks are small


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# Ports a node would otherwise take by default, the same for every node on one machine.
PORTS = ("node-manager-port", "object-manager-port", "metrics-export-port",
         "dashboard-agent-listen-port", "dashboard-agent-grpc-port", "runtime-env-agent-port")


def _start(args, env, log_path, timeout: float = 300):
    """`ray start ... --block`, returned once it says its node runs (or fails)."""
    ports = [f"--{name}={_free_port()}" for name in PORTS]
    with open(log_path, "wb") as log:
        p = subprocess.Popen([RAY, "start", *args, *ports, "--block", "--disable-usage-stats",
                              f"--object-store-memory={STORE}"], env=env, stdout=log,
                             stderr=subprocess.STDOUT, start_new_session=True)
    t = time.monotonic()
    while "Ray runtime started" not in log_path.read_text(errors="replace"):
        if p.poll() is not None or time.monotonic() - t > timeout:
            _stop(p)
            raise AssertionError(f"`ray start {' '.join(args)}` did not start a node: "
                                 + log_path.read_text(errors="replace")[-2000:])
        time.sleep(0.5)
    return p


def _stop(p) -> None:
    """End one `ray start --block` process: it takes its node's processes with it."""
    if p.poll() is None:
        p.terminate()
        try:
            p.wait(60)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()


@pytest.fixture
def cluster_env(tmp_path, monkeypatch):
    import tempfile

    # A node gives its raylet 10 s to register by default: on a machine shared with other
    # work that is not always enough (measured: it timed out at a load average of 12).
    env = {**os.environ, "RAY_AUTH_MODE": "disabled", "RAY_worker_niceness": "0",
           "RAY_USAGE_STATS_ENABLED": "0", "RAY_raylet_start_wait_time_s": "300"}
    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")
    port = _free_port()
    temp = tempfile.mkdtemp(prefix="vnray-", dir="/tmp")   # socket paths: <= 107 bytes
    procs = []
    try:
        procs.append(_start(["--head", f"--port={port}", "--num-cpus=0",
                             "--include-dashboard=false", f"--temp-dir={temp}"], env,
                            tmp_path / "head.log"))
        # One node at a time: two nodes starting together on one machine were seen to
        # leave one of them waiting forever.
        for k in range(2):
            procs.append(_start([f"--address=127.0.0.1:{port}", "--num-cpus=1",
                                 f"--resources={json.dumps({f'node{k}': 1})}"], env,
                                tmp_path / f"node{k}.log"))
        yield f"127.0.0.1:{port}", procs[1:]
    finally:
        for p in reversed(procs):
            _stop(p)
        shutil.rmtree(temp, ignore_errors=True)


def _wait_nodes(ray, n: int, timeout: float = 180) -> dict[str, int]:
    """Node id -> k (its resource nodek), once n worker nodes are alive."""
    t = time.monotonic()
    while time.monotonic() - t < timeout:
        alive = {nd["NodeID"]: int(next(r[4:] for r in nd["Resources"] if r.startswith("node")
                                        and r[4:].isdigit()))
                 for nd in ray.nodes() if nd["Alive"] and any(
                     r.startswith("node") and r[4:].isdigit() for r in nd["Resources"])}
        if len(alive) >= n:
            return alive
        time.sleep(1)
    raise AssertionError(f"fewer than {n} Ray worker nodes came up")


def _two_tiles(tmp_path):
    from mapgen.compile import write_wad
    from mapgen.tiles import compile_tiles, plan_tiles

    net = load(os.path.join(ROOT, "circuits", "mlp3.dnet"))
    tiles = plan_tiles(net, n_tiles=2)
    maps = compile_tiles(tiles, "mlp3")
    wad = str(tmp_path / "mlp3.wad")
    write_wad(wad, maps, net, tiles)
    return net, tiles, [m.manifest for m in maps], wad


def test_ray_cluster_streams_exact_through_a_killed_engine_and_a_lost_node(
        tmp_path, cluster_env, monkeypatch):
    import engine.tiled as T
    from engine.cluster import cluster, run_ray

    address, nodes = cluster_env
    net, tiles, infos, wad = _two_tiles(tmp_path)
    want = {}

    def inputs(n, seed):
        X = np.random.default_rng(seed).integers(0, 4, size=(n, 4)).tolist()
        want[seed] = evaluate(net, X).last_outputs().tolist()
        return X

    monkeypatch.setattr(T, "START_GRACE", 10.0)   # a replacement with no CPU left: 10 s
    with cluster(address) as ray:
        node_of = _wait_nodes(ray, 2)

        # 1. both tiles streamed, one actor on each worker node
        seen = []
        X = inputs(16, 1)
        got, _ = run_ray(ray, wad, infos, tiles, net, X, 2, chunk=2,
                         watch=lambda e, w, t: seen.append((e, w.node, t)))
        assert got == want[1]
        assert {node_of[n] for e, n, _ in seen if e == "ready"} == {0, 1}

        # 2. the game process of the second stage's engine killed while it has a chunk
        events, killed = [], []

        def kill_engine(event, w, task):  # once the second stage's engine has a chunk
            events.append((event, task))
            if event == "submit" and task[1] == 1 and not killed:
                killed.append(_game_processes(w.pid)[0])
                os.kill(killed[0], signal.SIGKILL)

        X = inputs(16, 2)
        got, _ = run_ray(ray, wad, infos, tiles, net, X, 2, chunk=2, watch=kill_engine)
        assert got == want[2]
        assert killed and any(e == "failed" and t[1] == 1 for e, t in events if t)
        done = [t for e, t in events if e == "done"]
        assert sorted(set(done)) == sorted((c, s) for c in range(8) for s in (0, 1))

        # 3. the worker node of the second stage leaves mid-run: its chunk runs again on
        # the node that is left, whose engine then serves both tiles
        events, dropped = [], []

        def drop_node(event, w, task):  # while the second stage's engine has a chunk
            events.append((event, task))
            if event == "submit" and task[1] == 1 and not dropped:
                dropped.append(w.node)
                _stop(nodes[node_of[w.node]])

        X = inputs(16, 3)
        got, _ = run_ray(ray, wad, infos, tiles, net, X, 2, chunk=2, watch=drop_node)
        assert got == want[3]
        assert any(e == "failed" for e, _ in events)
        assert dropped and not [nd for nd in ray.nodes()
                                if nd["Alive"] and nd["NodeID"] == dropped[0]]
