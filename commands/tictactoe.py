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
    import os

    from commands.common import guard
    from demos.tictactoe import check_games, run as run_demo
    from mapgen.compile import default_wad

    check_games(args.games)  # before the map is built
    wad = args.output or default_wad("tictactoe")
    # the picture goes beside the WAD (demos/tictactoe.py); the map is built from code
    board = os.path.splitext(wad)[0] + "-board.png" if args.screenshot else None
    args.output, _ = guard([("-o", args.output, wad), ("--screenshot", board)])
    return run_demo(args)
