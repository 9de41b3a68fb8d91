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


def add_throughput_options(p, workers: bool = True) -> None:
    """--no-pipeline and --ray (docs/throughput.md); with `workers`, --workers too."""
    p.add_argument("--no-pipeline", dest="pipeline", action="store_false",
                   help="one inference at a time (the simple schedule), even for many inputs")
    p.add_argument("--ray", metavar="auto|ADDRESS",
                   help="run the engines as Ray actors: 'auto' (the cluster on this machine, "
                        "started if there is none) or a head's ADDRESS (host:port, "
                        "ray://host:10001)")
    if workers:
        p.add_argument("--workers", type=int, default=2,
                       help="engine processes, or Ray actors with --ray (default 2)")


def build_maps(path: str, tiles: str | None, acc: str = "internal", title: str | None = None):
    """(netlist, compiled maps, tiles or None) for a netlist file."""
    from dsl import load
    from dsl.diagnostics import VoodooError

    from mapgen.compile import compile_netlist
    from mapgen.tiles import compile_tiles, plan_tiles

    net = load(path)
    if tiles is None:
        return net, [compile_netlist(net, title=title, acc=acc)], None
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
