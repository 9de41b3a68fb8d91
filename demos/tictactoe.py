"""Tic-tac-toe against the dolls: a map where the visitor plays X and the network plays O.

Owns the tic-tac-toe map, its visitor controls and the driver that plays it:

- the **board**: nine floor pads in the gallery, one per cell; stepping on a pad toggles an
  X there (its light shows it); MOVE asks the machine for O's reply, NEW GAME clears it;
- the **display** in the ceiling: nine panels that are the accumulators of the `show`
  neurons themselves (O lit 255, empty grey 128, X black 0; looking up from the south, row 0 is
  nearest), and two result panels, O WINS (red) and DRAW (lit 200, else 40);
- the **machine**: demos/tictactoe_policy.py's rule-based policy, built with the graph API
  and compiled like any netlist; its dolls ride the lane hall behind the window.

The controls only move values: a pad writes a constant to an input, MOVE copies O's board
(the `onext` outputs of the last reply) back into the O inputs as they are and starts the
machine, NEW GAME writes constants. `ui_violations` checks that no control computes on a
neuron's value.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from dsl.reference import evaluate

from mapgen.circuit import lower
from mapgen.compile import CompiledMap, compile_acs
from mapgen.layout import conveyor_tag_for
from mapgen.program import SCRIPT_INFER, manifest
from mapgen.room import box, build_gallery, finish, light_panel, pad
from mapgen.udmf import MapModel, Sector

from engine.visitor import GalleryDriver
from .tictactoe_policy import LINES, full, policy_graph, winner

SCRIPT_PAD = 30                  # 30..38: the pad of cell 0..8
SCRIPT_MOVE = 40
SCRIPT_NEW = 41
SCRIPT_STATUS = 42               # pad lights to USER1..9, for tests
PAD_OFF, PAD_ON = 96, 255
CELL, GAP = 128, 24


@dataclass
class TicTacToeMap:
    compiled: CompiledMap
    spots: dict[str, tuple[float, float]]
    pad_tags: list[int]
    display_tags: list[int]      # the show[0..8] panels, then O WINS, DRAW
    onext_tags: list[int]        # value lights of onext[0..8]: O's board after a reply
    net: object                  # the policy's Netlist
    graph: object                # the Graph it was built from


def _cell_center(cx: float, cy: float, i: int, pitch: float, north: int = 1
                 ) -> tuple[float, float]:
    """Row 0 to the north (north=1: the pads, seen looking down) or to the south (north=-1:
    the ceiling, where looking up from the south the nearest row is the top of the view)."""
    r, c = divmod(i, 3)
    return cx + (c - 1) * pitch, cy + (1 - r) * pitch * north


def _pads(m: MapModel, gal, pad_tags, spots) -> None:
    """The board on the floor, left of the middle: a pad per cell."""
    bx, by = gal.cx - 420, gal.y0 + 620
    for i in range(9):
        px, py = _cell_center(bx, by, i, CELL + GAP)
        spots[f"pad{i}"] = pad(m, gal.room, box(px, py, CELL, CELL), Sector(
            gal.floor + 4, gal.ceil, PAD_OFF, tag=pad_tags[i], floor_tex="FLAT22",
            comment=f"pad of cell {i}: toggles x[{i}]"), SCRIPT_PAD + i, f"pad {i}")
    for name, script, (px, py), tex in [
            ("MOVE", SCRIPT_MOVE, (gal.cx - 420, gal.y0 + 260), "FLAT3"),
            ("NEW", SCRIPT_NEW, (gal.cx - 700, gal.y0 + 260), "FLAT5_3")]:
        spots[name] = pad(m, gal.room, box(px, py, 112, 112), Sector(
            gal.floor + 4, gal.ceil, 224, floor_tex=tex, comment=f"{name} pedal"),
            script, f"{name} pedal")
    # Between MOVE and the board, facing north: a visitor walking on steps onto pad 7.
    spots["approach"] = (bx, gal.y0 + 360)


def _display(m: MapModel, gal, circuit, net, tiles, spots) -> list[int]:
    """The show neurons' accumulators as ceiling panels, right of the middle; their tags."""
    dx, dy = gal.cx + 380, gal.y0 + 700
    panels = [(f"show[{i}]", box(*_cell_center(dx, dy, i, 136, north=-1), 120, 120), "FLAT2")
              for i in range(9)]
    panels += [("show_owin", box(dx + 330, dy - 90, 96, 96), "FLAT5_3"),
               ("show_draw", box(dx + 330, dy + 90, 96, 96), "FLAT5_1")]
    tags = []
    for name, rect, tex in panels:
        tag = circuit.acc_light[net.by_name(name).id]
        tiles[tag] = light_panel(m, gal.room, rect, circuit, tag, gal.floor, gal.ceil,
                                 f"display: the accumulator of {name}", floor_tex="FLAT14",
                                 ceil_tex=tex)
        tags.append(tag)
    spots["view"] = (dx + 110, dy - 470)
    return tags


def build(title: str = "Tic-tac-toe", acc: str = "internal") -> TicTacToeMap:
    g = policy_graph()
    net = g.build()
    circuit = lower(net)
    m = MapModel()
    conveyor = conveyor_tag_for(circuit)
    pad_tags = [conveyor + 1 + i for i in range(9)]
    gal = build_gallery(m, circuit, conveyor, depth=1280, half_width=900, light=144)
    spots: dict[str, tuple[float, float]] = {"rest": (gal.cx, gal.y0 + 100)}
    _pads(m, gal, pad_tags, spots)
    tiles: dict = {}
    display_tags = _display(m, gal, circuit, net, tiles, spots)
    layout, sched, machine = finish(m, circuit, gal, tiles, conveyor, set(display_tags),
                                    spots["rest"], title)
    onext_tags = [circuit.value_light[net.by_name(f"onext[{i}]").id] for i in range(9)]
    resets = {tag: circuit.light(tag).reset for tag in display_tags + onext_tags}
    controls = controls_source(pad_tags, onext_tags, resets)
    bad = ui_violations(controls, pad_tags, onext_tags)
    if bad:
        raise AssertionError(f"tic-tac-toe control ACS computes on a neuron: {bad[0]}")
    source = machine + "\n" + controls
    behavior = compile_acs(source, "tictactoe.acs", acc)
    info = manifest(layout, sched, title)
    info["gallery"] = {"spots": {k: list(v) for k, v in spots.items()}}
    cm = CompiledMap("MAP01", title, circuit, layout, sched, m.textmap(), source, behavior, info)
    return TicTacToeMap(cm, spots, pad_tags, display_tags, onext_tags, net, g)


def controls_source(pad_tags, onext_tags, resets: dict[int, int]) -> str:
    lines = [
        "// ---------------------------------------------------------------------------------",
        "// The visitor's controls. Pads write an X (a constant) to an input; MOVE copies O's",
        "// board as the last reply left it (the onext lights) into the O inputs, unchanged,",
        "// and starts the machine; NEW GAME writes constants. None of them computes on a",
        "// neuron's value: the reply is the dolls' work, the display their lights.",
        "int moves;     // MOVE presses so far: the machine acknowledges each one",
        "",
    ]
    for i, t in enumerate(pad_tags):
        lines += [
            f"script {SCRIPT_PAD + i} (void)  // pad {i}: toggle an X in cell {i}",
            "{",
            f"    if (inputs[{i}]) {{ inputs[{i}] = 0; Light_ChangeToValue({t}, {PAD_OFF}); }}",
            f"    else {{ inputs[{i}] = 1; Light_ChangeToValue({t}, {PAD_ON}); }}",
            "}",
            "",
        ]
    lines += [f"script {SCRIPT_MOVE} (void)  // MOVE: O replies", "{"]
    for i, t in enumerate(onext_tags):
        lines.append(f"    inputs[{9 + i}] = GetSectorLightLevel({t});  // o[{i}] = onext[{i}]")
    lines += ["    moves = moves + 1;", f"    ACS_Execute({SCRIPT_INFER}, 0, moves);", "}", "",
              f"script {SCRIPT_NEW} (void)  // NEW GAME: an empty board", "{"]
    for i, t in enumerate(pad_tags):
        lines.append(f"    inputs[{i}] = 0; inputs[{9 + i}] = 0; "
                     f"Light_ChangeToValue({t}, {PAD_OFF});")
    for t, v in sorted(resets.items()):
        lines.append(f"    Light_ChangeToValue({t}, {v});  // a display or O-board light "
                     "back to its empty-board level")
    lines += ["}", "", f"script {SCRIPT_STATUS} (void)  // pad lights, for tests", "{"]
    for i, t in enumerate(pad_tags):
        lines.append(f"    user{i + 1} = GetSectorLightLevel({t});  // pad {i}")
    lines += ["    read_ack = moves;", "}", ""]
    return "\n".join(lines)


def ui_violations(source: str, pad_tags, onext_tags) -> list[str]:
    """Control statements that read a light other than a pad's or O's board, or that do
    anything with a value read from O's board but store it in an O input."""
    bad = []
    for line in source.splitlines():
        code = line.split("//", 1)[0].strip()
        for m in re.finditer(r"GetSector(LightLevel|FloorZ|CeilingZ)\(([^)]*)\)", code):
            arg = m.group(2).strip()
            tag = int(arg) if arg.isdigit() else None
            if m.group(1) != "LightLevel" or tag not in set(pad_tags) | set(onext_tags):
                bad.append(line.strip())
            elif tag in onext_tags and not re.fullmatch(
                    rf"inputs\[\d+\] = GetSectorLightLevel\({tag}\);", code):
                bad.append(line.strip())
    return bad


# -- playing --------------------------------------------------------------------------------
def reference_reply(net, x, o) -> dict[str, int]:
    """Every node's value for one position, from the exact reference."""
    return evaluate(net, [list(x) + list(o)]).named(0)


class TicTacToeDriver(GalleryDriver):
    """Plays X as a visitor: steps on pads, presses MOVE, reads the machine's answer."""

    machine_pedals = ("MOVE",)
    what = "the tic-tac-toe machine"

    def __init__(self, wad: str, info: dict, render: bool = False):
        super().__init__(wad, info, info["gallery"]["spots"], render)

    def pads(self) -> list[int]:
        self.engine.puke(SCRIPT_STATUS)
        self.engine.advance(1)
        return self.engine.users()[:9]

    def place(self, cell: int) -> None:
        self.press(f"pad{cell}")

    def move(self) -> dict[str, int]:
        """MOVE, then every light of the machine by label ('value:move', ...)."""
        self.press("MOVE")
        return self.runner.read_all()

    def new_game(self) -> None:
        self.press("NEW")


# Scripted X players: (x, o, rng) -> a free cell.
def _free(x, o):
    return [i for i in range(9) if not x[i] and not o[i]]


def _completing(x, o, mine):
    for line in LINES:
        cells = [mine[i] for i in line]
        free = [i for i in line if not x[i] and not o[i]]
        if sum(cells) == 2 and len(free) == 1:
            return free[0]
    return None


def x_first_free(x, o, rng):
    return _free(x, o)[0]


def x_trap(x, o, rng):
    """Opposite corners, then the other corners: the fork every textbook warns about."""
    return next(i for i in (0, 8, 2, 6, 1, 3, 5, 7, 4) if not x[i] and not o[i])


def x_greedy(x, o, rng):
    """Wins when it can, blocks when it must, else a random free cell."""
    for mine in (x, o):
        c = _completing(x, o, mine)
        if c is not None:
            return c
    return rng.choice(_free(x, o))


def x_random(x, o, rng):
    return rng.choice(_free(x, o))


def x_centre_side(x, o, rng):
    """Centre, then sides, then corners."""
    return next(i for i in (4, 1, 5, 7, 3, 0, 2, 6, 8) if not x[i] and not o[i])


STRATEGIES = {"trap": x_trap, "greedy": x_greedy, "first-free": x_first_free,
              "centre-side": x_centre_side, "random": x_random}


@dataclass
class Game:
    strategy: str
    moves: list[str]             # "X4", "O0", ...
    x: list[int]
    o: list[int]
    replies: int                 # MOVE presses compared with the reference
    exact: int                   # of which every light equalled the reference
    tics: int                    # the machine's tics per move (predicted and acknowledged)

    @property
    def result(self) -> str:
        return result(self.x, self.o)


def play_game(d: TicTacToeDriver, net, strategy: str, seed: int = 0) -> Game:
    """One game from an empty board: X by the strategy on the pads, O by the machine. Every
    light the machine leaves is compared with the reference after each MOVE."""
    import random

    from dsl.lower import lower_products
    from engine.runner import reference_labels

    rng = random.Random(seed)
    low = lower_products(net)
    d.new_game()
    x, o = [0] * 9, [0] * 9
    g = Game(strategy, [], x, o, 0, 0, d.info["inference_tics"])
    while not winner(x, o) and not full(x, o):
        cell = STRATEGIES[strategy](x, o, rng)
        d.place(cell)
        x[cell] = 1
        g.moves.append(f"X{cell}")
        every = d.move()
        want = reference_labels(net, low, x + o)
        g.replies += 1
        g.exact += every == {k: want[k] for k in every} and len(every) == len(want)
        reply = every["value:move"] - 1
        if reply >= 0:
            o[reply] = 1
            g.moves.append(f"O{reply}")
    return g


def table_size(positions) -> tuple[int, int, int]:
    """(nodes, lines, dolls) of a lookup table of the game: one detector per position
    (equals over the 18 inputs: one step neuron, 18 lines) and a line from each to its
    reply's output; every detector and input needs a doll, the outputs (identity) none."""
    n = len(positions)
    return 18 + n + 9, 18 * n + n, 18 + n


def board_text(x, o) -> list[str]:
    return [" ".join("X" if x[3 * r + c] else "O" if o[3 * r + c] else "." for c in range(3))
            for r in range(3)]


def result(x, o) -> str:
    w = winner(x, o)
    return f"{w} wins" if w else "draw" if full(x, o) else "unfinished"



MAX_GAMES = 1000  # a bound (like brainlevel --episodes), not a workload


def check_games(n: int) -> None:
    from dsl.diagnostics import VoodooError

    if not 1 <= n <= MAX_GAMES:
        raise VoodooError(f"--games {n}: choose 1..{MAX_GAMES} games")


def run(args) -> int:
    """`build.py tictactoe`: build the map, play games in ViZDoom, print them and sizes."""
    import os

    from mapgen.compile import WADS, write_wad

    from .tictactoe_policy import all_positions, positions_to_answer

    check_games(args.games)
    t = build(acc=args.acc)
    out = args.output or os.path.join(WADS, "tictactoe.wad")
    write_wad(out, [t.compiled], t.net)
    cm = t.compiled
    dolls = len(cm.circuit.lanes)
    print(f"{out}: tic-tac-toe, O played by {dolls} dolls ({cm.manifest['inference_tics']} "
          f"tics per move)")
    names = list(STRATEGIES)
    games = []
    with TicTacToeDriver(out, cm.manifest, render=args.screenshot) as d:
        for k in range(args.games):
            g = play_game(d, t.net, names[k % len(names)], seed=k)
            games.append(g)
            rows = board_text(g.x, g.o)
            print(f"game {k + 1} (X {g.strategy}): {' '.join(g.moves)}  -> {g.result}")
            for row in rows:
                print(f"    {row}")
        if args.screenshot:
            shot = os.path.splitext(out)[0] + "-board.png"
            d.shot("view", shot, 30.0)
            print(f"screenshot: {shot}")
    nodes, lines = len(t.net.nodes), t.net.n_connections
    table = table_size(all_positions())
    print(f"policy (graph API, rules, no training): {nodes} nodes, {lines} lines, {dolls} dolls;"
          f" a lookup table of the game ({len(all_positions())} positions): {table[0]} nodes, "
          f"{table[1]} lines, {table[2]} dolls")
    print(f"positions O must answer against any X: {len(positions_to_answer())}")
    replies = sum(g.replies for g in games)
    exact = sum(g.exact for g in games)
    lost = sum(g.result == "X wins" for g in games)
    print(f"O replies {exact}/{replies} {'EXACT' if exact == replies else 'MISMATCH'}; "
          f"games {len(games)}, O lost {lost}; tics per move {cm.manifest['inference_tics']}; "
          f"dolls {dolls}")
    return 0 if exact == replies and lost == 0 else 1
