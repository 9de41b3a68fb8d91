"""The museum: circuits/museum.dnet as a gallery you can walk through and rewire.

Owns the museum's floor plan, its visitor controls and the driver tests use to play it:

- the **lane hall**: the network's lanes as trenches cut into one big floor, seen from the
  gallery through a long window; dolls ride them when the machine runs;
- the **gallery**: seven floor pedals laid out as a seven-segment digit (stepping on one
  toggles that input; its light shows the state), READ / MUTATE / RESTORE pedals, and the
  seven-segment **display** in the ceiling, whose sectors are the output neurons'
  accumulator lights themselves (lit 200, black -120, dim 40 when no digit is recognised);
- a **plaque** at the window, in front of the line MUTATE rewires, naming the connection;
- the rest of the lights (inputs, detectors) in a hall of lights off to the side.

The visitor controls are ACS too, but they only toggle inputs, start the machine and swap
one line's special (SetLineSpecial: the map is rewired, nothing is computed); they never
read a neuron's light. `ui_violations` checks that.
"""
from __future__ import annotations

import copy
import os
import re
from dataclasses import dataclass

from dsl import load
from dsl.ir import Netlist

from mapgen import physics as P
from mapgen.checks import run_all
from mapgen.circuit import lower
from mapgen.compile import CompiledMap, compile_acs
from mapgen.layout import (Layout, add_things, conveyor_control, conveyor_tag_for, emit_lane,
                     inset_sector, light_tiles, place_lanes)
from mapgen.program import SCRIPT_INFER, acs_source, bus_violations, manifest, plan
from mapgen.udmf import MapModel, Sector, Thing

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SOURCE = os.path.join(ROOT, "circuits", "museum.dnet")
SEGMENTS = "abcdefg"
DIGITS = {0: "abcdef", 1: "bc", 2: "abdeg", 3: "abcdg", 4: "bcfg", 5: "acdfg", 6: "acdefg",
          7: "abc", 8: "abcdefg", 9: "abcdfg"}
MUTATION = ("digit7", "show_a")      # the connection MUTATE flips from +1 to -1

SCRIPT_PEDAL = 30                    # 30..36: pedal of segment a..g
SCRIPT_READ = 40
SCRIPT_MUTATE = 41
SCRIPT_RESTORE = 42
SCRIPT_PLAQUE = 43
SCRIPT_STATUS = 44                   # pedal lights and the mutation flag to USER1..8
MUTATE_LINE_ID = 500
SEC_ACT_ENTER = 9998                 # a thing that runs its special when the player enters
ACS_EXECUTE = 80
PEDAL_OFF, PEDAL_ON = 96, 255


def pattern(digit: int) -> list[int]:
    return [int(s in DIGITS[digit]) for s in SEGMENTS]


def mutated(net: Netlist) -> Netlist:
    """The netlist MUTATE builds: one connection's weight flipped from +1 to -1."""
    net = copy.deepcopy(net)
    src, dst = (net.by_name(n) for n in MUTATION)
    assert dst.weights[src.id] == 1
    dst.weights[src.id] = -1
    from dsl.ranges import analyse

    return analyse(net)


@dataclass
class Spot:
    name: str
    x: float
    y: float


@dataclass
class MuseumMap:
    compiled: CompiledMap
    spots: dict[str, Spot]            # pedal centres, the rest spot, the screenshot spot
    pedal_tags: list[int]
    display_tags: list[int]
    mutate_line: int                  # index into the map's lines
    net: Netlist


def _box(cx, cy, w, h):
    return (cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2)


def _seven(cx: float, cy: float, length: float, thick: float, gap: float) -> dict[str, tuple]:
    """Boxes of a seven-segment figure centred on (cx, cy)."""
    half = length / 2 + gap + thick / 2
    return {
        "a": _box(cx, cy + 2 * half, length, thick),
        "g": _box(cx, cy, length, thick),
        "d": _box(cx, cy - 2 * half, length, thick),
        "f": _box(cx - half, cy + half, thick, length),
        "b": _box(cx + half, cy + half, thick, length),
        "e": _box(cx - half, cy - half, thick, length),
        "c": _box(cx + half, cy - half, thick, length),
    }


def build(title: str = "Museum", acc: str = "internal") -> MuseumMap:
    """The museum map: lane hall, gallery with display and pedals, the MUTATE line."""
    net = load(SOURCE)
    b = _Build(net=net, circuit=lower(net, solo={MUTATION}), m=MapModel())
    b.names = {n.id: n.name for n in b.circuit.net.nodes}
    b.conveyor = conveyor_tag_for(b.circuit)
    b.pedal_tags = [b.conveyor + 1 + j for j in range(7)]
    _lane_hall(b)
    _gallery(b)
    _display(b)
    _pedals(b)
    _mutation_line(b)
    cm = _assemble(b, title, acc)
    return MuseumMap(cm, b.spots, b.pedal_tags, b.display_tags, b.mutate_line, net)


class _Build:
    """What the steps of `build` hand each other."""

    def __init__(self, **kw):
        self.tiles: dict = {}
        self.spots: dict[str, Spot] = {}
        self.__dict__.update(kw)


def _lane_hall(b: _Build) -> None:
    """The lane hall: trenches cut into one floor, sky above so no door hides a doll."""
    LX, LY = 256.0, 256.0
    b.geoms = geoms = place_lanes(b.circuit, LX, LY)
    top_floor = max(s.floor for g in geoms for s in g.segments)
    b.r_floor = top_floor + 32                          # > 24 above every lane: no way out
    b.r_ceil = b.r_floor + 320
    b.rx0, b.ry0 = LX - 96, LY - 96
    b.rx1 = max(g.segments[-1].x1 for g in geoms) + 96
    b.ry1 = max(g.y0 for g in geoms) + P.LANE_WIDTH + 96
    b.hall = b.m.sector(Sector(b.r_floor, b.r_ceil, 176, floor_tex="FLOOR7_1",
                               ceil_tex="F_SKY1",
                               comment="lane hall: every lane is a trench in this floor"))
    for g in geoms:
        emit_lane(b.m, g, b.conveyor, room=b.hall, ceiling=b.r_ceil)


def _gallery(b: _Build) -> None:
    """The gallery, south of the lane hall, a step up, looking in through a window."""
    m, hall = b.m, b.hall
    rx0, ry0, rx1, ry1 = b.rx0, b.ry0, b.rx1, b.ry1
    b.g_floor = b.r_floor + 160                       # a balcony: look down into the lanes
    b.g_ceil = b.g_floor + 256
    gy1, b.gy0 = ry0, ry0 - 1280
    gy0 = b.gy0
    b.cx = cx = (rx0 + rx1) / 2
    gx0, gx1 = min(rx0, cx - 768), max(rx1, cx + 768)
    # Dimmer than a lit display segment (200), brighter than a dark one (-120 is black).
    b.gallery = gallery = m.sector(Sector(b.g_floor, b.g_ceil, 160, floor_tex="FLOOR4_8",
                                          ceil_tex="FLAT19", comment="gallery"))
    m.wall((rx0, ry0), (rx0, ry1), hall)
    m.wall((rx0, ry1), (rx1, ry1), hall)
    m.wall((rx1, ry1), (rx1, ry0), hall)
    # The window: the gallery on its right (south), the lane hall behind; nobody crosses it.
    m.portal((rx1, ry0), (rx0, ry0), hall, gallery, tex="BROWN96", flags=("blocking",),
             comment="the window onto the lanes")
    # Walls keep the gallery on their right: clockwise round it, the window excepted.
    m.wall((rx1, gy1), (gx1, gy1), gallery, tex="MARBLE1")
    m.wall((gx1, gy1), (gx1, gy0), gallery, tex="MARBLE1")
    m.wall((gx1, gy0), (gx0, gy0), gallery, tex="MARBLE1")
    m.wall((gx0, gy0), (gx0, gy1), gallery, tex="MARBLE1")
    m.wall((gx0, gy1), (rx0, gy1), gallery, tex="MARBLE1")


def _display(b: _Build) -> None:
    """The display: output accumulators as recessed ceiling panels over the middle."""
    display = _seven(b.cx, b.gy0 + 820, 224, 48, 8)
    b.display_tags = []
    for s in SEGMENTS:
        node = b.circuit.net.by_name(f"show_{s}")
        tag = b.circuit.acc_light[node.id]
        light = b.circuit.light(tag)
        b.tiles[tag] = inset_sector(b.m, b.gallery, display[s], Sector(
            b.g_floor, b.g_ceil, light.reset, tag=tag, more_tags=tuple(light.groups),
            floor_tex="FLAT14", ceil_tex="FLAT2",
            comment=f"display segment {s}: the accumulator light of show_{s}"))
        b.display_tags.append(tag)


def _pedals(b: _Build) -> None:
    """The pedals: a seven-segment digit on the floor near the entrance, and READ, MUTATE,
    RESTORE."""
    m, cx, gy0 = b.m, b.cx, b.gy0
    pedals = _seven(cx - 420, gy0 + 420, 96, 40, 24)
    for j, s in enumerate(SEGMENTS):
        box = pedals[s]
        inset_sector(m, b.gallery, box, Sector(b.g_floor + 4, b.g_ceil, PEDAL_OFF,
                                               tag=b.pedal_tags[j], floor_tex="FLAT22",
                                               comment=f"pedal {s}"))
        px, py = (box[0] + box[2]) / 2, (box[1] + box[3]) / 2
        m.things.append(Thing(px, py, SEC_ACT_ENTER, special=ACS_EXECUTE,
                              args=(SCRIPT_PEDAL + j, 0), comment=f"pedal {s} toggles seg[{j}]"))
        b.spots[s] = Spot(s, px, py)
    for k, (name, script, tex, light) in enumerate([("READ", SCRIPT_READ, "FLAT3", 224),
                                                    ("MUTATE", SCRIPT_MUTATE, "FLAT5_3", 160),
                                                    ("RESTORE", SCRIPT_RESTORE, "FLAT5_1", 160)]):
        px, py = cx + 420, gy0 + 220 + 200 * k
        inset_sector(m, b.gallery, _box(px, py, 96, 96), Sector(b.g_floor + 4, b.g_ceil, light,
                                                                 floor_tex=tex,
                                                                 comment=f"{name} pedal"))
        m.things.append(Thing(px, py, SEC_ACT_ENTER, special=ACS_EXECUTE, args=(script, 0),
                              comment=f"{name} pedal"))
        b.spots[name] = Spot(name, px, py)
    b.spots["rest"] = Spot("rest", cx, gy0 + 100)


def _mutation_line(b: _Build) -> None:
    """The line MUTATE rewires, and a plaque in front of it."""
    m, spots = b.m, b.spots
    src, b.dst = (b.circuit.net.by_name(n) for n in MUTATION)
    b.src = src
    b.lane = lane = next(g for g in b.geoms if g.lane.node == src.id)
    b.target = b.circuit.acc_light[b.dst.id]
    b.k = k = next(i for i, (x, sp, a0, a1) in enumerate(lane.lines) if a0 == b.target)
    b.mutate_line = lane.line_index[k]
    m.lines[b.mutate_line].id = MUTATE_LINE_ID
    m.lines[b.mutate_line].comment = f"MUTATE flips this line: {MUTATION[0]} -> {MUTATION[1]}"
    plaque_x, ry0 = lane.lines[k][0], b.ry0
    inset_sector(m, b.gallery, _box(plaque_x, ry0 - 40, 96, 32),
                 Sector(b.g_floor + 2, b.g_ceil, 255, floor_tex="FLAT2", comment="plaque"))
    m.things.append(Thing(plaque_x, ry0 - 40, SEC_ACT_ENTER, special=ACS_EXECUTE,
                          args=(SCRIPT_PLAQUE, 0), comment="plaque"))
    spots["plaque"] = Spot("plaque", plaque_x, ry0 - 40)
    spots["view"] = Spot("view", b.cx, b.gy0 + 200)
    spots["window"] = Spot("window", plaque_x - 200, ry0 - 60)
    # South of pedal d, facing it: a visitor walking north steps onto d first.
    spots["approach"] = Spot("approach", b.cx - 420, b.gy0 + 120)


def _assemble(b: _Build, title: str, acc: str) -> CompiledMap:
    """The other lights, the conveyor and the things; then schedule, check and compile."""
    m, circuit, spots = b.m, b.circuit, b.spots
    others = [l for l in circuit.lights if l.tag not in b.display_tags]
    more, hall_y0 = light_tiles(m, others, b.names, b.rx1 + 512, b.ry1)
    b.tiles.update(more)
    conveyor_control(m, b.conveyor, b.rx1 + 512, hall_y0 - 96)
    rest = (spots["rest"].x, spots["rest"].y)
    add_things(m, b.geoms, b.names, rest, angle=90)
    layout = Layout(circuit, m, b.geoms, b.tiles, b.conveyor, rest)
    sched = plan(layout)
    run_all(layout, sched)
    machine = acs_source(layout, sched, title)
    bad = bus_violations(machine)
    if bad:
        raise AssertionError(f"museum machine ACS line {bad[0][0]} is not a bus operation")
    controls = controls_source(b.pedal_tags, b.target, b.dst.name, b.src.name,
                               b.lane.lines[b.k][3])
    bad = ui_violations(controls, b.pedal_tags)
    if bad:
        raise AssertionError(f"museum control ACS reads a neuron: {bad[0]}")
    source = machine + "\n" + controls
    behavior = compile_acs(source, "museum.acs", acc)
    info = manifest(layout, sched, title)
    info["museum"] = {"spots": {k: [v.x, v.y] for k, v in spots.items()},
                      "read_script": SCRIPT_READ, "status_script": SCRIPT_STATUS}
    return CompiledMap("MAP01", title, circuit, layout, sched, m.textmap(), source, behavior,
                       info)


def controls_source(pedal_tags, target_tag: int, dst: str, src: str, amount: int) -> str:
    lines = [
        "// ---------------------------------------------------------------------------------",
        "// The visitor's controls. Pedals toggle the inputs and start the machine; MUTATE and",
        "// RESTORE rewire one line. None of them reads or computes a neuron's value: the",
        "// display in the ceiling is the output accumulators' own light.",
        "int reads;     // READ presses so far: the machine acknowledges each one",
        "int mutation;  // 1 while the line is rewired",
        "",
    ]
    for j, s in enumerate(SEGMENTS):
        t = pedal_tags[j]
        lines += [
            f"script {SCRIPT_PEDAL + j} (void)  // pedal {s}: toggle input seg[{j}]",
            "{",
            f"    if (inputs[{j}]) {{ inputs[{j}] = 0; Light_ChangeToValue({t}, {PEDAL_OFF}); }}",
            f"    else {{ inputs[{j}] = 1; Light_ChangeToValue({t}, {PEDAL_ON}); }}",
            "}",
            "",
        ]
    lines += [
        f"script {SCRIPT_READ} (void)  // READ: run the machine on the pedals' digit",
        "{",
        "    reads = reads + 1;",
        f"    ACS_Execute({SCRIPT_INFER}, 0, reads);",
        "}",
        "",
        f"script {SCRIPT_MUTATE} (void)  // MUTATE: the line now subtracts, then read again",
        "{",
        f"    SetLineSpecial({MUTATE_LINE_ID}, {P.SPECIAL['Light_LowerByValue']}, {target_tag}, "
        f"{amount}, 0, 0, 0);",
        "    mutation = 1;",
        f'    Print(s:"MUTATE: {src} -> {dst} is now -1");',
        f"    ACS_Execute({SCRIPT_READ}, 0);",
        "}",
        "",
        f"script {SCRIPT_RESTORE} (void)  // RESTORE: the line adds again, then read again",
        "{",
        f"    SetLineSpecial({MUTATE_LINE_ID}, {P.SPECIAL['Light_RaiseByValue']}, {target_tag}, "
        f"{amount}, 0, 0, 0);",
        "    mutation = 0;",
        f'    Print(s:"RESTORE: {src} -> {dst} is +1 again");',
        f"    ACS_Execute({SCRIPT_READ}, 0);",
        "}",
        "",
        f"script {SCRIPT_PLAQUE} (void)  // the plaque at the window",
        "{",
        f'    Print(s:"The line in front of you joins {src} to {dst}.\\n'
        f'MUTATE flips its weight from +1 to -1: a 7 then reads as 1.");',
        "}",
        "",
        f"script {SCRIPT_STATUS} (void)  // pedal lights and the mutation flag, for tests",
        "{",
    ]
    for j, t in enumerate(pedal_tags):
        lines.append(f"    user{j + 1} = GetSectorLightLevel({t});  // pedal {SEGMENTS[j]}")
    lines += ["    user8 = mutation;", "    read_ack = reads;", "}", ""]
    return "\n".join(lines)


def ui_violations(source: str, pedal_tags) -> list[str]:
    """Control statements that read anything but a pedal's light (a neuron, a door)."""
    bad = []
    for line in source.splitlines():
        code = line.split("//", 1)[0]
        for m in re.finditer(r"GetSector(LightLevel|FloorZ|CeilingZ)\(([^)]*)\)", code):
            if m.group(1) != "LightLevel" or not m.group(2).strip().isdigit() \
                    or int(m.group(2)) not in pedal_tags:
                bad.append(line.strip())
    return bad


class MuseumDriver:
    """Plays the museum as a visitor: warps onto pedals (or walks), reads the display."""

    def __init__(self, wad: str, info: dict, render: bool = False):
        from engine.doom import Engine
        from engine.runner import MapRunner

        self.info = info
        self.spots = info["museum"]["spots"]
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
        if pedal in ("READ", "MUTATE", "RESTORE"):
            self.reads += 1
            self.wait_machine()
        self.warp("rest")

    def wait_machine(self, already: int = 0) -> None:
        """Advance until the machine must have acknowledged the last READ (`already` tics
        since it was pressed have passed) and check that it has."""
        from engine.doom import EngineError

        need = self.info["inference_tics"] + 2
        self.engine.advance(need - already)
        ack = self.engine.user(self.info["ack_var"])
        if ack != self.reads:
            raise EngineError(f"the museum's machine did not finish read {self.reads} in "
                              f"{need} tics (ack {ack})")

    def status(self) -> tuple[list[int], int]:
        """(pedal lights a..g, mutation flag)."""
        self.engine.puke(SCRIPT_STATUS)
        self.engine.advance(1)
        u = self.engine.users()
        return u[:7], u[7]

    def set_digit(self, bits: list[int]) -> None:
        lights, _ = self.status()
        for j, want in enumerate(bits):
            if (lights[j] == PEDAL_ON) != bool(want):
                self.press(SEGMENTS[j])

    def display(self) -> list[int]:
        """The display's light levels a..g (the output accumulators), as last computed.
        Read through the read scripts: the status script reuses USER1..7."""
        every = self.runner.read_all()
        return [every[f"value:show_{s}"] for s in SEGMENTS]

    def lanes_screenshot(self, path: str, pitch: float = -25.0) -> None:
        """READ, then a PNG from the window, looking down at the dolls mid-ride."""
        from PIL import Image

        from mapgen.render import save_png

        self.warp("rest")
        self.warp("READ")
        self.reads += 1
        self.warp("window")
        self.engine.advance(1, [0.0, pitch])
        self.engine.advance(4, [0.0, 0.0])
        save_png(Image.fromarray(self.engine.screen()), path)
        self.engine.advance(1, [0.0, -pitch])
        self.wait_machine(already=7)
        self.warp("rest")

    def screenshot(self, path: str, pitch: float = 24.0) -> None:
        """A PNG of the view from the gallery entrance, looking up at the display."""
        from PIL import Image

        from mapgen.render import save_png

        self.warp("view")
        self.engine.advance(1, [0.0, pitch])
        self.engine.advance(3, [0.0, 0.0])
        img = Image.fromarray(self.engine.screen())
        save_png(img, path)
        self.engine.advance(1, [0.0, -pitch])
