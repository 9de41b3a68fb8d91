"""`build.py verify WAD`: an edited WAD against the netlist embedded when it was built: the
changes, the static checks on the map as it is now, and an engine run against the
reference of the netlist extracted from the map."""
from __future__ import annotations


def add_arguments(p) -> None:
    p.add_argument("wad", help="a WAD built by VoodooNet, edited or not")
    p.add_argument("--map", help="which map of a multi-map WAD (MAP01, ...)")
    p.add_argument("--runs", type=int, default=8, help="inputs to run in the engine (default 8)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--no-engine", action="store_true", help="static checks only")


def run(args) -> int:
    from modding.verify import verify_map

    rep = verify_map(args.wad, args.map, runs=args.runs, seed=args.seed,
                     engine=not args.no_engine)
    print(f"{rep.where}: changes against the embedded netlist: {len(rep.changes) or 'none'}")
    for c in rep.changes:
        print(f"  {c}")
    print(f"static checks on the map as it is: {len(rep.errors)} error(s)")
    for f in rep.errors:
        print(f"  error [{f.check}]: {f.message}")
    print(f"engine: {rep.engine}")
    verdict = "ok" if rep.ok else "FAILED"
    print(f"verify {verdict}: {len(rep.changes)} change(s), {len(rep.errors)} error(s)"
          + (", engine exact" if rep.exact else ""))
    return 0 if rep.ok else 1
