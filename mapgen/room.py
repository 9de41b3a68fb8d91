"""The rooms a visitor plays a machine from, and the parts they are built of.

Owns the floor plan every walkable map shares (the demos and the control room of any
compiled circuit, mapgen/controls.py) and its building blocks:

- the **lane hall**: the network's lanes as trenches cut into one big floor under an open
  sky, where the dolls ride when the machine runs;
- the **gallery**, a balcony south of it, looking in through a long window: the room the
  visitor stands in. Whoever starts in it facing north sees the sky through the window,
  which GZDoom's OpenGL renderer needs on its first frame (docs/gzdoom.md);
- **pads** (floor sectors that run a script when the player steps on them), **switches**
  (wall faces the player presses USE on), **seven-segment figures** and **panels** (floor
  sectors whose light is a machine's light);
- `finish_hall`: the remaining lights in a hall of lights, the conveyor, the dolls and the
  player, the schedule, the static checks and the machine's ACS (bus operations only).
"""
from __future__ import annotations

from dataclasses import dataclass

from . import physics as P
from .checks import run_all
from .layout import (Layout, add_things, conveyor_control, emit_lane, inset_sector,
                     light_tiles, place_lanes)
from .program import acs_source, bus_violations, plan
from .udmf import MapModel, Sector, Thing

SEC_ACT_ENTER = 9998      # a thing that runs its special when the player enters its sector
ACS_EXECUTE = 80
SKY = "F_SKY1"
ROOM_CEIL = "FLAT19"      # the gallery's ceiling
ROOM_FLOOR = "FLOOR4_8"
HALL_STRIP_SIDES = 16384   # a lane hall's strip has at most this many sides (hall_strips)
SWITCH_HEIGHT = 72        # SW1COMM's height: the whole switch plate on the post's face


@dataclass
class Gallery:
    geoms: list               # the lanes' geometry
    hall: int                 # sector of the lane hall
    room: int                 # sector of the gallery
    floor: int                # the gallery's floor and ceiling heights
    ceil: int
    x0: float                 # the gallery's box
    y0: float
    x1: float
    y1: float
    cx: float                 # its middle (x)
    hall_box: tuple           # (x0, y0, x1, y1) of the lane hall


def box(cx, cy, w, h) -> tuple:
    return (cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2)


def hall_geometry(circuit, origin: tuple[float, float] = (256.0, 256.0)) -> tuple[list, tuple]:
    """The lanes' geometry and the lane hall's box (x0, y0, x1, y1) around them."""
    LX, LY = origin
    geoms = place_lanes(circuit, LX, LY)
    rx1 = max((g.segments[-1].x1 for g in geoms), default=LX + 512) + 96
    ry1 = max((g.y0 for g in geoms), default=LY) + P.LANE_WIDTH + 96
    return geoms, (LX - 96, LY - 96, rx1, ry1)


def build_gallery(m: MapModel, circuit, conveyor: int, depth: float = 1280,
                  half_width: float = 768, light: int = 160, lanes=None) -> Gallery:
    """The lane hall (sky) with the gallery south of it, `depth` deep and at least
    2 * `half_width` wide; `lanes` is hall_geometry's result, if already made."""
    geoms, (rx0, ry0, rx1, ry1) = lanes or hall_geometry(circuit)
    top_floor = max((s.floor for g in geoms for s in g.segments), default=0)
    r_floor = top_floor + 32                          # > 24 above every lane: no way out
    g_floor = r_floor + 160                           # a balcony: look down into the lanes
    g_ceil = g_floor + 256
    # The hall's sky above the gallery's ceiling: the window is the gallery's full height,
    # and the sky shows through it from anywhere in the gallery.
    r_ceil = g_ceil + 64
    strips = hall_strips(geoms, ry0, ry1)
    halls = [m.sector(Sector(r_floor, r_ceil, 176, floor_tex="FLOOR7_1", ceil_tex=SKY,
                             comment="lane hall: every lane is a trench in this floor"))
             for _ in strips]
    strip_of = {id(g): k for k, (_, _, lanes) in enumerate(strips) for g in lanes}
    for g in geoms:
        emit_lane(m, g, conveyor, room=halls[strip_of[id(g)]], ceiling=r_ceil)
    hall = halls[0]
    gy1, gy0 = ry0, ry0 - depth
    cx = (rx0 + rx1) / 2
    gx0, gx1 = min(rx0, cx - half_width), max(rx1, cx + half_width)
    # Dimmer than a lit display panel (200), brighter than a dark one.
    room = m.sector(Sector(g_floor, g_ceil, light, floor_tex=ROOM_FLOOR, ceil_tex=ROOM_CEIL,
                           comment="gallery"))
    _hall_walls(m, strips, halls, rx0, rx1)
    # The window: the gallery on its right (south), the lane hall behind; nobody crosses it.
    m.portal((rx1, ry0), (rx0, ry0), hall, room, tex="BROWN96", flags=("blocking",),
             comment="the window onto the lanes")
    # Walls keep the gallery on their right: clockwise round it, the window excepted (a
    # gallery as wide as the hall has no wall beside the window: no zero-length lines).
    if gx1 > rx1:
        m.wall((rx1, gy1), (gx1, gy1), room, tex="MARBLE1")
    m.wall((gx1, gy1), (gx1, gy0), room, tex="MARBLE1")
    m.wall((gx1, gy0), (gx0, gy0), room, tex="MARBLE1")
    m.wall((gx0, gy0), (gx0, gy1), room, tex="MARBLE1")
    if gx0 < rx0:
        m.wall((gx0, gy1), (rx0, gy1), room, tex="MARBLE1")
    return Gallery(geoms, hall, room, g_floor, g_ceil, gx0, gy0, gx1, gy1, cx,
                   (rx0, ry0, rx1, ry1))


def hall_strips(geoms: list, y0: float, y1: float) -> list[tuple[float, float, list]]:
    """The lane hall cut across, between rows of lanes, into strips of at most
    HALL_STRIP_SIDES sides each: (y0, y1, its lanes) from south to north. One sector with
    every trench's edges would crash ViZDoom beyond 32,767 sides (physics.MAX_SECTOR_LINES,
    checks.check_crowded_sectors: the MNIST CNN's control room has 77,626); a small hall
    stays one sector."""
    rows: dict[float, list] = {}
    for g in geoms:
        rows.setdefault(g.y0, []).append(g)
    strips, lanes, count, start = [], [], 4, y0
    for y in sorted(rows):
        more = sum(2 * len(g.segments) + 2 for g in rows[y])  # a trench's edges
        if lanes and count + more > HALL_STRIP_SIDES:
            cut = y - P.LANE_GAP / 2
            strips.append((start, cut, lanes))
            lanes, count, start = [], 4, cut
        lanes, count = lanes + rows[y], count + more
    return strips + [(start, y1, lanes)]


def _hall_walls(m: MapModel, strips: list, halls: list[int], rx0: float, rx1: float) -> None:
    """The hall's west, north and east walls, clockwise (each strip's on its right), and
    the open lines between strips (one floor to walk and look across)."""
    for (sy0, sy1, _), hall in zip(strips, halls):
        m.wall((rx0, sy0), (rx0, sy1), hall)
    m.wall((rx0, strips[-1][1]), (rx1, strips[-1][1]), halls[-1])
    for (sy0, sy1, _), hall in reversed(list(zip(strips, halls))):
        m.wall((rx1, sy1), (rx1, sy0), hall)
    for k in range(len(strips) - 1):
        y = strips[k][1]
        m.portal((rx0, y), (rx1, y), halls[k], halls[k + 1], comment="between hall strips")


def finish(m: MapModel, circuit, gal: Gallery, tiles: dict, conveyor: int, shown: set,
           rest: tuple[float, float], title: str, pipeline: bool = True):
    """Lights not shown in the gallery to a hall of lights, the conveyor, the things; then
    the schedule, the checks and the machine's ACS. Returns (layout, schedule, source).
    Without `pipeline` the map has no pipelined beat (scripts 4, 5): one inference at a
    time, and far less ACS."""
    return finish_hall(m, circuit, gal.geoms, gal.hall_box, tiles, conveyor, shown, rest,
                       title, pipeline)


def finish_hall(m: MapModel, circuit, geoms: list, hall_box: tuple, tiles: dict,
                conveyor: int, shown: set, rest: tuple[float, float], title: str,
                pipeline: bool = True):
    """`finish` for any lane hall (its lanes' geometry and box), gallery or not."""
    names = {n.id: n.name for n in circuit.net.nodes}
    rx1, ry1 = hall_box[2], hall_box[3]
    others = [l for l in circuit.lights if l.tag not in shown]
    more, hall_y0 = light_tiles(m, others, names, rx1 + 512, ry1)
    tiles.update(more)
    conveyor_control(m, conveyor, rx1 + 512, hall_y0 - 96, circuit.carry == "glide")
    add_things(m, geoms, names, rest, angle=90)
    layout = Layout(circuit, m, geoms, tiles, conveyor, rest)
    sched = plan(layout)
    if not pipeline:
        sched.pipeline = None
    run_all(layout, sched)
    machine = acs_source(layout, sched, title)
    bad = bus_violations(machine)
    if bad:
        raise AssertionError(f"{title} machine ACS line {bad[0][0]} is not a bus operation")
    return layout, sched, machine


# -- parts -------------------------------------------------------------------------------
def pad(m: MapModel, room: int, rect: tuple, s: Sector, script: int, comment: str,
        args: tuple = ()) -> tuple[float, float]:
    """A floor pad: a sector in `room` whose thing runs `script` when the player enters
    it (stepping off and on again runs it again). Returns its centre."""
    inset_sector(m, room, rect, s)
    px, py = (rect[0] + rect[2]) / 2, (rect[1] + rect[3]) / 2
    m.things.append(Thing(px, py, SEC_ACT_ENTER, special=ACS_EXECUTE, args=(script, 0, *args),
                          comment=comment))
    return px, py


def switch(m: MapModel, room: int, rect: tuple, script: int, comment: str,
           floor: int, ceil: int, light: int, tex: str = "SW1COMM") -> None:
    """A post in `room` (a block SWITCH_HEIGHT high, too high to climb) whose south face
    is a switch: USE on it runs `script`, every time. `floor`, `ceil`: the room's."""
    x0, y0, x1, y1 = rect
    post = m.sector(Sector(floor + SWITCH_HEIGHT, ceil, light, floor_tex="FLAT23",
                           ceil_tex=ROOM_CEIL, comment=f"switch post: {comment}"))
    # The room on every face's right (its front side shows the face's lower texture).
    m.portal((x0, y0), (x1, y0), room, post, tex=tex, special=ACS_EXECUTE, args=(script, 0),
             flags=("playeruse", "repeatspecial"), comment=comment)
    for a, b in (((x1, y0), (x1, y1)), ((x1, y1), (x0, y1)), ((x0, y1), (x0, y0))):
        m.portal(a, b, room, post, tex="METAL")


def seven_boxes(cx: float, cy: float, length: float, thick: float, gap: float
                ) -> dict[str, tuple]:
    """Boxes of a seven-segment figure centred on (cx, cy), segment a to the north."""
    half = length / 2 + gap + thick / 2
    return {
        "a": box(cx, cy + 2 * half, length, thick),
        "g": box(cx, cy, length, thick),
        "d": box(cx, cy - 2 * half, length, thick),
        "f": box(cx - half, cy + half, thick, length),
        "b": box(cx + half, cy + half, thick, length),
        "e": box(cx - half, cy - half, thick, length),
        "c": box(cx + half, cy - half, thick, length),
    }


def seven_size(length: float, thick: float, gap: float) -> tuple[float, float]:
    """Width and height of a seven-segment figure."""
    return length + 2 * (gap + thick), 2 * length + 4 * gap + 3 * thick


def light_panel(m: MapModel, room: int, rect: tuple, circuit, tag: int, floor: int,
                ceil: int, comment: str, floor_tex: str = "FLAT2", ceil_tex: str = ROOM_CEIL,
                ceiling_light: int | None = None, floor_light: int | None = None) -> tuple:
    """A sector in `room` that IS a machine's light: the light with that tag (and the
    weight groups it carries), so its brightness is the light's level."""
    light = circuit.light(tag)
    return inset_sector(m, room, rect, Sector(floor, ceil, light.reset, tag=tag,
                                              more_tags=tuple(light.groups),
                                              floor_tex=floor_tex, ceil_tex=ceil_tex,
                                              comment=comment, ceiling_light=ceiling_light,
                                              floor_light=floor_light))
