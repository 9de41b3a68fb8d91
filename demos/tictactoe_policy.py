"""The tic-tac-toe opponent as a program: perfect-play rules built with the graph API.

Owns the rules O plays by (in plain Python, `rule_reply`, and as a graph, `policy_graph`,
the same rules lowered to neurons with no training), the game itself (lines, winners,
every reachable position) and the size of the alternative: a lookup table of the whole
game. The map around the policy is demos/tictactoe.py.

The rules, in priority order, for each empty cell:
  win          complete a line of two O's
  block        complete a line of two X's
  fork         make two lines of two O's at once
  block a fork make two-in-a-row whose forced reply is not an X fork square (counted per
               line, 2 points each), else take the X fork square (1 point)
  centre, opposite corner (to an X corner), corner, side (what is left)
Ties go to the lowest cell. Cells are numbered 0..8 row by row from the top left.
"""
from __future__ import annotations

LINES = [(0, 1, 2), (3, 4, 5), (6, 7, 8), (0, 3, 6), (1, 4, 7), (2, 5, 8), (0, 4, 8), (2, 4, 6)]
THROUGH = [[k for k, line in enumerate(LINES) if i in line] for i in range(9)]
CORNERS = (0, 2, 6, 8)
OPPOSITE = {0: 8, 2: 6, 6: 2, 8: 0}
# Display panels (light levels): a cell is grey when empty, lit for O, black for X; a
# result panel is dim, or lit when it holds.
EMPTY, O_LIT, X_DARK = 128, 255, 0
DIM, LIT = 40, 200


def winner(x, o) -> str | None:
    for line in LINES:
        if all(x[i] for i in line):
            return "X"
        if all(o[i] for i in line):
            return "O"
    return None


def full(x, o) -> bool:
    return all(x[i] or o[i] for i in range(9))


# -- the rules in plain Python --------------------------------------------------------------
def _line_counts(x, o, k):
    return sum(o[i] for i in LINES[k]), sum(x[i] for i in LINES[k])


def rule_features(x, o) -> list[tuple]:
    """Per cell, the priority tuple the rules compare (empty first)."""
    counts = [_line_counts(x, o, k) for k in range(8)]
    o1 = [int(c == (1, 0)) for c in counts]
    o2 = [int(c == (2, 0)) for c in counts]
    x1 = [int(c == (0, 1)) for c in counts]
    x2 = [int(c == (0, 2)) for c in counts]
    empty = [1 - x[i] - o[i] for i in range(9)]
    safe = [int(empty[i] == 1 and sum(x1[k] for k in THROUGH[i]) < 2) for i in range(9)]
    feats = []
    for i in range(9):
        good = sum(int(o1[k] and any(safe[j] for j in LINES[k] if j != i)) for k in THROUGH[i])
        xfork = int(sum(x1[k] for k in THROUGH[i]) >= 2)
        feats.append((empty[i], sum(o2[k] for k in THROUGH[i]), sum(x2[k] for k in THROUGH[i]),
                      int(sum(o1[k] for k in THROUGH[i]) >= 2), 2 * good + xfork,
                      int(i == 4), x[OPPOSITE[i]] if i in OPPOSITE else 0, int(i in CORNERS)))
    return feats


def rule_reply(x, o) -> int | None:
    """O's cell by the rules, or None on a full board."""
    if full(x, o):
        return None
    feats = rule_features(x, o)
    return max(range(9), key=lambda i: (feats[i], -i))


# -- the same rules as a graph ---------------------------------------------------------------
def _priority(g, rows) -> list:
    """Per row, the sum of its terms weighted so that each term outranks everything after
    it in every row: the weights come from the proven ranges of the lower terms."""
    totals = [0] * len(rows)
    weight = 1
    for k in reversed(range(len(rows[0]))):
        spans = [g.range(row[k]) for row in rows]
        lo, hi = min(s[0] for s in spans), max(s[1] for s in spans)
        totals = [t + weight * (row[k] - lo) for t, row in zip(totals, rows)]
        weight *= hi - lo + 1
    return totals


def policy_graph():
    """The policy as a Graph: inputs x[9], o[9] (0/1), outputs O's reply and the display."""
    from dsl.graph import Graph

    g = Graph("tictactoe")
    x = g.inputs("x", 9, 0, 1)
    o = g.inputs("o", 9, 0, 1)
    empty = [1 - x[i] - o[i] for i in range(9)]
    osum = [sum((o[i] for i in line), 0) for line in LINES]
    xsum = [sum((x[i] for i in line), 0) for line in LINES]

    def line_is(n_o, n_x, name):
        return g.name([g.lookup(lambda a, b: int((a, b) == (n_o, n_x)), osum[k], xsum[k])
                       for k in range(8)], name)

    o1, o2 = line_is(1, 0, "o_one"), line_is(2, 0, "o_two")
    x1, x2 = line_is(0, 1, "x_one"), line_is(0, 2, "x_two")

    def through(feature, i):
        return sum((feature[k] for k in THROUGH[i]), 0)

    fork = g.name([g.le(2, through(o1, i)) for i in range(9)], "fork")
    xfork = g.name([g.le(2, through(x1, i)) for i in range(9)], "xfork")
    safe = g.name([g.lt(through(x1, i), 2 * empty[i]) for i in range(9)], "safe")
    rows = []
    for i in range(9):
        good = 0
        for k in THROUGH[i]:
            a, b = (j for j in LINES[k] if j != i)
            # o1 and a safe square among the other two (when i is empty, only one is empty)
            good = good + g.le(3, 2 * o1[k] + safe[a] + safe[b])
        rows.append([empty[i], through(o2, i), through(x2, i), fork[i],
                     2 * good + xfork[i], int(i == 4),
                     x[OPPOSITE[i]] if i in OPPOSITE else 0, int(i in CORNERS)])
    scores = g.name(_priority(g, rows), "score")
    free = g.le(1, sum(empty, 0))
    reply = g.name(g.argmax(scores, gate=free), "reply")
    g.output(reply)
    g.output([o[i] + reply[i] for i in range(9)], "onext")
    g.output(sum(((i + 1) * reply[i] for i in range(9)), 0), "move")
    owin = g.output(g.le(1, sum(o2, 0)), "owin")
    draw = g.output(g.le(sum(empty, 0) + 2 * owin, 1), "draw")
    g.output([EMPTY + (O_LIT - EMPTY) * (o[i] + reply[i]) + (X_DARK - EMPTY) * x[i]
              for i in range(9)], "show")
    g.output(DIM + (LIT - DIM) * owin, "show_owin")
    g.output(DIM + (LIT - DIM) * draw, "show_draw")
    return g


# -- the game -----------------------------------------------------------------------------
def positions_to_answer():
    """Every position O must answer in a game where O plays by `rule_reply` and X plays
    anything: (x, o) with X to have just moved, no winner yet, board not full."""
    seen, out = set(), []

    def visit(x, o):
        for m in range(9):
            if x[m] or o[m]:
                continue
            x2 = x[:m] + (1,) + x[m + 1:]
            if winner(x2, o) or full(x2, o) or (x2, o) in seen:
                continue
            seen.add((x2, o))
            out.append((x2, o))
            r = rule_reply(x2, o)
            o2 = o[:r] + (1,) + o[r + 1:]
            if not winner(x2, o2):
                visit(x2, o2)

    visit((0,) * 9, (0,) * 9)
    return out


def all_positions():
    """Every legal position with X to have just moved and the game not over (what a lookup
    table of the whole game must answer, whatever O's strategy)."""
    import itertools

    out = []
    for cells in itertools.product((0, 1, 2), repeat=9):
        x = tuple(int(c == 1) for c in cells)
        o = tuple(int(c == 2) for c in cells)
        if sum(x) == sum(o) + 1 and not winner(x, o) and not full(x, o):
            out.append((x, o))
    return out
