"""Layout: a Circuit becomes geometry. Lanes along +x, lights as tiles in a hall.

A lane is a corridor of rectangular sectors:

    | spawn | pad | door 1 | landing 1 (weighted lines) | [ramp] | door 2 | ... | end |

The spawn strip carries a new doll over its Thing_ChangeTID line (a conveyor the OPEN
script stops once every doll is named); the pad has ordinary friction: dolls rest there
between rides at no cost to the engine. Every sector past the pad is frictionless
(physics.NO_FRICTION): a released doll glides at the speed it was given, and nothing in
the lane ticks while it waits. A circuit lowered with carry="conveyor" (the geometry
before frictionless lanes, kept to measure against: bench/speed.py) makes every lane
sector but the pad a conveyor instead.

Door k's floor is at threshold_k - 56 and its ceiling is the lane's value v (set by ACS),
so its headroom v - threshold_k + 56 lets the 56-unit doll through iff v >= threshold_k.
Floors rise from door to door; rises above the doll's 24-unit step get a ramp of stairs.
Weighted lines float inside the landings (both sides the same sector).

Accumulator and value lights are tiles in a hall where the player starts: their light
level IS the value. Lanes are stacked in y and wrap into further columns when a column
would leave the map's coordinate range.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from . import physics as P
from .circuit import Circuit
from .lanes import LaneGeometry, lane_geometry, step_height
from .udmf import CEIL, FLOOR, MapModel, Sector, Thing

# The lanes' tag follows every circuit tag, one apart: the tag between is the spawn strips'.
# Tags from the lanes' tag + 1 on are free for the rooms' own use.
CONVEYOR_TAG_OFFSET = 2


@dataclass
class Layout:
    circuit: Circuit
    model: MapModel
    lanes: list[LaneGeometry]
    light_tiles: dict[int, tuple[float, float, float, float]]  # tag -> x0, y0, x1, y1
    conveyor_tag: int
    player: tuple[float, float]

    @property
    def step_height(self) -> int:
        """The dolls' MaxStepHeight these lanes need (lanes.step_height)."""
        return step_height(self.lanes)


def conveyor_tag_for(circuit: Circuit) -> int:
    tags = ([l.tag for l in circuit.lights] + [ln.door_tag for ln in circuit.lanes]
            + list(circuit.groups))
    return max(tags, default=0) + CONVEYOR_TAG_OFFSET


def place_lanes(circuit: Circuit, x0: float = 0.0, y0: float = 0.0,
                pitch: float = P.LANE_WIDTH + P.LANE_GAP, square: bool = True
                ) -> list[LaneGeometry]:
    """Lanes stacked in +y from (x0, y0), in columns, in the circuit's order. With `square`,
    about as many columns as make the map square (easier to look at, in the engine and in
    pictures); always a new column before leaving the map; and if columns in the circuit's
    order still leave it, columns packed by length (`_columns_by_length`)."""
    column_lanes = lanes_per_column(y0, pitch)
    if square and circuit.lanes:
        mean = sum(lane_geometry(l, 0, 0, circuit.steep).length
                   for l in circuit.lanes) / len(circuit.lanes)
        column_lanes = min(column_lanes, max(8, math.ceil(math.sqrt(
            len(circuit.lanes) * (mean + 256) / pitch))))
    geoms: list[LaneGeometry] = []
    x_col, col_width = x0, 0.0
    for k, lane in enumerate(circuit.lanes):
        row = k % column_lanes
        if k and row == 0:
            x_col += col_width + COLUMN_GAP
            col_width = 0.0
        g = lane_geometry(lane, x_col, y0 + row * pitch, circuit.steep)
        g.glide = circuit.carry == "glide"
        col_width = max(col_width, g.length)
        geoms.append(g)
    if geoms and max(g.x0 + g.length for g in geoms) > P.COORD_MAX - COLUMN_GAP:
        # Lanes of very different lengths make the square guess too wide: columns as tall
        # as the map allows instead (only maps that would not fit otherwise change).
        if square:
            return place_lanes(circuit, x0, y0, pitch, square=False)
        return _columns_by_length(circuit, x0, y0, pitch, column_lanes)
    return geoms


COLUMN_GAP = 256   # between columns of lanes, and kept clear at the map's edge


def lanes_per_column(y0: float = 0.0, pitch: float = P.LANE_WIDTH + P.LANE_GAP) -> int:
    """The most lanes a column from y0 holds within the map."""
    return max(1, int((P.COORD_MAX - COLUMN_GAP - y0) // pitch))


def _columns_by_length(circuit: Circuit, x0: float, y0: float, pitch: float,
                       column_lanes: int) -> list[LaneGeometry]:
    """Full columns of the longest lanes first, so long lanes share a column: the map's
    width is the sum of each column's longest lane (and the gaps), at most the longest lane
    plus the summed lengths over a column's lanes: each column after the first is no wider
    than the mean of the one before (what mapgen/tiles.py budgets, `Cost.width`).
    The geometries stay in the circuit's order (things and tags follow it)."""
    lengths = [lane_geometry(l, 0, 0, circuit.steep).length for l in circuit.lanes]
    order = sorted(range(len(lengths)), key=lambda k: (-lengths[k], k))
    geoms: list[LaneGeometry | None] = [None] * len(lengths)
    x_col = x0
    for start in range(0, len(order), column_lanes):
        column = order[start:start + column_lanes]
        for row, k in enumerate(column):
            geoms[k] = lane_geometry(circuit.lanes[k], x_col, y0 + row * pitch, circuit.steep)
            geoms[k].glide = circuit.carry == "glide"
        x_col += lengths[column[0]] + COLUMN_GAP
    return geoms


def light_tiles(m: MapModel, lights, names: dict[int, str], x0: float, y1: float,
                tile: int = 48, gap: int = 16) -> tuple[dict, float]:
    """The hall of lights: each light a tile in a hall whose top-left corner is (x0, y1).
    Returns the tiles by tag and the hall's bottom y."""
    per_row = max(1, min(64, math.ceil(math.sqrt(max(1, len(lights))) * 2)))
    rows = math.ceil(len(lights) / per_row) if lights else 0
    hall_w = max(512, per_row * (tile + gap) + 2 * gap + 128)
    hall_h = rows * (tile + gap) + 2 * gap + 256
    y0 = y1 - hall_h
    # An open sky over the hall: a plain map's player starts here, and GZDoom's OpenGL
    # renderer draws nothing (a black screen) from a map start until a frame shows sky
    # (docs/gzdoom.md).
    hall = m.rect_sector(x0, y0, x0 + hall_w, y1, Sector(
        0, 160, 192, ceil_tex="F_SKY1", comment="hall of lights: each tile's light level is "
                                                "a neuron's accumulator or value"))
    tiles = {}
    for i, light in enumerate(lights):
        r, c = divmod(i, per_row)
        tx0 = x0 + gap + 64 + c * (tile + gap)
        ty1 = y1 - gap - r * (tile + gap)
        tiles[light.tag] = inset_sector(
            m, hall, (tx0, ty1 - tile, tx0 + tile, ty1),
            Sector(0, 160, light.reset, tag=light.tag, more_tags=tuple(light.groups),
                   floor_tex="FLAT14",
                   comment=f"{light.role} light of {names[light.node]}"))
    return tiles, y0


def inset_sector(m: MapModel, around: int, box, s: Sector) -> tuple:
    """A rectangular sector inside another one; returns the box."""
    m.rect_sector(*box, s, around=around)
    return box


def spawn_tag_of(conveyor: int) -> int:
    """The spawn strips' tag, given the lanes' tag (conveyor_tag_for)."""
    return conveyor - 1


def conveyor_control(m: MapModel, conveyor: int, x: float, y: float, glide: bool = True) -> None:
    """The lanes' control lines, in a sector of their own below the hall: a Scroll_Floor
    line whose vector (+x, SCROLL_LINE_LENGTH) is the carrying speed, for the spawn strips
    (or, without `glide`, for every lane), and a Sector_SetFriction line that makes the
    lanes frictionless."""
    m.rect_sector(x, y, x + P.SCROLL_LINE_LENGTH, y + 32,
                  Sector(0, 64, 0, comment="lane controls"))
    top = m.lines[-3]  # (x, y+32) -> (x+L, y+32): the +x vector is the carrying speed
    if not glide:
        top.special, top.args = P.SPECIAL["Scroll_Floor"], (conveyor, 4, 2, 0, 0)
        top.comment = f"Scroll_Floor: carries every lane at {P.DOLL_SPEED} units per tic"
        return
    top.special, top.args = P.SPECIAL["Scroll_Floor"], (spawn_tag_of(conveyor), 4, 1, 0, 0)
    top.comment = (f"Scroll_Floor: carries new dolls over their naming lines at {P.DOLL_SPEED} "
                   f"units per tic, until the OPEN script stops it")
    left = m.lines[-4]  # (x, y) -> (x, y+32)
    # Tag 0: every sector without a tag. The lanes' sectors carry none, because the engine
    # finds a tag's sectors by walking one of 256 hash chains to its end: 81,384 lane
    # sectors under one tag made every light, door or line special whose tag shares its
    # chain walk all of them (docs/physics.md, "What a tic costs"). Only sectors with the
    # friction bit use the friction this sets.
    left.special, left.args = P.SPECIAL["Sector_SetFriction"], (0, P.NO_FRICTION)
    left.comment = "Sector_SetFriction: every lane past its pad is frictionless"


def add_things(m: MapModel, geoms: list[LaneGeometry], names: dict[int, str],
               player: tuple[float, float], angle: int = 90) -> None:
    """Every doll first, the real player last (the last player-1 start is the player)."""
    for g in geoms:
        x, y, _ = g.spawn
        m.things.append(Thing(x, y, 1, comment=f"doll of {names[g.lane.node]}"))
    m.things.append(Thing(player[0], player[1], 1, angle=angle, comment="the player"))


def build_layout(circuit: Circuit, title: str = "", origin: tuple[float, float] = (0.0, 0.0)
                 ) -> Layout:
    """The standard map: lanes from `origin` up, the hall of lights below it, the conveyor
    control below that (modding/embed.py moves the origin into a foreign map's free space)."""
    m = MapModel()
    ox, oy = origin
    conveyor = conveyor_tag_for(circuit)
    names = {n.id: n.name for n in circuit.net.nodes}
    geoms = place_lanes(circuit, ox, oy)
    for g in geoms:
        emit_lane(m, g, conveyor)
    tiles, hall_y0 = light_tiles(m, circuit.lights, names, ox, oy - 128.0)
    conveyor_control(m, conveyor, ox, hall_y0 - 96, circuit.carry == "glide")
    player = (ox + 40, hall_y0 + 40)
    add_things(m, geoms, names, player)
    return Layout(circuit, m, geoms, tiles, conveyor, player)


def emit_lane(m: MapModel, g: LaneGeometry, conveyor: int, room: int | None = None,
              ceiling: int | None = None) -> None:
    """The lane's sectors and lines. With `room`, the lane is a trench cut into that sector
    (its edges are two-sided, so it can be seen into), static ceilings are `ceiling`, and
    every ceiling is sky: between two sky ceilings the engine draws no wall, so a door's
    ceiling does not hang as a column that hides the lanes behind it."""
    y0, y1 = g.y0, g.y0 + P.LANE_WIDTH
    secs = []
    sky = room is not None
    for s in g.segments:
        top = g.ceiling if ceiling is None else ceiling
        # Glide: no tag and the friction bit past the pad (a door only its own tag: a doll
        # in it always touches a landing too); the spawn strip carries.
        lane_tag, spawn = (0, spawn_tag_of(conveyor)) if g.glide else (conveyor, conveyor)
        special = P.FRICTION_SPECIAL if g.glide else 0
        if s.kind == "door":
            sec = Sector(s.floor, s.floor + P.DOOR_START_OPENING, 255, tag=g.lane.door_tag,
                         more_tags=(lane_tag,) if lane_tag else (),
                         sequence=P.SILENT_SEQUENCE,
                         floor_tex="FLAT5_1", ceil_tex="F_SKY1" if sky else "FLAT23",
                         comment=f"door {s.door} (threshold {g.lane.doors[s.door].threshold})")
        elif s.kind == "pad":
            sec = Sector(s.floor, top, 160, floor_tex="FLAT19", ceil_tex="F_SKY1" if sky else CEIL,
                         comment=f"pad of {g.lane.node}: dolls rest here between rides")
        elif s.kind == "spawn" and g.glide:
            secs.append(spawn_closet(m, spawn, top, sky))
            continue
        elif s.kind == "spawn":
            sec = Sector(s.floor, top, 160, tag=spawn, floor_tex=FLOOR,
                         ceil_tex="F_SKY1" if sky else CEIL)
        else:
            sec = Sector(s.floor, top, 160, tag=lane_tag, special=special,
                         floor_tex=FLOOR if s.kind != "landing" else "FLAT1",
                         ceil_tex="F_SKY1" if sky else CEIL)
        secs.append(m.sector(sec))

    def edge(a, b, sec):
        if room is None:
            m.wall(a, b, sec)
        else:
            m.portal(a, b, sec, room, flags=("blocking",))

    edge((g.x0, y0), (g.x0, y1), secs[0])                       # start
    stop = {"special": P.SPECIAL["Thing_Stop"], "args": (0,),
            "flags": ("playercross", "repeatspecial", "firstsideonly")} if g.glide else {}
    for k, s in enumerate(g.segments):
        edge((s.x0, y1), (s.x1, y1), secs[k])                   # top
        edge((s.x1, y0), (s.x0, y0), secs[k])                   # bottom
        if k + 1 < len(g.segments):
            # Gliding: a doll bounced back west off a door or the end wall (the engine's
            # ice) is stopped by the first portal it crosses, from its front (east) side;
            # eastwards the portals do nothing (physics.py, DOLL_SPEED). The spawn closet's
            # side is a wall to dolls: they leave it only by being parked on the pad.
            m.portal((s.x1, y0), (s.x1, y1), secs[k + 1], secs[k],
                     **(stop if k else {"flags": ("blocking",)} if g.glide else {}))
    last = g.segments[-1]
    edge((last.x1, y1), (last.x1, y0), secs[-1])                # end
    # Weighted lines cross their landing from wall to wall, both sides the landing sector:
    # ends on the walls are vertices the walls' splits share, where a line floating clear of
    # them made the node builder add two more (GZDoom copies every sector's vertices, floor
    # and ceiling, into one buffer of 2,000,000 at load: docs/gzdoom.md, "Vertices").
    seg_at = _segment_finder(g)
    for i, (x, special, a0, a1) in enumerate(g.lines):
        sec = secs[seg_at(x)]
        flags = ("playercross", "repeatspecial") if special != P.SPECIAL["Thing_ChangeTID"] \
            else ("playercross",)
        ends = ((x, y0), (x, y1))
        if g.glide:
            # A gliding doll stopped by a door or the end wall bounces back at half its speed
            # (the engine's ice: Boom's P_HitSlideLine on a floor of friction > 0.90625) and
            # rides back west over the lines it crossed. Each line faces west (its front, on
            # the right of v1 -> v2) and counts only when crossed from its front.
            ends, flags = ends[::-1], flags + ("firstsideonly",)
        g.line_index[i] = m.portal(*ends, sec, sec, tex="-", special=special,
                                   args=(a0, a1), flags=flags)


SPAWN_FLOOR = 0            # every spawn closet of a gliding map: one floor, one sector
CLOSETS_PER_SECTOR = 4000  # each closet borders its sector with 4 lines (checks: 32,767)


def spawn_closet(m: MapModel, tag: int, ceiling: int, sky: bool) -> int:
    """The sector of a gliding lane's spawn strip. Its conveyor is what names a new doll
    (a scroller per sector, ticking every tic for the map's life), so every lane's strip
    is a piece of one sector at one height, closed to its pad: the OPEN script parks each
    named doll on its pad."""
    key = ("spawn", tag, ceiling, sky)
    sec, used = m.shared.get(key, (None, CLOSETS_PER_SECTOR))
    if used >= CLOSETS_PER_SECTOR:
        top = max(ceiling, SPAWN_FLOOR + P.DOLL_HEIGHT + P.HEADROOM_EXTRA)
        sec, used = m.sector(Sector(SPAWN_FLOOR, top, 160, tag=tag, floor_tex=FLOOR,
                                    ceil_tex="F_SKY1" if sky else CEIL,
                                    comment="spawn closets: new dolls ride over their naming "
                                            "lines here")), 0
    m.shared[key] = (sec, used + 1)
    return sec


def _segment_finder(g: LaneGeometry):
    def find(x: float) -> int:
        for k, s in enumerate(g.segments):
            if s.x0 < x < s.x1:
                return k
        raise AssertionError(f"line at x={x} is on a segment boundary")
    return find
