"""`build.py brainlevel`: build wads/brainlevel.wad, run seeded episodes, print the table.

Every seed is played by up to four brains on the same map: **paused** and **live** (the
dolls decide; every decision is checked against the integer reference), **python** (the
same integer policy evaluated in Python with zero thinking time: the demons stay frozen
while it answers) and **random** (a seeded random policy, also with zero thinking time).
The last line is

    decisions D/D EXACT; paused won P/N; live won L/N; tics per decision T (S s game time); dolls K
"""
from __future__ import annotations

import os
import time

import numpy as np

from . import arena, policy, spec

TIC_RATE = 35


def build_wad(out: str, pol: policy.Policy, acc: str = "internal") -> arena.BrainMap:
    from mapgen.compile import write_wad

    bm = arena.build(pol.net, acc=acc, door_budget=policy.DOOR_BUDGET.get(pol.kind))
    write_wad(out, [bm.compiled], pol.net)
    return bm


def _policy(args) -> policy.Policy:
    kind = getattr(args, "policy", None)
    if not args.retrain:
        return policy.load(kind)
    from mapgen.compile import WADS

    pol = policy.build(kind, progress=True)
    path = os.path.join(WADS, os.path.basename(policy.CHECKED_IN[pol.kind]))
    os.makedirs(WADS, exist_ok=True)
    with open(path + ".tmp", "w", encoding="utf-8") as f:
        f.write(policy.to_text(pol))
    os.replace(path + ".tmp", path)
    same = open(path).read() == open(policy.CHECKED_IN[pol.kind]).read()
    print(f"retrained policy: {path} ({'identical to' if same else 'differs from'} the "
          "checked-in one)")
    return pol


def run(args) -> int:
    from dsl.diagnostics import VoodooError
    from mapgen.compile import default_wad

    if args.episodes is not None and not 1 <= args.episodes <= 1000:
        raise VoodooError(f"--episodes {args.episodes}: choose 1..1000 seeded episodes")
    if args.live and args.paused:
        raise VoodooError("--live and --paused: give one of them, or neither for both")
    if not 0 <= args.first_seed <= 2**31 - 2000:
        raise VoodooError(f"--first-seed {args.first_seed}: seeds are 0..{2**31 - 2000}")
    if args.gif:
        folder = os.path.dirname(os.path.abspath(args.gif))
        if not args.gif.lower().endswith(".gif") or not os.path.isdir(folder):
            raise VoodooError(f"--gif {args.gif}: give a .gif file in an existing folder")
    pol = _policy(args)
    out = args.output or default_wad("brainlevel")
    t0 = time.perf_counter()
    bm = build_wad(out, pol, args.acc)
    dolls = len(bm.compiled.circuit.lanes)
    print(f"{out}: the brain level ({dolls} dolls, policy {pol.kind}, "
          f"{time.perf_counter() - t0:.1f} s)")
    print(bm.compiled.report())
    print(f"policy agreement on {policy.HELD_OUT} held-out states: float {pol.float_agreement:.1%}"
          f", integer {pol.int_agreement:.1%} (with the expert); float == integer "
          f"{pol.float_int_agreement:.1%}")
    if args.gif:
        write_gif(out, bm.compiled.manifest, pol.net, args.gif, seed=args.first_seed)
    if args.episodes is None:
        return 0
    modes = ["live"] if args.live else ["paused"] if args.paused else ["paused", "live"]
    results = play(out, bm.compiled.manifest, pol.net, args.episodes, modes, args.first_seed)
    return report(results, modes, args.episodes, dolls)


def play(wad: str, info: dict, net, n: int, modes: list[str], first: int = 0) -> list:
    from .episode import BrainRunner

    rng = np.random.default_rng(first)
    results = []
    with BrainRunner(wad, info) as r:
        for seed in _progress(range(first, first + n), n):
            for mode in modes:
                results.append(r.episode(seed, mode, net=net))
            results.append(r.episode(seed, "python", label="python",
                                     brain=lambda o: policy.decide(net, o)))
            results.append(r.episode(seed, "python", label="random",
                                     brain=lambda o: int(rng.integers(spec.N_ACTIONS))))
    return results


def _progress(seeds, n: int):
    """tqdm on stderr for long runs; quiet when asked (VOODOO_QUIET=1)."""
    if os.environ.get("VOODOO_QUIET") or n < 5:
        return seeds
    import sys

    from tqdm import tqdm

    return tqdm(seeds, total=n, desc="episodes", unit="seed", file=sys.stderr, leave=False)


def report(results, modes: list[str], n: int, dolls: int) -> int:
    print(f"{'episode':>7}  {'brain':<7} {'decisions':>9} {'exact':>6} {'kills':>5} "
          f"{'damage':>6}  {'outcome':<7} {'game s':>6}  think tics")
    for res in results:
        done = [d for d in res.decisions if d.done]
        exact = str(sum(d.exact for d in done)) if res.brain in ("paused", "live") else "-"
        thinks = [d.think for d in done] if res.brain in ("paused", "live") else []
        think = f"{max(thinks)}" if thinks else "-"
        cut = len(res.decisions) - len(done)
        note = f"  ({cut} cut short by the episode's end)" if cut else ""
        print(f"{res.seed:>7}  {res.brain:<7} {len(done):>9} {exact:>6} {res.kills:>5} "
              f"{res.damage:>6}  {res.outcome:<7} {res.tics / TIC_RATE:>6.1f}  {think}{note}")
    mapped = [d for res in results if res.brain in modes for d in res.decisions if d.done]
    exact = sum(d.exact for d in mapped)
    enc = sum(res.encoding_errors for res in results)
    for brain in ("python", "random"):
        won = sum(res.won for res in results if res.brain == brain)
        print(f"baseline {brain}: won {won}/{n}")
    visited = [d for res in results if res.brain in modes for d in res.decisions if d.done]
    if visited:
        agree = np.mean([d.action == spec.expert(d.obs) for d in visited])
        print(f"on the {len(visited)} states the map visited, its policy agrees with the "
              f"expert on {agree:.1%}")
    if enc:
        print(f"{enc} observations differ from spec.encode of the state they encode")
    tics = max((d.think for d in mapped), default=0)
    parts = [f"decisions {exact}/{len(mapped)} EXACT"]
    for mode in modes:
        won = sum(res.won for res in results if res.brain == mode)
        parts.append(f"{mode} won {won}/{n}")
    parts.append(f"tics per decision {tics} ({tics / TIC_RATE:.2f} s game time)")
    parts.append(f"dolls {dolls}")
    print("; ".join(parts))
    return 0 if exact == len(mapped) and not enc else 1


def write_gif(wad: str, info: dict, net, path: str, seed: int = 0, max_tics: int = 1400,
              every: int = 3) -> None:
    """An animated GIF of one paused episode: the gallery camera while the marine acts,
    the hall camera while the dolls think (the map switches them), 320x240."""
    from PIL import Image

    from .episode import BrainRunner

    frames: list = []
    with BrainRunner(wad, info, render=True) as r:
        res = r.episode(seed, "paused", net=net, frames=frames, frame_every=every,
                        max_tics=max_tics)
    images = [Image.fromarray(f).quantize(colors=128, method=Image.Quantize.MEDIANCUT)
              for f in frames]
    from dsl.util import atomic_output

    with atomic_output(path, ".gif") as tmp:
        images[0].save(tmp, save_all=True, append_images=images[1:], duration=int(
            1000 * every / TIC_RATE), loop=0, optimize=True)
    print(f"{path}: {len(images)} frames of episode {seed} (paused, {res.outcome}, "
          f"{len(res.decisions)} decisions)")
