"""`build.py run FILE --input 1,0,3`: compile, run in the engine, compare with the reference."""
from __future__ import annotations


def add_arguments(p) -> None:
    from .cli_common import add_acc_option

    p.add_argument("file", help=".dnet or .json netlist")
    p.add_argument("--input", "-i", action="append", default=[],
                   help="comma-separated input values (repeat for several inferences)")
    p.add_argument("--random", type=int, default=0, metavar="N",
                   help="also run N random inputs (seeded, range edges first)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--debug", action="store_true",
                   help="read back every node and name the first one that differs")
    p.add_argument("-o", "--output", help="WAD to write (default wads/<network>.wad)")
    add_acc_option(p)


def random_inputs(net, n: int, seed: int) -> list[list[int]]:
    import numpy as np

    rng = np.random.default_rng(seed)
    ranges = net.input_ranges()
    rows = []
    if n >= 1:
        rows.append([lo for lo, _ in ranges])
    if n >= 2:
        rows.append([hi for _, hi in ranges])
    while len(rows) < n:
        rows.append([int(rng.integers(lo, hi + 1)) for lo, hi in ranges])
    return rows


def run(args) -> int:
    from dsl.cli_eval import parse_vector
    from dsl.diagnostics import VoodooError
    from dsl.lower import lower_products

    from .cli_common import compile_file, default_wad, format_row, progress
    from .compile import write_wad
    from .runner import MapRunner, compare, compare_sequence

    net, cm = compile_file(args.file, args.acc)
    rows = [parse_vector(t) for t in args.input] + random_inputs(
        net, args.random * (net.steps if net.steps > 1 else 1), args.seed)
    if not rows:
        raise VoodooError("give at least one --input (or --random N)")
    for r in rows:
        if len(r) != len(net.inputs):
            raise VoodooError(f"--input {','.join(map(str, r))}: {len(r)} values, but "
                              f"{net.source} has {len(net.inputs)} inputs")
        for (lo, hi), v, nid in zip(net.input_ranges(), r, net.inputs):
            if not lo <= v <= hi:
                raise VoodooError(f"--input: {net.nodes[nid].name} = {v} is outside its "
                                  f"declared range {lo}..{hi}")
    out = args.output or default_wad(net.name)
    write_wad(out, [cm])
    lowered = lower_products(net)
    names = [net.nodes[o].name for o in net.outputs]
    print(f"{out}: {len(cm.circuit.lanes)} dolls, {cm.schedule.inference_tics} tics per "
          f"inference; outputs {', '.join(names)}")
    exact = 0
    with MapRunner(out, cm.manifest) as runner:
        if net.steps > 1:
            # A spiking netlist: the inputs are one sequence, a row per time step.
            if len(rows) != net.steps:
                raise VoodooError(f"{net.source} runs {net.steps} steps: give --input once "
                                  "per step")
            results = compare_sequence(runner, net, lowered, rows, debug=args.debug)
        else:
            results = (compare(runner, net, lowered, x, debug=args.debug)
                       for x in progress(rows, len(rows), "inferences"))
        for c in results:
            print(format_row(c.inputs, c.engine, c.reference)
                  + (f"  first divergence: {c.first_divergence}" if c.first_divergence else ""))
            exact += c.exact
    print(f"{exact}/{len(rows)} {'EXACT' if exact == len(rows) else 'MISMATCH'}")
    return 0 if exact == len(rows) else 1
