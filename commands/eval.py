"""`build.py eval FILE --input 1,0,3`: the exact integer reference outputs of a netlist."""
from __future__ import annotations

from dsl.diagnostics import VoodooError


def add_arguments(p) -> None:
    p.add_argument("file")
    p.add_argument("--input", "-i", action="append", required=True,
                   help="comma-separated input values (repeat for each time step, or for "
                        "several samples of a one-step netlist)")
    p.add_argument("--all", action="store_true", help="print every node, not only outputs")


def parse_vector(text: str, what: str = "--input") -> list[int]:
    try:
        return [int(v) for v in text.replace(" ", "").split(",") if v != ""]
    except ValueError:
        raise VoodooError(f"{what} '{text}': expected comma-separated integers, e.g. 1,0,3") from None


def run(args) -> int:
    from dsl import load
    from dsl.reference import evaluate

    net = load(args.file)
    rows = [parse_vector(t) for t in args.input]
    for r in rows:
        if len(r) != len(net.inputs):
            raise VoodooError(f"--input {','.join(map(str, r))}: {len(r)} values, but "
                              f"{net.source} has {len(net.inputs)} inputs "
                              f"({', '.join(net.nodes[i].name for i in net.inputs)})")
    samples = [rows] if net.steps > 1 else [[r] for r in rows]
    if net.steps > 1 and len(rows) != net.steps:
        raise VoodooError(f"{net.source} runs {net.steps} steps: give --input once per step")
    res = evaluate(net, samples)
    names = [net.nodes[o].name for o in net.outputs]
    for b in range(len(samples)):
        for t in range(net.steps):
            prefix = f"step {t}: " if net.steps > 1 else f"input {','.join(map(str, samples[b][0]))}: "
            vals = res.value[b, t]
            if args.all:
                print(prefix + " ".join(f"{n.name}={int(vals[n.id])}" for n in net.nodes))
            else:
                print(prefix + " ".join(f"{n}={int(vals[o])}" for n, o in zip(names, net.outputs)))
    return 0
