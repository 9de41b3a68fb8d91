"""A multi-node Ray cluster on one machine, for tests and benchmarks: a head and worker
nodes, each a `ray start --block` process of its own with its own resources (CPUs and a
resource `nodeK` naming it), joined by address the way machines join a real cluster.

Owns starting and stopping such a cluster and nothing else. It runs with token
authentication off (RAY_AUTH_MODE=disabled, in every process of it and in the caller, who
must set it before connecting) in a temporary directory of its own, on ports chosen free,
and is stopped by ending the `ray start` processes it started (never `ray stop`, which
would end every Ray process of the machine, other people's too).
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager

RAY = os.path.join(os.path.dirname(sys.executable), "ray")
STORE = str(100 * 1024 * 1024)   # object store per node: WADs and chunks are small
# Ports every node would otherwise take by default, the same for all nodes on one machine.
PORTS = ("node-manager-port", "object-manager-port", "metrics-export-port",
         "dashboard-agent-listen-port", "dashboard-agent-grpc-port", "runtime-env-agent-port")
# A node gives its raylet 10 s to register by default: on a machine shared with other work
# that is not always enough (measured: it timed out at a load average of 12).
ENV = {"RAY_AUTH_MODE": "disabled", "RAY_worker_niceness": "0",
       "RAY_USAGE_STATS_ENABLED": "0", "RAY_raylet_start_wait_time_s": "300"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_node(args: list[str], log_path: str, timeout: float = 300) -> subprocess.Popen:
    """`ray start ARGS --block`, returned once it says its node runs."""
    ports = [f"--{name}={free_port()}" for name in PORTS]
    with open(log_path, "wb") as log:
        p = subprocess.Popen([RAY, "start", *args, *ports, "--block", "--disable-usage-stats",
                              f"--object-store-memory={STORE}"], env={**os.environ, **ENV},
                             stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    t = time.monotonic()
    while "Ray runtime started" not in _read(log_path):
        if p.poll() is not None or time.monotonic() - t > timeout:
            stop_node(p)
            raise RuntimeError(f"`ray start {' '.join(args)}` did not start a node: "
                               + _read(log_path)[-2000:])
        time.sleep(0.5)
    return p


def _read(path: str) -> str:
    with open(path, errors="replace") as f:
        return f.read()


def stop_node(p: subprocess.Popen) -> None:
    """End one `ray start --block` process: it takes its node's processes with it."""
    if p.poll() is None:
        p.terminate()
        try:
            p.wait(60)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()


@contextmanager
def local_cluster(nodes: int = 2, cpus: int = 1, logs: str | None = None):
    """(head address, the worker nodes' processes): a head with no CPUs of its own (work
    goes to the worker nodes only) and `nodes` worker nodes of `cpus` CPUs each, started
    one after the other (two nodes starting together on one machine were seen to leave one
    of them waiting forever)."""
    temp = tempfile.mkdtemp(prefix="vnray-", dir="/tmp")   # socket paths: <= 107 bytes
    logs = logs or temp
    port = free_port()
    procs: list[subprocess.Popen] = []
    try:
        procs.append(start_node(["--head", f"--port={port}", "--num-cpus=0",
                                 "--include-dashboard=false", f"--temp-dir={temp}"],
                                os.path.join(logs, "head.log")))
        for k in range(nodes):
            procs.append(start_node([f"--address=127.0.0.1:{port}", f"--num-cpus={cpus}",
                                     f"--resources={json.dumps({f'node{k}': 1})}"],
                                    os.path.join(logs, f"node{k}.log")))
        yield f"127.0.0.1:{port}", procs[1:]
    finally:
        for p in reversed(procs):
            stop_node(p)
        shutil.rmtree(temp, ignore_errors=True)


def wait_nodes(ray, n: int, timeout: float = 180) -> dict[str, int]:
    """Node id -> K (its resource nodeK), once n worker nodes are alive."""
    t = time.monotonic()
    while time.monotonic() - t < timeout:
        alive = {}
        for nd in ray.nodes():
            ks = [r[4:] for r in nd["Resources"] if r.startswith("node") and r[4:].isdigit()]
            if nd["Alive"] and ks:
                alive[nd["NodeID"]] = int(ks[0])
        if len(alive) >= n:
            return alive
        time.sleep(1)
    raise RuntimeError(f"fewer than {n} Ray worker nodes came up")
