"""`build.py render FILE -o x.png`: a top-down picture of the compiled map."""
from __future__ import annotations


def add_arguments(p) -> None:
    p.add_argument("file", help=".dnet or .json netlist")
    p.add_argument("-o", "--output", required=True, help="PNG to write")
    p.add_argument("--input", "-i", help="comma-separated inputs: draw this inference's path "
                                         "(doors passed, where each doll stops, light levels)")
    p.add_argument("--size", type=int, default=2400, help="longest side in pixels")


def run(args) -> int:
    from dsl import load
    from commands.eval import parse_vector
    from dsl.diagnostics import VoodooError

    from mapgen.circuit import lower, simulate
    from mapgen.layout import build_layout
    from mapgen.render import render, save_png

    net = load(args.file)
    layout = build_layout(lower(net))
    values = x = None
    if args.input:
        x = parse_vector(args.input)
        if len(x) != len(net.inputs):
            raise VoodooError(f"--input: {len(x)} values, but {net.source} has "
                              f"{len(net.inputs)} inputs")
        values = simulate(layout.circuit, x)
    save_png(render(layout, values, x, max_size=args.size), args.output)
    print(f"{args.output}: {len(layout.lanes)} lanes, {len(layout.circuit.lights)} lights")
    return 0
