"""Shared pieces of the map-building subcommands: load, compile, write, run, print rows."""
from __future__ import annotations

import os
import sys

from mapgen.compile import ROOT, WADS, default_wad  # noqa: F401  (re-exported for commands)


def add_acc_option(p) -> None:
    p.add_argument("--acc", choices=("internal", "external"), default="internal",
                   help="ACS compiler: ours (default) or the real acc on PATH / $ACC")


def add_tiles_option(p) -> None:
    p.add_argument("--tiles", metavar="N|auto",
                   help="split the network over several maps: N maps, or 'auto' for as many "
                        "as its size needs (default: one map)")


def build_maps(path: str, tiles: str | None, acc: str = "internal", title: str | None = None,
               door_budget: int | None = None):
    """(netlist, compiled maps, tiles or None) for a netlist file. `door_budget` splits
    staircases into parallel sub-lanes (one map only)."""
    from dsl import load
    from dsl.diagnostics import VoodooError

    from mapgen.compile import compile_netlist
    from mapgen.tiles import compile_tiles, plan_tiles

    net = load(path)
    if door_budget is not None and (tiles is not None or door_budget < 1):
        raise VoodooError(f"--door-budget {door_budget}: give at least 1 door per sub-lane, "
                          "for a single map (not with --tiles)")
    if tiles is None:
        return net, [compile_netlist(net, title=title, acc=acc, door_budget=door_budget)], None
    if tiles != "auto" and not (tiles.isdigit() and int(tiles) >= 1):
        raise VoodooError(f"--tiles {tiles}: give a number of maps (1, 2, ...) or 'auto'")
    plan = plan_tiles(net, n_tiles=None if tiles == "auto" else int(tiles))
    return net, compile_tiles(plan, title or net.name, acc=acc), plan


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
