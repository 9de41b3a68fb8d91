#!/usr/bin/env python3
"""How checking (parse, validate, ranges) and `eval` scale with a netlist's size, on the
shapes issue 15 found quadratic or exponential. For each shape it times size N and 2N in
the same run and prints the ratio: about 2 is linear (the issue measured 5.6 for outputs
from 40,000 to 80,000, a hang for unknown names and a minute for 27 products).

    python bench/check_scaling.py            # the issue's sizes
    python bench/check_scaling.py --quick    # a tenth of them
"""
from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from dsl.diagnostics import CompileError  # noqa: E402
from dsl.parser import parse  # noqa: E402
from dsl.reference import evaluate  # noqa: E402

SHAPES = {
    "output x of input x[N]": (40000, lambda n: f"input x[{n}] : 0..1\noutput x\n"),
    "N unknown names": (4000, lambda n: "input x : 0..1\n" + "".join(
        f"neuron n{i} : identity = x + zz{i}\n" for i in range(n)) + "output n0\n"),
    "N chained squarings (refused)": (26, lambda n: "input x : 0..3\n"
                                      "neuron p0 : product(x, x)\n" + "".join(
        f"neuron p{i} : product(p{i - 1}, p{i - 1})\n" for i in range(1, n))
        + f"output p{n - 1}\n"),
    "N identity chain (folded)": (2000, lambda n: "input x[2] : 0..1\n"
                                  "neuron n0 : identity = x[0]\n" + "".join(
        f"neuron n{i} : identity = n{i - 1} + x[1] - x[0]\n" for i in range(1, n))
        + f"output n{n - 1}\n"),
}


def timed(fn) -> float:
    t = time.perf_counter()
    try:
        fn()
    except CompileError:
        pass
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    scale = 10 if args.quick else 1
    print(f"{'shape':<34} {'N':>7} {'t(N) s':>8} {'t(2N) s':>8} {'ratio':>6}")
    for name, (n, make) in SHAPES.items():
        n = max(2, n // scale) if "squarings" not in name else n
        a = timed(lambda: parse(make(n), "a.dnet"))
        b = timed(lambda: parse(make(2 * n), "b.dnet"))
        print(f"{name:<34} {n:>7} {a:8.3f} {b:8.3f} {b / a:6.2f}")
    n = 50000 // scale
    src = "input x : 0..1\nneuron h[{n}] : identity\nlines x -> h all 1\noutput h\n"
    a = timed(lambda: evaluate(parse(src.format(n=n), "w.dnet"), [[1]]))
    b = timed(lambda: evaluate(parse(src.format(n=2 * n), "w.dnet"), [[1]]))
    print(f"{'eval: h[N] identity, one input':<34} {n:>7} {a:8.3f} {b:8.3f} {b / a:6.2f}")


if __name__ == "__main__":
    main()
