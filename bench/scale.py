#!/usr/bin/env python3
"""A million connections in the engine: a wide MLP compiled to tiles and run exact, on 1,
2 and 4 engines on this machine and on a multi-node Ray cluster, in one run.

    python bench/scale.py                # 784 -> 1280 -> 10: 1,016,320 connections, 200 inputs
    python bench/scale.py --quick        # 196 -> 320 -> 10 and 40 inputs: a quick look
    python bench/scale.py --no-ray       # without the cluster

The network (seeded, built with the NetBuilder directly: a 4 MB .dnet of it takes minutes
to parse) has binary inputs, a hidden layer of requantising relus and an identity output
layer; every weight is one of -2, -1, 1, 2, so every connection is a line of the netlist.
It is tiled (`--tiles`, default 2: the hidden layer's map, then the output layer's, which
reads the hidden values as its inputs) and compiled, the tiles in parallel. Every run
checks every output against the integer reference (`dsl.reference.evaluate`, `==`).

Printed: connections, maps, dolls and lines per map, compile time and peak memory of the
compile, then inferences per second on 1, 2 and 4 local engine processes (the first
`--local-samples` inputs) (streamed: with
as many engines as tiles each tile has an engine of its own, and with more the costliest
tiles get more; engine/tiled.py): wall time, the start-up in it (engines loading their maps:
a map of 200,000 lines takes a minute), and inferences per second overall and once every
engine runs, that rate's ratio to one engine's; then all `--samples` inputs on a Ray
cluster of a head and 2 worker nodes started here (engine/localcluster.py), and a last line
with the connections and the verdict on the cluster.
"""
from __future__ import annotations

import argparse
import math
import os
import resource
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402

SIZES = (784, 1280, 10)
# An engine loading a map of 200,000 lines takes minutes on a loaded machine: until then
# its stage waits for it, instead of another engine changing maps to serve it.
START_GRACE = 1800.0
QUICK = (196, 320, 10)


def wide_mlp(n_in: int, n_hidden: int, n_out: int, seed: int = 0):
    """x[n_in] in 0..1 -> h[n_hidden] relu(s=96, max=5) -> o[n_out] identity."""
    from dsl.builder import NetBuilder
    from dsl.diagnostics import Pos
    from dsl.ir import Identity, Relu

    rng = np.random.default_rng(seed)
    pos = Pos("<bench/scale.py>", 1, 1)
    b = NetBuilder("<bench/scale.py>")
    b.name = "wide"
    b.declare_input("x", n_in, 0, 1, pos)
    x = b.groups["x"]
    h = b.declare("h", n_hidden, Relu(96, 5), pos)
    o = b.declare("o", n_out, Identity(), pos)
    w1 = rng.choice([-2, -1, 1, 2], size=(n_hidden, n_in)).tolist()
    w2 = rng.choice([-2, -1, 1, 2], size=(n_out, n_hidden)).tolist()
    bias = rng.integers(0, 200, size=n_hidden).tolist()
    for j, d in enumerate(h):     # the builder's own add_line, a million times, takes long
        b.nodes[d].weights = dict(zip(x, w1[j]))
        b.nodes[d].bias = bias[j]
    for k, d in enumerate(o):
        b.nodes[d].weights = dict(zip(h, w2[k]))
        b.add_output(d, pos)
    return b.build()


def peak_mb() -> tuple[float, float]:
    """(this process, its largest child) peak resident memory in MB."""
    me = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return me, kids


def chunk_for(engines: int, tiles: int, n: int) -> int:
    """An engine with several maps changes maps for every chunk (a big map loads in tens
    of seconds): one chunk each. Engines of one map each stream small chunks."""
    if engines < tiles:
        return n
    return max(4, math.ceil(n / (4 * engines)))


def compile_network(net, n_tiles, tmp: str):
    from mapgen.compile import write_wad
    from mapgen.tiles import compile_tiles, plan_tiles

    t = time.perf_counter()
    tiles = plan_tiles(net, n_tiles=n_tiles)
    planned = time.perf_counter() - t
    maps = compile_tiles(tiles, "wide")
    took = time.perf_counter() - t
    wad = os.path.join(tmp, "wide.wad")
    write_wad(wad, maps, net, tiles)
    return tiles, maps, wad, planned, took


class Clock:
    """A run's watch: when it began, when its engines were all up (their maps loaded), and
    a progress bar of the inferences done."""

    def __init__(self, engines: int, n: int, what: str):
        from tqdm import tqdm

        self.engines, self.ready, self.up, self.last = engines, 0, None, None
        self.bar = tqdm(total=n, desc=what, unit="inference", leave=False)
        self.start = time.perf_counter()

    def watch(self, event, worker, task) -> None:
        if event == "ready":
            self.ready += 1
            self.last = time.perf_counter()
            if self.ready == self.engines and self.up is None:
                self.up = self.last

    def done(self, n: int) -> None:
        self.bar.update(n)

    def figures(self, n: int) -> tuple[float, float, float]:
        """(wall seconds, start-up seconds, inferences per second once every engine ran;
        an engine that came up only after the others had done the work is not waited for)."""
        end = time.perf_counter()
        self.bar.close()
        up = (self.up or self.last or self.start) - self.start
        return end - self.start, up, n / (end - self.start - up)


def row(label: str, n: int, exact: int, wall: float, up: float, rate: float, base) -> str:
    ratio = "" if base is None else f"  x{rate / base:4.2f} one engine"
    return (f"  {label}: {wall:7.1f} s ({up:5.1f} s start-up)  {n / wall:6.2f} inferences/s "
            f"overall, {rate:6.2f} once running{ratio}  {exact}/{n} "
            f"{'EXACT' if exact == n else 'MISMATCH'}")


def local_runs(net, tiles, maps, wad, X, want, engines) -> list[tuple]:
    """The same inferences on each number of local engines: (engines, wall, start-up,
    inferences/s once running, exact)."""
    from engine.tiled import run_tiled

    infos = [m.manifest for m in maps]
    rows = []
    for e in engines:
        clock = Clock(e, len(X), f"{e} engine(s)")
        got, _ = run_tiled(wad, infos, tiles, net, X, workers=e,
                           chunk=chunk_for(e, len(tiles), len(X)), watch=clock.watch,
                           progress=clock.done, start_grace=START_GRACE)
        wall, up, rate = clock.figures(len(X))
        exact = sum(g == w for g, w in zip(got, want))
        rows.append((e, wall, up, rate, exact))
        print(row(f"{e} engine(s)", len(X), exact, wall, up, rate,
                  rows[0][3] if len(rows) > 1 else None), flush=True)
    return rows


def ray_run(net, tiles, maps, wad, X, want, engines: int, nodes: int):
    """The same run on a Ray cluster started here: a head and `nodes` worker nodes of
    engines // nodes CPUs each, the code shipped to them as a job's working directory.
    Returns (wall, start-up, inferences/s once running, exact, engines, nodes used)."""
    from engine.cluster import cluster, run_ray
    from engine.localcluster import local_cluster, wait_nodes

    os.environ["RAY_AUTH_MODE"] = "disabled"
    per = max(1, engines // nodes)
    with local_cluster(nodes=nodes, cpus=per) as (address, _):
        with cluster(address) as ray:
            wait_nodes(ray, nodes)
            where = set()
            clock = Clock(per * nodes, len(X), "Ray")

            def watch(event, w, task):
                clock.watch(event, w, task)
                if event == "ready":
                    where.add(w.node)

            got, _ = run_ray(ray, wad, [m.manifest for m in maps], tiles, net, X, per * nodes,
                             chunk=chunk_for(per * nodes, len(tiles), len(X)), watch=watch,
                             progress=clock.done, start_grace=START_GRACE)
            wall, up, rate = clock.figures(len(X))
    exact = sum(g == w for g, w in zip(got, want))
    return wall, up, rate, exact, per * nodes, len(where)


def main(argv=None) -> int:
    from dsl.reference import evaluate

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true")
    p.add_argument("--samples", type=int, help="inferences on the Ray cluster (default 200)")
    p.add_argument("--local-samples", type=int,
                   help="inferences of each local run (default 24: 200 in one engine had "
                        "not finished after 22 minutes on the shared 2-core machine)")
    p.add_argument("--tiles", type=int, default=2)
    p.add_argument("--engines", default="1,2,4")
    p.add_argument("--no-ray", dest="ray", action="store_false")
    p.add_argument("--nodes", type=int, default=2, help="Ray worker nodes (default 2)")
    args = p.parse_args(argv)
    n_in, n_hidden, n_out = QUICK if args.quick else SIZES
    samples = args.samples or (40 if args.quick else 200)
    local = args.local_samples or (20 if args.quick else 24)
    t = time.perf_counter()
    net = wide_mlp(n_in, n_hidden, n_out)
    built = time.perf_counter() - t
    conns = net.n_connections
    print(f"network {n_in} -> {n_hidden} -> {n_out}: {conns:,} connections, "
          f"{len(net.nodes):,} nodes (built in {built:.1f} s)", flush=True)
    X = np.random.default_rng(1).integers(0, 2, size=(samples, n_in)).tolist()
    want = evaluate(net, X).last_outputs().tolist()
    with tempfile.TemporaryDirectory() as tmp:
        tiles, maps, wad, planned, took = compile_network(net, args.tiles, tmp)
        me, kids = peak_mb()
        dolls = sum(len(m.circuit.lanes) for m in maps)
        print(f"compiled into {len(maps)} maps in {took:.1f} s (plan {planned:.1f} s, tiles in "
              f"parallel), peak memory {me:.0f} MB here, {kids:.0f} MB in a compile worker; "
              f"WAD {os.path.getsize(wad) / 2**20:.1f} MB", flush=True)
        for m in maps:
            print(f"  {m.name}: {len(m.circuit.lanes):,} dolls, {len(m.layout.model.lines):,} "
                  f"linedefs, {len(m.layout.model.sectors):,} sectors, "
                  f"{len(m.manifest['inputs']):,} inputs, ACS {len(m.acs):,} characters, "
                  f"{m.manifest['inference_tics']} tics per inference", flush=True)
        print(f"the first {local} of the {samples} inputs, local engine processes:", flush=True)
        rows = local_runs(net, tiles, maps, wad, X[:local], want[:local],
                          [int(e) for e in args.engines.split(",")])
        ok = all(r[4] == local for r in rows)
        if args.ray:
            wall, up, rate, exact, engines, used = ray_run(net, tiles, maps, wad, X, want, max(
                int(e) for e in args.engines.split(",")), args.nodes)
            print(f"all {samples} inputs on the Ray cluster:", flush=True)
            print(row(f"Ray, {args.nodes} worker nodes, {engines} engines on {used} nodes",
                      samples, exact, wall, up, rate, rows[0][3]), flush=True)
            ok = ok and exact == samples
            print(f"{conns:,} connections, {len(maps)} maps, {dolls:,} dolls: {exact}/{samples} "
                  f"outputs {'EXACT' if exact == samples else 'MISMATCH'} on a Ray cluster of "
                  f"{args.nodes} worker nodes ({engines} engines), {rate:.2f} inferences/s "
                  "once running")
        else:
            print(f"{conns:,} connections, {len(maps)} maps, {dolls:,} dolls: every output "
                  f"{'EXACT' if ok else 'MISMATCH'} locally (no Ray cluster: --no-ray)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
