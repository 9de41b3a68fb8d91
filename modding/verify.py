"""Verify an edited WAD: what changed, whether the map still works, and what it computes.

Owns three things, all judged on the map as it is now (not on what it was built as):

- the **diff** of the map's netlist (modding/extract.py) against the netlist embedded when
  it was built, lowered the same way, as readable lines (`line digit7 -> show_a: +1 -> -1`,
  `bias of y: 3 -> 4`, `gate of h: doors at 4, 8 -> 4, 9`);
- the **static checks** of mapgen/checks.py, redone on the parsed map, each error naming
  the sector, line or vertex and its position: geometry (doors on their lane, rises a doll
  climbs, headroom, lines inside their lane and crossed before the next door), schedule (one
  mover per plane per tic, phases long enough for the slowest doll, dolls parked on their
  pads, lanes after the lanes they read), ranges (lights and planes inside the engine's
  limits) and budgets (coordinates);
- an **engine run** of the WAD itself against the reference of the extracted netlist.

An edit that breaks the machine is an error with a position; it never reaches the engine
run, so it cannot come out as a wrong number.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from dsl.diagnostics import VoodooError
from mapgen import physics as P
from mapgen.lanes import ride_reach
from mapgen.program import run_tics

from .extract import ExtractError, machine_netlist, nodes_of, read_map, solo_lines
from .machine import LOWER, RAISE, SET, Machine, from_circuit, from_map
from .textmap import TextMap


@dataclass
class Finding:
    check: str          # geometry, schedule, ranges, budgets, netlist
    message: str


@dataclass
class Report:
    where: str
    changes: list[str] = field(default_factory=list)
    errors: list[Finding] = field(default_factory=list)
    engine: str = ""
    exact: bool | None = None
    extracted: str | None = None

    @property
    def ok(self) -> bool:
        return not self.errors and self.exact is not False


# ---------------------------------------------------------------------------------- diff
def _w(v) -> str:
    return "none" if v is None else f"{v:+d}"


def diff(before: Machine, after: Machine) -> list[str]:
    """Readable differences between two machines' netlists (by node name)."""
    a, _ = nodes_of(before)
    b, _ = nodes_of(after)
    A, B = {n.name: n for n in a}, {n.name: n for n in b}
    out = [f"node {k}: gone from the map" for k in A if k not in B]
    out += [f"node {k}: new in the map" for k in B if k not in A]
    for name in (n.name for n in b):
        if name not in A:
            continue
        x, y = A[name], B[name]
        if x.kind != y.kind:
            out.append(f"node {name}: {x.kind} -> {y.kind}")
        if x.doors != y.doors:
            out.append(f"gate of {name}: doors at {_doors(x.doors)} -> {_doors(y.doors)}")
        if x.base != y.base and x.kind != "identity":
            out.append(f"base value of {name}: {x.base} -> {y.base}")
        for src in list(x.weights) + [s for s in y.weights if s not in x.weights]:
            if x.weights.get(src) != y.weights.get(src):
                out.append(f"line {src} -> {name}: {_w(x.weights.get(src))} -> "
                           f"{_w(y.weights.get(src))}")
        if x.bias != y.bias and not (set(x.weights) ^ set(y.weights)) and x.kind != "input":
            out.append(f"bias of {name}: {x.bias} -> {y.bias}")
        if x.spike != y.spike:
            out.append(f"spike of {name}: {x.spike} -> {y.spike}")
    pa = {l.tid: l.phase for l in before.lanes}
    for l in after.lanes:
        if l.tid in pa and pa[l.tid] != l.phase:
            out.append(f"doll {l.tid} rides in phase {pa[l.tid]} -> {l.phase}")
    names = [[m.lights[t].name if t in m.lights else f"light {t}" for t in m.outputs]
             for m in (before, after)]
    if names[0] != names[1]:
        out.append(f"outputs: {', '.join(names[0])} -> {', '.join(names[1])}")
    return out


def _doors(doors) -> str:
    if not doors:
        return "(none)"
    return ", ".join(str(t) if d == 1 else f"{t} ({d:+d})" for t, d in doors)


# -------------------------------------------------------------------------------- checks
def _at(tm: TextMap, sector: int, boxes) -> str:
    b = boxes[sector] if 0 <= sector < len(boxes) else None
    if b is None:
        return f"sector {sector}"
    return f"sector {sector} at ({(b[0] + b[2]) / 2:g}, {(b[1] + b[3]) / 2:g})"


def _line_at(tm: TextMap, i: int) -> str:
    (x1, y1), (x2, y2) = tm.line_ends(i)
    return f"line {i} at ({(x1 + x2) / 2:g}, {(y1 + y2) / 2:g})"


def lane_names(m: Machine) -> dict[int, str]:
    """tid -> the name of the node whose lane it is."""
    out = {}
    for lane in m.lanes:
        src = lane.source
        if src[0] == "light" and src[1] in m.lights:
            out[lane.tid] = m.lights[src[1]].name
        elif lane.doors and m.value_target(lane.doors[0]) in m.lights:
            out[lane.tid] = m.lights[m.value_target(lane.doors[0])].name
        else:
            out[lane.tid] = f"doll {lane.tid}" + (" (clock)" if src[0] == "none" else "")
    return out


def check_geometry(tm: TextMap, m: Machine, step: int = 24) -> list[Finding]:
    """Every lane's sectors in a row, its doors on it, its rises within what a doll climbs
    (`step`: the player class's MaxStepHeight the WAD declares)."""
    out = []
    boxes = tm.sector_boxes()
    names = lane_names(m)
    chains = {}
    for lane in m.lanes:
        who = names[lane.tid]
        on_lane = {s.sector for s in lane.segments}
        chains.update({s: lane for s in on_lane})
        if lane.door_tag:
            for i in range(len(tm.sectors)):
                tags = tm.sector_tags(i)
                if tags and tags[0] == lane.door_tag and i not in on_lane:
                    end = lane.segments[-1]
                    out.append(Finding("geometry", f"{_at(tm, i, boxes)}: a door of {who} "
                                       f"(tag {lane.door_tag}) is not on {who}'s lane, whose "
                                       f"sectors run from its spawn strip to x={end.x1:g} "
                                       f"(sector {end.sector}): a door moved off its landing "
                                       "is never reached by the doll"))
        if len(lane.segments) < 3 or lane.segments[-1].kind == "door":
            out.append(Finding("geometry", f"{_at(tm, lane.segments[-1].sector, boxes)}: the "
                               f"lane of {who} ends here, not in an end strip after its last "
                               "door"))
        out += _rises(tm, lane, who, boxes, step)
        out += _landings(tm, lane, who)
    out += _stray_lines(tm, chains)
    return out


def _rises(tm, lane, who, boxes, step: int = 24) -> list[Finding]:
    out = []
    rise = P.MAX_RISE if step <= P.MAX_STEP else (step - P.MAX_STEP) // 2  # lanes.step_height
    parked = bool(_special_lines(tm, "Sector_SetFriction", 0))  # the doll is put on its pad
    for k, (a, b) in enumerate(zip(lane.segments, lane.segments[1:])):
        if parked and k == 0:
            continue
        if b.floor - a.floor > rise:
            out.append(Finding("geometry", f"{_at(tm, b.sector, boxes)}: the lane of {who} "
                               f"rises {b.floor - a.floor} units here, more than the "
                               f"{rise} a doll climbs at lane speed"))
        if b.floor < a.floor:
            out.append(Finding("geometry", f"{_at(tm, b.sector, boxes)}: the lane of {who} "
                               f"drops from {a.floor} to {b.floor}: door thresholds must rise"))
        if a.kind == "static" and b.kind == "static" and \
                min(a.ceiling, b.ceiling) - max(a.floor, b.floor) < P.DOLL_HEIGHT:
            out.append(Finding("geometry", f"{_at(tm, b.sector, boxes)}: "
                               f"{min(a.ceiling, b.ceiling) - max(a.floor, b.floor)} units of "
                               f"headroom in the lane of {who}, less than the doll's "
                               f"{P.DOLL_HEIGHT}"))
    return out


def _landings(tm, lane, who) -> list[Finding]:
    """Every line of a door is crossed before the next door can stop the doll."""
    out = []
    segs = lane.segments
    for k, s in enumerate(segs):
        if s.kind != "door":
            continue
        nxt = next((t for t in segs[k + 1:] if t.kind == "door"), segs[-1])
        limit = nxt.x0 - P.DOLL_RADIUS - 8 if nxt.kind == "door" else nxt.x1
        for i, x, *_ in lane.lines:
            if s.x1 < x < nxt.x0 and x > limit:
                out.append(Finding("geometry", f"{_line_at(tm, i)}: in the lane of {who}, "
                                   f"{nxt.x0 - x:g} units before the next door: a doll stopped "
                                   "by that door may not cross it"))
    return out


def _stray_lines(tm: TextMap, chains) -> list[Finding]:
    """Light lines floating in a sector must lie inside it, across its lane's middle."""
    out = []
    boxes = tm.sector_boxes()
    for i, ln in enumerate(tm.linedefs):
        sp = int(ln.get("special", 0) or 0)
        f, b = tm.side_sector(i, "front"), tm.side_sector(i, "back")
        if sp not in (RAISE, LOWER, SET) or f != b or f < 0:
            continue
        (x1, y1), (x2, y2) = tm.line_ends(i)
        box = boxes[f]
        lane = chains.get(f)
        if lane is None:
            out.append(Finding("geometry", f"{_line_at(tm, i)} changes light {ln.get('arg0', 0)}"
                               f" but floats in sector {f}, which is on no lane"))
            continue
        ymid = (lane.y[0] + lane.y[1]) / 2
        xm = (x1 + x2) / 2
        if box is None or not (box[0] < xm < box[2]) or not (min(y1, y2) < ymid < max(y1, y2)):
            out.append(Finding("geometry", f"{_line_at(tm, i)} changes light "
                               f"{ln.get('arg0', 0)} but lies outside its lane (sector {f}, "
                               f"x {box[0]:g}..{box[2]:g}, the doll rides at y={ymid:g}): a "
                               "line moved out of a lane is never crossed"))
    return out


def check_schedule(tm: TextMap, m: Machine, circuit=None) -> list[Finding]:
    out = []
    boxes = tm.sector_boxes()
    names = lane_names(m)
    writes: dict[int, list[tuple[int, int]]] = {}
    for tic, tag in m.writes:
        writes.setdefault(tag, []).append(tic)
    for i in range(len(tm.sectors)):
        seen: dict[int, int] = {}
        for tag in tm.sector_tags(i):
            for tic in writes.get(tag, []):
                if tic in seen and seen[tic] != tag:
                    out.append(Finding("schedule", f"{_at(tm, i, boxes)} carries tags "
                                       f"{seen[tic]} and {tag}, both written in tic {tic}: two "
                                       "movers on one plane in one tic (the engine drops the "
                                       "second)"))
                seen[tic] = tag
    for lane in m.lanes:
        who = names[lane.tid]
        start = m.parks.get(lane.tid)
        if start is None or len(lane.segments) < 2:
            continue
        pad = lane.segments[1]
        if not (pad.x0 + P.DOLL_RADIUS <= start[0] <= pad.x1 - P.DOLL_RADIUS
                and lane.y[0] < start[1] < lane.y[1]):
            out.append(Finding("schedule", f"{_at(tm, pad.sector, boxes)}: the doll of {who} "
                               f"is parked at ({start[0]:g}, {start[1]:g}), not with its whole "
                               "box on its pad"))
        travel = ride_reach([ln[1] for ln in lane.lines], start[0],
                            lane.segments[-1].x1 - P.DOLL_RADIUS - start[0])
        need = run_tics(travel)
        have = m.phase_tics[lane.phase][1] if lane.phase < len(m.phase_tics) else 0
        if have < need:
            out.append(Finding("schedule", f"{_at(tm, lane.segments[-1].sector, boxes)}: the "
                               f"doll of {who} rides {travel:g} units to its last line: it needs {need} "
                               f"tics but phase {lane.phase} gives {have}; it could still be "
                               "in a door when that door moves"))
    out += _copy_times(tm, m, circuit, names)
    out += _dependencies(m, names)
    return out


def _copy_times(tm, m: Machine, circuit, names) -> list[Finding]:
    """Door ceilings must land within the copy delay, and their mover must not wrap."""
    out = []
    # The values ACS writes come from the extracted netlist; without one, the floors alone.
    plane = {l.tid: (l.plane_lo, l.plane_hi) for l in circuit.lanes} if circuit else {}
    for lane in m.lanes:
        if not lane.door_tag:
            continue
        floors = [s.floor for s in lane.segments]
        lo, hi = plane.get(lane.tid, (min(floors), max(floors)))
        lo, hi = min(lo, *floors), max(hi, *floors)
        speed = m.speeds.get(lane.door_tag, 0)
        copy = m.phase_tics[lane.phase][0] if lane.phase < len(m.phase_tics) else 0
        if speed <= 0 or -(-max(hi - lo, 1) * 8 // speed) > copy:
            out.append(Finding("schedule", f"the doors of {names[lane.tid]} (tag "
                               f"{lane.door_tag}) move up to {hi - lo} units at speed {speed}: "
                               f"more than the {copy} tics phase {lane.phase} waits"))
        if P.plane_move_wraps(speed, max(abs(lo), abs(hi))):
            out.append(Finding("schedule", f"the doors of {names[lane.tid]} move at speed "
                               f"{speed} with heights up to {max(abs(lo), abs(hi))}: the "
                               "engine's fixed-point plane height wraps around"))
    return out


def _dependencies(m: Machine, names) -> list[Finding]:
    out = []
    adds: dict[int, set[int]] = {}
    for lane in m.lanes:
        for d in lane.doors:
            for t, _ in d.lines:
                for u in m.groups.get(t, (t,)):
                    adds.setdefault(u, set()).add(lane.phase)
    for lane in m.lanes:
        if lane.source[0] == "light":
            late = [p for p in adds.get(lane.source[1], ()) if p >= lane.phase
                    and not (m.lights.get(lane.source[1]) and
                             m.lights[lane.source[1]].role == "membrane")]
            if late:
                out.append(Finding("schedule", f"the lane of {names[lane.tid]} reads light "
                                   f"{lane.source[1]} in phase {lane.phase}, but a lane of phase "
                                   f"{max(late)} still adds to it"))
    return out


def check_dolls(tm: TextMap, m: Machine) -> list[Finding]:
    """What moves the dolls: one player-1 start on every lane's spawn strip (a voodoo doll;
    a lane without one never rides), the last player-1 start on no lane (it is the player),
    and the floors they ride: every lane sector past the pad carries one tag, which a
    Sector_SetFriction line makes frictionless (each with the friction bit) and a
    Scroll_Floor line carries the spawn strips (the naming ride); or, in a map of the
    conveyor geometry, a Scroll_Floor line carries every lane at the doll speed (the
    schedule's run times assume it)."""
    out: list[Finding] = []
    boxes = tm.sector_boxes()
    names = lane_names(m)
    starts = [(k, float(t.get("x", 0)), float(t.get("y", 0))) for k, t in enumerate(tm.things)
              if int(t.get("type", 0) or 0) == 1]

    def inside(x, y, lane) -> bool:   # the lane's own strip (closets share a sector)
        s = lane.segments[0]
        return s.x0 < x < s.x1 and lane.y[0] < y < lane.y[1]

    on_lane = set()
    for lane in m.lanes:
        spawn = lane.segments[0].sector
        here = [k for k, x, y in starts if inside(x, y, lane)]
        on_lane.update(here)
        if len(here) != 1:
            out.append(Finding("dolls", f"{_at(tm, spawn, boxes)}: the spawn strip of "
                               f"{names[lane.tid]} holds {len(here)} player-1 starts (things "
                               f"{', '.join(map(str, here)) or 'none'}), not one: "
                               + ("its lane has no doll and never rides" if not here else
                                  "two dolls would ride one lane")))
    if starts and starts[-1][0] in on_lane:
        out.append(Finding("dolls", f"thing {starts[-1][0]}: the last player-1 start is the "
                           "player, but this one is a lane's doll: the map's own player start "
                           "is gone or comes before the dolls"))
    return out + _conveyor(tm, m, names, boxes)


def _lane_tag(tm: TextMap, carried) -> int:
    """The tag most of the riding sectors carry (a door also carries its own first)."""
    count: dict[int, int] = {}
    for _, s in carried:
        for t in tm.sector_tags(s.sector)[s.kind == "door":]:
            count[t] = count.get(t, 0) + 1
    return max(count, key=lambda t: (count[t], -t)) if count else 0


def _special_lines(tm: TextMap, special: str, tag: int) -> list[int]:
    return [i for i, ln in enumerate(tm.linedefs)
            if int(ln.get("special", 0) or 0) == P.SPECIAL[special]
            and int(ln.get("arg0", 0) or 0) == tag]


def _conveyor(tm: TextMap, m: Machine, names, boxes) -> list[Finding]:
    out: list[Finding] = []
    if m.lanes and _special_lines(tm, "Sector_SetFriction", 0):
        return _glide(tm, m, names, boxes)
    carried = [(lane, s) for lane in m.lanes for k, s in enumerate(lane.segments) if k != 1]
    if not carried:
        return out
    tag = _lane_tag(tm, carried)  # the pad (segment 1) is the one sector that does not carry
    for lane, s in carried:
        if tag not in tm.sector_tags(s.sector):
            out.append(Finding("dolls", f"{_at(tm, s.sector, boxes)} in the lane of "
                               f"{names[lane.tid]} does not carry the conveyor tag {tag}: the "
                               "doll stops there"))
    return out + _scroll_line(tm, tag, "the lanes' conveyor")


def _scroll_line(tm: TextMap, tag: int, what: str) -> list[Finding]:
    """The Scroll_Floor line that carries `tag` at the doll speed, or what is wrong."""
    ours = _special_lines(tm, "Scroll_Floor", tag)
    if not ours:
        scrolls = [i for i, ln in enumerate(tm.linedefs)
                   if int(ln.get("special", 0) or 0) == P.SPECIAL["Scroll_Floor"]]
        others = ", ".join(f"{_line_at(tm, i)} scrolls tag {tm.linedefs[i].get('arg0', 0)}"
                           for i in scrolls[:3])
        return [Finding("dolls", f"no Scroll_Floor line carries {what} tag "
                        f"{tag}" + (f" ({others})" if others else "") + ": no doll rides")]
    ln = tm.linedefs[ours[0]]
    (x1, y1), (x2, y2) = tm.line_ends(ours[0])
    bits, how = int(ln.get("arg1", 0) or 0), int(ln.get("arg2", 0) or 0)
    if not (bits & 4 and how in (1, 2) and y1 == y2 and x2 - x1 == P.SCROLL_LINE_LENGTH):
        return [Finding("dolls", f"{_line_at(tm, ours[0])}: the Scroll_Floor line of "
                        f"{what} (tag {tag}) must carry things (arg2 1 or 2) along its "
                        f"own vector (arg1 4), +x and {P.SCROLL_LINE_LENGTH} units long "
                        f"({P.DOLL_SPEED} units per tic, as the schedule assumes); it has "
                        f"arg1 {bits}, arg2 {how}, vector ({x2 - x1:g}, {y2 - y1:g})")]
    return []


def _glide(tm: TextMap, m: Machine, names, boxes) -> list[Finding]:
    """Frictionless lanes: every sector past the pad but the doors is untagged with the
    friction bit, a Sector_SetFriction line of tag 0 (every untagged sector) gives friction
    1.0, and the spawn strips are carried."""
    out: list[Finding] = []
    for lane in m.lanes:
        for s in lane.segments[2:]:
            if s.kind == "door":
                continue
            special = int(tm.sectors[s.sector].get("special", 0) or 0)
            if tm.sector_tags(s.sector) or not special & P.FRICTION_SPECIAL:
                out.append(Finding("dolls", f"{_at(tm, s.sector, boxes)} in the lane of "
                                   f"{names[lane.tid]} is not frictionless (no tag, special "
                                   f"bit {P.FRICTION_SPECIAL}): the doll slows there"))
    line = tm.linedefs[_special_lines(tm, "Sector_SetFriction", 0)[0]]
    if int(line.get("arg1", 0) or 0) < P.NO_FRICTION:
        out.append(Finding("dolls", f"the Sector_SetFriction line of the lanes (tag 0) has "
                           f"amount {line.get('arg1', 0)}, not {P.NO_FRICTION}: a released "
                           "doll slows down and misses the schedule"))
    spawn_tags = {t for lane in m.lanes for t in tm.sector_tags(lane.segments[0].sector)}
    for t in sorted(spawn_tags):
        out += _scroll_line(tm, t, "the spawn strips'")
    return out


def check_ranges(tm: TextMap, m: Machine, circuit=None) -> list[Finding]:
    out = []
    boxes = tm.sector_boxes()
    for i, sec in enumerate(tm.sectors):
        for key in ("heightfloor", "heightceiling"):
            v = int(sec.get(key, 0))
            if not P.PLANE_MIN <= v <= P.PLANE_MAX:
                out.append(Finding("ranges", f"{_at(tm, i, boxes)}: {key} {v} is outside the "
                                   f"engine's {P.PLANE_MIN}..{P.PLANE_MAX}"))
    if circuit is not None:
        for l in circuit.lights:
            if l.lo < P.LIGHT_MIN or l.hi > P.LIGHT_MAX:
                ml = m.lights.get(l.tag)
                where = _at(tm, ml.sector, boxes) if ml else f"light {l.tag}"
                out.append(Finding("ranges", f"{where}: the {l.role} light of "
                                   f"{ml.name if ml else l.tag} can reach {l.lo}..{l.hi}, "
                                   f"outside the light range {P.LIGHT_MIN}..{P.LIGHT_MAX}"))
        for lane in circuit.lanes:
            if lane.plane_lo < P.PLANE_MIN or lane.plane_hi > P.PLANE_MAX:
                out.append(Finding("ranges", f"the doors of tag {lane.door_tag} are sent to "
                                   f"{lane.plane_lo}..{lane.plane_hi}, outside the plane range"))
    return out


def check_budgets(tm: TextMap) -> list[Finding]:
    out = []
    for i, v in enumerate(tm.vertices):
        x, y = float(v["x"]), float(v["y"])
        if not (P.COORD_MIN <= x <= P.COORD_MAX and P.COORD_MIN <= y <= P.COORD_MAX):
            out.append(Finding("budgets", f"vertex {i} at ({x:g}, {y:g}) is outside the "
                               f"engine's coordinates {P.COORD_MIN}..{P.COORD_MAX}"))
    return out


# ---------------------------------------------------------------------------------- driver
def embedded_machine(path: str, map_index: int, solo) -> Machine | None:
    """The machine of the netlist embedded in the WAD (its tile for a tiled WAD); None for
    a WAD without one. A damaged netlist lump, or one that no longer builds, is a
    VoodooError naming the lump."""
    from acs.wad import read_wad
    from mapgen.circuit import lower
    from mapgen.wadcheck import NETLIST_LUMP, read_manifest, read_netlist

    contents = read_wad(path)
    net = read_netlist(path, contents)
    if net is None:
        return None
    infos = list(read_manifest(path, contents).values())
    if len(infos) > 1:
        # The tile's netlist: planned again as the compiler planned it (automatically, or
        # into as many maps as the WAD holds), known right by its inputs and outputs.
        from mapgen.tiles import plan_tiles

        info = infos[map_index]
        for plan in (plan_tiles(net), plan_tiles(net, n_tiles=len(infos))):
            if len(plan) == len(infos) and plan[map_index].inputs == \
                    info.get("tile_inputs") and plan[map_index].outputs == info.get("tile_outputs"):
                net = plan[map_index].net
                break
        else:
            raise ExtractError(f"{path}: the {NETLIST_LUMP} lump's netlist does not split into "
                               "the WAD's tiles (their inputs and outputs differ)")
    return from_circuit(lower(net, solo=solo), net.steps)


def _step_height(path: str) -> int:
    """The MaxStepHeight of the player class a WAD declares in DECORATE (Doom's 24 if none)."""
    import re
    from acs.wad import read_wad

    try:
        lumps = dict(read_wad(path).lumps)
    except Exception:   # a PK3 or a damaged WAD: read_map has already said what it can
        return 24
    m = re.search(rb"MaxStepHeight\s+(\d+)", lumps.get("DECORATE", b""))
    return int(m.group(1)) if m else 24


def verify_map(path: str, map_name: str | None = None, runs: int = 8, seed: int = 0,
               engine: bool = True) -> Report:
    from dsl.parser import parse
    from mapgen.circuit import lower

    idx, name, tm, behavior, info = read_map(path, map_name)
    where = f"{path}:{name}"
    rep = Report(where)
    m = from_map(tm, behavior, where, info)
    try:
        before = embedded_machine(path, idx, solo_lines(m))
    except VoodooError as e:
        before = None
        rep.errors.append(Finding("netlist", "the netlist embedded in the WAD is damaged "
                                  "(nothing to diff against): " + str(e).splitlines()[0]))
    else:
        if before is None:
            rep.changes.append("(no netlist embedded in this WAD: nothing to diff against)")
        else:
            rep.changes = diff(before, m)
    circuit = None
    try:
        ex = machine_netlist(m, name.lower(), where)
        rep.extracted = ex.text
        circuit = lower(parse(ex.text, f"{where}.dnet"))
    except ExtractError as e:
        rep.errors.append(Finding("netlist", str(e).split(": ", 1)[-1]))
    rep.errors += (check_geometry(tm, m, _step_height(path)) + check_dolls(tm, m) + check_schedule(tm, m, circuit)
                   + check_ranges(tm, m, circuit) + check_budgets(tm))
    if rep.errors:
        rep.engine = "not run: the map has errors"
    elif not engine:
        rep.engine = "not run (--no-engine)"
    else:
        _engine_run(rep, path, name, info, parse(rep.extracted, f"{where}.dnet"), runs, seed)
    return rep


def _engine_run(rep: Report, path: str, map_name: str, info: dict | None, net, runs: int,
                seed: int) -> None:
    from engine.runner import MapRunner, compare, compare_sequence

    if info is None:
        rep.engine = "not run: the WAD has no manifest (VNETINFO) naming its scripts"
        return
    import numpy as np

    info = dict(info, input_ranges=[list(r) for r in net.input_ranges()])
    rng = np.random.default_rng(seed)
    r = net.input_ranges()
    rows = [[lo for lo, _ in r], [hi for _, hi in r]]
    rows += [[int(rng.integers(lo, hi + 1)) for lo, hi in r] for _ in range(max(0, runs - 2))]
    with MapRunner(path, info, map_name) as runner:
        if net.multi_step:  # one run: its fixed steps, or --runs steps of an open netlist
            from dsl.sequence import plan_steps, random_sequence

            n = runs if net.open else net.steps
            seq = plan_steps(net, random_sequence(net, n, seed)[:n], n)
            results = compare_sequence(runner, net, net, seq)
        else:
            results = [compare(runner, net, net, x) for x in rows]
    exact = sum(c.exact for c in results)
    rep.exact = exact == len(results)
    rep.engine = (f"{exact}/{len(results)} {'EXACT' if rep.exact else 'MISMATCH'} against the "
                  "reference of the extracted netlist")
    for c in results:
        if not c.exact:
            rep.engine += f"\n    input {c.inputs}: engine {c.engine} reference {c.reference}"
            break
