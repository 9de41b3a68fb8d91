"""`build.py museum`: the walk-through digit museum (wads/museum.wad), with screenshots."""
from __future__ import annotations


def add_arguments(p) -> None:
    from commands.common import add_acc_option

    p.add_argument("-o", "--output", help="WAD to write (default wads/museum.wad)")
    p.add_argument("--screenshot", action="store_true",
                   help="also run it and save engine screenshots of the display before and "
                        "after MUTATE (wads/museum-before.png, wads/museum-after.png) and of "
                        "the dolls riding (wads/museum-lanes.png)")
    add_acc_option(p)


def run(args) -> int:
    import os

    from commands.common import WADS, format_row, guard, writing
    from mapgen.compile import write_wad
    from demos.museum import SOURCE, MuseumDriver, build, mutated, pattern

    wad = args.output or os.path.join(WADS, "museum.wad")
    base = os.path.splitext(wad)[0]   # the pictures go beside the WAD
    shots = [("--screenshot", f"{base}-{part}.png") for part in ("before", "after", "lanes")
             if args.screenshot]
    out = guard([("-o", args.output, wad)] + shots, [SOURCE])[0]
    mm = build(acc=args.acc)
    with writing(out, "the WAD"):
        write_wad(out, [mm.compiled], mm.net)
    print(f"{out}: the museum ({len(mm.compiled.circuit.lanes)} dolls, "
          f"{mm.net.n_connections} connections)")
    print(mm.compiled.report())
    if not args.screenshot:
        return 0
    from dsl.reference import evaluate

    seven = pattern(7)
    with MuseumDriver(out, mm.compiled.manifest, render=True) as d:
        d.set_digit(seven)
        d.press("READ")
        before = d.display()
        d.screenshot(base + "-before.png")
        d.press("MUTATE")
        after = d.display()
        d.screenshot(base + "-after.png")
        d.press("RESTORE")
        d.lanes_screenshot(base + "-lanes.png")
        during = d.display()
    ref_before = evaluate(mm.net, [seven]).last_outputs()[0].tolist()
    ref_after = evaluate(mutated(mm.net), [seven]).last_outputs()[0].tolist()
    print(format_row(seven, before, ref_before) + "  (7)")
    print(format_row(seven, after, ref_after) + "  (7 after MUTATE reads as "
          f"{'1' if [v > 100 for v in after] == [s == 1 for s in pattern(1)] else '?'})")
    print(f"screenshots: {base}-before.png {base}-after.png {base}-lanes.png (dolls mid-ride)")
    # 4 like `run`: a wrong answer is told apart from a refusal (1)
    return 0 if (before, after, during) == (ref_before, ref_after, ref_before) else 4
