"""`build.py tictactoe`: play X against a network that plays perfect O (demos/tictactoe.py)."""
from __future__ import annotations


def add_arguments(p) -> None:
    from commands.common import add_acc_option

    p.add_argument("--games", type=int, default=5,
                   help="games to play in the engine against scripted X players, 1..1000 "
                        "(default 5: trap, greedy, first-free, centre-side, random)")
    p.add_argument("-o", "--output", help="WAD to write (default wads/tictactoe.wad)")
    p.add_argument("--screenshot", action="store_true",
                   help="also save a picture of the board after the last game "
                        "(wads/tictactoe-board.png)")
    add_acc_option(p)


def run(args) -> int:
    from commands.common import output_path
    from demos.tictactoe import check_games, run as run_demo
    from mapgen.compile import default_wad

    check_games(args.games)  # before the map is built
    args.output = output_path(args.output, default_wad("tictactoe"))
    if args.screenshot:  # the picture goes beside the WAD (demos/tictactoe.py)
        import os

        output_path(os.path.splitext(args.output)[0] + "-board.png", option="--screenshot",
                    sources=(args.output,))

    return run_demo(args)
