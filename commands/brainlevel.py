"""`build.py brainlevel`: the arena whose marine is steered by a policy network computed by
voodoo dolls in the same map (demos/brainlevel/, docs/brainlevel.md)."""
from __future__ import annotations


def add_arguments(p) -> None:
    from commands.common import add_acc_option

    p.add_argument("-o", "--output", help="WAD to write (default wads/brainlevel.wad)")
    p.add_argument("--episodes", type=int, metavar="N",
                   help="run N seeded episodes (paused, live and the two baselines) and "
                        "print the table")
    p.add_argument("--live", action="store_true", help="only the live episodes (demons "
                                                       "not frozen while the dolls think)")
    p.add_argument("--paused", action="store_true", help="only the paused episodes")
    p.add_argument("--first-seed", type=int, default=0, metavar="S",
                   help="seeds S, S+1, ... (default 0)")
    p.add_argument("--gif", metavar="OUT.gif", help="also write an animated GIF of one "
                                                    "paused episode")
    p.add_argument("--policy", choices=("mlp", "transformer"), default=None,
                   help="the policy family the dolls compute (default: "
                        "demos/brainlevel/policy.py POLICY, the transformer; the MLP is "
                        "faster per decision, see docs/brainlevel.md)")
    p.add_argument("--retrain", action="store_true",
                   help="train the policy afresh (a minute or two) instead of loading "
                        "circuits/brainlevel_<policy>.dnet")
    add_acc_option(p)


def run(args) -> int:
    import os

    from commands.common import guard
    from demos.brainlevel import policy
    from demos.brainlevel.demo import run as demo
    from dsl.diagnostics import VoodooError
    from mapgen.compile import WADS, default_wad

    if args.gif is not None and not args.gif.lower().endswith(".gif"):
        raise VoodooError(f"--gif {args.gif}: give a .gif file")
    checked_in = policy.CHECKED_IN.get(args.policy or policy.POLICY)
    # --retrain writes the policy it trained beside the WADs (demo._policy)
    retrained = os.path.join(WADS, os.path.basename(checked_in)) if args.retrain else None
    args.output = guard([("-o", args.output, default_wad("brainlevel")), ("--gif", args.gif),
                         ("--retrain", None, retrained)], [checked_in])[0]
    return demo(args)
