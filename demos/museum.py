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
from mapgen.circuit import lower
from mapgen.compile import CompiledMap, compile_acs
from mapgen.display import DIGITS
from mapgen.layout import conveyor_tag_for
from mapgen.program import SCRIPT_INFER, manifest
from mapgen.room import box as _box, build_gallery, finish, light_panel, pad, seven_boxes
from mapgen.udmf import MapModel, Sector

from engine.visitor import GalleryDriver

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SOURCE = os.path.join(ROOT, "circuits", "museum.dnet")
SEGMENTS = "abcdefg"
MUTATION = ("digit7", "show_a")      # the connection MUTATE flips from +1 to -1

SCRIPT_PEDAL = 30                    # 30..36: pedal of segment a..g
SCRIPT_READ = 40
SCRIPT_MUTATE = 41
SCRIPT_RESTORE = 42
SCRIPT_PLAQUE = 43
SCRIPT_STATUS = 44                   # pedal lights and the mutation flag to USER1..8
MUTATE_LINE_ID = 500
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


def build(title: str = "Museum", acc: str = "internal") -> MuseumMap:
    """The museum map: the shared lane hall and gallery (mapgen/room.py), the display,
    the pedals and the line MUTATE rewires."""
    net = load(SOURCE)
    circuit = lower(net, solo={MUTATION})
    m = MapModel()
    conveyor = conveyor_tag_for(circuit)
    pedal_tags = [conveyor + 1 + j for j in range(7)]
    gal = build_gallery(m, circuit, conveyor)
    tiles, display_tags = _display(m, circuit, gal)
    spots = _pedals(m, gal, pedal_tags)
    mutate_line, target, dst, src, amount = _mutation_line(m, circuit, gal, spots)

    layout, sched, machine = finish(m, circuit, gal, tiles, conveyor, set(display_tags),
                                    (spots["rest"].x, spots["rest"].y), title)
    controls = controls_source(pedal_tags, target, dst.name, src.name, amount)
    bad = ui_violations(controls, pedal_tags)
    if bad:
        raise AssertionError(f"museum control ACS reads a neuron: {bad[0]}")
    source = machine + "\n" + controls
    behavior = compile_acs(source, "museum.acs", acc)
    info = manifest(layout, sched, title)
    info["museum"] = {"spots": {k: [v.x, v.y] for k, v in spots.items()},
                      "read_script": SCRIPT_READ, "status_script": SCRIPT_STATUS}
    cm = CompiledMap("MAP01", title, circuit, layout, sched, m.textmap(), source, behavior, info)
    return MuseumMap(cm, spots, pedal_tags, display_tags, mutate_line, net)


def _display(m: MapModel, circuit, gal) -> tuple[dict, list[int]]:
    """The display: output accumulators as recessed ceiling panels over the middle."""
    display = seven_boxes(gal.cx, gal.y0 + 820, 224, 48, 8)
    tiles = {}
    display_tags = []
    for s in SEGMENTS:
        node = circuit.net.by_name(f"show_{s}")
        tag = circuit.acc_light[node.id]
        tiles[tag] = light_panel(m, gal.room, display[s], circuit, tag, gal.floor, gal.ceil,
                                 f"display segment {s}: the accumulator light of show_{s}",
                                 floor_tex="FLAT14", ceil_tex="FLAT2")
        display_tags.append(tag)
    return tiles, display_tags


def _pedals(m: MapModel, gal, pedal_tags) -> dict[str, Spot]:
    """A seven-segment digit of pedals on the floor near the entrance; READ, MUTATE and
    RESTORE. Returns the named spots a driver warps a visitor to."""
    cx, gy0, g_floor, g_ceil = gal.cx, gal.y0, gal.floor, gal.ceil
    spots: dict[str, Spot] = {}
    pedals = seven_boxes(cx - 420, gy0 + 420, 96, 40, 24)
    for j, s in enumerate(SEGMENTS):
        px, py = pad(m, gal.room, pedals[s], Sector(g_floor + 4, g_ceil, PEDAL_OFF,
                                                   tag=pedal_tags[j], floor_tex="FLAT22",
                                                   comment=f"pedal {s}"),
                     SCRIPT_PEDAL + j, f"pedal {s} toggles seg[{j}]")
        spots[s] = Spot(s, px, py)
    for k, (name, script, tex, light) in enumerate([("READ", SCRIPT_READ, "FLAT3", 224),
                                                    ("MUTATE", SCRIPT_MUTATE, "FLAT5_3", 160),
                                                    ("RESTORE", SCRIPT_RESTORE, "FLAT5_1", 160)]):
        px, py = pad(m, gal.room, _box(cx + 420, gy0 + 220 + 200 * k, 96, 96),
                     Sector(g_floor + 4, g_ceil, light, floor_tex=tex, comment=f"{name} pedal"),
                     script, f"{name} pedal")
        spots[name] = Spot(name, px, py)
    spots["rest"] = Spot("rest", cx, gy0 + 100)
    return spots


def _mutation_line(m: MapModel, circuit, gal, spots: dict[str, Spot]):
    """The line MUTATE rewires, and a plaque in front of it. Returns (line index, target
    light tag, destination node, source node, the line's amount)."""
    cx, gy0, ry0 = gal.cx, gal.y0, gal.hall_box[1]
    src, dst = (circuit.net.by_name(n) for n in MUTATION)
    lane = next(g for g in gal.geoms if g.lane.node == src.id)
    target = circuit.acc_light[dst.id]
    k = next(i for i, (x, sp, a0, a1) in enumerate(lane.lines) if a0 == target)
    mutate_line = lane.line_index[k]
    m.lines[mutate_line].id = MUTATE_LINE_ID
    m.lines[mutate_line].comment = f"MUTATE flips this line: {MUTATION[0]} -> {MUTATION[1]}"
    plaque_x = lane.lines[k][0]
    pad(m, gal.room, _box(plaque_x, ry0 - 40, 96, 32),
        Sector(gal.floor + 2, gal.ceil, 255, floor_tex="FLAT2", comment="plaque"),
        SCRIPT_PLAQUE, "plaque")
    spots["plaque"] = Spot("plaque", plaque_x, ry0 - 40)
    spots["view"] = Spot("view", cx, gy0 + 200)
    spots["window"] = Spot("window", plaque_x - 200, ry0 - 60)
    # South of pedal d, facing it: a visitor walking north steps onto d first.
    spots["approach"] = Spot("approach", cx - 420, gy0 + 120)
    return mutate_line, target, dst, src, lane.lines[k][3]


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


class MuseumDriver(GalleryDriver):
    """Plays the museum as a visitor: warps onto pedals (or walks), reads the display."""

    machine_pedals = ("READ", "MUTATE", "RESTORE")
    what = "the museum's machine"

    def __init__(self, wad: str, info: dict, render: bool = False):
        super().__init__(wad, info, info["museum"]["spots"], render)

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
        self.shot("view", path, pitch)
