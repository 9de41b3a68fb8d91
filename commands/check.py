"""`build.py check FILE...`: validate netlists and print a summary, or every error."""
from __future__ import annotations

import sys

from dsl.diagnostics import VoodooError


def add_arguments(p) -> None:
    p.epilog = ("check validates the netlist language (names, shapes, gate parameters, "
                "weight limits, cycles) and prints its value ranges. Whether a valid "
                "netlist fits one map (lanes of at most 1000 doors, light levels and plane "
                "heights within -32768..32767, map budgets) is decided by compile, which "
                "names every neuron that does not fit.")
    p.add_argument("files", nargs="+", help=".dnet or .json netlists")
    p.add_argument("--nodes", action="store_true", help="list every node with its ranges")


def _time(net) -> str:
    """How the netlist runs in time: its steps, feedback and done node, if any."""
    parts = ["open-ended steps (ranges hold at every step)" if net.open else
             f"{net.steps} steps" if net.steps > 1 else ""]
    names = {n.id: n.name for n in net.nodes}
    parts += [f"feedback {names[x]} = {names[y]}" for x, y in net.feedback.items()]
    parts += [f"done {names[net.done]}"] if net.done is not None else []
    return "".join(f", {p}" for p in parts if p)


def summary(net, show_nodes: bool = False) -> str:
    from collections import Counter

    kinds = Counter(n.gate.kind for n in net.nodes)
    acc_lo = min((net.acc_range[n.id].lo for n in net.nodes if not n.is_input), default=0)
    acc_hi = max((net.acc_range[n.id].hi for n in net.nodes if not n.is_input), default=0)
    lines = [f"{net.source}: network '{net.name}': {len(net.nodes)} nodes "
             f"({', '.join(f'{v} {k}' for k, v in sorted(kinds.items()))}), "
             f"{net.n_connections} connections, {len(net.inputs)} inputs, "
             f"{len(net.outputs)} outputs" + _time(net)]
    lines.append(f"  accumulators range {acc_lo}..{acc_hi}")
    for g, ids in net.groups.items():
        first = net.nodes[ids[0]]
        lo = min(net.acc_range[i].lo for i in ids)
        hi = max(net.acc_range[i].hi for i in ids)
        vlo = min(net.value_range[i].lo for i in ids)
        vhi = max(net.value_range[i].hi for i in ids)
        shape = "" if first.index is None else f"[{len(ids)}]"
        role = " (output)" if any(i in net.outputs for i in ids) else ""
        lines.append(f"  {g + shape:<12} {first.gate.kind:<9} acc {lo}..{hi}  value {vlo}..{vhi}{role}")
    if show_nodes:
        for n in net.nodes:
            lines.append(f"    {n.name:<12} acc {net.acc_range[n.id]}  value {net.value_range[n.id]}")
    return "\n".join(lines)


def run(args) -> int:
    from dsl import load

    failed = 0
    for f in args.files:
        try:
            net = load(f)
        except VoodooError as e:
            print(str(e), file=sys.stderr)
            failed += 1
            continue
        print(summary(net, args.nodes))
    n = len(args.files)
    print(f"{n - failed}/{n} netlist(s) ok" + (f", {failed} with errors" if failed else ""))
    return 1 if failed else 0
