#!/usr/bin/env python3
"""Inference speed in the engine, against the NumPy reference measured in the same run.

    python bench/inference.py            # the 12-16-6 hello network + a scaling table
    python bench/inference.py --quick    # fewer inferences, smaller table

Engine time is wall time from writing the inputs (puke) to reading the outputs back, over
many inferences in one running map. The reference time is dsl.reference.evaluate (the
exact oracle every engine output is checked against) on one sample at a time; a plain NumPy
matmul forward pass is timed as well, the baseline the published anchor used. The last line
is the headline figure.
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
from mapgen.compile import compile_netlist, write_wad  # noqa: E402
from engine.runner import MapRunner  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def dense_forward(net):
    """The same network as plain NumPy integer matrix products (layer by layer): the kind of
    reference the published anchor compared against."""
    from dsl.ir import Identity, Relu

    order = [g for g in net.groups if g != "x"]
    ids = {g: net.groups[g] for g in net.groups}
    mats = []
    prev = "x"
    for g in order:
        W = np.array([[net.nodes[d].weights.get(s, 0) for s in ids[prev]] for d in ids[g]],
                     dtype=np.int64)
        b = np.array([net.nodes[d].bias for d in ids[g]], dtype=np.int64)
        gate = net.nodes[ids[g][0]].gate
        mats.append((W, b, gate))
        prev = g

    def run(x):
        v = np.asarray(x, dtype=np.int64)
        for W, b, gate in mats:
            v = W @ v + b
            if isinstance(gate, Relu):
                v = np.minimum(np.maximum(v // gate.s, 0), gate.L)
            else:
                assert isinstance(gate, Identity)
        return v
    return run


def measure(net, n: int, tmp: str, seed: int = 0):
    rng = np.random.default_rng(seed)
    xs = [[int(rng.integers(lo, hi + 1)) for lo, hi in net.input_ranges()] for _ in range(n)]
    t = time.perf_counter()
    cm = compile_netlist(net)
    compile_s = time.perf_counter() - t
    path = os.path.join(tmp, f"{net.name}.wad")
    write_wad(path, [cm])
    ref = evaluate(net, xs).last_outputs().tolist()
    t = time.perf_counter()
    for x in xs:
        evaluate(net, [x])
    numpy_ms = (time.perf_counter() - t) / n * 1000
    fwd = dense_forward(net)
    assert all(fwd(x).tolist() == want for x, want in zip(xs, ref))
    t = time.perf_counter()
    for x in xs:
        fwd(x)
    dense_ms = (time.perf_counter() - t) / n * 1000
    with MapRunner(path, cm.manifest) as r:
        r.infer(xs[0])  # warm-up: first frame, caches
        t = time.perf_counter()
        got = [r.infer(x) for x in xs]
        engine_ms = (time.perf_counter() - t) / n * 1000
    exact = sum(g == w for g, w in zip(got, ref))
    return dict(dolls=len(cm.circuit.lanes), connections=net.n_connections,
                lines=sum(len(d.lines) for ln in cm.circuit.lanes for d in ln.doors),
                tics=cm.schedule.inference_tics, engine_ms=engine_ms, numpy_ms=numpy_ms,
                dense_ms=dense_ms,
                compile_s=compile_s, exact=exact, n=n)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    n = 40 if args.quick else 200
    sizes = [[12, 16, 6], [32, 64, 10], [100, 200, 10]] if args.quick else \
        [[12, 16, 6], [32, 64, 10], [64, 128, 10], [150, 300, 10], [300, 600, 10],
         [500, 1000, 10], [700, 1300, 10]]
    with tempfile.TemporaryDirectory() as tmp:
        print("scaling: random MLPs (inputs 0..3, hidden relu(s=4, max=3), weights -1..1)")
        print(f"{'sizes':>18} {'dolls':>6} {'conns':>7} {'lines':>7} {'tics':>5} "
              f"{'engine ms':>10} {'numpy ms':>9} {'ratio':>7} {'exact':>7}")
        for sz in sizes:
            net = mlp(7, sz, in_range=(0, 3), weight=1, bias=2, zero_fraction=0.5,
                      hidden_gate="relu(s=4, max=3)", name=f"mlp_{'_'.join(map(str, sz))}")
            m = measure(net, max(10, n // (1 + sz[1] // 64)), tmp)
            print(f"{str(sz):>18} {m['dolls']:>6} {m['connections']:>7} {m['lines']:>7} "
                  f"{m['tics']:>5} {m['engine_ms']:>10.2f} {m['numpy_ms']:>9.3f} "
                  f"{m['engine_ms'] / m['numpy_ms']:>7.0f} {m['exact']:>3}/{m['n']}")
        net = load(os.path.join(ROOT, "circuits", "hello.dnet"))
        m = measure(net, n, tmp)
        print(f"\nhello 12-16-6: {m['dolls']} dolls, {m['connections']} connections, compile "
              f"{m['compile_s']:.2f} s, {m['exact']}/{m['n']} exact")
        print(f"plain NumPy matmul forward: {m['dense_ms'] * 1000:.1f} us per inference; "
              f"engine/matmul = {m['engine_ms'] / m['dense_ms']:.0f}x")
        print("published anchor: 726 ms per inference (66,000x its NumPy reference)")
        print(f"ratio engine/numpy = {m['engine_ms'] / m['numpy_ms']:.0f}; ms per inference = "
              f"{m['engine_ms']:.2f}; tics per inference = {m['tics']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
