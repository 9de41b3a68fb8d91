"""Hub play: a tiled network as maps a player walks through (`compile --tiles N --hub`).

Owns the maps of a hub WAD and the ACS that carries values between them. Each tile of
mapgen/tiles.py becomes a gallery (mapgen/room.py) looking onto its lane hall; the values
a map hands to a later one travel in ACS global variables, never through Python:

- **the hub array** (`global int 61:hub[]`): one slot per value that crosses maps, the
  network's inputs first (`hub_slots`). MAP01's **preset pedals** write a whole input
  vector into it (constants: a choice of sample, like the control room's presets); on
  every map the bus copies the slots of the map's inputs into its input lanes (`inputs[i]
  = hub[s]`), runs one inference (script 2, the runner's own), and copies the lights of
  the values it hands on back into their slots (`hub[s] = GetSectorLightLevel(t)`). ACS
  only copies: nothing computes on a value;
- **`global int 62:hub_map`**: how many maps have handed on. A map past the first runs
  when it is entered with the map before it done (hub_map == its index); under Python's
  runner (engine/tiled.py) nobody steps on a pedal and every map starts a new game, so
  hub_map is 0 and the hub scripts stay idle: the WAD runs there as any tiled WAD;
- **the EXIT pad**: lit once the map has handed its values on; stepping on it then
  leaves the map (Exit_Normal, to the next map; from the last map back to MAP01 to choose
  again). MAPINFO names each map's next one and skips the intermission (acs/wad.py);
- **displays** computed by the dolls (mapgen/display.py): MAP01 shows the chosen input
  (an image in the floor for a wide vector, digits for the others), the last map every
  output of the network in the ceiling, like the control room.

No hub cluster: a hub keeps every map's state when it is left (a snapshot of the whole
map, hundreds of thousands of sectors for the MNIST CNN's) and nothing needs it: the
values are in the globals, and a map entered again starts afresh and runs on them.
Each map's manifest carries a "hub" entry: its slots, where its pedals and exit are, its
displays (engine/hubplay.py plays it in ViZDoom and GZDoom).
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass

from dsl.diagnostics import VoodooError
from dsl.ir import Netlist

from . import display as D

HUB_VAR, HUB_MAP_VAR = 61, 62      # ACS globals: clear of USER1..60 (the runner's)
S_HUB, S_EXIT = 21000, 21001       # clear of the machine's, the controls' and the probe's
S_PEDAL = 21010
EXIT_OFF, EXIT_ON = 64, 255
PEDAL = 96
MAX_PRESETS = 10


@dataclass
class Preset:
    """One pedal of MAP01: a whole input vector of the network, and what it is called."""
    label: str
    values: list[int]


def hub_slots(net: Netlist, tiles) -> dict[str, int]:
    """Value name -> its slot in the hub array: the network's inputs in order, then what
    each map hands on, map by map."""
    slots = {net.nodes[i].name: k for k, i in enumerate(net.inputs)}
    for t in tiles:
        for name in t.outputs:
            slots.setdefault(name, len(slots))
    return slots


def default_presets(net: Netlist) -> list[Preset]:
    """Every input at its low, every input at its high, then seeded vectors (the control
    room's presets, over the whole input vector)."""
    import random

    ranges = net.input_ranges()
    rng = random.Random(f"{net.name}:hub")
    out = [Preset("all low", [lo for lo, _ in ranges]), Preset("all high", [hi for _, hi in ranges])]
    while len(out) < 4:
        out.append(Preset(f"sample {len(out) - 1}", [rng.randint(lo, hi) for lo, hi in ranges]))
    return out


def check_presets(net: Netlist, presets: list[Preset]) -> None:
    ranges = net.input_ranges()
    if not 1 <= len(presets) <= MAX_PRESETS:
        raise VoodooError(f"a hub WAD takes 1 to {MAX_PRESETS} presets, not {len(presets)}")
    for p in presets:
        if len(p.values) != len(ranges):
            raise VoodooError(f"preset {p.label!r}: {len(p.values)} values, but "
                              f"{net.name} takes {len(ranges)} inputs")
        for k, (v, (lo, hi)) in enumerate(zip(p.values, ranges)):
            if not lo <= v <= hi:
                name = net.nodes[net.inputs[k]].name
                raise VoodooError(f"preset {p.label!r}: {name} = {v} is outside its range "
                                  f"{lo}..{hi}")


def check_hub_net(net: Netlist) -> None:
    if net.steps != 1 or any(n.is_prev for n in net.nodes) or net.feedback:
        raise VoodooError(f"{net.source}: --hub plays a network of one step (no state "
                          "across steps, no prev, no feedback)")


# -- compiling --------------------------------------------------------------------------
def compile_hub(net: Netlist, tiles, title: str, presets: list[Preset] | None = None,
                acc: str = "internal", door_budget: int | None = None,
                workers: int | None = None) -> list:
    """The tiles as hub maps MAP01.. (compiled in parallel processes like compile_tiles)."""
    import os

    check_hub_net(net)
    presets = presets or default_presets(net)
    check_presets(net, presets)
    slots = hub_slots(net, tiles)
    groups = {g: len(ids) for g, ids in net.groups.items() if net.nodes[ids[0]].is_input}
    jobs = [(t.net, k, len(tiles), slots, presets if k == 0 else None, groups,
             f"{title} ({k + 1}/{len(tiles)})", acc, door_budget) for k, t in enumerate(tiles)]
    workers = min(len(jobs), workers or os.cpu_count() or 1)
    if workers <= 1:
        return [_hub_one(j) for j in jobs]
    import multiprocessing as mp

    from tqdm import tqdm

    with mp.get_context("spawn").Pool(workers) as pool:
        return list(tqdm(pool.imap(_hub_one, jobs, chunksize=1), total=len(jobs),
                         desc="compile hub", unit="map"))


def _hub_one(job):
    m = hub_map(*job)
    m.with_nodes()   # here, in the pool
    return m


def hub_map(tnet: Netlist, k: int, n_maps: int, slots: dict, presets, groups: dict,
            title: str, acc: str = "internal", door_budget: int | None = None):
    """Tile k's netlist as hub map k (0-based) of n_maps: its gallery, displays, pedals
    (MAP01) and exit, the machine and the hub scripts."""
    from .circuit import lower
    from .compile import CompiledMap, compile_acs
    from .controls import AISLE, MARGIN, _Builder, _place_rows, _rows_extent
    from .layout import conveyor_tag_for
    from .program import manifest
    from .room import finish
    from .udmf import MapModel

    first, last = k == 0, k == n_maps - 1
    full, disp, rows = _displays(tnet, first, last, presets, groups)
    circuit = lower(full, door_budget=door_budget)
    m = MapModel()
    conveyor = conveyor_tag_for(circuit)
    width, depth = _rows_extent(rows)
    gal = _room(m, circuit, conveyor, depth, width / 2 + MARGIN)
    b = _Builder(m, gal, circuit, tnet, disp, conveyor)
    b.hub = {"pedals": [], "exit": None, "exit_tag": None, "looks": {}}
    y_top = _place_rows(b, rows, _BUILD, gal.cx - width / 2, gal.y1 - 128)
    start = (gal.cx, y_top + AISLE - 120)
    written = {t for lane in circuit.lanes for door in lane.doors for t, _ in door.adds}
    blank = sorted(t for t in b.tiles if t in written)
    layout, sched, machine = finish(m, circuit, gal, b.tiles, conveyor, set(b.tiles), start,
                                    title, pipeline=False)
    info = manifest(layout, sched, title)
    names = {n.id: n.name for n in circuit.net.nodes}
    outs = [(slots[names[o]], circuit.value_light[o], names[o]) for o in tnet.outputs]
    ins = [(i, slots[names[nid]], names[nid]) for i, nid in enumerate(tnet.inputs)]
    source = hub_source(k, ins, outs, b, blank, presets)
    bad = hub_violations(source)
    if bad:
        raise AssertionError(f"hub ACS is not bus and control state only: {bad[0]}")
    behavior = compile_acs(machine + "\n" + source, f"{tnet.name}.acs", acc)
    shown = set(disp.nodes())
    info["hub"] = {
        "index": k, "maps": n_maps, "hub_var": HUB_VAR, "hub_map_var": HUB_MAP_VAR,
        "slots_in": [s for _, s, _ in ins], "slots_out": [s for s, _, _ in outs],
        "slots": len(slots), "start": list(start), "exit": b.hub["exit"],
        "exit_script": S_EXIT, "pedals": b.hub["pedals"],
        "presets": [{"label": p.label, "values": p.values} for p in presets or []],
        "displays": disp.to_json(), "looks": b.hub["looks"],
        "lights": {n.name: circuit.value_light[n.id] for n in circuit.net.nodes
                   if n.name in shown},
    }
    cm = CompiledMap(f"MAP{k + 1:02d}", title, circuit, layout, sched, m.textmap(),
                     machine + "\n" + source, behavior, info)
    cm.next_map = "MAP01" if last else f"MAP{k + 2:02d}"
    return cm


def _room(m, circuit, conveyor: int, depth: float, half_width: float):
    """The lanes as the plain map has them (each walled in alone) and, south of them, the
    visitor's room under an open sky (GZDoom's first frame needs sky in view: docs/
    gzdoom.md). Not the control room's gallery over a lane hall: there every lane is a
    trench cut into the hall's floor sectors, and GZDoom g4.14.2 did not get through
    loading the MNIST CNN's MAP01 built that way (10 minutes, then a crash), while it loads
    the plain one in seconds."""
    from .layout import emit_lane
    from .room import SKY, ROOM_FLOOR, Gallery, hall_geometry
    from .udmf import Sector

    geoms, hall_box = hall_geometry(circuit)
    for g in geoms:
        emit_lane(m, g, conveyor)
    cx = (hall_box[0] + hall_box[2]) / 2
    x0, x1, y1 = cx - half_width, cx + half_width, hall_box[1] - 256
    y0 = y1 - depth
    floor, ceil = 0, 256
    room = m.rect_sector(x0, y0, x1, y1, Sector(floor, ceil, 176, floor_tex=ROOM_FLOOR,
                                                 ceil_tex=SKY, comment="the hub room"),
                         tex="MARBLE1")
    return Gallery(geoms, room, room, floor, ceil, x0, y0, x1, y1, cx, hall_box)


def _displays(tnet: Netlist, first: bool, last: bool, presets, groups: dict):
    """(the tile's netlist with its display neurons, the displays, the gallery's rows):
    the last map's outputs in the ceiling; MAP01's pedals and its inputs in the floor
    (a wide vector as an image, the others as digits); every map's EXIT."""
    from .controls import NUMBER, WIDE, Widget, _digits_size, _wrap

    numbers = list(tnet.outputs) if last else []
    images, dials = [], []
    if first:
        for g, ids in tnet.groups.items():
            node = tnet.nodes[ids[0]]
            if not node.is_input or node.gate.lo == node.gate.hi:
                continue
            if groups.get(g, len(ids)) > WIDE:
                images.append(list(ids))
            else:
                dials += [i for i in ids if tnet.nodes[i].gate.lo < tnet.nodes[i].gate.hi]
    full, disp = _add_displays(tnet, numbers + dials, images)
    by_name = {d.shows: d for d in disp.numbers}
    rows = []
    if last:
        ws = []
        for o in tnet.outputs:
            d = by_name[tnet.nodes[o].name]
            w, h = _digits_size(len(d.digits), d.minus is not None, NUMBER)
            ws.append(Widget("number", w, h, {"display": d}))
        rows += _wrap(ws)
    if first:
        ws = [Widget("pedals", len(presets) * 160, PEDAL + 32, {"presets": presets})]
        for img in disp.images:
            side = math.ceil(math.sqrt(groups.get(_group(img.shows[0]), len(img.shows))))
            tile = 24 if side <= 16 else 16
            ws.append(Widget("image", side * tile, side * tile,
                             {"image": img, "cols": side, "tile": tile}))
        for i in dials:
            d = by_name[tnet.nodes[i].name]
            w, h = _digits_size(len(d.digits), d.minus is not None, (28, 8, 3))
            ws.append(Widget("shown", w, h, {"display": d}))
        rows += _wrap(ws)
    rows.append([Widget("exit", 96, 96, {"last": last})])
    return full, disp, rows


def _add_displays(tnet: Netlist, numbers: list[int], images: list[list[int]]):
    """display.add_displays for a tile's netlist. Its JSON round trip knows a vector as
    elements 0..n-1 with one range, while a tile takes some elements of a vector (the CNN's
    MAP01: 120 of the 144 pixels), each with its own range (handoff.handed_input): the
    displays are added to a copy with every vector renumbered 0..n-1, and the tile's names,
    indices and input ranges, which its manifest must keep, are put back."""
    import copy

    from dsl.ir import element_name
    from dsl.ranges import analyse

    dense = copy.deepcopy(tnet)
    groups: dict[str, list[int]] = {}
    # A tile may take some elements of a vector and compute others (the CNN's MAP02: h2):
    # the JSON form has a vector either inputs or neurons, so the inputs go apart. In node
    # order: the round trip lays the vectors out in the order they are declared.
    mixed = {g for g, ids in tnet.groups.items() if len({tnet.nodes[i].is_input for i in ids}) > 1}
    for n in dense.nodes:
        name = n.group
        if n.group in mixed and n.is_input:
            name = f"{n.group}_hub_in"
            while name in tnet.groups:
                name += "_"
        groups.setdefault(name, []).append(n.id)
        n.group = name
    dense.groups = groups
    for g, ids in groups.items():
        for j, i in enumerate(ids):
            n = dense.nodes[i]
            n.index, n.name = (j, element_name(g, j)) if n.index is not None else (None, g)
    full, disp = D.add_displays(dense, numbers=numbers, images=images)
    back = {dense.nodes[i].name: tnet.nodes[i].name for i in range(len(tnet.nodes))}
    for n in tnet.nodes:
        f = full.nodes[n.id]
        f.name, f.index, f.group = n.name, n.index, n.group
        if n.is_input:
            full.nodes[n.id].gate = n.gate
    full.groups = {**tnet.groups, **{g: ids for g, ids in full.groups.items()
                                     if g not in groups}}
    for d in disp.numbers:
        d.shows = back[d.shows]
    for img in disp.images:
        img.shows = [back[s] for s in img.shows]
    analyse(full)
    return full, disp


def _group(name: str) -> str:
    return re.sub(r"\[\d+\]$", "", name)


def _index(name: str) -> int:
    m = re.search(r"\[(\d+)\]$", name)
    return int(m.group(1)) if m else 0


# -- the gallery's blocks -----------------------------------------------------------------
def _pedals(b, wd, x0: float, y0: float) -> None:
    from .room import box, pad

    for i, p in enumerate(wd.what["presets"]):
        px, py = x0 + 160 * i + 48, y0 + wd.h - PEDAL / 2
        pad(b.m, b.gal.room, box(px, py, PEDAL, PEDAL),
            b.sector(4, 200, "FLAT5_3", f"pedal: preset {p.label}"), S_PEDAL + i,
            f"preset {p.label}")
        b.hub["pedals"].append([px, py])
        b.label((px - 56, y0 - 72, px + 56, y0 - 8), f"preset: {p.label}")


def _image(b, wd, x0: float, y0: float) -> None:
    """The chosen input, pixel by pixel at its place in the vector (a tile takes only
    some of a vector's elements: the others stay dark)."""
    img, cols, tile = wd.what["image"], wd.what["cols"], wd.what["tile"]
    side = cols * tile
    panel = b.panel((x0, y0, x0 + side, y0 + side), f"image of {_group(img.shows[0])}", False)
    for name, pixel in zip(img.shows, img.pixels):
        r, c = divmod(_index(name), cols)
        tx, ty = x0 + c * tile, y0 + side - (r + 1) * tile
        b.segment(panel, (tx + 1, ty + 1, tx + tile - 1, ty + tile - 1), pixel,
                  f"image of {_group(name)}, element {_index(name)}", False)
    b.hub["looks"][_group(img.shows[0])] = [x0 + side / 2, y0 - 40]


def _shown(b, wd, x0: float, y0: float) -> None:
    d = wd.what["display"]
    w, _ = b.digits(d, x0, y0, (28, 8, 3))
    b.label((x0, y0 - 72, x0 + w, y0 - 8), f"input {d.shows}")
    b.hub["looks"][d.shows] = [x0 + w / 2, y0 - 40]


def _number(b, wd, x0: float, y0: float) -> None:
    d = wd.what["display"]
    w, _ = b.digits(d, x0, y0, (96, 24, 8), up=True)
    b.label((x0, y0 - 72, x0 + w, y0 - 8), f"output {d.shows}")
    b.hub["looks"][d.shows] = [x0 + w / 2, y0 - 40]


def _exit(b, wd, x0: float, y0: float) -> None:
    from .room import box, pad

    tag = b.new_tag()
    cx, cy = x0 + 48, y0 + 48
    pad(b.m, b.gal.room, box(cx, cy, 96, 96),
        b.sector(4, EXIT_OFF, "GATE3", "EXIT pad: lit when the values are handed on", tag),
        S_EXIT, "EXIT")
    b.hub["exit"], b.hub["exit_tag"] = [cx, cy], tag
    b.label((x0 - 32, y0 - 72, x0 + 128, y0 - 8),
            "EXIT back to MAP01: choose another preset" if wd.what["last"] else
            "EXIT: lit when this map has handed its values on")


_BUILD = {"number": _number, "pedals": _pedals, "image": _image, "shown": _shown,
          "exit": _exit}


# -- the hub's ACS -------------------------------------------------------------------------
def hub_source(k: int, ins, outs, b, blank: list[int], presets) -> str:
    """The hub scripts of map k: the run loop (MAP01: a run per pedal; later maps: one
    run on entry, when the map before has handed on), the exit pad, the pedals, the
    labels. The values move through program.Bus (copies); the rest is control state."""
    from .program import Bus, SCRIPT_INFER

    bus = Bus()
    bus.depth = 3
    for i, slot, name in ins:
        bus.load_input(i, slot, name)
    copy_in = list(bus.lines)
    bus.lines = []
    for slot, tag, name in outs:
        bus.hand_on(slot, tag, name)
    copy_out = list(bus.lines)
    exit_tag = b.hub["exit_tag"]
    L = ["// " + "-" * 86,
         "// Hub play (mapgen/hub.py): values cross maps in the hub array. These scripts",
         "// copy the hub's slots into the input lanes, run the machine, copy what this map",
         "// hands on back into the hub, and open the EXIT. They never compute on a value.",
         f"global int {HUB_VAR}:hub[];   // one slot per value crossing maps",
         f"global int {HUB_MAP_VAR}:hub_map;  // maps that have handed on (0: none)",
         "int hub_runs;", "int hub_wanted;", "int hub_handed;", "",
         f"script {S_HUB} OPEN  // the hub's run loop", "{",
         "    while (ack != -1) Delay(1);  // the machine is ready"]
    L += [f"    Light_ChangeToValue({t}, {D.OFF});  // a display, dark until the run"
          for t in blank]
    if k:
        L += [f"    if (hub_map != {k}) terminate;  // entered without a run: stay idle",
              "    hub_wanted = 1;"]
    L += ["    while (TRUE)", "    {", "        if (hub_wanted != hub_runs)", "        {",
          "            hub_runs = hub_wanted;", "            hub_handed = 0;",
          f"            Light_ChangeToValue({exit_tag}, {EXIT_OFF});"]
    L += copy_in
    L += [f"            ACS_Execute({SCRIPT_INFER}, 0, hub_runs);",
          "            while (ack != hub_runs) Delay(1);"]
    L += copy_out
    L += [f"            hub_map = {k + 1};", "            hub_handed = 1;",
          f"            Light_ChangeToValue({exit_tag}, {EXIT_ON});", "        }",
          "        Delay(1);", "    }", "}", "",
          f"script {S_EXIT} (void)  // the EXIT pad", "{",
          "    if (hub_handed) Exit_Normal(0);",
          '    else Print(s:"EXIT: the dolls are still computing");', "}", ""]
    for i, p in enumerate(presets or []):
        L += [f"script {S_PEDAL + i} (void)  // preset {_esc(p.label)}", "{"]
        # slots 0.. are the network's inputs in order (hub_slots), read by any map
        L += [f"    hub[{slot}] = {v};" for slot, v in enumerate(p.values)]
        L += ["    hub_wanted = hub_wanted + 1;", f'    Print(s:"preset: {_esc(p.label)}");',
              "}", ""]
    for script, text in b.room.labels:
        L += [f"script {script} (void)", "{", f'    Print(s:"{_esc(text)}");', "}", ""]
    return "\n".join(L)


def _esc(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


_INT = r"-?\d+"
_HUB_FORMS = [
    rf"global int {HUB_VAR}:hub\[\];", rf"global int {HUB_MAP_VAR}:hub_map;",
    r"int hub_(runs|wanted|handed);",
    r"script \d+ (OPEN|\(void\))", r"[{}]",
    r"while \(ack != -1\) Delay\(1\);",
    rf"Light_ChangeToValue\(\d+, {_INT}\);",
    r"if \(hub_map != \d+\) terminate;",
    r"hub_wanted = (1|hub_wanted \+ 1);",
    r"while \(TRUE\)", r"if \(hub_wanted != hub_runs\)", r"hub_runs = hub_wanted;",
    r"hub_handed = [01];", r"hub_map = \d+;",
    r"ACS_Execute\(\d+, 0, hub_runs\);", r"while \(ack != hub_runs\) Delay\(1\);",
    r"Delay\(1\);",
    r"if \(hub_handed\) Exit_Normal\(0\);",
    r'else Print\(s:"([^"\\]|\\.)*"\);',
    rf"hub\[\d+\] = {_INT};",            # a pedal's constants
    r'Print\(s:"([^"\\]|\\.)*"\);',
]
_HUB_RE = [re.compile(f"^{f}$") for f in _HUB_FORMS]


def hub_violations(source: str) -> list[str]:
    """Lines of hub ACS that are neither bus copies (program.bus_violations) nor control
    state: in particular any operator on a value read from a light or the hub."""
    from .program import bus_violations

    return [text for _, text in bus_violations(source)
            if not any(r.match(text.split("//", 1)[0].strip()) for r in _HUB_RE)]
