"""Where a step's door crossings go, without building a map: the doors every lane passes at
every step of a run, from the integer reference's values and each lane's staircase
(`mapgen.circuit.staircase`, the lowering's own), summed by kind of node (its gate and its
vector's name). A step's engine CPU follows its crossings (a moving doll-tic each, and the
lights its lines change: docs/physics.md, "Where a tic goes"), so this names what to
change first. Sub-lanes change the tics, never the crossings.

    python bench/crossings.py --config microbit      # the chat model's sizes, prompt 'hi'
    python bench/crossings.py circuits/mnist_cnn.dnet # seeded random inputs, 4 runs

Its last line: `crossings: N a step (K lanes, D doors); the largest: ...`.
"""
from __future__ import annotations

import argparse
import bisect
import os
import re
import sys
from collections import defaultdict

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)


def _stairs_of(low) -> dict[int, list[int]]:
    """Each lane node of the lowered netlist -> its doors' thresholds (circuit.staircase
    over circuit.plane_range, as the lowering builds them)."""
    from dsl.ir import Identity, Spike
    from mapgen.circuit import plane_range, staircase

    out = {}
    for n in low.nodes:
        if not isinstance(n.gate, (Identity, Spike)):
            ths = [t for t, _ in staircase(n.gate, *plane_range(low, n))[1]]
            if ths:
                out[n.id] = ths
    return out


def _passes(low, stairs: dict[int, list[int]], seq: list) -> dict[int, int]:
    """Doors passed over one run of the lowered netlist, by node id. A lane's plane is its
    accumulator; an input's its value; a prev node's the value its node ended the step
    before with."""
    from dsl.reference import evaluate

    res = evaluate(low, [seq])
    nodes = low.nodes
    return {i: sum(bisect.bisect_right(ths, int(v)) for v in
                   (res.value if nodes[i].is_input or nodes[i].is_prev else res.acc)[0, :, i])
            for i, ths in stairs.items()}


def crossings(net, seq: list) -> dict[int, int]:
    """Doors passed over the run `seq`, by node id of the lowered netlist (lower_products),
    as mapgen.circuit.simulate counts them."""
    from dsl.lower import lower_products

    low = lower_products(net)
    return _passes(low, _stairs_of(low), seq)


def kind_of(node) -> str:
    """A node's kind for the census: its gate and its vector's name without indices and
    layer or head numbers (`lut sd`, `prev S`)."""
    gate = type(node.gate).__name__.lower()
    name = node.group
    stem = re.sub(r"[\d_\[\]:.()]+$", "", re.split(r"[\[.]", name)[0]) or name
    return f"{gate} {stem}"


def census(net, runs: list) -> list[tuple[str, int, int, int]]:
    """(kind, lanes, doors, crossings over the runs), the most crossed first."""
    from dsl.lower import lower_products

    low = lower_products(net)
    stairs = _stairs_of(low)
    rows: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    for nid, ths in stairs.items():
        r = rows[kind_of(low.nodes[nid])]
        r[0] += 1
        r[1] += len(ths)
    for seq in runs:
        for nid, c in _passes(low, stairs, seq).items():
            rows[kind_of(low.nodes[nid])][2] += c
    return sorted(((k, *v) for k, v in rows.items()), key=lambda r: -r[3])


def subject(args) -> tuple[object, list, str]:
    """The netlist and the run to count: a chat configuration answering the prompt, or a
    .dnet with seeded random inputs (a multi-step net: a random sequence)."""
    if args.config:
        from demos.chat import config_net, load_model, prompt_rows

        model = load_model(args.config)
        net = config_net(model, args.config)
        return net, prompt_rows(net, args.prompt, None, model.cfg), f"prompt {args.prompt!r}"
    from dsl.parser import parse_file
    from dsl.sequence import random_sequence

    net = parse_file(args.dnet)
    if net.multi_step:
        return net, random_sequence(net, args.runs, 0), f"{args.runs} random steps"
    import random

    rng = random.Random(0)
    runs = [[rng.randint(net.nodes[i].gate.lo, net.nodes[i].gate.hi) for i in net.inputs]
            for _ in range(args.runs)]
    return net, runs, f"{args.runs} random inputs"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("dnet", nargs="?", help="a .dnet circuit (or --config)")
    p.add_argument("--config", help="a chat configuration (demos/chat.py): chat, large, microbit")
    p.add_argument("--prompt", default="hi")
    p.add_argument("--runs", type=int, default=4, help="random inputs (or steps) for a .dnet")
    p.add_argument("--top", type=int, default=12)
    args = p.parse_args(argv)
    if bool(args.dnet) == bool(args.config):
        p.error("give a .dnet or --config, not both")
    net, seq, what = subject(args)
    # a run of steps, or each feed-forward input its own one-step run
    rows = census(net, [seq] if net.multi_step else [[x] for x in seq])
    steps = len(seq)
    total = sum(r[3] for r in rows)
    print(f"{net.name}: {what}, door crossings per step by kind of node")
    print(f"  {'kind':24s} {'lanes':>7s} {'doors':>9s} {'crossed a step':>15s} {'share':>6s}")
    for k, lanes, doors, c in rows[:args.top]:
        print(f"  {k:24s} {lanes:7,d} {doors:9,d} {c / steps:15,.0f} {c / total:6.1%}")
    lanes, doors = sum(r[1] for r in rows), sum(r[2] for r in rows)
    big = ", ".join(f"{k} {c / total:.0%}" for k, _, _, c in rows[:3])
    print(f"crossings: {total / steps:,.0f} a step ({lanes:,} lanes, {doors:,} doors); "
          f"the largest: {big}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
