"""The MNIST demo: a trained integer network classifying real MNIST digits inside Doom.

Trains (or loads from the cache) and quantises the MLP (models/quantize.py), or loads the
checked-in convolutional model (`--model cnn`, models/cnn.py), tiles it over as many maps
as its size needs (mapgen/tiles.py), runs the held-out digits through the
maps in parallel engine processes and checks every one of the ten outputs of every digit
against the integer reference. Prints a table, writes a confusion-matrix PNG and a PNG of
one digit's path through the maps; the last line is

    engine==reference N/N EXACT; accuracy float F% int I% engine E%
"""
from __future__ import annotations

import os
import time


def run(args) -> int:
    """The whole demo for `build.py mnist` (its options are in commands/mnist.py)."""
    from mapgen.compile import default_wad

    data = _digits(args)
    tiles, maps, out = _compile(data["net"], args, args.output or default_wad("mnist"))
    workers = args.workers or default_workers(len(maps))
    res = _run_engine(data, tiles, maps, out, workers, getattr(args, "pipeline", True),
                      getattr(args, "ray", None))
    _report(data, tiles, maps, res, out, workers)
    return 0 if res["exact"] == data["n"] else 1


def default_workers(maps: int) -> int:
    """Engines for a run of `maps` maps: one per map (at least 2, at most 8), even beyond
    the cores. An engine given two maps changes map for every chunk, and loading one of the
    CNN's maps takes about 11 s; measured on 2 cores, the CNN's 3 maps on 2 engines took
    4.24 s per digit, on 3 engines 1.94 s."""
    return max(2, min(8, maps))


def _digits(args) -> dict:
    """The model (trained, cached or the small checked-in one) and the held-out digits."""
    import numpy as np

    from dsl.diagnostics import VoodooError
    from dsl.reference import evaluate
    from models.datasets import load_split

    split = load_split(args.data)
    float_pred = None
    if getattr(args, "model", "mlp") == "cnn":
        from models.cnn import load_mnist_cnn

        net, transform, info = load_mnist_cnn()
        float_pred = info["float_pred"] if _same_digits(info, split) else None
    elif args.small:
        from models.quantize import load_mnist_small

        net, transform = load_mnist_small()
    else:
        from models.quantize import build

        built = build(data_dir=args.data, progress=True, split=split)
        net, transform, float_pred = built.net, built.transform, built.float_test_pred
    n = len(split.test_labels) if args.samples is None else args.samples
    if not 1 <= n <= len(split.test_labels):
        raise VoodooError(f"--samples {n}: choose 1..{len(split.test_labels)} held-out digits")
    # The held-out digits are stored class by class: a fixed shuffle makes any prefix a
    # fair sample of every class (the full run uses all of them either way).
    pick = np.random.default_rng(0).permutation(len(split.test_labels))[:n]
    images, labels = split.test_images[pick], split.test_labels[pick].astype(int)
    X = transform(images)
    ref = evaluate(net, X).last_outputs()
    return dict(net=net, split=split, n=n, images=images, labels=labels, X=X, ref=ref,
                float_pred=None if float_pred is None else float_pred[pick])


def _same_digits(info: dict, split) -> bool:
    """The recorded float answers are of these held-out digits (the package's, as when the
    model was trained), not of another data set's."""
    from models.cnn import test_digits_id

    return len(info["float_pred"]) == len(split.test_labels) and info["test_sha"] == \
        test_digits_id(split)


# The convolutional model's map: a 1,016-doll CNN map loads and runs exactly in ViZDoom
# (measured), where tiles would carry hundreds of relu values from map to map as input
# dolls; so the convolutional model (one CNN or an ensemble of two) is planned with room
# for this many dolls in one map (the other limits are the measured ones: MapBudget).
CNN_MAP_DOLLS = 2_500


def _compile(net, args, out: str):
    from mapgen.compile import write_wad
    from mapgen.tiles import MapBudget, compile_tiles, plan_tiles

    t0 = time.perf_counter()
    budget = MapBudget(dolls=CNN_MAP_DOLLS) if getattr(args, "model", "mlp") == "cnn" else None
    tiles = plan_tiles(net, n_tiles=args.tiles, budget=budget)
    maps = compile_tiles(tiles, "MNIST", acc=args.acc)
    write_wad(out, maps, net, tiles)
    compile_s = time.perf_counter() - t0
    print(f"{out}: {net.name}, {len(tiles)} tile(s), compiled in {compile_s:.1f} s")
    for t, m in zip(tiles, maps):
        print(f"tile {t.index + 1}: {len(t.inputs)} inputs -> {len(t.outputs)} outputs "
              f"({len(t.computes)} neurons)")
        print(m.report())
    return tiles, maps, out


def run_digits(out: str, infos, tiles, net, X, workers: int, pipeline: bool = True,
               ray: str | None = None, progress=None):
    """The digits through the tiles' maps, in engine processes or Ray actors: (outputs,
    engine tics). Shared with bench/throughput.py, so both run the same work."""
    from engine.cluster import check_workers, run_engines

    n = len(X)
    return run_engines(out, infos, tiles, net, X, workers=check_workers(workers), ray=ray,
                       pipeline=pipeline, chunk=max(5, min(50, n // (4 * workers) or 1)),
                       progress=progress)


def _run_engine(data, tiles, maps, out: str, workers: int, pipeline: bool = True,
                ray: str | None = None) -> dict:
    import numpy as np
    from tqdm import tqdm

    n = data["n"]
    bar = tqdm(total=n, desc="digits in the engine", unit="digit")
    t0 = time.perf_counter()
    got, tics = run_digits(out, [m.manifest for m in maps], tiles, data["net"],
                           data["X"].tolist(), workers, pipeline, ray, progress=bar.update)
    wall = time.perf_counter() - t0
    bar.close()
    got = np.array(got, dtype=np.int64)
    return dict(got=got, tics=tics, wall=wall, pipeline=pipeline, ray=ray,
                exact=int(np.sum(np.all(got == data["ref"], axis=1))))


def _report(data, tiles, maps, res, out: str, workers: int) -> None:
    import numpy as np

    net, n, labels = data["net"], data["n"], data["labels"]
    eng_pred = res["got"].argmax(axis=1)
    acc_int = float(np.mean(data["ref"].argmax(axis=1) == labels) * 100)
    acc_eng = float(np.mean(eng_pred == labels) * 100)
    fp = data["float_pred"]
    acc_float = None if fp is None else float(np.mean(fp == labels) * 100)
    exact, wall, tics = res["exact"], res["wall"], res["tics"]
    rows = [
        ("model", f"{net.name}: {len(net.inputs)} inputs, "
                  f"{sum(1 for x in net.nodes if not x.is_input)} neurons, "
                  f"{net.n_connections} connections"),
        ("digits", f"{n} held out (of {len(data['split'].test_labels)}, a fixed shuffle), "
                   f"from {data['split'].source}"),
        ("float accuracy", "-" if acc_float is None else f"{acc_float:.2f}%"),
        ("integer reference accuracy", f"{acc_int:.2f}%"),
        ("engine accuracy", f"{acc_eng:.2f}%"),
        ("engine == reference", f"{exact}/{n} (all ten outputs of every digit)"),
        ("dolls per tile", ", ".join(str(len(m.circuit.lanes)) for m in maps)),
        ("tics per digit", f"{tics / n:.0f} ("
                           + ("pipelined; " if res["pipeline"] else "") + "one at a time: "
                           f"{' + '.join(str(m.manifest['inference_tics'] + 1) for m in maps)})"),
        ("seconds per digit", f"{wall / n:.4f} (wall, {workers} engine "
                              + ("Ray actors" if res["ray"] else "processes") + ")"),
        ("digits per second", f"{n / wall:.1f}"),
        ("engine time", f"{wall:.1f} s"),
    ]
    w = max(len(k) for k, _ in rows)
    print("\n".join(f"  {k:<{w}}  {v}" for k, v in rows))
    base = os.path.splitext(out)[0]
    _confusion_png(labels, eng_pred, base + "-confusion.png", n)
    _path_png(tiles, maps, net, data["X"][0], data["images"][0], int(labels[0]),
              base + "-path.png")
    print(f"pictures: {base}-confusion.png {base}-path.png")
    # Two decimals: on 2,000 digits one digit is 0.05%, and one decimal would round the
    # CNN's 98.65% integer accuracy up to its float 98.70%.
    f = "-" if acc_float is None else f"{acc_float:.2f}%"
    print(f"engine==reference {exact}/{n} {'EXACT' if exact == n else 'MISMATCH'}; "
          f"accuracy float {f} int {acc_int:.2f}% engine {acc_eng:.2f}%")


def _confusion_png(labels, pred, path: str, n: int) -> None:
    from PIL import Image, ImageDraw

    from mapgen.render import _font, save_png

    cm = [[0] * 10 for _ in range(10)]
    for t, p in zip(labels, pred):
        cm[int(t)][int(p)] += 1
    cell, pad = 44, 70
    img = Image.new("RGB", (pad + 10 * cell + 20, pad + 10 * cell + 40), (18, 18, 24))
    d = ImageDraw.Draw(img)
    d.text((10, 8), f"MNIST in the engine: {n} held-out digits (rows: true, columns: "
                    "engine's answer)", fill=(230, 230, 230), font=_font(13))
    top = max(max(r) for r in cm) or 1
    for i in range(10):
        d.text((pad - 20, pad + i * cell + 14), str(i), fill=(200, 200, 200), font=_font(14))
        d.text((pad + i * cell + 18, pad - 22), str(i), fill=(200, 200, 200), font=_font(14))
        for j in range(10):
            v = cm[i][j]
            t = v / top
            color = (int(30 + 200 * t), int(40 + 150 * t), 60) if i == j else \
                (int(40 + 215 * min(1, 8 * t)), 40, 40) if v else (30, 30, 38)
            x0, y0 = pad + j * cell, pad + i * cell
            d.rectangle([x0, y0, x0 + cell - 2, y0 + cell - 2], fill=color)
            if v:
                d.text((x0 + 6, y0 + 14), str(v), fill=(255, 255, 255), font=_font(12))
    save_png(img, path)


def _path_png(tiles, maps, net, x, image, label, path: str) -> None:
    """One digit: its pixels, then each tile's map with the doors its dolls passed."""
    from PIL import Image, ImageDraw

    from mapgen.circuit import simulate
    from mapgen.render import _font, render, save_png

    values = {net.nodes[i].name: int(v) for i, v in zip(net.inputs, x)}
    panels = []
    for t, m in zip(tiles, maps):
        tin = [values[name] for name in t.inputs]
        levels = simulate(m.circuit, tin)
        for o in t.net.outputs:
            node = t.net.nodes[o]
            values[node.name] = levels[m.circuit.value_light[o]]
        panels.append(render(m.layout, levels, tin, max_size=1400,
                             title=f"tile {t.index + 1} of {len(tiles)}"))
    digit = Image.fromarray(image).resize((168, 168), Image.NEAREST).convert("RGB")
    W = 200 + sum(p.width for p in panels) + 10 * len(panels)
    H = max([p.height for p in panels] + [260])
    img = Image.new("RGB", (W, H), (18, 18, 24))
    img.paste(digit, (16, 40))
    d = ImageDraw.Draw(img)
    outs = [values[net.nodes[o].name] for o in net.outputs]
    d.text((16, 12), f"digit {label}", fill=(230, 230, 230), font=_font(16))
    d.text((16, 220), f"answer {max(range(10), key=lambda k: outs[k])}", fill=(250, 200, 60),
           font=_font(16))
    xoff = 200
    for p in panels:
        img.paste(p, (xoff, 0))
        xoff += p.width + 10
    save_png(img, path)
