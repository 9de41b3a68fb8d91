"""`build.py render FILE -o x.png`: a top-down picture of the compiled map."""
from __future__ import annotations


def add_arguments(p) -> None:
    p.add_argument("file", help=".dnet or .json netlist")
    p.add_argument("-o", "--output", required=True, help="PNG to write")
    p.add_argument("--input", "-i", help="comma-separated inputs: draw this inference's path "
                                         "(doors passed, where each doll stops, light levels)")
    p.add_argument("--size", type=int, default=2400, help="longest side in pixels")


MAX_SIZE = 16384


def run(args) -> int:
    from dsl import load
    from commands.common import guard, writing
    from commands.eval import check_vector, parse_vector
    from dsl.diagnostics import VoodooError

    from mapgen.circuit import lower, simulate
    from mapgen.layout import build_layout
    from mapgen.render import render, save_png

    if not 16 <= args.size <= MAX_SIZE:
        raise VoodooError(f"--size {args.size}: give 16..{MAX_SIZE} pixels")
    guard([("-o", args.output)], [args.file])
    x = None if args.input is None else parse_vector(args.input)
    net = load(args.file)
    if x is not None:
        check_vector(net, x)
    layout = build_layout(lower(net))
    values = None if x is None else simulate(layout.circuit, x)
    with writing(args.output, "the PNG"):
        save_png(render(layout, values, x, max_size=args.size), args.output)
    print(f"{args.output}: {len(layout.lanes)} lanes, {len(layout.circuit.lights)} lights")
    return 0
