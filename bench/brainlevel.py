#!/usr/bin/env python3
"""The brain level's thinking cost, against baselines measured in the same run.

    python bench/brainlevel.py             # 5 seeds
    python bench/brainlevel.py --seeds 20

Per decision: game tics from the decision's start to its action (freeze, bus, dolls,
resets, acknowledgement; deterministic counts, not timings) and wall time, for the dolls
(paused) and for the same integer policy evaluated in Python with zero thinking time, on
the same seeds (its tics are the runner's polling interval, the demons frozen meanwhile).
Ratios are to the Python brain of this run and to the published anchor's 22 s (770
tics) per decision. The last line is the headline figure.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from demos.brainlevel import policy  # noqa: E402
from demos.brainlevel.demo import build_wad  # noqa: E402
from demos.brainlevel.episode import BrainRunner  # noqa: E402

ANCHOR_TICS = 22 * 35


def measure(runner, seeds, mode, net) -> tuple[list[int], float, int]:
    """(think tics of every decision carried out, wall seconds, decisions)."""
    thinks, n, t0 = [], 0, time.perf_counter()
    for seed in seeds:
        if mode == "python":
            res = runner.episode(seed, "python", brain=lambda o: policy.decide(net, o))
        else:
            res = runner.episode(seed, mode, net=net)
        done = [d for d in res.decisions if d.done]
        thinks += [d.think for d in done]
        n += len(done)
    return thinks, time.perf_counter() - t0, n


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seeds", type=int, default=5)
    args = p.parse_args(argv)
    pol = policy.load()
    with tempfile.TemporaryDirectory() as tmp:
        wad = os.path.join(tmp, "brainlevel.wad")
        bm = build_wad(wad, pol)
        seeds = range(args.seeds)
        with BrainRunner(wad, bm.compiled.manifest) as r:
            rows = {m: measure(r, seeds, m, pol.net) for m in ("python", "paused", "live")}
    base_ms = 1000 * rows["python"][1] / max(rows["python"][2], 1)
    print(f"{'brain':<8} {'decisions':>9} {'tics/decision (max)':>20} {'ms/decision':>12} "
          f"{'x python':>9}")
    for mode, (thinks, wall, n) in rows.items():
        ms = 1000 * wall / max(n, 1)
        print(f"{mode:<8} {n:>9} {max(thinks):>20} {ms:>12.1f} {ms / base_ms:>9.2f}")
    worst = max(rows["paused"][0] + rows["live"][0])
    print(f"dolls think in at most {worst} tics per decision ({worst / 35:.2f} s game time), "
          f"{ANCHOR_TICS / worst:.0f}x fewer than the published anchor's {ANCHOR_TICS}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
