"""`build.py extract WAD [-o OUT.dnet]`: the netlist a map computes, read from its geometry
and its ACS bus (not from the copy embedded when it was built)."""
from __future__ import annotations


def add_arguments(p) -> None:
    p.add_argument("wad", help="a WAD built by VoodooNet (edited or not)")
    p.add_argument("-o", "--output", help=".dnet file to write (default: print it)")
    p.add_argument("--map", help="which map of a multi-map WAD (MAP01, ...)")


def run(args) -> int:
    from dsl.util import atomic_write

    from commands.common import guard, wad_files
    from modding.extract import extract_wad

    args.output, = guard([("-o", args.output)], wad_files(args.wad))
    ex = extract_wad(args.wad, args.map)
    m = ex.machine
    lines = sum(len(d.lines) + len(d.sets) for lane in m.lanes for d in lane.doors)
    summary = (f"{args.wad}: {len(m.lights)} lights, {len(m.lanes)} lanes, "
               f"{sum(len(l.doors) for l in m.lanes)} doors, {lines} weighted lines; "
               + ex.verdict)
    if args.output:
        atomic_write(args.output, ex.text.encode())
        print(f"wrote {args.output}")
    else:
        print(ex.text)
    print(summary)
    return 0
