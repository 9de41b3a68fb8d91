"""`build.py run FILE --input 1,0,3`: run a netlist (compiled first) or a VoodooNet WAD in the
engine and compare every output with the integer reference.

Every argument is checked before anything is compiled or written; the exit status tells a
refusal from a wrong answer (see EXIT_HELP)."""
from __future__ import annotations

EXIT_EXACT, EXIT_REFUSED, EXIT_MISMATCH = 0, 1, 4
EXIT_HELP = ("exit status: 0 every output EXACT; 1 refused (bad arguments or input values, a "
             "netlist the compiler refuses, a damaged WAD, an engine that does not answer); "
             "2 command-line usage; 3 internal error (a bug of ours); 4 MISMATCH (the engine "
             "disagreed with the reference on some output)")


def add_arguments(p) -> None:
    from commands.common import (add_acc_option, add_door_budget_option,
                                 add_throughput_options, add_tiles_option,
                                 allow_negative_vectors)

    allow_negative_vectors(p)
    p.epilog = EXIT_HELP
    p.add_argument("file", help=".dnet or .json netlist, or a WAD built by `compile`")
    p.add_argument("--input", "-i", action="append", default=[],
                   help="comma-separated input values (repeat for several inferences, or for "
                        "each time step of a spiking netlist)")
    p.add_argument("--random", type=int, default=0, metavar="N",
                   help="also run N random inputs (seeded, range edges first); for a "
                        "multi-step netlist, N random steps")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--steps", type=int, metavar="N",
                   help="a multi-step netlist: run N steps (default: one per --input, or its "
                        "fixed steps); fed-back inputs carry the run past the given rows, and "
                        "its done output may end it earlier")
    p.add_argument("--debug", action="store_true",
                   help="read back every node and name the first one that differs (one map: "
                        "refused over several)")
    p.add_argument("--json", action="store_true",
                   help="print one JSON object instead of text: inputs, engine and reference "
                        "values, verdict and tics of every inference")
    p.add_argument("-o", "--output", help="WAD to write (default wads/<network>.wad)")
    add_tiles_option(p)
    add_door_budget_option(p)
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
                       as_json=args.json, pipeline=args.pipeline, ray=args.ray,
                       workers=args.workers, steps=args.steps, door_budget=args.door_budget)


def _check_options(file: str, inputs, random: int, seed: int, output, tiles,
                   door_budget=None) -> list:
    """Everything that needs no netlist, checked first: the parsed --input rows."""
    from commands.common import Output, check_tiles, guard
    from commands.eval import parse_vector
    from dsl.diagnostics import VoodooError

    if random < 0 or random > 1_000_000:
        raise VoodooError(f"--random {random}: give 0..1000000 random inputs")
    if not 0 <= seed < 2**63:
        raise VoodooError(f"--seed {seed}: give a seed of 0 or more")
    check_tiles(tiles)
    if door_budget is not None and door_budget < 1:
        raise VoodooError(f"--door-budget {door_budget}: give at least 1 door per sub-lane")
    if file.lower().endswith(".wad"):
        if tiles is not None or output is not None or door_budget is not None:
            flag = "--tiles" if tiles is not None else "-o" if output is not None else \
                "--door-budget"
            raise VoodooError(f"{flag}: {file} is already compiled; {flag} applies when "
                              "running a netlist (.dnet or .json)")
    else:   # the default WAD's name is the network's: checked again once it is read
        guard([Output("-o", output, parts=True)], [file])
    return [parse_vector(t) for t in inputs]


def run_netlist(file: str, *, inputs=(), random: int = 0, seed: int = 0, debug: bool = False,
                output: str | None = None, tiles: str | None = None,
                acc: str = "internal", as_json: bool = False, pipeline: bool = True,
                ray: str | None = None, workers: int = 2, steps: int | None = None,
                door_budget: int | None = None) -> int:
    """Compile (or load) FILE, run the inputs in the engine, print a row per inference and
    the verdict `N/N EXACT`. Shared by `run` and `hello`, so they cannot drift apart."""
    from commands.common import Output, build_maps, check_tiles, default_wad, guard, writing
    from commands.eval import check_vector
    from dsl import load
    from dsl.diagnostics import VoodooError
    from mapgen.compile import load_wad, write_wad

    rows = _check_options(file, inputs, random, seed, output, tiles, door_budget)
    if debug and check_tiles(tiles) not in (None, 1):
        raise VoodooError(_DEBUG_TILES.format(what=f"--tiles {tiles}"))
    wad = file.lower().endswith(".wad")
    loaded = load_wad(file) if wad else None
    if wad and debug and len(loaded.infos) > 1:
        raise VoodooError(_DEBUG_TILES.format(what=f"{file} holds {len(loaded.infos)} maps"))
    net = loaded.net if wad else load(file)
    for r in rows:
        check_vector(net, r)
    rows = _planned(net, rows, random, seed, steps)
    if not wad:
        out, = guard([Output("-o", output, default_wad(net.name), parts=True)], [file])
        net, maps, plan = build_maps(net, tiles, acc, door_budget=door_budget)
        if debug and len(maps) > 1:   # --tiles auto planned several maps
            raise VoodooError(_DEBUG_TILES.format(what=f"--tiles {tiles} planned {len(maps)} maps"))
        with writing(out, "the WAD"):
            write_wad(out, maps, net, plan)
        loaded = load_wad(out)
    if ray and (debug or net.multi_step):
        raise VoodooError("--ray runs independent inferences: not with --debug or a "
                          "multi-step (spiking) netlist")
    results = _run_one_map(loaded, rows, debug, pipeline) \
        if len(loaded.infos) == 1 and not ray else _run_tiled(loaded, rows, pipeline, ray, workers)
    exact = sum(c.exact for c in results)
    tics = sum(i["inference_tics"] + 1 for i in loaded.infos)
    if net.multi_step:  # every step is compared; a done network may stop the run early
        rows = rows[:len(results)]
    if as_json:
        print(_json_report(loaded, results, tics))
    else:
        _print_report(loaded, results)
    return EXIT_EXACT if exact == len(rows) else EXIT_MISMATCH


# --debug reads back every light of one map; over several maps (engine/tiled.py) only the
# values the maps hand on are read, which is no promise to keep silently.
_DEBUG_TILES = ("--debug reads back every light of one map, and {what}; over several maps "
                "only the values the maps hand on are read (a multi-step run compares each "
                "with the reference and names the first that differs, with its step)\n"
                "    hint: run without --debug, or without --tiles to read every light")


def _planned(net, rows: list, random: int, seed: int, steps: int | None) -> list:
    """The rows to run: independent inferences, or the steps of one run of a multi-step
    netlist (dsl/sequence.py: there --random N is N random steps, after any --input)."""
    from dsl.diagnostics import VoodooError
    from dsl.sequence import plan_steps, random_sequence

    if not net.multi_step:
        if steps is not None:
            raise VoodooError(f"--steps: {net.source} is a one-step netlist (give --input "
                              "or --random N for several inferences)")
        rows = rows + random_inputs(net, random, seed)
        if not rows:
            raise VoodooError("give at least one --input (or --random N)")
        return rows
    from commands.eval import check_steps

    if random:
        rows = rows + random_sequence(net, len(rows) + random, seed)[len(rows):]
    check_steps(net, len(rows), steps, "--input once per step, or --random N")
    return plan_steps(net, rows, steps)


def _print_report(loaded, results) -> None:
    from commands.common import format_row

    net = loaded.net
    names = [net.nodes[o].name for o in net.outputs]
    tics = sum(i["inference_tics"] for i in loaded.infos)
    per = "step" if net.multi_step else "inference"
    print(f"{loaded.path}: {len(loaded.infos)} map(s), {tics} tics per {per}; outputs "
          f"{', '.join(names)}")
    for t, c in enumerate(results):
        print((f"step {t}: " if net.multi_step else "")
              + format_row(c.inputs, c.engine, c.reference)
              + (f"  first divergence: {c.first_divergence}" if c.first_divergence else ""))
    if net.done is not None and results and results[-1].engine[net.outputs.index(net.done)] == 1:
        print(f"done: {net.nodes[net.done].name} = 1 at step {len(results) - 1}: the network "
              "ended the run")
    exact = sum(c.exact for c in results)
    print(f"{exact}/{len(results)} {'EXACT' if exact == len(results) else 'MISMATCH'}")


def _json_report(loaded, results, tics: int) -> str:
    import json

    net = loaded.net
    exact = sum(c.exact for c in results)
    return json.dumps({
        "wad": loaded.path, "network": net.name, "maps": len(loaded.infos),
        "steps": len(results) if net.multi_step else net.steps,
        "outputs": [net.nodes[o].name for o in net.outputs],
        "results": [{"inputs": c.inputs, "engine": [int(v) for v in c.engine],
                     "reference": [int(v) for v in c.reference],
                     "verdict": "EXACT" if c.exact else "MISMATCH",
                     "first_divergence": c.first_divergence, "tics": tics}
                    for c in results],
        "exact": exact, "total": len(results),
        "verdict": "EXACT" if exact == len(results) else "MISMATCH"})


def _run_one_map(loaded, rows, debug, pipeline=True):
    from dsl.lower import lower_products

    from commands.common import progress
    from engine.runner import MapRunner, compare, compare_sequence

    net = loaded.net
    lowered = lower_products(net)
    with MapRunner(loaded.path, loaded.infos[0]) as runner:
        if net.multi_step:
            # The inputs are one run, a row per time step (dsl/sequence.plan_steps).
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

    if loaded.net.multi_step:  # one run, step by step through every map
        from engine.tiled import run_sequence

        return run_sequence(loaded.path, loaded.infos, loaded.tiles, loaded.net, rows)

    got, _ = run_engines(loaded.path, loaded.infos, loaded.tiles, loaded.net, rows,
                         workers=min(check_workers(workers), len(rows)), ray=ray,
                         pipeline=pipeline, chunk=max(1, len(rows) // 4))
    return _compared(loaded.net, rows, got)
