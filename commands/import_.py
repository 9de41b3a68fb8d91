"""`build.py import MODEL.onnx -o NET.dnet`: an ONNX model as a .dnet netlist
(interop/onnx_import.py; docs/export.md, "Importing ONNX")."""
from __future__ import annotations


def add_arguments(p) -> None:
    p.add_argument("model", help="an .onnx file: an integer graph (as export --onnx writes) "
                                 "is read exactly, a float one is quantised")
    p.add_argument("-o", "--output", required=True, help="the .dnet file to write")
    p.add_argument("--input-range", metavar="LO..HI",
                   help="the integer range of every input (default 0..1; an integer graph "
                        "written by export --onnx carries its own; a quantised graph: the "
                        "integers its first QuantizeLinear or Quant makes)")
    p.add_argument("--input-step", type=float, metavar="F",
                   help="float and quantised graphs: the float value of one input step "
                        "(the model sees x * F; default 1, or a quantised graph's input "
                        "scale)")
    p.add_argument("--check", type=int, metavar="N",
                   help="run N seeded inputs through the model's own runtime (onnxruntime, "
                        "or qonnx's executor for QONNX) and the netlist's reference and "
                        "print N/N EXACT or the first difference (integer and quantised "
                        "graphs)")
    p.add_argument("--ort-pairs", choices=("auto", "saturate", "exact"), default="auto",
                   help="onnxruntime int8 graphs: how its u8s8 kernel's pair sums are read "
                        "(docs/import.md): auto (default) as this machine's onnxruntime "
                        "computes them (measured), saturate as x86 without VNNI does (16-bit "
                        "pairs), exact as ONNX defines them (VNNI, ARM)")
    p.add_argument("--weight-bits", type=int, default=6,
                   help="float graphs: bits per weight (default 6)")
    p.add_argument("--clamp", type=int, default=15, help="float graphs: the relu clamp L "
                                                          "(one door per step; default 15)")
    p.add_argument("--calibrate", metavar="FILE.npy",
                   help="float graphs: integer inputs (N, n_inputs) to calibrate the relu "
                        "divisors on (default: 512 seeded random inputs in the range)")
    p.add_argument("--name", help="the network's name (default: the graph's)")
    # `--input-range -3..3` is a value, not an option: argparse's own test for a negative
    # number knows no `..`.
    import re

    p._negative_number_matcher = re.compile(r"^-[0-9][0-9.,]*$")


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
    from dsl.util import not_a_file

    what = not_a_file(path)  # a FIFO would block np.load forever
    if what:
        raise VoodooError(f"--calibrate {path}: is {what}, not a .npy file")
    try:
        x = np.load(path, allow_pickle=False)
    except (OSError, ValueError, EOFError) as e:
        raise VoodooError(f"--calibrate {path}: cannot read a .npy array "
                          f"({getattr(e, 'strerror', None) or e})") from None
    if x.ndim != 2 or x.shape[0] == 0:
        raise VoodooError(f"--calibrate {path}: holds an array of shape {x.shape}; give one "
                          "row of integer inputs per sample, at least one row")
    return x


def run(args) -> int:
    from commands.common import guard, writing
    from dsl.diagnostics import VoodooError
    from dsl.parser import parse
    from dsl.util import atomic_write
    from interop.onnx_import import onnx_to_dnet

    import math
    import sys

    guard([("-o", args.output)], [args.model, args.calibrate])
    if args.input_step is not None and not (math.isfinite(args.input_step)
                                            and args.input_step > 0):
        raise VoodooError(f"--input-step {args.input_step}: give a positive, finite number "
                          "(the float value of one input step)")
    if not 2 <= args.weight_bits <= 16:
        raise VoodooError(f"--weight-bits {args.weight_bits}: give 2..16")
    if not 1 <= args.clamp <= 1000:
        raise VoodooError(f"--clamp {args.clamp}: give 1..1000 (one door per step)")
    if args.check is not None and not 1 <= args.check <= 100_000:
        raise VoodooError(f"--check {args.check}: give 1..100000 inputs")
    rng = None if args.input_range is None else _range(args.input_range)
    text = onnx_to_dnet(args.model, rng, args.input_step,
                        _calibration(args.calibrate), args.weight_bits, args.clamp, args.name,
                        where=args.model, ort_pairs=args.ort_pairs)
    for line in text.splitlines():  # what the header warns of, said where it is seen
        if line.startswith("# warning: "):
            print(f"{args.model}: {line[2:]}", file=sys.stderr)
    # Validated before anything is written; a problem names the model, not the output.
    net = parse(text, f"{args.model} (as imported)")
    verdict = None
    if args.check is not None:  # a refusal (a float graph, a runtime error) writes nothing
        from interop.runtime_check import check

        verdict = check(args.model, net, args.check, rng, args.input_step, where=args.model,
                        ort_pairs=args.ort_pairs)
    with writing(args.output, "the netlist"):
        atomic_write(args.output, text.encode())
    print(f"wrote {args.output}: network '{net.name}', {len(net.inputs)} inputs -> "
          f"{len(net.outputs)} outputs, {sum(1 for n in net.nodes if not n.is_input)} neurons")
    if verdict is None:
        return 0
    print(verdict.line())
    return 0 if verdict.exact == verdict.total else 4
