"""`build.py compile FILE -o wads/x.wad`: a netlist (.dnet or .json) into a playable WAD."""
from __future__ import annotations

import os

from dsl.diagnostics import VoodooError


def add_arguments(p) -> None:
    from commands.common import add_acc_option, add_door_budget_option, add_tiles_option

    p.add_argument("file", help=".dnet or .json netlist")
    p.add_argument("-o", "--output", help="WAD to write (default wads/<network>.wad)")
    p.add_argument("--title", help="map title shown by the engine (default: network name)")
    p.add_argument("--acs", metavar="FILE", help="also write the generated ACS source here "
                                                 "(the first map's, when tiled)")
    add_tiles_option(p)
    add_door_budget_option(p)
    add_acc_option(p)


def run(args) -> int:
    from dsl import load

    from commands.common import build_maps, check_tiles, default_wad, output_path

    check_tiles(args.tiles)
    if args.output is not None:  # every path is checked before the (long) compile
        output_path(args.output, sources=(args.file,))
    if args.acs is not None:
        output_path(args.acs, option="--acs", sources=(args.file, args.output))
    net = load(args.file)
    out = output_path(args.output, default_wad(net.name), sources=(args.file,))
    if args.acs is not None and os.path.abspath(args.acs) == os.path.abspath(out):
        raise VoodooError(f"--acs {args.acs}: the same file as the WAD")
    net, maps, tiles = build_maps(net, args.tiles, args.acc, args.title, args.door_budget)
    _write(out, args.acs, maps, net, tiles)
    print(f"{out}: compiled {args.file}" + (f" into {len(maps)} maps" if len(maps) > 1 else ""))
    for m in maps:
        print(m.report())
    return 0


def _write(out: str, acs: str | None, maps, net, tiles) -> None:
    """The WAD and (with --acs) the ACS source: both written to temporary files first and
    renamed only when both are complete, so a failure leaves neither."""
    from acs.wad import atomic_output
    from commands.common import writing
    from mapgen.compile import write_wad

    with writing(out, "the WAD"), atomic_output(out, ".wad") as wad_tmp:
        write_wad(wad_tmp, maps, net, tiles)
        if acs:
            with writing(acs, "the ACS source"), atomic_output(acs, ".acs") as acs_tmp:
                with open(acs_tmp, "wb") as f:
                    f.write(maps[0].acs.encode())
