"""The floor plan walkable demos share: a lane hall seen from a gallery through a window.

Owns the two rooms every walkable demo (demos/museum.py, demos/tictactoe.py) is built
around and the machine's finishing steps:

- the **lane hall**: the network's lanes as trenches cut into one big floor (sky ceiling),
  where the dolls ride when the machine runs;
- the **gallery**, a balcony south of it, looking in through a long window; each demo puts
  its own pedals and displays in it;
- `finish`: the remaining lights in a hall of lights, the conveyor, the dolls and the
  player, the schedule, the static checks and the machine's ACS (bus operations only).
"""
from __future__ import annotations

from dataclasses import dataclass

from mapgen import physics as P
from mapgen.checks import run_all
from mapgen.layout import (Layout, add_things, conveyor_control, emit_lane, light_tiles,
                           place_lanes)
from mapgen.program import acs_source, bus_violations, plan
from mapgen.udmf import MapModel, Sector


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


def build_gallery(m: MapModel, circuit, conveyor: int, depth: float = 1280,
                  half_width: float = 768, light: int = 160) -> Gallery:
    LX, LY = 256.0, 256.0
    geoms = place_lanes(circuit, LX, LY)
    top_floor = max(s.floor for g in geoms for s in g.segments)
    r_floor = top_floor + 32                          # > 24 above every lane: no way out
    r_ceil = r_floor + 320
    rx0, ry0 = LX - 96, LY - 96
    rx1 = max(g.segments[-1].x1 for g in geoms) + 96
    ry1 = max(g.y0 for g in geoms) + P.LANE_WIDTH + 96
    hall = m.sector(Sector(r_floor, r_ceil, 176, floor_tex="FLOOR7_1", ceil_tex="F_SKY1",
                           comment="lane hall: every lane is a trench in this floor"))
    for g in geoms:
        emit_lane(m, g, conveyor, room=hall, ceiling=r_ceil)

    g_floor = r_floor + 160                           # a balcony: look down into the lanes
    g_ceil = g_floor + 256
    gy1, gy0 = ry0, ry0 - depth
    cx = (rx0 + rx1) / 2
    gx0, gx1 = min(rx0, cx - half_width), max(rx1, cx + half_width)
    # Dimmer than a lit display panel (200), brighter than a dark one.
    room = m.sector(Sector(g_floor, g_ceil, light, floor_tex="FLOOR4_8", ceil_tex="FLAT19",
                           comment="gallery"))
    m.wall((rx0, ry0), (rx0, ry1), hall)
    m.wall((rx0, ry1), (rx1, ry1), hall)
    m.wall((rx1, ry1), (rx1, ry0), hall)
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


def finish(m: MapModel, circuit, gal: Gallery, tiles: dict, conveyor: int, shown: set,
           rest: tuple[float, float], title: str):
    """Lights not shown in the gallery to a hall of lights, the conveyor, the things; then
    the schedule, the checks and the machine's ACS. Returns (layout, schedule, source)."""
    return finish_hall(m, circuit, gal.geoms, gal.hall_box, tiles, conveyor, shown, rest,
                       title)


def finish_hall(m: MapModel, circuit, geoms: list, hall_box: tuple, tiles: dict,
                conveyor: int, shown: set, rest: tuple[float, float], title: str):
    """`finish` for any lane hall (its lanes' geometry and box), gallery or not."""
    names = {n.id: n.name for n in circuit.net.nodes}
    rx1, ry1 = hall_box[2], hall_box[3]
    others = [l for l in circuit.lights if l.tag not in shown]
    more, hall_y0 = light_tiles(m, others, names, rx1 + 512, ry1)
    tiles.update(more)
    conveyor_control(m, conveyor, rx1 + 512, hall_y0 - 96)
    add_things(m, geoms, names, rest, angle=90)
    layout = Layout(circuit, m, geoms, tiles, conveyor, rest)
    sched = plan(layout)
    run_all(layout, sched)
    machine = acs_source(layout, sched, title)
    bad = bus_violations(machine)
    if bad:
        raise AssertionError(f"{title} machine ACS line {bad[0][0]} is not a bus operation")
    return layout, sched, machine


class GalleryDriver:
    """Plays a gallery as a visitor: warps onto pedals, waits for the machine to answer.
    Pedals in `machine_pedals` start an inference; the map acknowledges each one."""

    machine_pedals: tuple[str, ...] = ()
    what = "the machine"

    def __init__(self, wad: str, info: dict, spots: dict, render: bool = False):
        from engine.doom import Engine
        from engine.runner import MapRunner

        self.info = info
        self.spots = spots
        self.engine = Engine(wad, resolution="RES_640X480" if render else "RES_160X120",
                             render=render, buttons=("MOVE_FORWARD", "LOOK_UP_DOWN_DELTA"))
        self.runner = MapRunner(wad, info, engine=self.engine)   # waits for the map's ready
        self.reads = 0

    def close(self):
        self.engine.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def warp(self, spot: str) -> None:
        x, y = self.spots[spot]
        self.engine.command(f"warp {x:g} {y:g}")
        self.engine.advance(2)

    def press(self, pedal: str) -> None:
        """Step onto a pedal from the rest spot (leaving it first, so it fires again)."""
        self.warp("rest")
        self.warp(pedal)
        if pedal in self.machine_pedals:
            self.reads += 1
            self.wait_machine()
        self.warp("rest")

    def wait_machine(self, already: int = 0) -> None:
        """Advance until the machine must have acknowledged the last run (`already` tics
        since its pedal was pressed have passed) and check that it has."""
        from engine.doom import EngineError

        need = self.info["inference_tics"] + 2
        self.engine.advance(need - already)
        ack = self.engine.user(self.info["ack_var"])
        if ack != self.reads:
            raise EngineError(f"{self.what} did not finish run {self.reads} in "
                              f"{need} tics (ack {ack})")

    def shot(self, spot: str, path: str, pitch: float) -> None:
        """A PNG of the view from a spot, looking up (pitch > 0) or down."""
        from PIL import Image

        from mapgen.render import save_png

        self.warp(spot)
        self.engine.advance(1, [0.0, pitch])
        self.engine.advance(3, [0.0, 0.0])
        save_png(Image.fromarray(self.engine.screen()), path)
        self.engine.advance(1, [0.0, -pitch])
