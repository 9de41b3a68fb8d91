"""The geometry of one lane, before it is placed in a map: its segments (spawn strip, pad,
doors, landings, ramp stairs, end), the lines a doll crosses, and how far a ride reaches.

Layout (mapgen/layout.py) places these and writes their sectors; the lowering's cost model
(mapgen/carry.py) measures them to decide how each value is carried. Only physics and the
lane's doors are needed, so both can use it without importing each other.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from . import physics as P


@dataclass
class Segment:
    x0: float
    x1: float
    floor: int
    kind: str                  # pad, door, landing, ramp, end
    door: int = -1             # door index for door segments


@dataclass
class LaneGeometry:
    lane: object              # a circuit.Lane
    x0: float
    y0: float
    segments: list[Segment] = field(default_factory=list)
    glide: bool = True         # frictionless lanes (False: conveyors, the old geometry)
    steep: bool = False        # no ramp stairs: each rise one step (step_height)
    lines: list[tuple[float, int, int, int]] = field(default_factory=list)  # x, special, a0, a1
    line_index: dict[int, int] = field(default_factory=dict)  # lines[i] -> MapModel.lines index

    @property
    def length(self) -> float:
        return self.segments[-1].x1 - self.x0

    @property
    def ceiling(self) -> int:
        """One ceiling for every static sector of the lane, above its highest floor: a doll
        stepping from one sector to the next is judged against the lower ceiling of the
        two, so per-sector ceilings would block rises of more than HEADROOM_EXTRA."""
        return max(s.floor for s in self.segments) + P.DOLL_HEIGHT + P.HEADROOM_EXTRA

    @property
    def y_mid(self) -> float:
        return self.y0 + P.LANE_WIDTH / 2

    @property
    def start(self) -> tuple[float, float, int]:
        """Where a reset puts the doll: past the TID line, on the pad."""
        return self.x0 + P.START_OFFSET, self.y_mid, self.segments[0].floor

    @property
    def spawn(self) -> tuple[float, float, int]:
        return self.x0 + P.SPAWN_OFFSET, self.y_mid, self.segments[0].floor

    def travel(self) -> float:
        """Distance from the reset point to where a doll passing every door stops."""
        return self.segments[-1].x1 - P.DOLL_RADIUS - self.start[0]

    def reach(self) -> float:
        """Distance from the reset point to the last line a doll can cross: once past it the
        doll has done all it can, and may be parked (teleported back) before it reaches
        the end wall."""
        return ride_reach([x for x, *_ in self.lines], self.start[0], self.travel())


def ride_reach(line_xs, start_x: float, travel: float) -> float:
    """The distance a doll rides from `start_x` until the last of the lines at `line_xs`
    ahead of it is behind it (the whole `travel` for a lane without such lines)."""
    ahead = [x - start_x for x in line_xs if x > start_x]
    return max(ahead) if ahead else travel


def _line(lx: float, tag: int, amount: int) -> tuple[float, int, int, int]:
    if amount > 0:
        return lx, P.SPECIAL["Light_RaiseByValue"], tag, amount
    return lx, P.SPECIAL["Light_LowerByValue"], tag, -amount


def lane_geometry(lane, x0: float, y0: float, steep: bool = False) -> LaneGeometry:
    """The lane's segments and lines from (x0, y0). `steep`: no ramp stairs, every rise a
    single step (the doll's player class steps up as high as the map needs: step_height)."""
    g = LaneGeometry(lane, x0, y0)
    g.steep = steep
    floors = [d.threshold - P.DOLL_HEIGHT for d in lane.doors] or [0]
    x = x0
    g.segments.append(Segment(x, x + P.SPAWN_LENGTH, floors[0], "spawn"))
    g.lines.append((x0 + P.TID_LINE_OFFSET, P.SPECIAL["Thing_ChangeTID"], 0, lane.tid))
    x += P.SPAWN_LENGTH
    g.segments.append(Segment(x, x + P.PAD_LENGTH, floors[0], "pad"))
    x += P.PAD_LENGTH
    prelude = [_line(0, t, a) for t, a in lane.prelude if a] + [
        (0, P.SPECIAL["Light_ChangeToValue"], t, v) for t, v in lane.prelude_sets]
    if prelude:
        # Lines every ride crosses, on a landing of their own before the first door.
        lx = x + P.LINE_LEAD
        for _, special, a0, a1 in prelude:
            g.lines.append((lx, special, a0, a1))
            lx += P.LINE_SPACING
        landing = P.LINE_LEAD + (len(prelude) - 1) * P.LINE_SPACING + P.LANDING_CLEAR
        g.segments.append(Segment(x, x + landing, floors[0], "landing", -1))
        x += landing
    for k, door in enumerate(lane.doors):
        f = floors[k]
        g.segments.append(Segment(x, x + P.DOOR_DEPTH, f, "door", k))
        x += P.DOOR_DEPTH
        lx = x + P.LINE_LEAD
        for tag, amount in door.lines:
            g.lines.append(_line(lx, tag, amount))
            lx += P.LINE_SPACING
        for tag, v in door.sets:  # after the adds: a spike's membrane reset
            g.lines.append((lx, P.SPECIAL["Light_ChangeToValue"], tag, v))
            lx += P.LINE_SPACING
        n = len(door.lines) + len(door.sets)
        landing = P.LINE_LEAD + (n - 1) * P.LINE_SPACING + P.LANDING_CLEAR
        g.segments.append(Segment(x, x + landing, f, "landing", k))
        x += landing
        if k + 1 < len(lane.doors) and not steep:
            # Stairs so that no rise exceeds MAX_RISE; the door itself is the last step.
            rise = floors[k + 1] - f
            for j in range(1, math.ceil(rise / P.MAX_RISE)):
                g.segments.append(Segment(x, x + P.RAMP_STEP_LENGTH, f + j * P.MAX_RISE,
                                          "ramp", k))
                x += P.RAMP_STEP_LENGTH
    g.segments.append(Segment(x, x + P.END_LENGTH, floors[-1], "end"))
    return g


def max_rise(geoms) -> int:
    """The highest rise from one sector to the next along any of these lanes."""
    return max((b.floor - a.floor for g in geoms for a, b in zip(g.segments, g.segments[1:])),
               default=0)


def step_height(geoms) -> int:
    """How high the dolls must step up (their player class's MaxStepHeight): within one tic's
    ride (DOLL_SPEED, under two door pitches) a doll meets at most two rises, and the engine
    measures a step from where the doll stood at the start of the tic (measured: rises of 96
    with steps of 24 are missed, with 256 every door counts; tests/test_physics.py). The
    default player's 24 where no rise passes MAX_RISE."""
    rise = max_rise(geoms)
    return P.MAX_STEP if rise <= P.MAX_RISE else 2 * rise + P.MAX_STEP
