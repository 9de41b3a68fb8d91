#!/usr/bin/env python3
"""Speed, side by side (issue 34): each subject built the old way (the conveyor geometry,
no nodes built ahead) and the new (gliding lanes, sub-lanes chosen by mapgen/carry.py,
nodes by zdbsp), run in the same run, every output compared with the integer reference.

    python bench/speed.py                 # chat, cnn, scale, hello (about 15 min here once
                                          # the WADs are cached; the first build is longer)
    python bench/speed.py --quick         # a smaller scale network, fewer samples
    python bench/speed.py --only chat,hello
    python bench/speed.py --only microbit   # the micro:bit size, 45 maps, its inputs
                                          # all first and late (two builds of about 20
                                          # minutes each, the first time)

The CNN reads held-out MNIST digits (mostly blank, as digits are); the other subjects
seeded random inputs over their input ranges.

For each subject and each way: the map's load (engine CPU seconds), an idle tic and a
riding tic (engine CPU ms: /proc of the ViZDoom process), tics per inference (per
character for chat), the rate in one engine (characters, digits or inferences per second
of engine CPU, i.e. with a core to itself; the wall time on this machine beside it; a tiled
network's maps one after the other in one engine, each loaded once) and the verdict (`EXACT` when every output equals the reference). Beside the
new rate: its physical floor, door crossings x the measured CPU cost of a moving doll-tic
(each door a doll crosses costs at least the tic it moves in). The last line:
`speed: chat C characters/s (xR), T tics per step; cnn D digits/s (xR); scale I
inferences/s (xR); hello H tics; all EXACT` (R: new/old); with microbit, `microbit S s a
step (T tics)` among them.

WADs are kept by content (mapgen/wadcache.py): a second run builds nothing.
"""
from __future__ import annotations

import argparse
import math
import os
import random
import sys
import tempfile
import time
from dataclasses import dataclass, field

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "bench"))

OLD = {"carry": "conveyor", "nodes": False}
NEW = {"carry": "glide", "nodes": True}
# A network whose conveyor map is over a map's budgets (the d-12 chat model: 625,583
# linedefs of 600,000) is measured against the first gliding map instead: no sub-lanes,
# tags numbered in order, no nodes (what carry.py, the tag placement and zdbsp add).
OLD_FITTING = {"carry": "glide", "nodes": False, "split": False, "chains": False}


def proc_cpu(pid: int) -> float:
    """User + system CPU seconds of a process so far."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@dataclass
class Run:
    """One way of one subject: per map, then summed over the maps of an inference."""
    load: float = 0.0            # engine CPU s to load every map
    idle_ms: float = 0.0         # engine CPU per idle tic (the largest map's)
    ride_ms: float = 0.0         # engine CPU per tic while the dolls ride
    tics: int = 0                # tics per inference (all maps)
    wall: float = 0.0            # wall seconds per inference (all maps, loads excluded)
    cpu: float = 0.0             # engine CPU seconds per inference
    n: int = 0
    exact: int = 0
    doll_tics: int = 0           # moving doll-tics per inference (from the layout)
    crossings: int = 0           # doors crossed per inference, at most
    notes: list = field(default_factory=list)

    @property
    def rate(self) -> float:
        """Per second of engine CPU: what one engine on a core of its own gives (wall time
        on this shared machine is printed beside it, not used: it measures the load)."""
        return 1.0 / self.cpu if self.cpu else 0.0

    @property
    def verdict(self) -> str:
        return "EXACT" if self.n and self.exact == self.n else "MISMATCH"


# -- building ---------------------------------------------------------------------------
def counts(maps) -> dict:
    """What the floor needs from the compiled maps: door crossings and moving doll-tics per
    inference, and each map's manifest."""
    from mapgen import physics as P

    cross = ride = 0
    for m in maps:
        cross += sum(len(g.lane.doors) for g in m.layout.lanes)
        ride += sum(math.ceil(g.reach() / P.DOLL_SPEED) for g in m.layout.lanes)
    return {"crossings": cross, "doll_tics": int(ride), "infos": [m.manifest for m in maps],
            "lines": [len(m.layout.model.lines) for m in maps]}


def build(net, how: dict, tmp: str, name: str, tiles: int | None = None,
          room=None) -> tuple[str, dict]:
    """The subject's WAD built `how` (cached by content), and what counts() kept."""
    from mapgen import wadcache
    from mapgen.compile import compile_netlist, write_wad

    def make(path: str) -> dict:
        print(f"  building {name} ({how['carry']}{', nodes' if how['nodes'] else ''})...",
              flush=True)
        if tiles:
            from mapgen.tiles import compile_tiles, plan_tiles

            plan = plan_tiles(net) if tiles == "auto" else plan_tiles(net, n_tiles=tiles)
            maps = compile_tiles(plan, name, carry=how["carry"], nodes=how["nodes"])
            write_wad(path, maps, net, plan, nodes=how["nodes"])
            kept = counts(maps)
            kept["tiles"] = [{"inputs": t.inputs, "outputs": t.outputs} for t in plan]
            return kept
        m = room(net, how) if room else compile_netlist(net, carry=how["carry"])
        write_wad(path, [m], net, nodes=how["nodes"])
        return counts([m])

    flat = "" if how.get("chains", True) else "-flat"
    path = os.path.join(tmp, f"{name}-{how['carry']}{flat}.wad")
    kept = wadcache.cached(wadcache.key_of(net, tiles=tiles, room=bool(room), **how), make,
                           path)
    return path, kept


# -- running ----------------------------------------------------------------------------
def open_runner(path: str, info: dict, map_name: str, run: Run):
    """A MapRunner on one map; its load CPU and an idle tic's CPU go into `run`."""
    from engine.runner import MapRunner
    from mapgen.compile import map_file

    from engine.doom import Engine

    engine = Engine(map_file(path, info), map_name)
    pid = engine._game
    run.load += proc_cpu(pid)
    runner = MapRunner(path, info, map_name, engine=engine)
    c0, tics = proc_cpu(pid), 0
    while tics < 4000 and (tics < 200 or proc_cpu(pid) - c0 < 0.5):  # /proc counts in 10 ms
        engine.advance(200)
        tics += 200
    run.idle_ms = max(run.idle_ms, (proc_cpu(pid) - c0) / tics * 1e3)
    return runner, pid


def run_maps(path: str, kept: dict, net, X, run: Run) -> list[list[int]]:
    """X through the WAD's maps one after the other in one engine each (a tiled network:
    every sample through map 1, then map 2 ...; values handed on by name)."""
    infos, tiles = kept["infos"], kept.get("tiles") or [None]
    values = [{net.nodes[i].name: int(v) for i, v in zip(net.inputs, x)} for x in X]
    for k, (info, tile) in enumerate(zip(infos, tiles)):
        runner, pid = open_runner(path, info, f"MAP{k + 1:02d}", run)
        with runner:
            t0, c0, tics0 = time.perf_counter(), proc_cpu(pid), runner.tics
            for v in values:
                names = tile["inputs"] if tile else info["inputs"]
                out = runner.infer([v[n] for n in names], first=v is values[0])
                v.update(zip(tile["outputs"] if tile else info["outputs"], out))
            took, cpu = time.perf_counter() - t0, proc_cpu(pid) - c0
            tics = runner.tics - tics0
        run.wall += took / len(X)
        run.cpu += cpu / len(X)
        run.tics += tics // len(X)
        run.ride_ms = max(run.ride_ms, cpu / tics * 1e3)
    return [[v[net.nodes[o].name] for o in net.outputs] for v in values]


def feed_forward(name: str, net, how: dict, tmp: str, n: int, tiles=None, X=None) -> Run:
    """n inferences: X's first n rows, or seeded random inputs over the input ranges."""
    from dsl.reference import evaluate

    path, kept = build(net, how, tmp, name, tiles)
    if X is None:
        rng = random.Random(1)
        X = [[rng.randint(lo, hi) for lo, hi in net.input_ranges()] for _ in range(n)]
    X = [list(map(int, x)) for x in X[:n]]
    want = evaluate(net, X).last_outputs().tolist()
    run = Run(n=n, doll_tics=kept["doll_tics"], crossings=kept["crossings"])
    got = run_maps(path, kept, net, X, run)
    run.exact = sum(g == w for g, w in zip(got, want))
    return run


def held_out_digits(n: int):
    """The CNN's inputs for the first n held-out MNIST digits (the fixed shuffle
    `build.py mnist` takes them in): a digit is mostly blank, which random inputs are not."""
    from models.cnn import load_mnist_cnn
    from throughput import mnist_digits

    return mnist_digits(load_mnist_cnn()[1], n)


def chat(how: dict, tmp: str, steps: int) -> Run:
    """The one-map chat model (its room and letter wall) answering `hi`: a step per
    character, every step's outputs compared (demos/chat.py run_chat)."""
    from demos.chat import ONE_MAP, load_model, load_net, run_chat
    from dsl.diagnostics import CompileError
    from mapgen.compile import load_wad

    model = load_model(ONE_MAP)
    net = load_net()

    def plain(net, how):
        from mapgen.compile import compile_netlist
        return compile_netlist(net, title="chat", carry=how["carry"],
                               split=how.get("split", True), chains=how.get("chains"))

    try:
        path, kept = build(net, how, tmp, "chat", room=plain)
    except CompileError as e:
        if how is not OLD:
            raise
        print(f"  the conveyor map does not fit one map ({str(e).splitlines()[0]}): the old "
              "way is the first gliding map (no sub-lanes, tags in order, no nodes)",
              flush=True)
        how = OLD_FITTING
        path, kept = build(net, how, tmp, "chat", room=plain)
    run = Run(doll_tics=kept["doll_tics"], crossings=kept["crossings"])
    loaded = load_wad(path)
    runner, pid = open_runner(path, kept["infos"][0], "MAP01", run)
    with runner:
        c0 = proc_cpu(pid)
        r = run_chat(loaded, model.cfg, "hi", runner=runner, max_steps=steps)
        cpu = proc_cpu(pid) - c0
    run.n, run.exact = r.steps, r.exact if not r.divergences else 0
    run.tics = r.tics // r.steps
    run.wall, run.cpu = r.seconds / r.steps, cpu / r.steps
    run.ride_ms = cpu / r.tics * 1e3
    return run


def microbit(tmp: str, steps: int, late: bool = True) -> Run:
    """The micro:bit size (docs/chat.md: 45 maps, each in its own engine) answering `hi`:
    the maps of a step form a chain (step t + 1 reads the character step t chose), each
    map starting once the values it takes are handed on, in the middle of the step before
    it; engine CPU is summed over the engines. Every value that crosses maps and every
    output is compared with the reference. `late`: input lanes ride as late as their
    readers allow, and a map starts on the inputs of its first phase (False: a map starts
    once all its inputs are there, stop 44's way)."""
    from concurrent.futures import ThreadPoolExecutor

    from demos.chat import build_tiled, config_net, load_model, run_chat_tiled
    from engine.runner import MapRunner
    from engine.tiled import map_name, step_chain

    model = load_model("microbit")
    net = config_net(model, "microbit")
    loaded = build_tiled(net, os.path.join(tmp, f"chat_microbit{'' if late else '_all'}.wad"),
                         "chat microbit", model.cfg, late=late)
    run = Run()
    # The maps load two at a time, one per core. An engine ends with the thread that started
    # it (engine/doom.py), so the pool's threads live until the engines are closed.
    with ThreadPoolExecutor(2) as ex:
        runners = list(ex.map(lambda k: MapRunner(loaded.path, loaded.infos[k], map_name(k)),
                              range(len(loaded.infos))))
        try:
            pids = [r.engine._game for r in runners]
            run.load = sum(proc_cpu(p) for p in pids)
            c0 = [proc_cpu(p) for p in pids]
            r = run_chat_tiled(loaded, model.cfg, "hi", runners=runners, max_steps=steps)
            cpu = sum(proc_cpu(p) - c for p, c in zip(pids, c0))
        finally:
            for runner in runners:
                runner.close()
    run.n, run.exact = r.steps, r.exact if not r.divergences else 0
    run.tics = r.tics // r.steps
    # wall: until the last step's outputs are out of the last map; the comparison of every
    # value with the reference comes after (shown beside it)
    run.wall, run.cpu = r.answered / r.steps, cpu / r.steps
    run.ride_ms = cpu / r.tics * 1e3
    run.notes += [f"{len(loaded.infos)} maps", f"then {r.seconds - r.answered:.1f} s checking"]
    tics, path = step_chain(loaded.infos)
    worst = sorted(path, key=lambda h: h.need - h.hand)[:3]
    run.notes.append(f"critical path {tics} tics over {len(path)} hops, the longest: " + ", ".join(
        f"{map_name(h.map)} waits at tic {h.need} for {h.value} ({map_name(h.source)}, tic "
        f"{h.hand})" for h in worst))
    return run


# -- report -----------------------------------------------------------------------------
def floor_rate(run: Run) -> float:
    """Door crossings x the CPU of a moving doll-tic, measured here: the riding CPU above
    the idle map's, over the doll-tics the layout says the dolls move."""
    moving = max(0.0, run.cpu - run.idle_ms / 1e3 * run.tics)
    per_doll_tic = moving / run.doll_tics if run.doll_tics else 0.0
    t = run.crossings * per_doll_tic
    return 1.0 / t if t else float("inf")


def show(label: str, unit: str, old: Run, new: Run) -> float:
    r = new.rate / old.rate if old.rate else float("inf")
    for way, run in (("old", old), ("new", new)):
        print(f"  {way}: load {run.load:6.1f} s CPU, idle tic {run.idle_ms:7.3f} ms, riding "
              f"tic {run.ride_ms:7.3f} ms, {run.tics:5d} tics, {run.cpu * 1e3:7.0f} ms CPU "
              f"({run.wall * 1e3:8.0f} ms wall) per {unit}: {run.rate:7.3f} {unit}s/s, "
              f"{run.exact}/{run.n} {run.verdict}", flush=True)
    print(f"  {label}: x{r:.2f} the old rate; idle tic x{new.idle_ms / old.idle_ms:.3f}, load "
          f"x{new.load / old.load:.3f}; physical floor {floor_rate(new):.1f} {unit}s/s "
          f"({new.crossings:,} door crossings, {new.doll_tics:,} moving doll-tics)",
          flush=True)
    return r


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="a smaller scale network, fewer runs")
    p.add_argument("--only", default="chat,cnn,scale,hello")
    args = p.parse_args(argv)
    only = set(args.only.split(","))
    os.environ.setdefault("VOODOO_WAD_CACHE", os.path.join(
        os.path.expanduser("~"), ".cache", "voodoonet", "wads"))
    from dsl import load

    results, line = {}, []
    with tempfile.TemporaryDirectory() as tmp:
        if "chat" in only:
            print("chat (circuits/chat.dnet, one map, prompt 'hi'):", flush=True)
            old, new = chat(OLD, tmp, 2 if args.quick else 3), chat(NEW, tmp, 12)
            results["chat"] = (old, new)
            r = show("chat", "character", old, new)
            line.append(f"chat {new.rate:.2f} characters/s (x{r:.1f}), {new.tics} tics per step")
        if "cnn" in only:
            print("cnn (circuits/mnist_cnn.dnet on held-out MNIST digits; old: over the maps "
                  "the planner gives it, new: one map):", flush=True)
            net = load(os.path.join(ROOT, "circuits", "mnist_cnn.dnet"))
            n = 4 if args.quick else 10
            digits = held_out_digits(3 * n)
            old = feed_forward("cnn", net, OLD, tmp, n, tiles="auto", X=digits)
            new = feed_forward("cnn", net, NEW, tmp, 3 * n, X=digits)
            results["cnn"] = (old, new)
            r = show("cnn", "digit", old, new)
            line.append(f"cnn {new.rate:.2f} digits/s (x{r:.1f})")
        if "scale" in only:
            from scale import SIZES, wide_mlp

            sizes = (196, 320, 10) if args.quick else SIZES
            net = wide_mlp(*sizes)
            conns = sizes[0] * sizes[1] + sizes[1] * sizes[2]
            print(f"scale ({sizes[0]} -> {sizes[1]} -> {sizes[2]}: {conns:,} connections, "
                  "2 maps, one engine):", flush=True)
            old = feed_forward("scale", net, OLD, tmp, 3 if args.quick else 6, tiles=2)
            new = feed_forward("scale", net, NEW, tmp, 8 if args.quick else 20, tiles=2)
            results["scale"] = (old, new)
            r = show("scale", "inference", old, new)
            line.append(f"scale {new.rate:.2f} inferences/s (x{r:.1f})")
        if "microbit" in only:
            print("microbit (the micro:bit size chat model, over the maps the planner gives "
                  "it, each in its own engine; prompt 'hi'):", flush=True)
            n = 3 if args.quick else 6
            old, mb = microbit(tmp, n, late=False), microbit(tmp, n)
            results["microbit"] = (old, mb)
            for way, run in (("all inputs first", old), ("inputs late", mb)):
                print(f"  {way}: load {run.load:6.1f} s CPU over {run.notes[0]}, {run.tics} "
                      f"tics, {run.wall:.2f} s wall and {run.cpu:.2f} s engine CPU per step "
                      f"({run.notes[1]}), riding tic {run.ride_ms:.3f} ms, "
                      f"{run.exact}/{run.n} {run.verdict}; {run.notes[2]}", flush=True)
            print(f"  microbit: wall a step x{mb.wall / old.wall:.2f} with inputs late",
                  flush=True)
            line.append(f"microbit {mb.wall:.1f} s a step ({mb.tics} tics; "
                        f"x{mb.wall / old.wall:.2f})")
        if "hello" in only:
            print("hello (circuits/hello.dnet):", flush=True)
            net = load(os.path.join(ROOT, "circuits", "hello.dnet"))
            old = feed_forward("hello", net, OLD, tmp, 100)
            new = feed_forward("hello", net, NEW, tmp, 100)
            results["hello"] = (old, new)
            show("hello", "inference", old, new)
            line.append(f"hello {new.tics} tics")
    ok = all(r.verdict == "EXACT" for pair in results.values() for r in pair)
    print("speed: " + "; ".join(line) + ("; all EXACT" if ok else "; MISMATCH"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
