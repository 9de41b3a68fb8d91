"""`build.py chat`: the checked-in chat model (circuits/chat.dnet, docs/chat.md) in one
map, wads/chat.wad; with --prompt, the reply written by the network in ViZDoom, every step
compared with the reference: `tokens N/N EXACT`. `--config large` runs the larger model
(circuits/chat_large.dnet) over several maps, wads/chat_large.wad (the demo itself is
demos/chat.py)."""
from __future__ import annotations


def add_arguments(p) -> None:
    p.add_argument("--prompt", action="append", default=[],
                   help="a question to ask in the map (repeat for several); without one the "
                        "WAD is only built")
    p.add_argument("--seed", type=int, help="sample with seeded Gumbel noise (default: greedy "
                                            "with the repetition penalty)")
    p.add_argument("--debug", action="store_true",
                   help="also read back every light (every state element) at every step")
    p.add_argument("--max-steps", type=int, metavar="N",
                   help="stop each run after N steps (a sample of its first steps)")
    p.add_argument("--config", choices=("chat", "large", "microbit"), default="chat",
                   help="chat: the model of one map, with the player's room (default); "
                        "large: d_model 16 over several maps; microbit: the micro:bit "
                        "model's size (d 40, 3 experts) over dozens of maps, its netlist "
                        "made from the checked-in weights")
    p.add_argument("-o", "--output", help="WAD to write (default wads/chat.wad, or "
                                          "wads/chat_<config>.wad)")


def run(args) -> int:
    import os

    from commands.common import Output, guard, writing
    from demos.chat import ONE_MAP, dnet_path, main
    from mapgen.compile import WADS
    from models.chat_train import weights_path

    name = "chat.wad" if args.config == ONE_MAP else f"chat_{args.config}.wad"
    # the WAD is made from the netlist, the prompts run against the weights: both are read
    out, = guard([Output("-o", args.output, os.path.join(WADS, name), parts=True)],
                 [dnet_path(args.config), weights_path(args.config)])
    with writing(out, "the WAD"):
        return main(args.prompt, seed=args.seed, debug=args.debug, output=out,
                    max_steps=args.max_steps, config=args.config)
