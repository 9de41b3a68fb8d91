"""`build.py eval FILE --input 1,0,3`: the exact integer reference outputs of a netlist."""
from __future__ import annotations

import re

from dsl.diagnostics import VoodooError


def add_arguments(p) -> None:
    from commands.common import allow_negative_vectors

    allow_negative_vectors(p)
    p.add_argument("file")
    p.add_argument("--input", "-i", action="append", default=[],
                   help="comma-separated input values (repeat for each time step, or for "
                        "several samples of a one-step netlist)")
    p.add_argument("--steps", type=int, metavar="N",
                   help="steps of a multi-step netlist's run (default: one per --input, or "
                        "its fixed steps); fed-back inputs carry it past the given rows, "
                        "and its done node may end it earlier")
    p.add_argument("--all", action="store_true", help="print every node, not only outputs")
    p.add_argument("--json", action="store_true",
                   help="print one JSON object: network, output names and, per sample, its "
                        "inputs and reference values (every node's with --all)")


_VECTOR = re.compile(r"\s*[+-]?[0-9]+(\s*,\s*[+-]?[0-9]+)*\s*")


def parse_vector(text: str, what: str = "--input") -> list[int]:
    """'1,-2, 3' -> [1, -2, 3]. Only ASCII digits, one value between commas: Python's int()
    would also take '0_1' and other scripts' digits, and a stray ',,' is a typo."""
    if not isinstance(text, str):  # argparse hands `--input=--` over as an empty list
        text = ",".join(text)
    if not text.isascii() or not _VECTOR.fullmatch(text):
        raise VoodooError(f"{what} '{text[:60]}': expected comma-separated integers, "
                          "e.g. 1,0,3 or -3,0,1")
    values = [v.strip() for v in text.split(",")]
    if any(len(v.lstrip("+-").lstrip("0")) > 12 for v in values):
        raise VoodooError(f"{what} '{text[:60]}': a value is too large; inputs are "
                          "32-bit integers within their declared ranges")
    return [int(v) for v in values]


def check_vector(net, x: list[int], what: str = "--input") -> None:
    """The right number of values, each inside its input's declared range."""
    if len(x) != len(net.inputs):
        names = ", ".join(net.nodes[i].name for i in net.inputs[:8])
        raise VoodooError(f"{what} {','.join(map(str, x))[:60]}: {len(x)} values, but "
                          f"{net.source} has {len(net.inputs)} inputs ({names}"
                          f"{', ...' if len(net.inputs) > 8 else ''})")
    for (lo, hi), v, nid in zip(net.input_ranges(), x, net.inputs):
        if not lo <= v <= hi:
            raise VoodooError(f"{what}: {net.nodes[nid].name} = {v} is outside its "
                              f"declared range {lo}..{hi}")


def check_steps(net, rows: int, steps: int | None, give: str = "--input once per step"
                ) -> None:
    """How long a run of a multi-step netlist is, said plainly before it is planned
    (dsl/sequence.plan_steps): --steps within 1..the netlist's most, and, without it, a row
    for the first step (or a step count, for a netlist that takes no inputs)."""
    most = net.steps
    if steps is not None and not 1 <= steps <= most:
        raise VoodooError(f"--steps {steps}: give 1..{most} steps ("
                          + (f"{net.source} runs open-ended, at most {most} steps)" if net.open
                             else f"{net.source} runs {most} steps)"))
    if steps is None and rows == 0 and net.open:
        if net.inputs:
            raise VoodooError(f"{net.source} runs open-ended: give its inputs ({give})"
                              + ("; --steps N runs fed-back inputs past them" if net.feedback
                                 else ""))
        raise VoodooError(f"{net.source} runs open-ended and takes no inputs: give --steps N "
                          f"(1..{most}); its done output may end it earlier")


def run(args) -> int:
    from dsl import load
    from dsl.reference import evaluate
    from dsl.sequence import plan_steps, reference_run

    rows = [parse_vector(t) for t in args.input]
    net = load(args.file)
    for r in rows:
        check_vector(net, r)
    if net.multi_step:
        check_steps(net, len(rows), args.steps)
        res, steps = reference_run(net, plan_steps(net, rows, args.steps))
        samples = [[[int(res.value[0, t, i]) for i in net.inputs] for t in range(steps)]]
    else:
        if args.steps is not None:
            raise VoodooError(f"--steps: {net.source} is a one-step netlist")
        if not rows:
            raise VoodooError("give at least one --input")
        samples, steps = [[r] for r in rows], 1
        res = evaluate(net, samples)
    shown = [n.id for n in net.nodes] if args.all else list(net.outputs)
    names = [net.nodes[i].name for i in shown]
    if args.json:
        print(json_report(net, samples, res, shown, steps))
        return 0
    for b in range(len(samples)):
        for t in range(steps):
            prefix = f"step {t}: " if net.multi_step else \
                f"input {','.join(map(str, samples[b][0]))}: "
            vals = res.value[b, t]
            print(prefix + " ".join(f"{n}={int(vals[i])}" for n, i in zip(names, shown)))
    if net.done is not None and steps and res.value[0, steps - 1, net.done] == 1:
        print(f"done: {net.nodes[net.done].name} = 1 at step {steps - 1}")
    return 0


def json_report(net, samples, res, shown, steps: int) -> str:
    """--json: the reference values of the shown nodes, per sample (and per step)."""
    import json

    results = []
    for b, seq in enumerate(samples):
        vals = [[int(res.value[b, t, i]) for i in shown] for t in range(steps)]
        results.append({"inputs": seq if net.multi_step else seq[0],
                        "reference": vals if net.multi_step else vals[0]})
    return json.dumps({"network": net.name, "source": net.source,
                       "steps": steps if net.multi_step else net.steps,
                       "names": [net.nodes[i].name for i in shown], "results": results})
