"""`build.py mnist --model cnn --hub`: the convolutional model as a hub a player walks
through (mapgen/hub.py), checked by a visitor.

MAP01's floor has ten pedals, one held-out digit of each class (the first of its class
in the demo's fixed shuffle of the held-out set, demos/mnist.py); the chosen digit shows
in the floor beside them. The visitor steps on one pedal, waits for the dolls, steps on
the EXIT pad into MAP02, whose dolls compute the ten logits into the ceiling displays.
The values cross maps in ACS globals only. The visit runs in ViZDoom, and with `--gzdoom
BINARY` in GZDoom too; every value MAP01 hands on and every logit's display must equal
the integer reference (`==`).
"""
from __future__ import annotations

import time


def presets(split, transform):
    """The ten pedals: for each class, its first held-out digit in the demo's shuffle."""
    import numpy as np

    from mapgen.hub import Preset

    order = np.random.default_rng(0).permutation(len(split.test_labels))
    X = transform(split.test_images[order])
    out = []
    for d in range(10):
        j = int(np.flatnonzero(split.test_labels[order] == d)[0])
        out.append(Preset(f"digit {d} (held-out #{int(order[j])})", [int(v) for v in X[j]]))
    return out


def build(out: str, data_dir=None, acc: str = "internal"):
    """The hub WAD at `out`: (netlist, manifests)."""
    from mapgen import wadcache
    from mapgen.compile import write_wad
    from mapgen.hub import compile_hub
    from mapgen.tiles import plan_tiles
    from models.cnn import load_mnist_cnn
    from models.datasets import load_split

    net, transform, _ = load_mnist_cnn()
    pedals = presets(load_split(data_dir), transform)

    def make(path: str) -> dict:
        tiles = plan_tiles(net)
        t0 = time.perf_counter()
        maps = compile_hub(net, tiles, "MNIST CNN", pedals, acc=acc)
        write_wad(path, maps, net, tiles)
        print(f"{out}: {net.name} as a hub of {len(maps)} maps, compiled in "
              f"{time.perf_counter() - t0:.0f} s")
        # the manifests as the WAD holds them (write_wad adds what each map takes, hands on)
        return {"infos": [{**m.manifest, "tile_inputs": t.inputs, "tile_outputs": t.outputs}
                          for m, t in zip(maps, tiles)]}

    # the same WAD for every test of a run that asks (mapgen/wadcache.py: on when tests run)
    key = wadcache.key_of(net, hub="MNIST CNN", acc=acc,
                          pedals=[(p.label, p.values) for p in pedals])
    return net, wadcache.cached(key, make, out)["infos"]


def run(args) -> int:
    from engine import hubplay as H

    out = args.output
    net, infos = build(out, args.data, args.acc)
    digit = args.digit
    label = infos[0]["hub"]["presets"][digit]["label"]
    engines = [("ViZDoom", lambda: H.visit_vizdoom(out, infos, digit))]
    if args.gzdoom:
        engines.append(("GZDoom", lambda: H.visit_gzdoom(args.gzdoom, out, infos, digit)))
    ok = True
    for name, visit in engines:
        t0 = time.perf_counter()
        after = H.done_records(visit(), len(infos))
        bad = H.check_visit(net, infos, digit, after)
        got = H.shown(infos, after[-1].lights)
        logits = [got[net.nodes[o].name] for o in net.outputs]
        print(f"{name}: pedal {label}, EXIT, MAP02: the displays read {logits} "
              f"({time.perf_counter() - t0:.0f} s)")
        for line in bad[:10]:
            print("  MISMATCH " + line)
        ok = ok and not bad
    n = len(net.outputs) * len(engines)
    read = max(range(10), key=lambda k: logits[k]) if logits[0] is not None else None
    print(f"engine==reference {n - (0 if ok else n)}/{n} {'EXACT' if ok else 'MISMATCH'}; "
          f"hub of {len(infos)} maps in {', '.join(e for e, _ in engines)}; digit {digit} "
          f"read as {read}")
    return 0 if ok else 1
