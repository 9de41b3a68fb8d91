#!/usr/bin/env python3
"""Throughput: pipelined inference against the simple schedule, and Ray against local
processes, all measured in this one run on this machine.

    python bench/throughput.py            # 2,000 MNIST digits (a few minutes)
    python bench/throughput.py --quick    # smaller sizes
    python bench/throughput.py --full     # the trained MNIST model (models/quantize.py)

1. Inferences per second in one engine, with and without pipelining, for hello (12-16-6),
   a 4-layer MLP and the MNIST model. Each schedule runs the same inputs; the two are
   timed alternately, several times, and the best time of each counts (the machine is
   shared: the best run is the least disturbed one). Every output is checked against
   the NumPy reference.
2. The MNIST held-out digits in two local engine processes (pipelined, and simple), and
   pipelined on a local Ray cluster of the same size (`ray.init(num_cpus=2)`, two actors;
   starting the cluster is not timed, starting the actors and their engines is, as the
   local processes' start is; the cluster stays up for all parts, idle while the
   local processes run). The digits go in four parts; in each part the three runs
   take turns going first, so a change in the machine's load falls on all three alike.

The last line: `mnist N digits: pipelined X s, simple Y s (speed-up R); ray Z s (overhead O%)`.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402

from dsl import load  # noqa: E402
from dsl.random_net import mlp  # noqa: E402
from dsl.reference import evaluate  # noqa: E402
from engine.runner import MapRunner  # noqa: E402
from mapgen.compile import compile_netlist, write_wad  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def engine_cpu() -> float:
    """CPU seconds used so far by this process and every descendant that still runs (the
    Engine proxy process and, below it, the ViZDoom engine it starts): on a shared machine
    a steadier measure than wall time. Descendants are read from schedstat (nanoseconds;
    /proc/PID/stat counts in 10 ms clock ticks, too coarse for a few thousand tics)."""
    total = time.process_time()
    todo = _children(os.getpid())
    while todo:
        pid = todo.pop()
        try:
            for task in os.listdir(f"/proc/{pid}/task"):
                with open(f"/proc/{pid}/task/{task}/schedstat") as f:
                    total += int(f.read().split()[0]) / 1e9
        except FileNotFoundError:
            continue
        todo += _children(pid)
    return total


def _children(pid: int) -> list[str]:
    out: list[str] = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as f:
                out += f.read().split()
    except FileNotFoundError:
        pass
    return out


MODES = {"pipelined": dict(pipeline=True), "one beat": dict(pipeline=True, batch=1),
         "simple": dict(pipeline=False)}


def rate(net, n: int, tmp: str, rounds: int) -> dict:
    """Inferences per second of `net` in one engine: pipelined (the map's batch of beats per
    round trip), pipelined with one beat per round trip, and simple; best of `rounds`
    alternating runs of the same n inputs; and the CPU time each used (engine process and
    Python together), summed over the rounds."""
    rng = np.random.default_rng(0)
    xs = [[int(rng.integers(lo, hi + 1)) for lo, hi in net.input_ranges()] for _ in range(n)]
    ref = evaluate(net, xs).last_outputs().tolist()
    cm = compile_netlist(net)
    path = os.path.join(tmp, f"{net.name}.wad")
    write_wad(path, [cm])
    best = {m: float("inf") for m in MODES}
    cpu = {m: 0.0 for m in MODES}
    exact = True
    with MapRunner(path, cm.manifest) as r:
        r.infer_many(xs[:4])  # warm-up
        for _ in range(rounds):
            for mode, kw in MODES.items():
                t, c = time.perf_counter(), engine_cpu()
                got = r.infer_many(xs, **kw)
                best[mode] = min(best[mode], time.perf_counter() - t)
                cpu[mode] += engine_cpu() - c
                exact &= got == ref
        idle, trip = idle_costs(r.engine)
    pipe = cm.schedule.pipeline
    return dict(name=net.name, dolls=len(cm.circuit.lanes), phases=len(cm.schedule.phases),
                idle_us=1e6 * idle, trip_us=1e6 * trip, batch=cm.manifest["pipeline"]["batch"],
                simple_cpu_ms=1000 * cpu["simple"] / (n * rounds),
                simple_tics=cm.schedule.inference_tics + 1, batch_tics=pipe.batch_step,
                one_beat_tics=pipe.period,
                pipelined=n / best["pipelined"], simple=n / best["simple"],
                one_beat=n / best["one beat"], exact=exact, n=n,
                cpu_ratio=cpu["simple"] / max(cpu["pipelined"], 1e-9),
                cpu_ms=1000 * cpu["pipelined"] / (n * rounds),
                one_beat_cpu_ms=1000 * cpu["one beat"] / (n * rounds))


def idle_costs(engine, tics: int = 2000) -> tuple[float, float]:
    """CPU seconds of one idle tic (every doll parked) and of one round trip (a step of one
    tic, less that tic) in this engine: the only costs a schedule can save by overlapping
    inferences. The rest of an inference's CPU (the dolls' rides, door moves, bus
    statements) is the same however the inferences are arranged in time."""
    c = engine_cpu()
    for _ in range(tics // 100):
        engine.advance(100)
    idle = (engine_cpu() - c) / tics
    c = engine_cpu()
    for _ in range(tics // 4):
        engine.step([], 1)
    return idle, max(0.0, (engine_cpu() - c) / (tics // 4) - idle)


def split_cpu(m: dict, pipelined: bool) -> tuple[float, float, float, float]:
    """One schedule's CPU per inference (ms) split into its idle tics, its round trip and
    the rest (the dolls' rides, door moves, bus statements: work that no arrangement in
    time removes, though spreading door moves over tics makes it cheaper)."""
    cpu = m["cpu_ms"] if pipelined else m["simple_cpu_ms"]
    tics = m["batch_tics"] if pipelined else m["simple_tics"]
    idle = tics * m["idle_us"] / 1000
    trip = m["trip_us"] / 1000 / (m["batch"] if pipelined else 1)
    return cpu, idle, trip, cpu - idle - trip


def four_layer_mlp():
    """x[8] -> 12 -> 12 -> 12 -> o[4]: three relu layers and identity outputs, four phases
    of lanes with about the same length."""
    return mlp(11, [8, 12, 12, 12, 4], in_range=(0, 3), weight=2, bias=3, zero_fraction=0.3,
               hidden_gate="relu(s=4, max=3)", name="mlp4")


def mnist_model(full: bool):
    from models.quantize import build, load_mnist_small

    if full:
        built = build(progress=True)
        return built.net, built.transform
    return load_mnist_small()


def mnist_digits(transform, n: int):
    from models.datasets import load_split

    split = load_split(None)
    pick = np.random.default_rng(0).permutation(len(split.test_labels))[:n]
    return transform(split.test_images[pick]).tolist()


def mnist_runs(net, X, tmp: str, workers: int, rounds: int) -> dict:
    """The digits through the MNIST maps three ways, in `rounds` parts; within each part
    the three runs take turns going first, so that a change in the machine's load falls on
    all three alike. Every output is checked."""
    import ray

    from demos.mnist import run_digits
    from engine.cluster import start_local
    from mapgen.tiles import compile_tiles, plan_tiles

    tiles = plan_tiles(net)
    maps = compile_tiles(tiles, "MNIST")
    path = os.path.join(tmp, "mnist.wad")
    write_wad(path, maps, net, tiles)
    infos = [m.manifest for m in maps]
    modes = [("pipelined", dict(pipeline=True)), ("simple", dict(pipeline=False)),
             ("ray", dict(pipeline=True, ray="auto"))]
    out = {k: 0.0 for k, _ in modes} | {k + "_tics": 0 for k, _ in modes}
    exact = {k: True for k, _ in modes}
    start_local(ray, num_cpus=workers)  # ray.init(num_cpus=2), workers up: not timed
    try:
        for r, part in enumerate(np.array_split(np.arange(len(X)), rounds)):
            Xp = [X[i] for i in part]
            ref = evaluate(net, Xp).last_outputs().tolist()
            for key, kw in modes[r % 3:] + modes[:r % 3]:
                t = time.perf_counter()
                got, tics = run_digits(path, infos, tiles, net, Xp, workers, **kw)
                out[key] += time.perf_counter() - t
                out[key + "_tics"] += tics
                exact[key] &= got == ref
    finally:
        ray.shutdown()
    for k, _ in modes:
        out[k + "_tics"] /= len(X)
        out[k + "_exact"] = exact[k]
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="smaller sizes (CI-sized)")
    ap.add_argument("--full", action="store_true",
                    help="the trained MNIST model (trains it first unless cached)")
    ap.add_argument("--digits", type=int, help="MNIST digits for part 2 (default 2000)")
    args = ap.parse_args()
    n, rounds = (60, 3) if args.quick else (300, 5)
    digits = args.digits or (200 if args.quick else 2000)
    workers = 2
    net_m, transform = mnist_model(args.full)
    with tempfile.TemporaryDirectory() as tmp:
        print("inferences per second in one engine (best of "
              f"{rounds} alternating runs of {n} inputs each)")
        print(f"{'network':>12} {'dolls':>5} {'batch':>5} {'tics/inference':>19} "
              f"{'pipelined/s':>11} {'one beat/s':>10} {'simple/s':>8} {'ratio':>5} "
              f"{'(one beat)':>10} {'cpu ratio':>9} {'exact':>5}")
        rows = []
        for net in (load(os.path.join(ROOT, "circuits", "hello.dnet")), four_layer_mlp(), net_m):
            m = rate(net, n, tmp, rounds)
            print(f"{m['name']:>12} {m['dolls']:>5} {m['batch']:>5} "
                  f"{m['batch_tics']:>3} ({m['one_beat_tics']:>3}) vs {m['simple_tics']:>3} "
                  f"{m['pipelined']:>15.1f} "
                  f"{m['one_beat']:>10.1f} {m['simple']:>8.1f} "
                  f"{m['pipelined'] / m['simple']:>5.2f} {m['one_beat'] / m['simple']:>10.2f} "
                  f"{m['cpu_ratio']:>9.2f} {'yes' if m['exact'] else 'NO':>5}")
            rows.append(m)
        print("(pipelined: `batch` overlapping beats per round trip to the engine, tics/inference"
              " batched (one beat per round trip) vs simple; one beat: one beat per round trip; "
              "ratio: pipelined/simple "
              "inferences per second, best runs; cpu ratio: simple/pipelined CPU time of engine + "
              "Python over all runs)")
        print("\nwhere the CPU goes, ms per inference (engine + Python): idle tics (tics x the "
              "CPU of a tic with every doll parked), one round trip, the rest")
        print(f"{'network':>12} {'schedule':>9} {'cpu':>7} {'idle tics':>9} {'round trip':>10} "
              f"{'rest':>7}   simple cpu / this rest")
        for m in rows:
            simple = m["simple_cpu_ms"]
            for pipelined in (False, True):
                cpu, idle, trip, rest = split_cpu(m, pipelined)
                print(f"{m['name']:>12} {'pipelined' if pipelined else 'simple':>9} {cpu:>7.3f} "
                      f"{idle:>9.3f} {trip:>10.3f} {rest:>7.3f}   {simple / max(rest, 1e-9):.2f}")
        print("(simple cpu / this rest: the most any schedule with this schedule's rides and "
              "door moves could gain, were its tics and round trips free)")
        X = mnist_digits(transform, digits)
        r = mnist_runs(net_m, X, tmp, workers, rounds=max(1, min(4, digits // 400)))
    exact = all(r[k + "_exact"] for k in ("pipelined", "simple", "ray"))
    print(f"\n{net_m.name}, {digits} held-out digits, {workers} engine processes / Ray actors "
          f"(every output {'exact' if exact else 'NOT EXACT'}):")
    for k in ("pipelined", "simple", "ray"):
        print(f"  {k:>9}: {r[k]:7.1f} s, {digits / r[k]:6.1f} digits/s, "
              f"{r[k + '_tics']:.1f} tics per digit, x{r['simple'] / r[k]:.2f} the simple schedule")
    print(f"mnist {digits} digits: pipelined {r['pipelined']:.1f} s, simple {r['simple']:.1f} s "
          f"(speed-up {r['simple'] / r['pipelined']:.2f}); ray {r['ray']:.1f} s "
          f"(overhead {(r['ray'] / r['pipelined'] - 1) * 100:.0f}%)")
    return 0 if exact else 1


if __name__ == "__main__":
    sys.exit(main())
