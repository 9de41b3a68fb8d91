"""Static checks: prove a compiled map stays inside the engine's limits before writing it.

Each check reports every offender, naming the neuron, with a hint. They run on the
layout and schedule, so they judge the map that will actually be written:

- lights: every value a light can hold at any moment (partial sums included) within
  -32768..32767;
- planes: door floors and ceilings, static floors and ceilings within -32768..32767;
- door geometry: rises the doll cannot climb, landings too short for a stopped doll to have
  crossed every line of its level, static headroom below the doll's height;
- stop clearance: no line within STOP_CLEARANCE of a point where a doll can come to rest
  (door faces, the lane's end wall, its spawn and parking points), where engines differ;
- schedule: at most one plane move per plane per tic; a phase gives its slowest doll
  enough tics, so no doll stands in a door when the next inference moves its ceiling;
- carries (`check_carries`): what crosses from one step to the next (prev lanes' doors,
  fed-back inputs) is copied once per step, before its light is reset and in time for the
  doors to land before their dolls ride; the init levels the begin script sets fit a light;
- budgets: map extent inside the coordinate range, doll, sector, line and tag counts, and
  the vertices GZDoom's flat buffer takes (`flat_vertices`);
- the pipelined beat (`check_pipeline`), unrolled over several beats, both at a runner's
  interval and at the batch script's overlapping one (`fit_batch_period` picks the
  shortest that passes): one mover per door plane at a time, never while its doll rides;
  each doll parked only after it could have stopped, and back before its next release;
  every light reset, written, then read by one inference at a time, with every writer's
  ride of that inference before each read.

tests/test_checks.py builds each bad case on purpose and watches its check fire.
"""
from __future__ import annotations

from dsl.diagnostics import CompileError, Diagnostic, Pos

from . import physics as P
from .layout import Layout
from .program import RESET_ORDER, RESET_TIC, Pipeline, Schedule, lane_targets, run_tics

# What one map may hold (measured: bench/map_limits.py, docs/physics.md).
MAX_DOLLS = P.MAX_DOLLS
MAX_SECTORS = P.MAX_SECTORS
MAX_LINES = P.MAX_LINES
MAX_TAG = 65535


def _names(layout: Layout) -> dict[int, str]:
    return {n.id: n.name for n in layout.circuit.net.nodes}


def check_lights(layout: Layout) -> list[Diagnostic]:
    out = []
    names = _names(layout)
    net = layout.circuit.net
    for l in layout.circuit.lights:
        if l.lo < P.LIGHT_MIN or l.hi > P.LIGHT_MAX:
            node = net.nodes[l.node]
            out.append(Diagnostic(node.pos, f"the {l.role} light of '{names[l.node]}' can reach "
                                            f"{l.lo}..{l.hi}, outside the engine's light "
                                            f"range {P.LIGHT_MIN}..{P.LIGHT_MAX}",
                                  "use smaller weights, biases or input ranges, or requantise "
                                  "the layer before it"))
    return out


def check_planes(layout: Layout) -> list[Diagnostic]:
    out = []
    names = _names(layout)
    net = layout.circuit.net
    for g in layout.lanes:
        lane = g.lane
        node = net.nodes[lane.node]
        lo = min(lane.plane_lo, min(s.floor for s in g.segments))
        hi = max(lane.plane_hi, max(s.floor for s in g.segments) + P.DOLL_HEIGHT + P.HEADROOM_EXTRA)
        if lo < P.PLANE_MIN or hi > P.PLANE_MAX:
            out.append(Diagnostic(node.pos, f"the doors of '{names[lane.node]}' need plane "
                                            f"heights {lo}..{hi}, outside the engine's range "
                                            f"{P.PLANE_MIN}..{P.PLANE_MAX}",
                                  "narrow the neuron's accumulator range (smaller weights or "
                                  "a requantising relu before it)"))
    return out


def check_geometry(layout: Layout) -> list[Diagnostic]:
    out = []
    names = _names(layout)
    net = layout.circuit.net
    # What a doll climbs within one tic's ride: MAX_RISE up ramp stairs, or, on steep lanes,
    # what the WAD's player class steps up, shared by at most two rises (lanes.step_height).
    climb = (layout.step_height - P.MAX_STEP) // 2 if layout.circuit.steep else P.MAX_RISE
    climb = max(climb, P.MAX_RISE)
    for g in layout.lanes:
        node = net.nodes[g.lane.node]
        who = names[g.lane.node]
        ceiling = g.ceiling
        for a, b in zip(g.segments, g.segments[1:]):
            # Static headroom where the doll's box spans two sectors: only doors may block.
            top = max(a.floor, b.floor)
            if ceiling - top < P.DOLL_HEIGHT:
                out.append(Diagnostic(node.pos, f"lane of '{who}': {ceiling - top} units of "
                                                f"headroom at x={b.x0:g}, less than the doll's "
                                                f"{P.DOLL_HEIGHT}", "a bug in the layout: "
                                                "static ceilings must clear every floor"))
            if b.floor - a.floor > climb:
                out.append(Diagnostic(node.pos, f"lane of '{who}': a rise of {b.floor - a.floor} "
                                                f"at x={b.x0:g}, more than the {climb} a doll "
                                                "climbs at lane speed",
                                      "a bug in the layout: ramps must split every rise"))
            if b.floor < a.floor:
                out.append(Diagnostic(node.pos, f"lane of '{who}': the floor drops at x={b.x0:g}",
                                      "a bug in the layout: door thresholds must increase"))
        for s in g.segments:
            if s.kind == "door":
                continue
            if s.kind == "landing":
                lines = [x for x, *_ in g.lines if s.x0 < x < s.x1]
                # A doll stopped by the next door has its centre DOLL_RADIUS short of it.
                if lines and s.x1 - max(lines) < P.DOLL_RADIUS + 8:
                    out.append(Diagnostic(node.pos, f"lane of '{who}': the last line of landing "
                                                    f"{s.door} is {s.x1 - max(lines):g} units from "
                                                    "the next door, so a stopped doll may not "
                                                    "cross it", "landings need LANDING_CLEAR"))
                if s.x1 - s.x0 < 2 * P.DOLL_RADIUS + 8:
                    out.append(Diagnostic(node.pos, f"lane of '{who}': landing {s.door} is "
                                                    f"{s.x1 - s.x0:g} units long; a doll in a "
                                                    "door would also touch what follows",
                                          "landings need LANDING_CLEAR"))
    return out


def stop_points(g) -> list[tuple[float, str]]:
    """Every x where the centre of this lane's doll can come to rest: in contact with a door
    face or the end wall (closed doors block; the end wall always does), its spawn point,
    and the point it is parked at between rides. Ramps do not stop it (physics.MAX_RISE)."""
    points = [(g.spawn[0], "its spawn point"), (g.start[0], "its parking point"),
              (g.segments[0].x1 - P.DOLL_RADIUS, "its spawn strip's end")]
    points += [(s.x0 - P.DOLL_RADIUS, f"door {s.door}'s face") for s in g.segments
               if s.kind == "door"]
    points.append((g.segments[-1].x1 - P.DOLL_RADIUS, "the lane's end wall"))
    return sorted(points)


def check_stop_clearance(layout: Layout) -> list[Diagnostic]:
    """A line near a stop point may be crossed in one engine and not in another: a doll's
    stopping point varies by up to one movement substep (physics.MOVE_SUBSTEP). Each line of
    a lane must keep STOP_CLEARANCE from every point where that lane's doll can stop."""
    import bisect

    out = []
    names = _names(layout)
    net = layout.circuit.net
    for g in layout.lanes:
        stops = stop_points(g)
        xs = [x for x, _ in stops]
        for lx, special, a0, _ in g.lines:
            k = bisect.bisect_left(xs, lx - P.STOP_CLEARANCE)
            while k < len(xs) and xs[k] < lx + P.STOP_CLEARANCE:
                x, what = stops[k]
                if abs(lx - x) < P.STOP_CLEARANCE:
                    out.append(Diagnostic(net.nodes[g.lane.node].pos, (
                        f"lane of '{names[g.lane.node]}': a line (special {special}, tag {a0}) "
                        f"at x={lx:g} is {abs(lx - x):g} units from {what}, where a stopped "
                        f"doll's centre rests (x={x:g}); engines stop a doll up to "
                        f"{P.MOVE_SUBSTEP} units apart, so one would count this line and "
                        "another not"), f"keep every line at least {P.STOP_CLEARANCE} units "
                        "from a stop point (a bug in the layout: see docs/physics.md)"))
                k += 1
    return out


def check_schedule(layout: Layout, sched: Schedule) -> list[Diagnostic]:
    out = []
    net = layout.circuit.net
    names = _names(layout)
    seen: dict[tuple[int, int], int] = {}
    door_owner = {g.lane.door_tag: g.lane.node for g in layout.lanes}
    for tic, tag in sched.writes:
        if (tic, tag) in seen:
            node = door_owner.get(tag)
            out.append(Diagnostic(net.nodes[node].pos if node is not None else Pos(net.source),
                                  f"two plane moves for the doors of "
                                  f"'{names.get(node, tag)}' in tic {tic}: the engine drops "
                                  "the second one silently", "schedule one move per plane per tic"))
        seen[(tic, tag)] = 1
    for ph in sched.phases:
        need = max(run_tics(layout.lanes[i].reach()) for i in ph.lanes)
        if ph.run_tics < need:
            slow = max(ph.lanes, key=lambda i: layout.lanes[i].reach())
            node = layout.lanes[slow].lane.node
            out.append(Diagnostic(net.nodes[node].pos, f"phase {ph.index} gives its dolls "
                                                       f"{ph.run_tics} tics but the doll of "
                                                       f"'{names[node]}' needs {need}: it could "
                                                       "still be in a door when that door moves",
                                  "a bug in the schedule"))
    return out


def check_carries(layout: Layout, sched: Schedule) -> list[Diagnostic]:
    """Values carried from one step to the next (program.Carry): every prev lane's doors get
    exactly one copy and every fed-back input one copy on fed steps, each before the reset
    of the light it reads (else it would copy the reset level) and early enough that the
    doors land before the lane's doll is released; the begin script's inits fit a light."""
    from .program import door_speed, state_starts

    out = []
    net, names = layout.circuit.net, _names(layout)
    release = {i: 1 + ph.copy_tics for ph in sched.phases for i in ph.lanes}
    want = {i: ("fed" if g.lane.feedback is not None else "") for i, g in enumerate(layout.lanes)
            if g.lane.source[0] == "state" or g.lane.feedback is not None}
    got: dict[int, list] = {}
    for c in sched.carries:
        got.setdefault(c.lane, []).append(c)
    for i in sorted(set(want) | set(got)):
        g = layout.lanes[i]
        node = net.nodes[g.lane.node]
        who = f"'{names[g.lane.node]}'"
        cs = got.get(i, [])
        if len(cs) != (i in want) or any(c.when != want.get(i) for c in cs):
            out.append(Diagnostic(node.pos, f"the doors of {who} get {len(cs)} carried copies "
                                            f"per step; they need {int(i in want)}",
                                  "a bug in the schedule (program.plan)"))
            continue
        for c in cs:
            light = (g.lane.source[1] if g.lane.source[0] == "state" else g.lane.feedback)
            if c.light != light:
                out.append(Diagnostic(node.pos, f"the doors of {who} are copied from light "
                                                f"{c.light}, not from {light}",
                                      "a bug in the schedule (program.plan)"))
            if (c.tic, c.order) >= (RESET_TIC, RESET_ORDER):
                out.append(Diagnostic(node.pos, f"the doors of {who} are copied at tic {c.tic} "
                                                "after the lights are reset: they would get the "
                                                "reset level, not the step before's",
                                      "carry before the reset (a bug in program.plan)"))
            land = c.tic + door_speed(g)[1]
            if land > release[i]:
                out.append(Diagnostic(node.pos, f"the doors of {who} land at tic {land}, after "
                                                f"its doll is released at tic {release[i]}",
                                      "a bug in the schedule (program.plan)"))
    for tag, (init, nid) in state_starts(layout).items():
        if not P.LIGHT_MIN <= init <= P.LIGHT_MAX:
            out.append(Diagnostic(net.nodes[nid].pos, f"init {init} of '{names[nid]}' does not "
                                                      f"fit a light ({P.LIGHT_MIN}..{P.LIGHT_MAX})",
                                  "give an init within the light range"))
    return out


def _widest_lanes(layout: Layout, n: int = 3) -> tuple[Pos | None, str]:
    """The position of the neuron with the longest lane, and a clause naming the `n`
    longest lanes (what a map's width comes from: a lane is one corridor along x, and the
    longest one sets its column's width)."""
    if not layout.lanes:
        return None, ""
    names, net = _names(layout), layout.circuit.net
    longest = sorted(layout.lanes, key=lambda g: (-g.length, g.lane.tid))[:n]
    parts = [f"'{names[g.lane.node]}{g.lane.label}' {g.length:,.0f} units "
             f"({len(g.lane.doors)} doors, values {g.lane.plane_lo}..{g.lane.plane_hi})"
             for g in longest]
    return net.nodes[longest[0].lane.node].pos, f"; the longest lanes: {', '.join(parts)}"


def check_budgets(layout: Layout) -> list[Diagnostic]:
    out = []
    m = layout.model
    where = Pos(layout.circuit.net.source)
    x0, y0, x1, y1 = m.extent()
    if x0 < P.COORD_MIN or y0 < P.COORD_MIN or x1 > P.COORD_MAX or y1 > P.COORD_MAX:
        pos, widest = _widest_lanes(layout)
        out.append(Diagnostic(pos or where, f"the map spans x {x0:g}..{x1:g}, y {y0:g}..{y1:g}, "
                                            f"outside the engine's {P.COORD_MIN}..{P.COORD_MAX}"
                                            f"{widest}",
                              "split the network over several maps (tiles) or shorten its "
                              "lanes (smaller ranges, fewer relu levels)"))
    dolls = len(layout.lanes)
    if dolls > MAX_DOLLS:
        out.append(Diagnostic(where, f"{dolls} dolls in one map; the budget is {MAX_DOLLS}",
                              "split the network over several maps (tiles)"))
    if len(m.sectors) > MAX_SECTORS:
        out.append(Diagnostic(where, f"{len(m.sectors)} sectors; the budget is {MAX_SECTORS}",
                              "split the network over several maps (tiles)"))
    if len(m.lines) > MAX_LINES:
        out.append(Diagnostic(where, f"{len(m.lines)} linedefs; the budget is {MAX_LINES}",
                              "split the network over several maps (tiles)"))
    flat = flat_vertices(m)
    if flat > P.GZDOOM_FLAT_VERTICES:
        out.append(Diagnostic(where, f"about {flat:,} vertices in GZDoom's flat buffer; it holds "
                                     f"{P.GZDOOM_BUFFER:,} and a map leaves {P.GZDOOM_FRAME:,} "
                                     "of them to drawing (GZDoom crashes loading more)",
                              "split the network over several maps (tiles)"))
    short = [k for k, line in enumerate(m.lines)
             if m.vertices[line.v1] == m.vertices[line.v2]]
    if short:
        # The engine crashes loading such a map (measured: ViZDoom segfaults in init).
        out.append(Diagnostic(where, f"{len(short)} linedef(s) of zero length, the first is "
                                     f"line {short[0]} at {m.vertices[m.lines[short[0]].v1]}",
                              "a bug in the layout: a line must join two different points"))
    top = max([l.tag for l in layout.circuit.lights] + [layout.conveyor_tag]
              + [g.lane.door_tag for g in layout.lanes] + list(layout.circuit.groups))
    if top > MAX_TAG:
        out.append(Diagnostic(where, f"tag {top} is beyond {MAX_TAG}",
                              "split the network over several maps (tiles)"))
    return out + check_crowded_sectors(layout) + check_script_starts(layout)


def flat_vertices(m) -> int:
    """GZDoom's flat vertices for the map model `m` before its nodes are built: 2 planes x,
    for each sector, the distinct vertices of the lines bounding or crossing it. The node
    builder's splits add a few per cent (measured on the CNN hub's maps: the count from the
    built nodes, mapgen/nodes.gl_flat_vertices, is 1.5 to 2.6 % higher)."""
    import numpy as np

    if not m.lines:
        return P.GZDOOM_RESERVED
    sector = np.array([s.sector for s in m.sides] + [-1], dtype=np.int64)
    ends = np.array([(ln.v1, ln.v2, ln.front, ln.back) for ln in m.lines], dtype=np.int64)
    n = len(m.vertices) + 1
    keys = []
    for side in (2, 3):
        sec = sector[ends[:, side]]
        for v in (0, 1):
            keys.append((sec * n + ends[:, v])[sec >= 0])
    from .nodes import flat_count

    return flat_count(np.concatenate(keys))


def check_crowded_sectors(layout: Layout) -> list[Diagnostic]:
    """No sector bordered by more lines than the engine loads (P.MAX_SECTOR_LINES;
    measured twice: 32,768 lines crash ViZDoom while loading, and a room with 8,000 square
    holes, 32,004 sides, loads where 8,300, 33,204, does not). The hall of lights borders
    every light tile; the lane hall is cut into strips (room.hall_strips)."""
    m = layout.model
    count: dict[int, int] = {}
    for line in m.lines:
        sides = {m.sides[line.front].sector} | ({m.sides[line.back].sector}
                                                 if line.back >= 0 else set())
        for sec in sides:
            count[sec] = count.get(sec, 0) + 1
    crowded = [(n, sec) for sec, n in count.items() if n > P.MAX_SECTOR_LINES]
    if not crowded:
        return []
    n, sec = max(crowded)
    what = m.sectors[sec].comment or f"sector {sec}"
    hint = ("split the network over several maps (tiles): the hall of lights holds at most "
            f"{P.MAX_HALL_LIGHTS:,} lights" if what.startswith("hall of lights") else
            "a bug in the layout: split the sector (mapgen/room.hall_strips)")
    return [Diagnostic(Pos(layout.circuit.net.source),
                       f"{n:,} lines border one sector ({what}); the engine loads at most "
                       f"{P.MAX_SECTOR_LINES:,}", hint)]


def check_script_starts(layout: Layout) -> list[Diagnostic]:
    """One step starts every input script (and a sequence's membrane reset) with its
    inference or beat script in one tic; the engine takes P.MAX_SCRIPT_STARTS."""
    net = layout.circuit.net
    groups = -(-len(net.inputs) // P.PUKE_ARGS)
    starts = groups + 1 + (net.steps > 1)
    if starts <= P.MAX_SCRIPT_STARTS:
        return []
    return [Diagnostic(Pos(net.source), f"{len(net.inputs):,} inputs take {groups:,} input "
                                        f"scripts in one tic; the engine starts at most "
                                        f"{P.MAX_SCRIPT_STARTS} scripts a tic (at most "
                                        f"{P.MAX_MAP_INPUTS:,} inputs a map)",
                       "split the network over several maps (tiles), each taking part of "
                       "the inputs")]


def check_acs_size(source: str, net) -> None:
    """The generated ACS must fit the ACS compiler (P.MAX_ACS_CHARS): said before it is
    compiled, about the network, not about a file the user never wrote."""
    if len(source) > P.MAX_ACS_CHARS:
        raise CompileError([Diagnostic(
            Pos(net.source), f"the map's ACS would be {len(source):,} characters; the ACS "
                             f"compiler takes at most {P.MAX_ACS_CHARS:,}",
            "split the network over several maps (--tiles auto)")])


BEAT_ORDER = 1000  # orders of one beat's events lie below this (program.ORDER, slots of 10)


def _unroll(pipe: Pipeline, beats: int, period: int) -> list[tuple]:
    """The beat's events over `beats` consecutive beats: (tic, order, kind, what, inference)
    with absolute tics (beat b starts at b * period), inference = beat - offset, and order
    within a tic earlier beats first (as the batch script writes them)."""
    return [(b * period + e.tic, b * BEAT_ORDER + e.order, e.kind, e.what, b - e.offset)
            for b in range(beats) for e in pipe.events]


def _lane_rides(layout: Layout, events: list[tuple], ride: list[int] | None = None
                ) -> dict[int, list[tuple]]:
    """Lane -> its rides in time order: (release key, park key, ride end tic, inference);
    the park key is None for a doll released again before it was parked. `ride`: each
    lane's run_tics (computed here when not given)."""
    if ride is None:
        ride = [run_tics(g.reach()) for g in layout.lanes]
    rides: dict[int, list] = {}
    start: dict[int, tuple] = {}
    for tic, order, kind, i, inf in sorted(events):
        if kind == "release":
            if i in start:  # released again before it was parked: a ride with no park
                t0, o0, inf0 = start[i]
                need = ride[i]
                rides.setdefault(i, []).append(((t0, o0), None, t0 + need - 1, inf0))
            start[i] = (tic, order, inf)
        elif kind == "park" and i in start:
            t0, o0, inf0 = start.pop(i)
            need = ride[i]
            rides.setdefault(i, []).append(((t0, o0), (tic, order), t0 + need - 1, inf0))
    return rides


def _check_lanes(layout: Layout, events: list[tuple], rides: dict[int, list[tuple]]
                 ) -> list[Diagnostic]:
    from .program import door_speed

    out = []
    names, net = _names(layout), layout.circuit.net
    moves: dict[int, list[tuple[int, int]]] = {}
    for tic, _, kind, i, _ in sorted(events):
        if kind == "copy":
            moves.setdefault(i, []).append((tic, tic + door_speed(layout.lanes[i])[1] - 1))
    for i, g in enumerate(layout.lanes):
        where, who = net.nodes[g.lane.node].pos, f"'{names[g.lane.node]}{g.lane.label}'"
        bad = []
        for (rel, park, end, _), nxt in zip(rides.get(i, []), rides.get(i, [])[1:] + [None]):
            if park is None:
                bad.append(f"its doll is released at tic {nxt[0][0]} before it is back from "
                           f"the ride released at tic {rel[0]}")
                continue
            if park[0] <= end:
                bad.append(f"its doll is parked at tic {park[0]} but may ride until tic {end}")
            if nxt is not None and nxt[0] <= park:
                bad.append(f"its doll is released at tic {nxt[0][0]} before it is back "
                           f"from the ride released at tic {rel[0]}")
        mv = moves.get(i, [])
        for (a0, a1), nxt in zip(mv, mv[1:] + [None]):
            if nxt is not None and nxt[0] <= a1:
                bad.append(f"a second plane move at tic {nxt[0]} while the one from tic {a0} "
                           "still runs (the engine drops it)")
            for rel, _, end, _ in rides.get(i, []):
                if a0 <= end and rel[0] <= a1:
                    bad.append(f"its doors move at tics {a0}..{a1} while its doll rides "
                               f"(tics {rel[0]}..{end}): a doll in a door blocks the move")
        if bad:  # the first problem names the lane; the same one recurs every beat
            out.append(Diagnostic(where, f"pipelined beat: lane of {who}: {bad[0]}",
                                  "a bug in the pipelined schedule (program.plan_pipeline)"))
    return out


def _light_problems(by_inf: dict[int, dict], n_writers: int, whole) -> list[str]:
    """One light's uses, by inference: reset before its writes, every writer's ride of
    that inference before each read, and no overlap with another inference's uses.
    `by_inf[inf]` holds the reset and read keys, and the writes as (first key, last key,
    lanes): the rides of lanes that ride alike, counted once (see _check_light_use)."""
    bad = []
    spans = []
    for inf, use in sorted(by_inf.items()):
        resets, reads, writes = use["reset"], use["read"], use["write"]
        if writes:
            first = min(w[0] for w in writes)
            last = max(w[1] for w in writes)
            if resets and max(resets) >= first:
                bad.append(f"reset at tic {max(resets)[0]} after a doll of the same inference "
                           f"started adding at tic {first[0]}")
            if reads and min(reads) <= last:
                bad.append(f"read at tic {min(reads)[0]} while a doll may still add to it "
                           f"(until tic {last[0]})")
        if inf in whole and reads and n_writers:
            rode = sum(n for _, end, n in writes if end < min(reads))
            if rode < n_writers:
                bad.append(f"inference {inf} reads it before {n_writers - rode} of its "
                           f"{n_writers} writing lanes rode for it")
            elif not resets:
                bad.append(f"inference {inf} reads it without resetting it")
        keys = resets + reads + [k for w in writes for k in w[:2]]
        spans.append((min(keys), max(keys), inf))
    spans.sort()
    for (a0, a1, i), (b0, b1, j) in zip(spans, spans[1:]):
        if b0 <= a1:
            bad.append(f"inference {j} uses it from tic {b0[0]} while inference {i} still "
                       f"does until tic {a1[0]}")
    return bad


def check_pipeline(layout: Layout, sched: Schedule) -> list[Diagnostic]:
    """The pipelined beat, unrolled over enough beats to reach its steady state (module
    docstring): beats started by a runner (one every `period` tics) and the beats of a
    batch script (one every `batch_step` tics, overlapping). Nothing to prove for a map
    without one."""
    pipe = sched.pipeline
    if pipe is None:
        return []
    facts = pipeline_facts(layout)
    out = _check_period(layout, sched, pipe.period, facts)
    if not out and pipe.batch_step != pipe.period:
        out = _check_period(layout, sched, pipe.batch_step, facts)
    if any(e.tic > pipe.beat_tics for e in pipe.events):
        out.append(Diagnostic(Pos(layout.circuit.net.source), "pipelined beat: events after "
                              f"the beat's end (tic {pipe.beat_tics}): the next beat starts "
                              "before this one is done", "a bug in the pipelined schedule"))
    if any(e.tic < 1 for e in pipe.events if e.kind == "copy"):
        out.append(Diagnostic(Pos(layout.circuit.net.source), "pipelined beat: doors written "
                              "in tic 0, before the input scripts stored the inputs",
                              "a bug in the pipelined schedule"))
    return out


def pipeline_facts(layout: Layout) -> dict:
    """What every unrolled check of one layout needs, computed once: the lanes that write
    each light, and each lane's ride in tics."""
    return {"lanes_of": light_lanes(layout),
            "ride": [run_tics(g.reach()) for g in layout.lanes]}


def _check_period(layout: Layout, sched: Schedule, period: int, facts: dict | None = None
                  ) -> list[Diagnostic]:
    """check_pipeline at one interval; `facts` (pipeline_facts) when the caller has them."""
    facts = facts or pipeline_facts(layout)
    pipe = sched.pipeline
    depth = max((e.offset for e in pipe.events), default=0) + 1
    overlap = -(-pipe.beat_tics // period)  # beats that one beat's events reach into
    beats = depth + overlap + 2  # whole inferences, each with neighbours on both sides
    events = _unroll(pipe, beats, period)
    rides = _lane_rides(layout, events, facts["ride"])
    return _check_lanes(layout, events, rides) + _check_light_use(
        layout, sched, events, depth, beats, facts["lanes_of"], rides)


def fit_batch_period(layout: Layout, sched: Schedule) -> None:
    """Set the interval between the overlapping beats of a batch script to the shortest one
    check_pipeline proves safe: no lane is written or released again before its doll of the
    previous beat is back, and no light is reset before its previous inference read it.
    Beats further apart only delay later beats' events, so every longer interval, up to a
    runner's `period`, is safe too."""
    pipe = sched.pipeline
    if pipe is None:
        return
    copy = {e.what: e.tic for e in pipe.events if e.kind == "copy"}
    park = {e.what: e.tic for e in pipe.events if e.kind == "park"}
    low, high = max([1] + [park[i] - copy.get(i, park[i]) for i in park]), pipe.period
    facts = pipeline_facts(layout)
    while low < high:  # the shortest safe interval in [low, period]: safety is monotone
        mid = (low + high) // 2
        if _check_period(layout, sched, mid, facts):
            low = mid + 1
        else:
            high = mid
    pipe.batch_period = high


def light_lanes(layout: Layout) -> dict[int, list[int]]:
    """Light tag -> the lanes whose lines add to it or set it (group tags resolved)."""
    lanes_of: dict[int, list[int]] = {}
    for i, g in enumerate(layout.lanes):
        for tag in lane_targets(layout, g):
            lanes_of.setdefault(tag, []).append(i)
    return lanes_of


def _check_light_use(layout: Layout, sched: Schedule, events: list[tuple], depth: int,
                     beats: int, lanes_of: dict[int, list[int]],
                     rides: dict[int, list[tuple]]) -> list[Diagnostic]:
    """Every light's resets, writes and reads over the unrolled beats (_light_problems).
    Lanes that ride alike (the same rides, tic for tic) write a light alike, so a light's
    writes are counted per kind of ride instead of per lane: a dense layer's lights each
    have hundreds of writing lanes, but their lanes ride in a few ways."""
    from collections import Counter

    c = layout.circuit
    names = _names(layout)
    # lane -> its kind of ride; a kind -> [(inference, first key, last key, beat)]. A key
    # is (tic, order); a doll's ride covers whole tics (its order against ACS within a tic
    # is not ours to know).
    kinds: dict[tuple, int] = {}
    kind_of: dict[int, int] = {}
    for i, rs in rides.items():
        sig = tuple((inf, (rel[0], -1), (end, 10**9), rel[1] // BEAT_ORDER)
                    for rel, _, end, inf in rs)
        kind_of[i] = kinds.setdefault(sig, len(kinds))
    rides_of = {k: sig for sig, k in kinds.items()}
    raw: dict[int, list] = {}   # light -> [(kind of use, inference, beat, entry)]
    for tag, lanes in lanes_of.items():
        for k, n in Counter(kind_of[i] for i in lanes if i in kind_of).items():
            for inf, first, last, beat in rides_of[k]:
                raw.setdefault(tag, []).append(("write", inf, beat, (first, last, n)))
    for tic, order, kind, what, inf in events:
        if kind == "reset":
            raw.setdefault(what, []).append(("reset", inf, order // BEAT_ORDER, (tic, order)))
        elif kind == "read" or (kind == "copy" and layout.lanes[what].lane.source[0] == "light"):
            tag = (sched.output_slots[what][0] if kind == "read" else
                   layout.lanes[what].lane.source[1])
            raw.setdefault(tag, []).append(("read", inf, order // BEAT_ORDER, (tic, order)))
    out = []
    for tag, uses in sorted(raw.items()):
        light = c.light(tag)
        bad = _light_problems(_grouped(uses), len(lanes_of.get(tag, ())),
                              range(0, beats - depth + 1))
        if bad:
            out.append(Diagnostic(c.net.nodes[light.node].pos,
                                  f"pipelined beat: the {light.role} light of "
                                  f"'{names[light.node]}': {bad[0]}",
                                  "a bug in the pipelined schedule (program.plan_pipeline): "
                                  "the beat interval ii must cover the light's lifetime"))
    return out


def _grouped(uses: list[tuple]) -> dict[int, dict]:
    """A light's uses by inference, for _light_problems. A light the beat never reads
    (program.reset_slots) is grouped by the beat instead: it lives from its reset to its
    last write of the same beat, whichever inferences its writers serve."""
    never_read = not any(u[0] == "read" for u in uses)
    out: dict[int, dict] = {}
    for kind, inf, beat, entry in uses:
        key = beat if never_read else inf
        out.setdefault(key, {"reset": [], "read": [], "write": []})[kind].append(entry)
    return out


def run_all(layout: Layout, sched: Schedule) -> None:
    """Every check; the batch interval is the shortest the pipeline proof accepts, so it is
    fitted here, before the proof runs."""
    fit_batch_period(layout, sched)
    problems = (check_lights(layout) + check_planes(layout) + check_geometry(layout)
                + check_stop_clearance(layout) + check_schedule(layout, sched)
                + check_carries(layout, sched)
                + check_budgets(layout) + check_pipeline(layout, sched))
    if problems:
        raise CompileError(problems)

