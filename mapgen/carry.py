"""How each value is carried: the cost model that splits lanes into parallel sub-lanes.

A phase of the schedule lasts as long as its longest ride, and a ride is as long as the
staircase it climbs: a lookup over a wide range, or a requantising relu whose doors are far
apart in height (ramp stairs of 56 units per 12 of rise), makes one lane of thousands of
units and a phase of tens of tics (the chat map's phases took up to 79). A staircase can be
ridden by several dolls at once, each over a run of consecutive doors starting at its own
first floor (circuit.split_lanes says why that is exact); each sub-lane costs a doll, a
pad and its bus statements.

`split` chooses, phase by phase, how long the phase may ride, and cuts every lane of the
phase into the fewest runs of consecutive doors that fit, by minimising the engine time of
one step under `COSTS`, measured in ViZDoom (bench/speed.py prints the table):

    step = sum over phases of (copy + T) * (map + resting * dolls + tic_value)
           + moving * (doll-tics of riding) + per_doll * dolls

(tic_value: what a tic of a player's waiting is worth in engine CPU).

Riding costs about the same however a lane is cut (the same doors are passed); cutting
shortens T for every tic's fixed cost, and adds resting dolls and bus work. Budgets of one
map (dolls, linedefs, sectors, ACS) bound how many sub-lanes are added. The choice is a
function of the lowered netlist only, so extract and verify lower a netlist to the same
sub-lanes as the compiler.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace

from . import physics as P
from .lanes import lane_geometry

SETTLE = 1          # program.SETTLE_TICS: a ride is ceil(reach / speed) + this


@dataclass(frozen=True)
class TicCosts:
    """Engine CPU, in microseconds, measured in ViZDoom 1.3.2 (bench/speed.py, "tic costs")."""
    map_tic_per_1k_sectors: float = 0.3   # a tic of a map standing still
    resting_doll: float = 0.1             # a doll on its pad, per tic
    moving_doll: float = 13.0             # a gliding doll, per tic (8 collision substeps)
    per_doll: float = 6.0                 # a doll's release and park by the bus, per step
    # What a tic of waiting is worth beside engine CPU: a player in GZDoom waits 1/35 s a
    # tic whatever the CPU, so a plan that saves tics for little CPU is preferred. A tenth
    # of a GZDoom tic: a tic is worth saving if it costs under 2.9 ms of engine CPU.
    tic_value: float = 1e6 / 35 / 10


COSTS = TicCosts()
# What one added sub-lane costs a map beyond its doors: spawn strip, pad and end (sectors;
# their walls and portals).
PIECE_SECTORS = 3
PIECE_LINES = 10
PIECE_VERTICES = 32   # GZDoom's flat vertices: 3 boxes' 4 corners, floor and ceiling, and some
MAX_BATCH, READ_SLOTS = 16, 58   # program.MAX_BATCH, program.READ_SLOTS


def acs_per_doll(net, plain: bool = False) -> int:
    """Characters of generated ACS one doll adds (mapgen/program.py): parked by the OPEN
    script; copied, released and parked (two statements) by the inference script, and by
    its fed twin; in a pipelined map by the beat, and in plain statements by each beat of a
    batch. `plain`: a sub-lane after its lane's first, whose statements have no comment."""
    w = P.ACS_PLAIN_CHARS if plain else P.ACS_LINE_CHARS + 16
    fed = bool(net.feedback)
    pipelined = net.steps == 1 and 0 < len(net.outputs) <= READ_SLOTS
    k = min(MAX_BATCH, READ_SLOTS // max(1, len(net.outputs))) if pipelined else 0
    return (2 + 4 * (1 + fed + pipelined)) * w + 4 * k * P.ACS_PLAIN_CHARS


@dataclass
class _Spans:
    """A lane's doors along its full geometry: where each door's face is, and the x of the
    last line a doll passing it crosses before the next door."""
    face: list[float]
    last: list[float]


def _spans(lane, steep: bool) -> _Spans:
    g = lane_geometry(lane, 0, 0, steep)
    faces = [s.x0 for s in g.segments if s.kind == "door"]
    ends = faces[1:] + [g.segments[-1].x1]
    xs = sorted(x for x, *_ in g.lines)
    last = []
    for k, face in enumerate(faces):
        inside = [x for x in xs if face < x < ends[k]]
        last.append(max(inside) if inside else ends[k] - P.DOLL_RADIUS)
    return _Spans(faces, last)


def _reach(sp: _Spans, i: int, j: int) -> float:
    """The reach of a sub-lane of doors i..j (parked in the middle of its pad, which ends
    at door i's face), as lanes.LaneGeometry.reach measures it."""
    return sp.last[j] - sp.face[i] + (P.PAD_LENGTH - P.PAD_LENGTH // 2)


def cut(sp: _Spans, rmax: float) -> list[tuple[int, int]]:
    """The fewest runs of consecutive doors whose reach is within rmax (a door alone may
    exceed it: it cannot be cut further), greedily from the first door."""
    runs, i, n = [], 0, len(sp.face)
    while i < n:
        j = i
        while j + 1 < n and _reach(sp, i, j + 1) <= rmax:
            j += 1
        runs.append((i, j))
        i = j + 1
    return runs


def ride_tics(reach: float) -> int:
    return math.ceil(reach / P.DOLL_SPEED) + SETTLE


def splittable(lane) -> bool:
    return lane.role == "gate" and lane.source[0] in ("light", "input", "state") \
        and not lane.prelude and not lane.prelude_sets and len(lane.doors) > 1


@dataclass
class _Phase:
    lanes: list                   # (lane, spans or None)
    options: dict                 # T -> (pieces, doll-tics of riding)

    def best(self, tic_cost: float, c: TicCosts) -> int:
        def cost(t):
            pieces, ride = self.options[t]
            return t * (tic_cost + c.tic_value) + c.moving_doll * ride + c.per_doll * pieces
        return min(self.options, key=lambda t: (cost(t), -t))


def _phase_options(lanes, steep: bool) -> _Phase:
    spans = [(ln, _spans(ln, steep) if splittable(ln) else None) for ln in lanes]
    whole = [ride_tics(lane_geometry(ln, 0, 0, steep).reach()) for ln in lanes]
    t_max = max(whole)
    options = {}
    for t in range(2, t_max + 1):
        rmax = (t - SETTLE) * P.DOLL_SPEED
        pieces = ride = 0
        longest = 0
        for (ln, sp), w in zip(spans, whole):
            if sp is None or w <= t:
                pieces, ride, longest = pieces + 1, ride + w - SETTLE, max(longest, w)
                continue
            for i, j in cut(sp, rmax):
                r = ride_tics(_reach(sp, i, j))
                pieces, ride, longest = pieces + 1, ride + r - SETTLE, max(longest, r)
        options[longest] = min(options.get(longest, (pieces, ride)), (pieces, ride))
    return _Phase(spans, options)


@dataclass(frozen=True)
class Room:
    """How many sub-lanes a map has room for beyond its lanes (dolls, linedefs, sectors,
    GZDoom's flat vertices, ACS), from the lowering's counts."""
    pieces: int


# The counts below come within a few per cent of a compiled map's (measured on the chat map:
# linedefs 1.7 %, GZDoom's flat vertices 2.5 % over them: the hall of lights, the portals'
# splits); a map is filled to its budgets with this much to spare.
SPARE = 1.04


def room_for(net, lanes, n_lights: int, steep: bool = True) -> Room:
    """Sub-lanes a map has room for, beyond `lanes` (whose doors carry their lines): each
    budget of checks.check_budgets, the dolls the engine loads (an idle tic's cost of a
    doll is the cost model's), and the ACS compiler's source limit."""
    geoms = [lane_geometry(ln, 0, 0, steep) for ln in lanes]
    sectors = sum(len(g.segments) for g in geoms) + n_lights + 64
    lines = sum(3 * len(g.segments) + len(g.lines) for g in geoms) + 4 * n_lights + 256
    # GZDoom's flat buffer (P.GZDOOM_FLAT_VERTICES): a sector's corners and its lines' ends
    flat = 2 * sum(4 * len(g.segments) + 2 * len(g.lines) for g in geoms) + 8 * n_lights + 2048
    acs = 6000 + acs_per_doll(net) * len(lanes) + 3 * (P.ACS_LINE_CHARS + 16) * n_lights

    def left(budget: int, used: int, per_piece: int) -> int:
        return int((budget - SPARE * used) / (SPARE * per_piece))

    room = min(P.MAX_DOLLS - len(lanes),
               left(P.MAX_LINES, lines, PIECE_LINES),
               left(P.MAX_SECTORS, sectors, PIECE_SECTORS),
               left(P.GZDOOM_FLAT_VERTICES, flat, PIECE_VERTICES),
               left(P.MAX_ACS_CHARS, acs, acs_per_doll(net, plain=True)))
    return Room(max(0, room))


def split(net, lanes: list, n_lights: int, steep: bool = True, costs: TicCosts = COSTS) -> list:
    """Each phase's lanes cut into sub-lanes where the model finds the step cheaper, within
    the map's room; lanes keep their order (a lane's sub-lanes in place of it)."""
    by_phase: dict[int, list] = {}
    for ln in lanes:
        by_phase.setdefault(ln.phase, []).append(ln)
    phases = {p: _phase_options(ls, steep) for p, ls in by_phase.items()}
    sectors = sum(len(lane_geometry(ln, 0, 0, steep).segments) for ln in lanes) + n_lights
    room = room_for(net, lanes, n_lights, steep).pieces
    dolls = len(lanes)
    choice = {p: max(ph.options) for p, ph in phases.items()}
    for _ in range(3):  # the resting cost depends on every phase's choice: settle it
        tic = costs.map_tic_per_1k_sectors * sectors / 1000 + costs.resting_doll * dolls
        choice = {p: ph.best(tic, costs) for p, ph in phases.items()}
        dolls = sum(phases[p].options[t][0] for p, t in choice.items())
    while sum(phases[p].options[t][0] for p, t in choice.items()) - len(lanes) > room:
        # Over the map's room: give back the sub-lanes that save the fewest tics per doll.
        p = min((p for p in choice if choice[p] < max(phases[p].options)),
                key=lambda p: _next_up(phases[p], choice[p])[1])
        choice[p] = _next_up(phases[p], choice[p])[0]
    return _apply(lanes, phases, choice, steep)


def _next_up(ph: _Phase, t: int) -> tuple[int, float]:
    """The next longer option of a phase, and the tics it costs per doll it saves."""
    ups = sorted(x for x in ph.options if x > t)
    up = next((x for x in ups if ph.options[x][0] < ph.options[t][0]), ups[-1])
    saved = max(1, ph.options[t][0] - ph.options[up][0])
    return up, (up - t) / saved


def _apply(lanes, phases, choice, steep: bool) -> list:
    out = []
    spans = {id(ln): sp for ph in phases.values() for ln, sp in ph.lanes}
    for ln in lanes:
        t = choice[ln.phase]
        sp = spans[id(ln)]
        whole = ride_tics(lane_geometry(ln, 0, 0, steep).reach())
        if sp is None or whole <= t:
            out.append(ln)
            continue
        for i, j in cut(sp, (t - SETTLE) * P.DOLL_SPEED):
            out.append(replace(ln, doors=ln.doors[i:j + 1]))
    return out
