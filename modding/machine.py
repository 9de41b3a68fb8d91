"""The machine a map builds, read from the compiler's Circuit or from the map itself.

A `Machine` is what the engine actually runs, with nothing the map does not carry: lights
(tag, role, reset, group tags), lanes (door tag, doll, phase, where ACS takes its doors'
value from, and per door its threshold, the lines a doll crosses after it and the lights
they change), and the outputs ACS reads. `from_circuit` reads it from `mapgen.circuit.lower`;
`from_map` reads it from a TEXTMAP and its BEHAVIOR lump:

- lights are sectors whose tag ACS resets (names and roles from the sector comments the
  compiler writes, `acc light of h[3]`; without comments, `n<tag>`);
- a lane is the chain of sectors a doll rides: from the sector holding its Thing_ChangeTID
  line, east through portals into sectors of the same width;
- doors are the chain's sectors carrying the tag ACS writes with Ceiling_MoveToValue;
  threshold = floor + DOLL_HEIGHT; a door's lines are the special lines floating in the
  sectors after it (front and back side in one sector), in x order;
- phases, input slots and resets come from the bus ops of scripts 2 and 3
  (modding/behavior.py); outputs from the USER globals script 2 writes last;
- state across steps: a door copy script 2 makes before it resets the lights is a prev
  lane (source ("state", light)); script 6's such copies onto an input lane feed that input
  back; what script 3 sets a light that script 2 also resets is an init (a light only
  script 3 sets is a membrane).

Two machines are equal when every one of those fields is: that is what "the map computes
the same network" means here (docs/modding.md).
"""
from __future__ import annotations

import re
import struct
from dataclasses import dataclass, field

from mapgen import physics as P
from mapgen.program import (SCRIPT_BEGIN, SCRIPT_FED, SCRIPT_INFER, SCRIPT_INPUT_BASE,
                            SCRIPT_READ_BASE)

from .behavior import BehaviorError, read_scripts
from .textmap import MapError, TextMap

RAISE, LOWER, SET = (P.SPECIAL[k] for k in ("Light_RaiseByValue", "Light_LowerByValue",
                                          "Light_ChangeToValue"))
TID_SPECIAL = P.SPECIAL["Thing_ChangeTID"]
_LIGHT_COMMENT = re.compile(r"\b(acc|value|membrane|accumulator|mirror) light of (\S+)")


@dataclass
class MLight:
    tag: int
    name: str
    role: str                  # acc, value, membrane
    reset: int
    groups: tuple = ()
    persistent: bool = False
    sector: int = -1           # where it is in the map (not compared)

    def key(self):
        return (self.tag, self.name, self.role, self.reset, tuple(sorted(self.groups)),
                self.persistent)


@dataclass
class MDoor:
    threshold: int
    lines: tuple               # (tag, amount): Light_RaiseByValue / LowerByValue
    sets: tuple = ()           # (tag, value): Light_ChangeToValue
    sector: int = -1
    line_index: tuple = ()     # map line of each entry of lines + sets (not compared)

    def key(self):
        # Additions to lights commute (physics.md), so their order on a landing is not part
        # of the machine; sets come after them, in order.
        return (self.threshold, tuple(sorted(self.lines)), self.sets)


@dataclass
class Segment:
    """One sector of a lane as the map has it (for the checks)."""
    sector: int
    x0: float
    x1: float
    floor: int
    ceiling: int
    kind: str                  # door or static


@dataclass
class MLane:
    tid: int
    phase: int
    source: tuple              # ("input", k), ("light", tag), ("state", tag), ("none",)
    door_tag: int
    doors: list[MDoor]
    prelude: tuple = ()        # (tag, amount) lines before the first door
    prelude_sets: tuple = ()
    segments: list[Segment] = field(default_factory=list)
    lines: list[tuple] = field(default_factory=list)   # (map line, x, special, a0, a1)
    y: tuple = (0.0, 0.0)
    feedback: int | None = None  # an input fed back: the light its doors get on fed steps

    def key(self):
        return (self.tid, self.phase, self.source, self.door_tag,
                tuple(d.key() for d in self.doors), self.prelude, self.prelude_sets,
                self.feedback)


@dataclass
class Machine:
    lights: dict[int, MLight]
    lanes: list[MLane]
    groups: dict[int, tuple]   # group tag -> light tags carrying it
    outputs: list[int]         # value light tags, in output order
    n_inputs: int
    steps: int = 1
    # What the bus does per phase (for the timing checks): (copy tics, run tics).
    phase_tics: list[tuple[int, int]] = field(default_factory=list)
    writes: list[tuple[int, int]] = field(default_factory=list)   # (tic, door tag)
    speeds: dict[int, int] = field(default_factory=dict)          # door tag -> mover speed
    parks: dict[int, tuple] = field(default_factory=dict)         # tid -> (x, y, z) start
    # State across steps: a run of any length; light -> the init script 3 sets it to
    # (what prev lanes reading it copy at the first step); the done output's index.
    open: bool = False
    inits: dict[int, int] = field(default_factory=dict)
    done: int | None = None
    # Door tags the bus writes that no doll's chain of sectors reaches (an edit broke the
    # lane): door tag -> (source, [(sector, x, y), ...]). Not compared: a reader's finding.
    stray_doors: dict[int, tuple] = field(default_factory=dict)
    # Light tags in the order script 2 resets them, which is the circuit's order of lights,
    # so the netlist's node order (modding/extract). Not compared.
    reset_order: list[int] = field(default_factory=list)

    def key(self):
        return (sorted(l.key() for l in self.lights.values()), [l.key() for l in self.lanes],
                sorted((g, tuple(sorted(m))) for g, m in self.groups.items()), self.outputs,
                self.n_inputs, self.open, sorted(self.inits.items()), self.done)

    def same_as(self, other: "Machine") -> bool:
        return self.key() == other.key()

    def value_target(self, door: "MDoor") -> int | None:
        """The light a door adds its step to: the first of its lines aimed at a value light
        (lines on a landing are in the map's x order, which an edit may change), else the
        first line's (a map without name comments)."""
        for t, _ in door.lines:
            if t in self.lights and self.lights[t].role == "value":
                return t
        return door.lines[0][0] if door.lines else None


# ------------------------------------------------------------------------------- from a Circuit
def from_circuit(circuit, steps: int = 1) -> Machine:
    net = circuit.net
    names = {n.id: n.name for n in net.nodes}
    lights = {l.tag: MLight(l.tag, names[l.node], l.role, l.reset, tuple(l.groups),
                            l.persistent) for l in circuit.lights}
    lanes = []
    for lane in circuit.lanes:
        doors = [MDoor(d.threshold, tuple(d.lines), tuple(d.sets)) for d in lane.doors]
        lanes.append(MLane(lane.tid, lane.phase,
                           tuple(lane.source) if lane.doors else ("none",),
                           lane.door_tag if lane.doors else 0, doors,
                           tuple((t, a) for t, a in lane.prelude if a),
                           tuple(lane.prelude_sets), feedback=lane.feedback))
    groups = {g: tuple(m) for g, m in circuit.groups.items()}
    outputs = [circuit.value_light[o] for o in net.outputs]
    inits = {lane.source[1]: net.nodes[lane.node].gate.init for lane in circuit.lanes
             if lane.source[0] == "state"}
    return Machine(lights, lanes, groups, outputs, len(net.inputs), steps, open=net.open,
                   inits=inits, done=None if net.done is None else net.outputs.index(net.done))


# --------------------------------------------------------------------------------- from a map
def from_map(tm: TextMap, behavior: bytes | None, where: str = "MAP01",
             info: dict | None = None) -> Machine:
    """Read the machine from a parsed TEXTMAP and its BEHAVIOR lump. `info` (the manifest)
    is used only for what a map cannot say: the number of time steps, and output names when
    there are too many outputs for script 2 to read."""
    ours = "not a VoodooNet machine: the map holds none" + (
        "" if info else " (and the WAD has no VNETINFO manifest)")
    hint = ("\n    hint: extract and verify read maps built by `build.py compile` or "
            "`build.py embed`")
    if behavior is None:
        raise MapError(f"{where}: {ours}: it has no BEHAVIOR lump{hint}")
    try:
        scripts = read_scripts(behavior)
    except (BehaviorError, struct.error) as e:
        raise MapError(f"{where}: {ours}: its BEHAVIOR lump is {_behavior_problem(e)}"
                       f"{hint}") from None
    base = info["infer_script"] - SCRIPT_INFER if info else 0
    if base:  # embedded in someone's map (modding/embed.py): our scripts are renumbered
        scripts = {n - base: s for n, s in scripts.items() if n >= base}
    if SCRIPT_INFER not in scripts:
        raise MapError(f"{where}: {ours}: BEHAVIOR has no script "
                       f"{SCRIPT_INFER + base} (the inference script){hint}")
    for num, s in scripts.items():
        if s.error and num in (SCRIPT_INFER, SCRIPT_BEGIN, *_input_scripts(scripts)):
            raise MapError(f"{where}: {s.error}\n    hint: the bus scripts must stay as the "
                           "compiler wrote them (rebuild the map)")
    bus = _read_bus(scripts)
    lights = _lights(tm, bus)
    lanes = _lanes(tm, bus, where)
    groups: dict[int, list[int]] = {}
    for l in lights.values():
        for g in l.groups:
            groups.setdefault(g, []).append(l.tag)
    outputs = bus["outputs"]
    if not outputs and info:
        by_name = {l.name: t for t, l in lights.items() if l.role in ("value", "acc")}
        outputs = [by_name.get(n, -1) for n in info.get("all_outputs", [])]
    steps = int(info.get("steps", 1)) if info else 1
    done = info.get("done") if info else None
    m = Machine(lights, lanes, {g: tuple(v) for g, v in groups.items()}, outputs,
                bus["n_inputs"], steps, bus["phase_tics"], bus["writes"], bus["speeds"],
                bus["parks"], open=bool(info and info.get("open")), inits=bus["inits"],
                done=done if isinstance(done, int) else None,
                stray_doors=_stray_doors(tm, bus, lanes), reset_order=list(bus["reset"]))
    return m


def _stray_doors(tm: TextMap, bus, lanes: list[MLane]) -> dict[int, tuple]:
    """Door tags the bus writes that are on no lane, with the sectors carrying them."""
    reached = {lane.door_tag for lane in lanes}
    stray = {tag: (src, []) for tag, src in bus["source"].items() if tag not in reached}
    if stray:
        boxes = tm.sector_boxes()
        for i in range(len(tm.sectors)):
            tags, b = tm.sector_tags(i), boxes[i]
            if tags and tags[0] in stray and b is not None:
                stray[tags[0]][1].append((i, (b[0] + b[2]) / 2, (b[1] + b[3]) / 2))
    return stray


def _behavior_problem(e: Exception) -> str:
    """What is wrong with a BEHAVIOR lump, as the end of a sentence."""
    text = str(e)
    if text.startswith("not an ACSe/ACSE"):
        return "not in the ACSE format our compiler writes (an older ACS0 lump, or not ACS)"
    return f"not one our compiler wrote: {text}"


def _val(v) -> int:
    if v[0] != "const":
        raise MapError(f"expected a constant in the bus, found {v}")
    return v[1]


def _input_scripts(scripts) -> list[int]:
    out = []
    while SCRIPT_INPUT_BASE + len(out) in scripts and \
            SCRIPT_INPUT_BASE + len(out) < SCRIPT_READ_BASE:
        out.append(SCRIPT_INPUT_BASE + len(out))
    return out


def _read_bus(scripts) -> dict:
    """Resets, input slots, phases (door writes and releases), outputs, from the scripts."""
    out = {"reset": {}, "persistent": {}, "stored": set(), "n_inputs": 0, "source": {},
           "phase_of_tid": {}, "phase_tics": [], "writes": [], "outputs": [], "speeds": {},
           "parks": {}, "inits": {}, "feedback": {}}
    for s in scripts.values():
        if s.type == 1:  # OPEN: every doll parked on its pad
            for op in s.ops:
                if op.kind == "call" and op.name == "SetActorPosition":
                    x, y, z = (_val(a) / 65536 for a in op.args[1:4])
                    out["parks"][_val(op.args[0])] = (x, y, z)
    for num in _input_scripts(scripts):
        s = scripts[num]
        # inputs[i] holds input i (the scripts store it there, in whatever order they take
        # the inputs: four in declaration order, or grouped by when a map wants them)
        for op in s.ops:
            if op.kind == "assign" and op.args[0][0] == "array" and op.args[1][0] == "arg":
                out["stored"].add(op.args[0][2])
        out["n_inputs"] += s.argc
    begin: dict = {}
    _resets(scripts.get(SCRIPT_BEGIN), begin)
    _resets(scripts[SCRIPT_INFER], out["reset"])
    # Script 3 starts a sequence: a membrane (no step resets it) or an init (a light that
    # prev lanes copy at the first step, reset by every step after that copy).
    for tag, v in begin.items():
        out["inits" if tag in out["reset"] else "persistent"][tag] = v
    _phases(scripts[SCRIPT_INFER], out)
    if SCRIPT_FED in scripts:
        for tag, light in _carries(scripts[SCRIPT_FED]).items():
            if out["source"].get(tag, ("",))[0] == "input":
                out["feedback"][tag] = light
    out["phase_tics"] = [tuple(p) for p in out["phase_tics"]]
    return out


def _carries(script) -> dict[int, int]:
    """Door tag -> light, for the door copies a script makes before it resets any light."""
    out = {}
    for op in script.ops:
        if op.kind == "special" and op.name == "Light_ChangeToValue":
            break
        if op.kind == "special" and op.name == "Ceiling_MoveToValue" and op.args[2][0] == "light":
            out[_val(op.args[0])] = op.args[2][1]
    return out


def _phases(script, out: dict) -> None:
    """Script 2, phase by phase: door writes, the copy delay, doll releases, the run delay;
    then the outputs it copies to USER globals. Copies before the resets are prev lanes'."""
    phase, tic, last = -1, 1, "reset"
    carried = _carries(script)
    for op in script.ops:
        if op.kind == "special" and op.name == "Ceiling_MoveToValue" or \
                op.kind == "call" and op.name == "SetActorVelocity" and _val(op.args[1]):
            starts = (op.kind == "special" and last not in ("write",)) or \
                     (op.kind == "call" and last not in ("write", "copydelay", "release"))
            if starts:
                phase += 1
                out["phase_tics"].append([0, 0])
            if op.kind == "special":
                tag, src = _val(op.args[0]), op.args[2]
                out["speeds"][tag] = _val(op.args[1])
                out["source"][tag] = (("input", src[2] if src[2] in out["stored"] else -1)
                                      if src[0] == "array" else
                                      ("state", src[1]) if tag in carried else ("light", src[1]))
                out["writes"].append((tic, tag))
                last = "write"
            else:
                out["phase_of_tid"][_val(op.args[0])] = phase
                last = "release"
        elif op.kind == "delay":
            tics = op.args[0]
            tic += tics
            if last == "write":
                out["phase_tics"][phase][0] = tics
                last = "copydelay"
            elif last == "release":
                out["phase_tics"][phase][1] = tics
                last = "run"
        elif op.kind == "assign" and op.args[0][0] == "globalvar" and op.args[1][0] == "light":
            out["outputs"].append(op.args[1][1])


def _resets(script, into: dict) -> None:
    """Light_ChangeToValue(t, v) [; Light_LowerByValue(t, w)]: t is reset to v - w."""
    if script is None:
        return
    for op in script.ops:
        if op.kind != "special":
            continue
        if op.name == "Light_ChangeToValue":
            into[_val(op.args[0])] = _val(op.args[1])
        elif op.name == "Light_LowerByValue" and _val(op.args[0]) in into:
            into[_val(op.args[0])] -= _val(op.args[1])


def _lights(tm: TextMap, bus) -> dict[int, MLight]:
    resets = {**bus["reset"], **bus["persistent"]}  # (inits are reset by script 2 too)
    lights = {}
    # A light's own sector carries its comment; a sector someone else's map lets a light
    # drive (an embedded circuit's light output) shares the tag but not the comment.
    order = sorted(range(len(tm.sectors)), key=lambda i: not _LIGHT_COMMENT.search(
        str(tm.sectors[i].get("comment", ""))))
    for i in order:
        sec = tm.sectors[i]
        tags = tm.sector_tags(i)
        if not tags or tags[0] not in resets or tags[0] in lights:
            continue
        tag = tags[0]
        m = _LIGHT_COMMENT.search(str(sec.get("comment", "")))
        role, name = (m.group(1), m.group(2)) if m else ("", f"n{tag}")
        role = "acc" if role == "accumulator" else role
        lights[tag] = MLight(tag, name, role, resets[tag], tuple(tags[1:]),
                             tag in bus["persistent"], i)
    return lights


def _lanes(tm: TextMap, bus, where: str) -> list[MLane]:
    boxes = tm.sector_boxes()
    portals = _portals(tm)
    floating = {}  # sector -> [(line, x, special, a0, a1)]
    tid_lines = {}
    for i, ln in enumerate(tm.linedefs):
        sp = int(ln.get("special", 0) or 0)
        if not sp:
            continue
        f, b = tm.side_sector(i, "front"), tm.side_sector(i, "back")
        (x1, y1), (x2, y2) = tm.line_ends(i)
        entry = (i, (x1 + x2) / 2, sp, int(ln.get("arg0", 0)), int(ln.get("arg1", 0)))
        if sp == TID_SPECIAL:
            tid_lines[entry[4]] = (i, f)
        elif sp in (RAISE, LOWER, SET) and f == b and f >= 0:
            floating.setdefault(f, []).append(entry)
    lanes = []
    walls = _walls(tm, {s for _, s in tid_lines.values()})
    for tid in sorted(bus["phase_of_tid"]):
        if tid not in tid_lines:
            raise MapError(
                f"{where}: script {SCRIPT_INFER} releases doll {tid}, but no line names it "
                "(Thing_ChangeTID): its lane is gone\n    hint: restore the lane's spawn "
                "strip or rebuild the map")
        line, spawn = tid_lines[tid]
        strip = _strip_box(tm, line, spawn, boxes, portals, walls)
        chain = [spawn] + _chain(strip[4], boxes, portals) if strip[4] is not None else \
            _chain(spawn, boxes, portals)
        lanes.append(_lane(tm, tid, bus, chain, boxes, floating, strip[:4]))
    return lanes


def _strip_box(tm: TextMap, line: int, spawn: int, boxes, portals, walls):
    """The box of one lane's spawn strip and its pad: (x0, y0, x1, y1, pad). A gliding map's
    strips are pieces of one shared sector (spawn closets), so the sector's own box spans
    many lanes: the strip runs from the nearest wall west of its naming line to the portal
    onto a pad whose y range holds that line. A sector of its own is its box (pad None:
    `_chain` finds it)."""
    (lx, ly), _ = tm.line_ends(line)
    box = boxes[spawn]
    pads = sorted((x, s) for s, x in portals.get(spawn, ()) if boxes[s] is not None
                  and x > lx and boxes[s][0] == x and boxes[s][1] <= ly <= boxes[s][3])
    if box is None or not pads or (box[1], box[3]) == (boxes[pads[0][1]][1],
                                                       boxes[pads[0][1]][3]):
        return (*(box or (0, 0, 0, 0)), None)
    x, pad = pads[0]
    west = [wx for wx, y0, y1 in walls.get(spawn, ()) if wx <= lx and y0 <= ly <= y1]
    return (max(west, default=box[0]), boxes[pad][1], x, boxes[pad][3], pad)


def _walls(tm: TextMap, sectors: set) -> dict[int, list]:
    """sector -> [(x, y0, y1)] of the vertical lines bounding it, for `sectors` only."""
    out: dict[int, list] = {}
    for i in range(len(tm.linedefs)):
        (x1, y1), (x2, y2) = tm.line_ends(i)
        sides = {tm.side_sector(i, "front"), tm.side_sector(i, "back")}
        if x1 != x2 or len(sides) == 1:   # a line floating inside a sector bounds nothing
            continue
        for s in sides & sectors:
            out.setdefault(s, []).append((x1, min(y1, y2), max(y1, y2)))
    return out


def _portals(tm: TextMap) -> dict[int, list[tuple[int, float]]]:
    """sector -> [(neighbour sector, x of the shared vertical line)]."""
    out: dict[int, list] = {}
    for i in range(len(tm.linedefs)):
        f, b = tm.side_sector(i, "front"), tm.side_sector(i, "back")
        if f < 0 or b < 0 or f == b:
            continue
        (x1, _), (x2, _) = tm.line_ends(i)
        if x1 != x2:
            continue
        out.setdefault(f, []).append((b, x1))
        out.setdefault(b, []).append((f, x1))
    return out


def _chain(start: int, boxes, portals) -> list[int]:
    """The sectors a doll rides from its spawn strip: east through vertical portals into
    sectors spanning the same y range."""
    chain = [start]
    seen = {start}
    while True:
        cur = boxes[chain[-1]]
        nxt = [s for s, x in portals.get(chain[-1], []) if x == cur[2] and s not in seen
               and boxes[s] is not None and boxes[s][1] == cur[1] and boxes[s][3] == cur[3]
               and boxes[s][0] == cur[2]]
        if not nxt:
            return chain
        chain.append(nxt[0])
        seen.add(nxt[0])


def _lane(tm, tid, bus, chain, boxes, floating, first_box=None) -> MLane:
    door_tags = {tag for tag in bus["source"]}
    segs, doors = [], []
    prelude, prelude_sets = [], []
    lines_all = []
    door_tag = 0
    for s in chain:
        sec = tm.sectors[s]
        tags = tm.sector_tags(s)
        is_door = bool(tags) and tags[0] in door_tags
        box = first_box if s == chain[0] and first_box else boxes[s]
        segs.append(Segment(s, box[0], box[2], int(sec.get("heightfloor", 0)),
                            int(sec.get("heightceiling", 0)), "door" if is_door else "static"))
        if is_door:
            door_tag = door_tag or tags[0]
            doors.append(MDoor(int(sec.get("heightfloor", 0)) + P.DOLL_HEIGHT, (), (), s))
        for entry in sorted(floating.get(s, []), key=lambda e: e[1]):
            lines_all.append(entry)
            i, x, sp, a0, a1 = entry
            add = (a0, a1 if sp == RAISE else -a1)
            if not doors:
                (prelude_sets if sp == SET else prelude).append((a0, a1) if sp == SET else add)
                continue
            d = doors[-1]
            if sp == SET:
                d.sets += ((a0, a1),)
            else:
                d.lines += (add,)
            d.line_index += (i,)
    # A lane without doors reads nothing the map can show: its source is "none".
    source = bus["source"].get(door_tag, ("none",)) if door_tag else ("none",)
    box = first_box or boxes[chain[0]]
    return MLane(tid, bus["phase_of_tid"][tid], source, door_tag, doors, tuple(prelude),
                 tuple(prelude_sets), segs, lines_all, (box[1], box[3]),
                 bus["feedback"].get(door_tag))
