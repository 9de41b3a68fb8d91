"""`build.py hello`: the 12-16-6 demo MLP (circuits/hello.dnet), 5 inputs, `5/5 EXACT`."""
from __future__ import annotations

import os


def add_arguments(p) -> None:
    from .cli_common import add_acc_option

    p.add_argument("-n", type=int, default=5, help="number of inputs to run (default 5)")
    p.add_argument("-o", "--output", help="WAD to write (default wads/hello.wad)")
    add_acc_option(p)


def run(args) -> int:
    from types import SimpleNamespace

    from .cli_common import ROOT
    from .cli_run import run as run_cmd

    return run_cmd(SimpleNamespace(file=os.path.join(ROOT, "circuits", "hello.dnet"), input=[],
                                   random=args.n, seed=2026, debug=False, output=args.output,
                                   acc=args.acc))
