"""`build.py import MODEL.onnx -o NET.dnet`: an ONNX model as a .dnet netlist
(models/onnx_import.py; docs/export.md, "Importing ONNX")."""
from __future__ import annotations


def add_arguments(p) -> None:
    p.add_argument("model", help="an .onnx file: an integer graph (as export --onnx writes) "
                                 "is read exactly, a float one is quantised")
    p.add_argument("-o", "--output", required=True, help="the .dnet file to write")
    p.add_argument("--input-range", default="0..1", metavar="LO..HI",
                   help="the integer range of every input (default 0..1; an integer graph "
                        "written by export --onnx carries its own)")
    p.add_argument("--input-step", type=float, default=1.0, metavar="F",
                   help="float graphs: the float value of one input step (the model sees "
                        "x * F; default 1)")
    p.add_argument("--weight-bits", type=int, default=6,
                   help="float graphs: bits per weight (default 6)")
    p.add_argument("--clamp", type=int, default=15, help="float graphs: the relu clamp L "
                                                          "(one door per step; default 15)")
    p.add_argument("--calibrate", metavar="FILE.npy",
                   help="float graphs: integer inputs (N, n_inputs) to calibrate the relu "
                        "divisors on (default: 512 seeded random inputs in the range)")
    p.add_argument("--name", help="the network's name (default: the graph's)")


def _range(text: str) -> tuple[int, int]:
    import re

    from dsl.diagnostics import VoodooError

    m = re.fullmatch(r"\s*(-?[0-9]{1,9})\s*\.\.\s*(-?[0-9]{1,9})\s*", text)
    if not m or int(m.group(1)) > int(m.group(2)):
        raise VoodooError(f"--input-range {text!r}: write LO..HI with LO <= HI, e.g. 0..3")
    return int(m.group(1)), int(m.group(2))


def _calibration(path: str | None):
    if path is None:
        return None
    import numpy as np

    from dsl.diagnostics import VoodooError

    try:
        return np.load(path, allow_pickle=False)
    except (OSError, ValueError) as e:
        raise VoodooError(f"--calibrate {path}: cannot read a .npy array ({e})") from None


def run(args) -> int:
    import os

    from commands.common import guard, writing
    from dsl.diagnostics import VoodooError
    from dsl.parser import parse
    from dsl.util import atomic_write
    from models.onnx_import import onnx_to_dnet

    if not os.path.isfile(args.model):
        raise VoodooError(f"{args.model}: no such file\n    hint: give the path of an .onnx "
                          "model")
    guard([("-o", args.output)], [args.model, args.calibrate])
    if not 2 <= args.weight_bits <= 16:
        raise VoodooError(f"--weight-bits {args.weight_bits}: give 2..16")
    if not 1 <= args.clamp <= 1000:
        raise VoodooError(f"--clamp {args.clamp}: give 1..1000 (one door per step)")
    text = onnx_to_dnet(args.model, _range(args.input_range), args.input_step,
                        _calibration(args.calibrate), args.weight_bits, args.clamp, args.name,
                        where=args.model)
    net = parse(text, args.output)  # validated before anything is written
    with writing(args.output, "the netlist"):
        atomic_write(args.output, text.encode())
    print(f"wrote {args.output}: network '{net.name}', {len(net.inputs)} inputs -> "
          f"{len(net.outputs)} outputs, {sum(1 for n in net.nodes if not n.is_input)} neurons")
    return 0
