"""`build.py compile FILE -o wads/x.wad`: a netlist (.dnet or .json) into a playable WAD."""
from __future__ import annotations


def add_arguments(p) -> None:
    from commands.common import add_acc_option, add_tiles_option

    p.add_argument("file", help=".dnet or .json netlist")
    p.add_argument("-o", "--output", help="WAD to write (default wads/<network>.wad)")
    p.add_argument("--title", help="map title shown by the engine (default: network name)")
    p.add_argument("--acs", metavar="FILE", help="also write the generated ACS source here "
                                                 "(the first map's, when tiled)")
    add_tiles_option(p)
    p.add_argument("--door-budget", type=int, metavar="N",
                   help="split staircases longer than N doors into parallel sub-lanes: fewer "
                        "tics per inference, more dolls (docs/transformer.md)")
    add_acc_option(p)


def run(args) -> int:
    from dsl.util import atomic_write

    from commands.common import build_maps, default_wad
    from mapgen.compile import write_wad

    net, maps, tiles = build_maps(args.file, args.tiles, args.acc, args.title,
                                  args.door_budget)
    out = args.output or default_wad(net.name)
    write_wad(out, maps, net, tiles)
    if args.acs:
        atomic_write(args.acs, maps[0].acs.encode())
    print(f"{out}: compiled {args.file}" + (f" into {len(maps)} maps" if len(maps) > 1 else ""))
    for m in maps:
        print(m.report())
    return 0
