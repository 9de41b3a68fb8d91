"""`build.py export FILE --json`: print a netlist in its JSON IR form (docs/dnet.md);
`--onnx -o OUT.onnx` / `--torch -o OUT.py`: write it as an ONNX graph or a standalone torch
module computing the same integers (docs/export.md)."""
from __future__ import annotations


def add_arguments(p) -> None:
    p.add_argument("file")
    p.add_argument("--json", action="store_true", default=True,
                   help="JSON IR (the default)")
    p.add_argument("--onnx", action="store_true",
                   help="an ONNX graph computing the same int64 outputs (needs -o)")
    p.add_argument("--torch", action="store_true",
                   help="a standalone torch module (Python source) computing the same integers")
    p.add_argument("--steps", type=int, metavar="N",
                   help="--onnx/--torch of a multi-step netlist: unroll N steps (an open "
                        "netlist needs it; default: its fixed steps)")
    p.add_argument("-o", "--output", help="write to this file instead of standard output")


def run(args) -> int:
    if args.onnx or args.torch:
        return run_model(args)
    from dsl import load
    from dsl.jsonio import dumps

    if args.output is not None:
        from commands.common import guard

        guard([("-o", args.output)], [args.file])
    text = dumps(load(args.file)) + "\n"
    if args.output is not None:
        from commands.common import writing
        from dsl.util import atomic_write

        with writing(args.output, "the JSON"):
            atomic_write(args.output, text.encode())
    else:
        print(text, end="")
    return 0


def run_model(args) -> int:
    """--onnx / --torch: validate the arguments, build the whole file, then write it at once."""
    from dsl import load
    from dsl.diagnostics import VoodooError

    if args.onnx and args.torch:
        raise VoodooError("export: give one of --onnx and --torch, not both")
    if args.onnx and not args.output:
        raise VoodooError("export --onnx writes a binary file: name it with -o OUT.onnx")
    if args.output:
        from commands.common import guard

        guard([("-o", args.output)], [args.file])
    net = load(args.file)
    if args.steps is not None and not net.multi_step:
        raise VoodooError(f"export --steps: {net.source} is a one-step netlist")
    if args.onnx:
        from interop.export_onnx import OPSET, to_onnx

        model = to_onnx(net, args.steps)
        data = model.SerializeToString()
        summary = (f"ONNX opset {OPSET}, int64, {len(net.inputs)} inputs -> "
                   f"{len(net.outputs)} outputs, {len(model.graph.node)} graph nodes")
    else:
        from interop.export_torch import torch_source

        data = torch_source(net, args.steps).encode()
        summary = f"torch module Net, {len(net.inputs)} inputs -> {len(net.outputs)} outputs"
    if not args.output:
        print(data.decode(), end="")
        return 0
    from commands.common import writing
    from dsl.util import atomic_write

    with writing(args.output, "the model"):
        atomic_write(args.output, data)
    print(f"wrote {args.output}: {summary}")
    return 0
