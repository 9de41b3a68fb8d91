"""`build.py hello`: the 12-16-6 demo MLP (circuits/hello.dnet), 5 inputs, `5/5 EXACT`."""
from __future__ import annotations

import os


def add_arguments(p) -> None:
    from commands.common import add_acc_option

    p.add_argument("-n", type=int, default=5, help="number of inputs to run (default 5)")
    p.add_argument("-o", "--output", help="WAD to write (default wads/hello.wad)")
    add_acc_option(p)


def run(args) -> int:
    from commands.common import ROOT
    from commands.run import run_netlist

    return run_netlist(os.path.join(ROOT, "circuits", "hello.dnet"), random=args.n, seed=2026,
                       output=args.output, acc=args.acc)
