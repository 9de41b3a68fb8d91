"""`build.py compile FILE -o wads/x.wad`: a netlist (.dnet or .json) into a playable WAD:
the machine with its control room (mapgen/controls.py), or with `--plain` the machine
alone; `--pk3` writes the same maps as a PK3 too."""
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
    p.add_argument("--plain", action="store_true",
                   help="the machine alone, without its control room (with --tiles, every "
                        "map is plain)")
    p.add_argument("--pk3", metavar="FILE", nargs="?", const="",
                   help="also write the maps as a PK3 (default: the WAD's name with .pk3)")
    p.add_argument("--screenshot", metavar="PNG",
                   help="then play the control room in ViZDoom (a visitor sets every input "
                        "with its controls), check every display against the reference and "
                        "take a picture of the outputs")
    add_tiles_option(p)
    p.add_argument("--hub", action="store_true",
                   help="with --tiles: maps a player walks through in GZDoom, MAP01's preset "
                        "pedals to the last map's output displays, the values crossing in ACS "
                        "globals (mapgen/hub.py); Python's runner still runs the WAD")
    p.add_argument("--preset", metavar="V,V,...", action="append",
                   help="with --hub: an input vector for one of MAP01's pedals (repeat, up "
                        "to 10; default: all low, all high and two seeded vectors)")
    add_door_budget_option(p)
    add_acc_option(p)


def _outputs(args, default: str | None) -> list:
    """What compile writes, for commands.common.guard (`default`: the WAD's default name,
    None while the network's name is not known)."""
    from commands.common import Output

    out = args.output or default
    pk3 = args.pk3 or (None if args.pk3 is None or out is None else
                       os.path.splitext(out)[0] + ".pk3")
    return [Output("-o", args.output, default, parts=True), Output("--acs", args.acs),
            Output("--pk3", pk3), Output("--screenshot", args.screenshot)]


def run(args) -> int:
    from dsl import load

    from commands.common import check_tiles, default_wad, guard

    check_tiles(args.tiles)
    _check_hub(args)
    if args.screenshot is not None and (args.plain or args.tiles is not None):
        raise VoodooError("--screenshot: a picture of the control room; not with --plain "
                          "or --tiles")
    # Every path is checked before the (long) compile; the default WAD's name is the
    # network's, known once it is read.
    guard(_outputs(args, None), [args.file])
    net = load(args.file)
    out, _, pk3, _ = guard(_outputs(args, default_wad(net.name)), [args.file])
    net, maps, tiles = _maps(net, args)
    _write(out, args.acs, maps, net, tiles, pk3)
    print(f"{out}: compiled {args.file}" + (f" into {len(maps)} maps" if len(maps) > 1 else "")
          + ("" if args.plain or tiles else ", with its control room")
          + (": a hub to walk through (README, Playing in GZDoom)" if args.hub else "")
          + (f"; {pk3}: the same as a PK3" if pk3 else ""))
    for m in maps:
        print(m.report())
    return _picture(out, maps[0], net, args.screenshot) if args.screenshot else 0


def _picture(wad: str, cm, net, png: str) -> int:
    from engine.visitor import visit

    v = visit(wad, cm.manifest, net, png)
    ok = v["shown"] == v["reference"]
    xs = v["inputs"]
    said = str(xs) if len(xs) <= 16 else f"[{', '.join(map(str, xs[:8]))}, ...] ({len(xs)} values)"
    print(f"{png}: a visitor set the inputs to {said} with the controls "
          f"({v['tics']} tics of walking and waiting); the displays show "
          + ", ".join(f"{k} = {x}" for k, x in v["shown"].items())
          + f"; {'EXACT' if ok else 'MISMATCH: the reference says ' + str(v['reference'])}")
    return 0 if ok else 1


def _check_hub(args) -> None:
    if args.preset and not args.hub:
        raise VoodooError("--preset: the pedals of a hub WAD; give --hub too")
    if args.hub and (args.tiles is None or args.plain or args.screenshot is not None):
        raise VoodooError("--hub: maps to walk through, one per tile: give --tiles N (or "
                          "auto), without --plain or --screenshot")


def _presets(args, net):
    """--preset V,V,... as hub presets (None: the defaults)."""
    from mapgen.hub import Preset

    out = []
    for text in args.preset or []:
        try:
            values = [int(v) for v in text.split(",")]
        except ValueError:
            raise VoodooError(f"--preset {text}: give the inputs as integers, e.g. 3,2,2,1") \
                from None
        out.append(Preset(",".join(map(str, values)), values))
    return out or None


def _maps(net, args):
    """(the netlist the WAD carries, its maps, tiles or None): the control room unless
    --plain or --tiles; with --hub, hub maps (mapgen/hub.py)."""
    from commands.common import build_maps, check_tiles

    if args.hub:
        from mapgen.hub import check_hub_net, check_presets, compile_hub, default_presets
        from mapgen.tiles import plan_tiles

        check_hub_net(net)
        presets = _presets(args, net) or default_presets(net)
        check_presets(net, presets)
        n = check_tiles(args.tiles)
        if args.door_budget is not None and args.door_budget < 1:
            raise VoodooError(f"--door-budget {args.door_budget}: give at least 1 door per "
                              "sub-lane")
        plan = plan_tiles(net, n_tiles=None if n == "auto" else n, door_budget=args.door_budget)
        return net, compile_hub(net, plan, args.title or net.name, presets, acc=args.acc,
                                door_budget=args.door_budget), plan
    if args.plain or check_tiles(args.tiles) is not None:
        return build_maps(net, args.tiles, args.acc, args.title, args.door_budget)
    from mapgen.controls import compile_room

    if args.door_budget is not None and args.door_budget < 1:
        raise VoodooError(f"--door-budget {args.door_budget}: give at least 1 door per sub-lane")
    cm, full = compile_room(net, title=args.title, acc=args.acc, door_budget=args.door_budget)
    return full, [cm], None


def _write(out: str, acs: str | None, maps, net, tiles, pk3: str | None = None) -> None:
    """The WAD, (with --acs) the ACS source and (with --pk3) the PK3: each written to a
    temporary file first, and all renamed only when all are complete, so a failure leaves
    none."""
    from contextlib import ExitStack

    from dsl.util import atomic_output
    from commands.common import writing
    from mapgen.compile import write_pk3, write_wad

    with ExitStack() as stack:
        for path, what, suffix, write in (
                (out, "the WAD", ".wad", lambda tmp: write_wad(tmp, maps, net, tiles)),
                (acs, "the ACS source", ".acs", lambda tmp: _write_text(tmp, maps[0].acs)),
                (pk3, "the PK3", ".pk3", lambda tmp: write_pk3(tmp, maps, net, tiles))):
            if path:
                stack.enter_context(writing(path, what))
                write(stack.enter_context(atomic_output(path, suffix)))


def _write_text(path: str, text: str) -> None:
    with open(path, "wb") as f:
        f.write(text.encode())
