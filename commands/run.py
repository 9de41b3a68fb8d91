"""`build.py run FILE --input 1,0,3`: run a netlist (compiled first) or a VoodooNet WAD in the
engine and compare every output with the integer reference."""
from __future__ import annotations


def add_arguments(p) -> None:
    from commands.common import add_acc_option, add_throughput_options, add_tiles_option

    p.add_argument("file", help=".dnet or .json netlist, or a WAD built by `compile`")
    p.add_argument("--input", "-i", action="append", default=[],
                   help="comma-separated input values (repeat for several inferences, or for "
                        "each time step of a spiking netlist)")
    p.add_argument("--random", type=int, default=0, metavar="N",
                   help="also run N random inputs (seeded, range edges first)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--debug", action="store_true",
                   help="read back every node and name the first one that differs (one map)")
    p.add_argument("-o", "--output", help="WAD to write (default wads/<network>.wad)")
    add_tiles_option(p)
    add_acc_option(p)
    add_throughput_options(p)


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
    from engine.cluster import check_workers

    check_workers(args.workers)
    return run_netlist(args.file, inputs=args.input, random=args.random, seed=args.seed,
                       debug=args.debug, output=args.output, tiles=args.tiles, acc=args.acc,
                       pipeline=args.pipeline, ray=args.ray, workers=args.workers)


def run_netlist(file: str, *, inputs=(), random: int = 0, seed: int = 0, debug: bool = False,
                output: str | None = None, tiles: str | None = None,
                acc: str = "internal", pipeline: bool = True, ray: str | None = None,
                workers: int = 2) -> int:
    """Compile (or load) FILE, run the inputs in the engine, print a row per inference and
    the verdict `N/N EXACT`. Shared by `run` and `hello`, so they cannot drift apart."""
    from commands.eval import parse_vector
    from dsl.diagnostics import VoodooError

    from commands.common import build_maps, default_wad
    from mapgen.compile import load_wad, write_wad

    if file.lower().endswith(".wad"):
        loaded = load_wad(file)
        net, out = loaded.net, file
    else:
        net, maps, plan = build_maps(file, tiles, acc)
        out = output or default_wad(net.name)
        write_wad(out, maps, net, plan)
        loaded = load_wad(out)
    rows = [parse_vector(t) for t in inputs] + random_inputs(
        net, random * (net.steps if net.steps > 1 else 1), seed)
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
    names = [net.nodes[o].name for o in net.outputs]
    tics = sum(i["inference_tics"] for i in loaded.infos)
    print(f"{out}: {len(loaded.infos)} map(s), {tics} tics per inference; outputs "
          f"{', '.join(names)}")
    if ray and (debug or net.steps > 1):
        raise VoodooError("--ray runs independent inferences: not with --debug or a "
                          "multi-step (spiking) netlist")
    results = _run_one_map(loaded, rows, debug, pipeline) \
        if len(loaded.infos) == 1 and not ray else _run_tiled(loaded, rows, pipeline, ray, workers)
    exact = 0
    from commands.common import format_row
    for c in results:
        print(format_row(c.inputs, c.engine, c.reference)
              + (f"  first divergence: {c.first_divergence}" if c.first_divergence else ""))
        exact += c.exact
    print(f"{exact}/{len(rows)} {'EXACT' if exact == len(rows) else 'MISMATCH'}")
    return 0 if exact == len(rows) else 1


def _run_one_map(loaded, rows, debug, pipeline=True):
    from dsl.diagnostics import VoodooError
    from dsl.lower import lower_products

    from commands.common import progress
    from engine.runner import MapRunner, compare, compare_sequence

    net = loaded.net
    lowered = lower_products(net)
    with MapRunner(loaded.path, loaded.infos[0]) as runner:
        if net.steps > 1:
            # A spiking netlist: the inputs are one sequence, a row per time step.
            if len(rows) != net.steps:
                raise VoodooError(f"{net.source} runs {net.steps} steps: give --input once "
                                  "per step")
            return compare_sequence(runner, net, lowered, rows, debug=debug)
        if debug or not pipeline:
            return [compare(runner, net, lowered, x, debug=debug)
                    for x in progress(rows, len(rows), "inferences")]
        return _compared(net, rows, runner.infer_many(rows, pipeline=True))


def _compared(net, rows, got):
    from dsl.reference import evaluate

    from engine.runner import Comparison

    ref = evaluate(net, rows).last_outputs().tolist()
    return [Comparison(list(x), g, r) for x, g, r in zip(rows, got, ref)]


def _run_tiled(loaded, rows, pipeline=True, ray=None, workers=2):
    from engine.cluster import check_workers, run_engines

    got, _ = run_engines(loaded.path, loaded.infos, loaded.tiles, loaded.net, rows,
                         workers=min(check_workers(workers), len(rows)), ray=ray,
                         pipeline=pipeline, chunk=max(1, len(rows) // 4))
    return _compared(loaded.net, rows, got)
