"""Shared pieces of the map-building subcommands: load, compile, write, run, print rows."""
from __future__ import annotations

import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WADS = os.path.join(ROOT, "wads")


def add_acc_option(p) -> None:
    p.add_argument("--acc", choices=("internal", "external"), default="internal",
                   help="ACS compiler: ours (default) or the real acc on PATH / $ACC")


def compile_file(path: str, acc: str = "internal", title: str | None = None):
    from dsl import load

    from .compile import compile_netlist

    net = load(path)
    return net, compile_netlist(net, title=title, acc=acc)


def default_wad(net_name: str) -> str:
    return os.path.join(WADS, f"{net_name}.wad")


def progress(iterable, total: int, desc: str):
    """tqdm on a terminal or in CI logs; quiet when asked (VOODOO_QUIET=1)."""
    if os.environ.get("VOODOO_QUIET") or total < 20:  # a few rows print fast enough
        return iterable
    from tqdm import tqdm

    return tqdm(iterable, total=total, desc=desc, file=sys.stderr, leave=False)


def format_row(x, engine, reference) -> str:
    verdict = "EXACT" if list(engine) == list(reference) else "MISMATCH"
    return (f"input {','.join(map(str, x))}  engine {list(map(int, engine))}  "
            f"reference {list(map(int, reference))}  {verdict}")
