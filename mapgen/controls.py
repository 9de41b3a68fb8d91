"""The control room: every compiled circuit as a place to play (`build.py compile`).

Owns the room a visitor uses a circuit from, its controls and the ACS behind them:

- **displays** computed by the network (mapgen/display.py): every output as sign and
  digits, every input set with switches as digits too, a wide vector as an image; the
  display's sectors are the display neurons' lights themselves;
- **controls**, by input: a floor **pad** toggling a 0..1 input (its light shows it; a
  binary vector is a grid of pads); **DEC / INC switches** for a wider input, its value
  shown beside them; **preset pedals** for a wide non-binary vector (an image: its
  elements as tiles); a **RUN switch**, and the **AUTO pad**, which makes every input
  change run the machine (on at the start). A network with state across steps (spiking,
  recurrent: `prev`, `steps open`) runs one step per RUN, AUTO off at the start, and gets
  **NEW SEQUENCE** (the next run resets membranes and prev lanes to their init; with
  fed-back inputs every later run of a sequence is a fed step). A `done` output is shown
  like any other: RUN goes on stepping after it, NEW SEQUENCE starts again;
- **labels**: each control and display has a strip where the visitor stands that prints
  its name (and its range: static text from the netlist, never a value);
- the room is the gallery of mapgen/room.py: the visitor starts at its south end facing
  north, every control in rows ahead, the lane hall behind the window.

The controls' ACS moves control state only: an input is set to a constant, or one step
up or down within its range; a run is asked for; a name is printed. It never reads a light
or a plane of the machine and never prints a number (`control_violations` checks every
line), so everything on the floor is the dolls' work. The manifest's "controls" entry
says where each control is and how to walk to it (engine/visitor.py plays it).
"""
from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass, field

from dsl.ir import Netlist

from . import display as D
from .circuit import lower
from .compile import CompiledMap, compile_acs
from .layout import conveyor_tag_for, inset_sector
from .program import SCRIPT_BEGIN, SCRIPT_INFER, manifest
from .room import (ROOM_CEIL, ROOM_FLOOR, box, build_gallery, finish, hall_geometry, pad,
                   seven_boxes, seven_size, switch)
from .udmf import MapModel, Sector

WIDE = 16                   # a non-binary vector longer than this gets presets, not switches
PRESETS = 4
CONTROL_BASE = 20000        # control scripts: clear of the machine's, below the GZDoom probe
S_LOOP, S_STATUS, S_RUN, S_AUTO, S_NEWSEQ = range(CONTROL_BASE, CONTROL_BASE + 5)
S_FIRST = CONTROL_BASE + 10
PAD_OFF, PAD_ON = 96, 255
LIGHT = 176                 # the room's light (and every ceiling's in it)
ROW_WIDTH = 2048            # rows of controls wrap beyond this
AISLE = 176                 # between rows: where the visitor walks and stands
STAND = 40                  # a switch is pressed from this far south of its face
WALK = 120                  # the aisle's walking line, south of its row
MARGIN = 160                # from the room's west wall to the first control
SWITCH_W, SWITCH_D = 48, 32
PAD, PAD_GAP = 64, 64
NUMBER = (96, 24, 8)        # an output's digits (in the ceiling): segment length, thickness, gap
DIAL = (28, 8, 3)           # an input's digits (in the floor)


@dataclass
class Control:
    """One thing the visitor uses: a pad to step on or a switch to press."""
    name: str                 # "x[2] INC", "x[0]", "RUN", "AUTO", "x preset 1"
    kind: str                 # "pad" or "switch"
    action: str               # toggle, dec, inc, preset, run, auto, newseq
    script: int
    aisle: float              # y of the aisle it is reached from
    approach: list            # waypoints from the aisle to where the visitor stands
    face: float | None = None  # angle to face for USE (a switch)
    input: int | None = None  # the input it changes
    preset: int | None = None  # which preset (a preset pedal)
    say: str = ""             # the name it prints when used


@dataclass
class Widget:
    """A block of the room: its size, what it shows and controls, how to build it."""
    kind: str                 # number, dial, pads, presets, run
    w: float
    h: float
    what: dict = field(default_factory=dict)


@dataclass
class Room:
    controls: list[Control]
    labels: list[tuple[int, str]]          # (script, text)
    displays: D.Displays
    looks: dict[str, list[float]]          # display -> where to read it: x, y, its aisle
    inputs: list[dict]                     # per input: name, lo, hi, start, kind
    start: tuple[float, float]
    corridor: float                        # x of the free column joining every aisle
    pads: dict[int, int]                   # input -> its pad's light tag
    blank: list[int]                       # display lights the dolls write: dark at start
    presets: list[list[int]]
    stepped: bool = False                  # state across steps: each RUN is one step


# -- what the room shows and controls ----------------------------------------------------
def input_kinds(net: Netlist) -> dict[int, str]:
    """Input position -> pad, dial, preset or none (a constant)."""
    kinds = {}
    for group, ids in net.groups.items():
        if not net.nodes[ids[0]].is_input:
            continue
        for nid in ids:
            lo, hi = net.nodes[nid].gate.lo, net.nodes[nid].gate.hi
            k = net.inputs.index(nid)
            kinds[k] = ("none" if lo == hi else "pad" if hi - lo == 1 else
                        "preset" if len(ids) > WIDE else "dial")
    return kinds


def start_value(lo: int, hi: int) -> int:
    return 0 if lo <= 0 <= hi else lo


def with_displays(net: Netlist) -> tuple[Netlist, D.Displays, dict[int, str]]:
    kinds = input_kinds(net)
    dials = [net.inputs[k] for k in sorted(kinds) if kinds[k] == "dial"]
    images = []
    for group, ids in net.groups.items():
        if net.nodes[ids[0]].is_input and kinds[net.inputs.index(ids[0])] == "preset":
            images.append(list(ids))
    new, disp = D.add_displays(net, numbers=list(net.outputs) + dials, images=images)
    return new, disp, kinds


def presets(net: Netlist, ids: list[int]) -> list[list[int]]:
    """A wide vector's presets: all low, all high, and seeded patterns (deterministic)."""
    import random

    lo, hi = net.nodes[ids[0]].gate.lo, net.nodes[ids[0]].gate.hi
    rng = random.Random(f"{net.name}:{net.nodes[ids[0]].group}")
    out = [[lo] * len(ids), [hi] * len(ids)]
    while len(out) < PRESETS:
        out.append([rng.randint(lo, hi) for _ in ids])
    return out


# -- sizes ------------------------------------------------------------------------------
def _digits_size(K: int, minus: bool, spec) -> tuple[float, float]:
    """Width and height of a panel of K digits (and a minus sign) of segments `spec`."""
    w, h = seven_size(*spec)
    pitch = w + spec[0] / 2
    return K * pitch + (pitch if minus else 0) + spec[0] / 2, h + spec[0]


def widgets(net: Netlist, disp: D.Displays, kinds: dict[int, str]) -> list[list[Widget]]:
    """The room's rows, north to south: the outputs, the inputs, RUN and AUTO."""
    numbers = {d.shows: d for d in disp.numbers}
    outs = []
    for o in net.outputs:
        d = numbers[net.nodes[o].name]
        w, h = _digits_size(len(d.digits), d.minus is not None, NUMBER)
        outs.append(Widget("number", w, h, {"display": d}))
    ins = []
    for group, ids in net.groups.items():
        if not net.nodes[ids[0]].is_input:
            continue
        ks = [net.inputs.index(i) for i in ids]
        kind = kinds[ks[0]]
        if kind == "pad":
            cols = len(ks) if len(ks) <= 3 else math.ceil(math.sqrt(len(ks)))
            rows = math.ceil(len(ks) / cols)
            ins.append(Widget("pads", cols * (PAD + PAD_GAP) - PAD_GAP,
                              rows * (PAD + PAD_GAP) - PAD_GAP, {"inputs": ks, "cols": cols}))
        elif kind == "dial":
            for k in ks:
                d = numbers[net.nodes[net.inputs[k]].name]
                w, h = _digits_size(len(d.digits), d.minus is not None, DIAL)
                ins.append(Widget("dial", w + 2 * (SWITCH_W + 24), max(h, SWITCH_D),
                                  {"input": k, "display": d}))
        elif kind == "preset":
            image = next(i for i in disp.images if i.shows[0] == net.nodes[ids[0]].name)
            cols = math.ceil(math.sqrt(len(ks)))
            tile = 24 if cols <= 16 else 16
            side = cols * tile
            ins.append(Widget("presets", PRESETS * 160 + side, max(96, side),
                              {"inputs": ks, "image": image, "cols": cols, "tile": tile,
                               "presets": presets(net, ids)}))
    run = Widget("run", 3 * 160 + (160 if net.steps > 1 else 0), 96, {})
    return [r for r in (_wrap(outs), _wrap(ins)) for r in r] + [[run]]


def _wrap(ws: list[Widget]) -> list[list[Widget]]:
    rows, row, width = [], [], 0.0
    for w in ws:
        if row and width + w.w > ROW_WIDTH:
            rows.append(row)
            row, width = [], 0.0
        row.append(w)
        width += w.w + 96
    return rows + ([row] if row else [])


# -- building -----------------------------------------------------------------------------
class _Builder:
    """The state of one room under construction (see `compile_room`)."""

    def __init__(self, m: MapModel, gal, circuit, net: Netlist, disp: D.Displays, tag: int):
        self.m, self.gal, self.circuit, self.net = m, gal, circuit, net
        self.ids = {n.name: n.id for n in circuit.net.nodes}
        self.tiles: dict = {}
        self.tag = tag
        self.script = S_FIRST
        self.room = Room([], [], disp, {}, [], (0.0, 0.0), 0.0, {}, [], [],
                         stepped=net.steps > 1)

    def new_tag(self) -> int:
        self.tag += 1
        return self.tag

    def new_script(self) -> int:
        self.script += 1
        return self.script - 1

    def label(self, rect: tuple, text: str) -> None:
        """A strip of floor that prints `text` when the visitor steps on it."""
        script = self.new_script()
        self.room.labels.append((script, text))
        pad(self.m, self.gal.room, rect, self.sector(0, LIGHT, "FLAT5_4", f"label: {text}"),
            script, f"label: {text}")

    def sector(self, rise: int, light: int, tex: str, comment: str, tag: int = 0) -> Sector:
        """A sector of the room's floor `rise` higher, under the room's own ceiling."""
        return Sector(self.gal.floor + rise, self.gal.ceil, light, tag=tag, floor_tex=tex,
                      ceil_tex=ROOM_CEIL, ceiling_light=LIGHT, comment=comment)

    def light(self, name: str) -> int:
        """The tag of the light that holds node `name`'s value (shown in the room)."""
        return self.circuit.value_light[self.ids[name]]

    def panel(self, rect: tuple, what: str, up: bool) -> int:
        """A display's dark background, in the floor (or with `up`, in the ceiling);
        its other plane keeps the room's light."""
        return self.m.rect_sector(*rect, self._plane(24, "FLAT14", what, up), around=self.gal.room)

    def _plane(self, light: int, tex: str, what: str, up: bool, **kw) -> Sector:
        g = self.gal
        return Sector(g.floor, g.ceil, light, floor_tex=ROOM_FLOOR if up else tex,
                      ceil_tex=tex if up else ROOM_CEIL, ceiling_light=None if up else LIGHT,
                      floor_light=LIGHT if up else None, comment=what, **kw)

    def segment(self, around: int, rect: tuple, name: str, what: str, up: bool) -> None:
        """A display segment in a panel: the sector that is node `name`'s light."""
        tag = self.light(name)
        light = self.circuit.light(tag)
        # "<role> light of <node>": the comment modding/machine.py names lights by.
        s = self._plane(light.reset, "FLAT18", f"{what}: {light.role} light of {name}", up,
                        tag=tag, more_tags=tuple(light.groups))
        self.tiles[tag] = inset_sector(self.m, around, rect, s)

    def digits(self, d: D.Digits, x0: float, y0: float, spec, up: bool = False
               ) -> tuple[float, float]:
        """d's digits from (x0, y0), most significant digit west: in the floor, or with
        `up` in the ceiling (turned so that they read looking up from the south, segment
        a nearest); their size."""
        w, h = _digits_size(len(d.digits), d.minus is not None, spec)
        panel = self.panel((x0, y0, x0 + w, y0 + h), f"display of {d.shows}", up)
        dw, dh = seven_size(*spec)
        pitch, cy = dw + spec[0] / 2, y0 + h / 2
        x = x0 + spec[0] / 4 + dw / 2
        flip = {"a": "d", "d": "a", "b": "c", "c": "b", "f": "e", "e": "f", "g": "g"}
        if d.minus:
            self.segment(panel, seven_boxes(x, cy, *spec)["g"], d.minus, f"minus of {d.shows}",
                         up)
            x += pitch
        for k in reversed(range(len(d.digits))):
            boxes = seven_boxes(x, cy, *spec)
            for seg, name in zip(D.SEGMENTS, d.digits[k]):
                self.segment(panel, boxes[flip[seg] if up else seg], name,
                             f"{d.shows} digit {k} segment {seg}", up)
            x += pitch
        return w, h

    def control(self, c: Control) -> Control:
        self.room.controls.append(c)
        return c

    def walk(self, y0: float) -> float:
        return y0 - WALK


def _number(b: _Builder, wd: Widget, x0: float, y0: float) -> None:
    d = wd.what["display"]
    w, h = b.digits(d, x0, y0, NUMBER, up=True)
    b.label((x0, y0 - 72, x0 + w, y0 - 8), f"output {d.shows}")
    b.room.looks[d.shows] = [x0 + w / 2, y0 - STAND, b.walk(y0)]


def _dial(b: _Builder, wd: Widget, x0: float, y0: float) -> None:
    k, d = wd.what["input"], wd.what["display"]
    name = b.net.nodes[b.net.inputs[k]].name
    lo, hi = d.lo, d.hi
    b.digits(d, x0 + SWITCH_W + 24, y0, DIAL)
    for which, sx in (("DEC", x0), ("INC", x0 + wd.w - SWITCH_W)):
        script = b.new_script()
        switch(b.m, b.gal.room, (sx, y0, sx + SWITCH_W, y0 + SWITCH_D), script,
               f"{which} {name}", b.gal.floor, b.gal.ceil, LIGHT)
        b.control(Control(f"{name} {which}", "switch", which.lower(), script, b.walk(y0),
                          [[sx + SWITCH_W / 2, b.walk(y0)], [sx + SWITCH_W / 2, y0 - STAND]],
                          face=90.0, input=k))
    b.label((x0, y0 - 72, x0 + wd.w, y0 - 8), f"input {name} ({lo}..{hi}): DEC left, INC right")
    b.room.looks[d.shows] = [x0 + wd.w / 2, y0 - STAND, b.walk(y0)]


def _pads(b: _Builder, wd: Widget, x0: float, y0: float) -> None:
    cols = wd.what["cols"]
    pitch = PAD + PAD_GAP
    for j, k in enumerate(wd.what["inputs"]):
        r, c = divmod(j, cols)
        px, py = x0 + c * pitch + PAD / 2, y0 + wd.h - r * pitch - PAD / 2
        node = b.net.nodes[b.net.inputs[k]]
        lo, hi = node.gate.lo, node.gate.hi
        tag, script = b.new_tag(), b.new_script()
        on = start_value(lo, hi) == hi
        pad(b.m, b.gal.room, box(px, py, PAD, PAD),
            b.sector(4, PAD_ON if on else PAD_OFF, "FLAT22",
                     f"pad: toggles {node.name} ({lo}/{hi})", tag), script, f"pad {node.name}")
        b.room.pads[k] = tag
        gap_x = px - pitch / 2
        b.control(Control(node.name, "pad", "toggle", script, b.walk(y0),
                          [[gap_x, b.walk(y0)], [gap_x, py], [px, py]], input=k,
                          say=f"{node.name} ({lo}/{hi})"))


def _presets(b: _Builder, wd: Widget, x0: float, y0: float) -> None:
    image, cols, tile = wd.what["image"], wd.what["cols"], wd.what["tile"]
    group = b.net.nodes[b.net.inputs[wd.what["inputs"][0]]].group
    for i, values in enumerate(wd.what["presets"]):
        px, py = x0 + 160 * i + 48, y0 + 48
        script = b.new_script()
        pad(b.m, b.gal.room, box(px, py, 96, 96),
            b.sector(4, 200, "FLAT5_3", f"pedal: preset {i + 1} of {group}"), script,
            f"preset {i + 1} of {group}")
        b.room.presets.append(values)
        b.control(Control(f"{group} preset {i + 1}", "pad", "preset", script, b.walk(y0),
                          [[px, b.walk(y0)], [px, py]], preset=len(b.room.presets) - 1,
                          say=f"{group}: preset {i + 1}"))
    ix0, side = x0 + PRESETS * 160, cols * tile
    panel = b.panel((ix0, y0, ix0 + side, y0 + side), f"image of {group}", False)
    for j, name in enumerate(image.pixels):
        r, c = divmod(j, cols)
        tx, ty = ix0 + c * tile, y0 + side - (r + 1) * tile
        b.segment(panel, (tx + 1, ty + 1, tx + tile - 1, ty + tile - 1), name,
                  f"image of {group}, element {j}", False)
    b.room.looks[group] = [ix0 + side / 2, y0 - STAND, b.walk(y0)]


def _run(b: _Builder, wd: Widget, x0: float, y0: float) -> None:
    switch(b.m, b.gal.room, (x0, y0, x0 + 64, y0 + SWITCH_D), S_RUN, "RUN", b.gal.floor,
           b.gal.ceil, LIGHT)
    b.control(Control("RUN", "switch", "run", S_RUN, b.walk(y0),
                      [[x0 + 32, b.walk(y0)], [x0 + 32, y0 - STAND]], face=90.0))
    b.label((x0 - 16, y0 - 72, x0 + 80, y0 - 8), "RUN: the dolls compute every display")
    # With state across steps every run is a step: AUTO starts off, or setting an input
    # to 7 with INC would run seven steps.
    pads = [("AUTO", "auto", S_AUTO, PAD_OFF if b.room.stepped else PAD_ON,
             "AUTO: when lit, every input change runs the machine")]
    if b.room.stepped:
        pads.append(("NEW SEQUENCE", "newseq", S_NEWSEQ, 200,
                     "NEW SEQUENCE: the next run begins a new sequence"))
    for i, (name, action, script, light, text) in enumerate(pads):
        px, py = x0 + 160 * (i + 1) + 48, y0 + 48
        tag = b.new_tag()
        pad(b.m, b.gal.room, box(px, py, 96, 96), b.sector(4, light, "FLAT3", name, tag),
            script, name)
        b.room.pads[name] = tag
        b.control(Control(name, "pad", action, script, b.walk(y0), [[px, b.walk(y0)], [px, py]],
                          say=text))


BUILD = {"number": _number, "dial": _dial, "pads": _pads, "presets": _presets, "run": _run}


def _place_rows(b, rows: list[list[Widget]], build: dict, x_left: float,
                y_top: float) -> float:
    """Each row of widgets left to right (`build[kind]` makes one), rows downwards with an
    aisle after each; returns the y below the last aisle."""
    for row in rows:
        x, h = x_left, max(w.h for w in row)
        for wd in row:
            build[wd.kind](b, wd, x, y_top - h)
            x += wd.w + 96
        y_top -= h + AISLE
    return y_top


def _rows_extent(rows: list[list[Widget]]) -> tuple[float, float]:
    width = max(sum(w.w for w in row) + 96 * (len(row) - 1) for row in rows)
    depth = 128 + sum(max(w.h for w in row) + AISLE for row in rows) + 64
    return width, depth


def compile_room(net: Netlist, *, title: str | None = None, map_name: str = "MAP01",
                 acc: str = "internal", door_budget: int | None = None
                 ) -> tuple[CompiledMap, Netlist]:
    """`net` compiled with its control room: (the map, the netlist it computes: `net` with
    its display neurons, which is what the WAD carries)."""
    title = title or net.name
    full, disp, kinds = with_displays(net)
    circuit = lower(full, door_budget=door_budget)
    rows = widgets(net, disp, kinds)
    width, depth = _rows_extent(rows)
    m = MapModel()
    conveyor = conveyor_tag_for(circuit)
    lanes = hall_geometry(circuit)
    gal = build_gallery(m, circuit, conveyor, depth=depth, half_width=width / 2 + MARGIN,
                        light=LIGHT, lanes=lanes)
    b = _Builder(m, gal, circuit, net, disp, conveyor)
    x_left = gal.cx - width / 2
    y_top = _place_rows(b, rows, BUILD, x_left, gal.y1 - 128)
    room = b.room
    room.start = (gal.cx, y_top + AISLE - WALK)
    room.corridor = x_left - 80
    room.inputs = [{"name": net.nodes[i].name, "lo": net.nodes[i].gate.lo,
                    "hi": net.nodes[i].gate.hi, "kind": kinds[k],
                    "start": start_value(net.nodes[i].gate.lo, net.nodes[i].gate.hi)}
                   for k, i in enumerate(net.inputs)]
    written = {t for lane in circuit.lanes for door in lane.doors for t, _ in door.adds}
    room.blank = sorted(t for t in b.tiles if t in written)
    # The visitor runs one inference at a time: no pipelined beat, whose unrolled batch
    # script would be most of the map's ACS (mlp3: 8,947 lines with it, 1,021 without).
    layout, sched, machine = finish(m, circuit, gal, b.tiles, conveyor, set(b.tiles),
                                    room.start, title, pipeline=False)
    info = manifest(layout, sched, title)
    controls = controls_source(room, info)
    bad = control_violations(controls)
    if bad:
        raise AssertionError(f"control room ACS is not control state only: {bad[0]}")
    source = machine + "\n" + controls
    behavior = compile_acs(source, f"{net.name}.acs", acc)
    info["controls"] = room_manifest(room)
    return CompiledMap(map_name, title, circuit, layout, sched, m.textmap(), source, behavior,
                       info), full


def room_manifest(room: Room) -> dict:
    return {"controls": [asdict(c) for c in room.controls], "looks": room.looks,
            "inputs": room.inputs, "start": list(room.start), "corridor": room.corridor,
            "pads": {str(k): v for k, v in room.pads.items()}, "displays": room.displays.to_json(),
            "status_script": S_STATUS, "presets": room.presets}


# -- the controls' ACS ----------------------------------------------------------------------
def _esc(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


def controls_source(room: Room, info: dict) -> str:
    """The control scripts: the run loop, the status script (tests), one script per
    control and per label."""
    L = ["// " + "-" * 86,
         "// The visitor's controls (mapgen/controls.py). They set inputs to constants or one",
         "// step up or down within their range, ask for runs and print names. They never",
         "// read a light or a plane of the machine, and never print a value: every number",
         "// on the floor is the dolls' work.",
         "int runs;        // runs started here: each is acknowledged by its number",
         "int wanted;      // runs asked for (RUN; an input change while AUTO is on)",
         f"int auto_run = {0 if room.stepped else 1};",
         "int fresh = 1;   // the next run begins a new sequence (membranes, prev lanes to init)", ""]
    L += _loop_script(room, info)
    L += [f"script {S_STATUS} (int token)  // for tests: where the run loop is", "{",
          "    user1 = runs;", "    user2 = wanted;", "    user3 = auto_run;",
          "    read_ack = token;", "}", ""]
    for c in room.controls:
        L += _control_script(room, c)
    for script, text in room.labels:
        L += [f"script {script} (void)", "{", f'    Print(s:"{_esc(text)}");', "}", ""]
    return "\n".join(L)


def _loop_script(room: Room, info: dict) -> list[str]:
    L = [f"script {S_LOOP} OPEN  // the run loop: one run at a time, as asked", "{"]
    L += [f"    inputs[{k}] = {i['start']};" for k, i in enumerate(room.inputs) if i["start"]]
    L += ["    while (ack != -1) Delay(1);  // the machine is ready"]
    L += [f"    Light_ChangeToValue({t}, {D.OFF});  // a display, dark until the first run"
          for t in room.blank]
    begin, fed = info.get("begin_script"), info.get("fed_script")
    # Without state, runs asked for during a run collapse into one (on the inputs as they
    # are then); with state every RUN is a step of its own.
    L += ["    while (TRUE)", "    {", "        if (wanted != runs)", "        {",
          "            runs = runs + 1;" if room.stepped else "            runs = wanted;"]
    if fed:
        # A run after the first of a sequence is a fed step: the fed-back inputs take
        # their nodes' values (the fed script copies lights), not the controls'.
        start = f"ACS_Execute({begin}, 0); " if begin else ""
        L += [f"            if (fresh) {{ {start}fresh = 0; ACS_Execute({SCRIPT_INFER}, 0, runs); }}",
              f"            else ACS_Execute({fed}, 0, runs);"]
    else:
        if begin:
            L.append(f"            if (fresh) {{ ACS_Execute({begin}, 0); fresh = 0; }}")
        L.append(f"            ACS_Execute({SCRIPT_INFER}, 0, runs);")
    L += ["            while (ack != runs) Delay(1);", "        }", "        Delay(1);", "    }",
          "}", ""]
    return L


def _control_script(room: Room, c: Control) -> list[str]:
    body = []
    ask = "if (auto_run) wanted = wanted + 1;"
    if c.action in ("toggle", "dec", "inc"):
        i = room.inputs[c.input]
        k, lo, hi = c.input, i["lo"], i["hi"]
    if c.action == "toggle":
        t = room.pads[c.input]
        body = [f"if (inputs[{k}] == {hi}) {{ inputs[{k}] = {lo}; Light_ChangeToValue({t}, {PAD_OFF}); }}",
                f"else {{ inputs[{k}] = {hi}; Light_ChangeToValue({t}, {PAD_ON}); }}", ask]
    elif c.action == "dec":
        body = [f"if (inputs[{k}] > {lo}) {{ inputs[{k}] = inputs[{k}] - 1; {ask} }}"]
    elif c.action == "inc":
        body = [f"if (inputs[{k}] < {hi}) {{ inputs[{k}] = inputs[{k}] + 1; {ask} }}"]
    elif c.action == "preset":
        group = _preset_inputs(room, c)
        body = [f"inputs[{k}] = {v};" for k, v in zip(group, room.presets[c.preset])] + [ask]
    elif c.action == "run":
        body = ["wanted = wanted + 1;"]
    elif c.action == "auto":
        t = room.pads["AUTO"]
        body = [f"if (auto_run) {{ auto_run = 0; Light_ChangeToValue({t}, {PAD_OFF}); }}",
                f"else {{ auto_run = 1; Light_ChangeToValue({t}, {PAD_ON}); }}"]
    elif c.action == "newseq":
        body = ["fresh = 1;"]
    if c.say:
        body.append(f'Print(s:"{_esc(c.say)}");')
    return [f"script {c.script} (void)  // {c.name}", "{"] + ["    " + s for s in body] + ["}", ""]


def _preset_inputs(room: Room, c: Control) -> list[int]:
    """The inputs a preset pedal sets: its vector's, in order."""
    group = c.name.rsplit(" preset ", 1)[0]
    return [k for k, i in enumerate(room.inputs)
            if i["kind"] == "preset" and re.sub(r"\[\d+\]$", "", i["name"]) == group]


_INT = r"-?\d+"
_CONTROL_FORMS = [
    r"int (runs|wanted|auto_run|fresh)( = [01])?;",
    r"script \d+ (OPEN|\(void\)|\(int token\))",
    r"[{}]",
    rf"inputs\[\d+\] = {_INT};",
    r"while \(ack != -1\) Delay\(1\);",
    rf"Light_ChangeToValue\(\d+, {_INT}\);",
    r"while \(TRUE\)",
    r"if \(wanted != runs\)",
    r"runs = (wanted|runs \+ 1);",
    r"if \(fresh\) \{ ACS_Execute\(\d+, 0\); fresh = 0; \}",
    r"if \(fresh\) \{ (ACS_Execute\(\d+, 0\); )?fresh = 0; ACS_Execute\(\d+, 0, runs\); \}",
    r"else ACS_Execute\(\d+, 0, runs\);",
    r"ACS_Execute\(\d+, 0, runs\);",
    r"while \(ack != runs\) Delay\(1\);",
    r"Delay\(1\);",
    r"user[123] = (runs|wanted|auto_run);",
    r"read_ack = token;",
    rf"if \(inputs\[(\d+)\] == {_INT}\) \{{ inputs\[\1\] = {_INT}; "
    rf"Light_ChangeToValue\(\d+, \d+\); \}}",
    rf"else \{{ inputs\[\d+\] = {_INT}; Light_ChangeToValue\(\d+, \d+\); \}}",
    rf"if \(inputs\[(\d+)\] > {_INT}\) \{{ inputs\[\1\] = inputs\[\1\] - 1; "
    r"if \(auto_run\) wanted = wanted \+ 1; \}",
    rf"if \(inputs\[(\d+)\] < {_INT}\) \{{ inputs\[\1\] = inputs\[\1\] \+ 1; "
    r"if \(auto_run\) wanted = wanted \+ 1; \}",
    r"if \(auto_run\) wanted = wanted \+ 1;",
    r"wanted = wanted \+ 1;",
    r"if \(auto_run\) \{ auto_run = 0; Light_ChangeToValue\(\d+, \d+\); \}",
    r"else \{ auto_run = 1; Light_ChangeToValue\(\d+, \d+\); \}",
    r"fresh = 1;",
    r'Print\(s:"([^"\\]|\\.)*"\);',
]
_CONTROL_RE = [re.compile(f"^{f}$") for f in _CONTROL_FORMS]


def control_violations(source: str) -> list[str]:
    """Lines of control ACS that are not control-state operations (module docstring): in
    particular any read of the machine (a light, a plane, an actor) or a printed value."""
    bad = []
    for raw in source.splitlines():
        line = raw.split("//", 1)[0].strip()
        if line and not any(r.match(line) for r in _CONTROL_RE):
            bad.append(raw.strip())
    return bad
