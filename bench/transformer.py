#!/usr/bin/env python3
"""Transformers in the engine: dolls, weighted lines, tics per layer and ms per sequence.

    python bench/transformer.py            # a table of sizes, then the trained model
    python bench/transformer.py --quick    # fewer sizes and sequences

Each size is a causal transformer of models/transformer.py with random weights (score caps
calibrated on random sequences), compiled twice: as one lane per staircase (the baseline)
and with staircases split into sub-lanes of at most --door-budget doors
(mapgen.circuit.split_lanes). Both run in ViZDoom on the same sequences and every output is
compared with the integer reference (`==`). Tics per layer are the inference's tics
without the input phase, divided by the layers. The last line is the trained model
checked in as circuits/transformer.dnet, on held-out sequences of its task.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402
import torch  # noqa: E402

from dsl import load  # noqa: E402
from dsl.diagnostics import CompileError, VoodooError  # noqa: E402
from dsl.reference import evaluate  # noqa: E402
from engine.runner import MapRunner  # noqa: E402
from mapgen.compile import compile_netlist, write_wad  # noqa: E402
from models.transformer import Transformer, TransformerConfig, netlist  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SIZES = [(1, 1, 4, 4), (1, 2, 8, 8), (1, 2, 16, 8), (2, 2, 8, 8)]   # layers, heads, T, d


def random_model(layers: int, heads: int, tokens: int, d: int) -> Transformer:
    cfg = TransformerConfig(tokens=tokens, in_hi=7, d_model=d, heads=heads, layers=layers,
                            classes=tokens, qk=5, s_qkv=32, attn_max=5 if layers > 1 else 0)
    model = Transformer(cfg, seed=1)
    x = torch.randint(0, 8, (256, tokens, 1), generator=torch.Generator().manual_seed(2))
    model.calibrate(x)
    return model


def measure(net, xs, budget, tmp: str) -> dict:
    """Compile (split into sub-lanes of `budget` doors, or not), run every sequence."""
    cm = compile_netlist(net, door_budget=budget)
    path = os.path.join(tmp, f"{net.name}-{budget}.wad")
    write_wad(path, [cm], net)
    want = evaluate(net, xs).last_outputs().tolist()
    sched = cm.schedule
    per_layer = sum(ph.copy_tics + ph.run_tics for ph in sched.phases[1:])
    exact = 0
    with MapRunner(path, cm.manifest) as runner:
        t0 = time.perf_counter()
        for x, w in zip(xs, want):
            exact += runner.infer(x) == w
        ms = 1000 * (time.perf_counter() - t0) / len(xs)
    return dict(dolls=len(cm.circuit.lanes), lines=sum(len(d.lines) for ln in cm.circuit.lanes
                                                       for d in ln.doors),
                tics=sched.inference_tics, per_layer=per_layer, ms=ms, exact=exact, n=len(xs))


def row(label: str, r: dict, layers: int, base: dict | None = None) -> str:
    tpl = r["per_layer"] / layers
    ratio = f"  {base['per_layer'] / r['per_layer']:.2f}x fewer tics" if base else ""
    return (f"{label:<34} dolls {r['dolls']:5d}  lines {r['lines']:6d}  tics/layer {tpl:5.1f}  "
            f"{r['ms']:7.1f} ms/seq  {r['exact']}/{r['n']} exact{ratio}")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true")
    p.add_argument("--door-budget", type=int, default=1)
    p.add_argument("-n", type=int, default=100, help="held-out sequences for the last line")
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    sizes = SIZES[:2] if args.quick else SIZES
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory() as tmp:
        for layers, heads, tokens, d in sizes:
            try:
                net = netlist(random_model(layers, heads, tokens, d), f"tf{layers}{heads}{tokens}")
            except VoodooError as e:
                print(f"L{layers} H{heads} T{tokens} d{d}: refused: {e}")
                continue
            xs = rng.integers(0, 8, (5 if args.quick else 10, tokens)).tolist()
            label = f"L{layers} H{heads} T{tokens} d{d}"
            base = measure(net, xs, None, tmp)
            print(row(label + " one lane/staircase", base, layers))
            budget, split = args.door_budget, None
            while split is None and budget <= 64:
                try:  # more dolls than one map holds: fewer, longer sub-lanes
                    split = measure(net, xs, budget, tmp)
                except CompileError:
                    budget *= 2
            if split:
                print(row(label + f" sub-lanes <= {budget}", split, layers, base))
        net = load(os.path.join(ROOT, "circuits", "transformer.dnet"))
        from models.seqtask import held_out

        x, _ = held_out(20 if args.quick else args.n)
        r = measure(net, x.reshape(len(x), -1).tolist(), args.door_budget, tmp)
    print(row("trained (circuits/transformer.dnet)", r, 1))
    verdict = "EXACT" if r["exact"] == r["n"] else "MISMATCH"
    print(f"transformer 1 layers 2 heads 8 tokens d 8: engine==reference {r['exact']}/{r['n']} "
          f"{verdict}; tics per layer {r['per_layer']}; dolls {r['dolls']}")
    return 0 if r["exact"] == r["n"] else 1


if __name__ == "__main__":
    sys.exit(main())
