"""`build.py embed CIRCUIT --into THEIRS.wad --map MAP01 --wiring W -o OUT.wad`: a circuit
dropped into your own map, its inputs driven by your map's switches, walk-over lines and
floor pads, its outputs driving your sectors (docs/modding.md)."""
from __future__ import annotations


def add_arguments(p) -> None:
    p.add_argument("circuit", help=".dnet (or .json) netlist")
    p.add_argument("--into", required=True,
                   help="your WAD (UDMF or Hexen format), or vizdoom:NAME for a scenario "
                        "shipped with ViZDoom (vizdoom:my_way_home)")
    p.add_argument("--map", default="MAP01", help="the map to embed into (default MAP01)")
    p.add_argument("--wiring", required=True, help="the wiring file (docs/modding.md)")
    p.add_argument("-o", "--output", required=True, help="the WAD to write")
    p.add_argument("--title", help="title in the ACS comments (default: network name)")


def resolve(into: str) -> str:
    """vizdoom:NAME -> the scenario WAD shipped in the installed vizdoom package."""
    import os

    from dsl.diagnostics import VoodooError

    if not into.startswith("vizdoom:"):
        return into
    import vizdoom

    path = os.path.join(os.path.dirname(vizdoom.__file__), "scenarios", into[8:] + ".wad")
    if not os.path.isfile(path):
        raise VoodooError(f"--into {into}: no scenario {into[8:]}.wad in {os.path.dirname(path)}")
    return path


def run(args) -> int:
    from modding.embed import embed

    from commands.common import guard

    into = resolve(args.into)
    args.output, = guard([("-o", args.output)], [into, args.circuit, args.wiring])
    e = embed(args.circuit, into, args.map, args.wiring, args.output, args.title)
    x0, y0, x1, y1 = e.extent
    t0, u0, t1, u1 = e.theirs
    emb = e.info["embed"]
    print(f"{args.output}: {args.circuit} embedded into {into} {args.map}")
    print(f"  their map   x {t0:g}..{t1:g}, y {u0:g}..{u1:g}")
    print(f"  our hall    x {x0:g}..{x1:g}, y {y0:g}..{y1:g} (no overlap, inside the "
          "engine's coordinates)")
    print(f"  scripts     ours from {e.info['infer_script'] - 2} as library {emb['library']} "
          f"(LOADACS); theirs kept")
    for name, k, v in emb["inputs"]:
        spot = emb["spots"].get(name)
        print(f"  input {name}: {'toggle' if v is None else f'set {v}'}"
              + (f" (pad at {spot[0]}, {spot[1]})" if spot else ""))
    for name, kind, sectors in emb["outputs"]:
        print(f"  output {name}: {kind} of sector(s) {', '.join(map(str, sectors))}")
    print(f"embedded: {len(emb['inputs'])} input(s) and {len(emb['outputs'])} output(s) wired")
    return 0
