"""The clock and the bus: the inference schedule and the ACS that drives a compiled map.

ACS never computes on neuron values. `Bus` is the only way this module writes ACS, and it
offers exactly the machine's bus operations, each with constant operands except the value
being moved:

- `write_input`: a script argument -> an input lane's door ceilings
- `reset_light`: a constant -> a light (start of an inference)
- `release`: give a parked doll its lane's speed (it glides on; `park` teleports it back)
- `stop_conveyor`: once, when every doll is named, the spawn strips stop carrying
- `copy`: an accumulator light -> a lane's door ceilings
- `read`: a light -> a USER global (how values leave the map)
- `delay`, `ack`: the clock, and telling Python a step is done

tests/test_program.py checks the generated source against that list.

Protocol (also in the manifest inside the WAD):
  USER60 = -1 once the map is ready, then the sequence number of the last inference done;
  script 2 (seq) runs one inference; scripts 10+k (a, b, c, d) write inputs 4k..4k+3 and
  must be started in the same tic as script 2 (in a map whose inputs ride late, script k
  takes the inputs input_slots[k] and may start as late as tic input_need[k] of the
  step: a streamed run sends a value when the map wants it); script R+b (token; R = 100, or the next
  hundred clear of the input scripts, named in the manifest) copies read batch b to
  USER1..58 and the token to USER59.

Pipelined protocol (`plan_pipeline`, docs/throughput.md): script 4 (seq) runs one *beat*.
Every lane rides once per beat; phase p serves the inference that entered p // ii beats
earlier (ii, the initiation interval, is 1 for a layered network), so a new inference
starts every beat instead of one per whole inference. The input scripts are started in the
same tic as script 4 with the new inference's inputs; output k of the inference that
entered at beat b is in USER k+1 after beat b + lag[k]. checks.check_pipeline proves the
beat's timing from its explicit list of events. Script 5 (seq, n) runs n beats whose
inputs the queue scripts stored, batch_period tics apart (overlapping; manifest).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from . import physics as P
from .layout import Layout, spawn_tag_of

SCRIPT_OPEN = 1
SCRIPT_INFER = 2
SCRIPT_BEGIN = 3
SCRIPT_PIPE = 4
SCRIPT_BATCH = 5
SCRIPT_FED = 6   # a step whose fed-back inputs take their nodes' values (script 2's twin)
SCRIPT_QUEUE_ALIGN = 1000  # queue scripts start at the next thousand clear of the others
MAX_BATCH = 16           # beats per batch script
MAX_BATCH_STATEMENTS = 20_000  # the unrolled batch script stays a modest part of the map
SCRIPT_INPUT_BASE = 10
SCRIPT_READ_BASE = 100   # read scripts start here, or after the input scripts if those reach it


def read_base(sched: "Schedule") -> int:
    """First read script number: clear of the input scripts, however many inputs."""
    return max(SCRIPT_READ_BASE, (SCRIPT_INPUT_BASE + len(sched.input_batches)) // 100 * 100 + 100)
ACK_VAR = 60
READ_ACK_VAR = 59
READ_SLOTS = 58
SETTLE_TICS = 1        # after the slowest doll of a phase could have stopped
INIT_TICS = 24         # a new doll rides from rest over its naming line well within this


@dataclass
class Phase:
    index: int
    lanes: list[int]           # indices into layout.lanes
    copy_tics: int             # tics given to the door planes to reach their values
    run_tics: int              # tics given to the dolls to finish


@dataclass(frozen=True)
class Carry:
    """A value crossing from one step to the next in the map: at (tic, order) of the
    inference script the doors of `lane` get the level of `light` (a prev lane's node; or
    a fed-back input's node, when == "fed": only in script 6, the fed step)."""
    tic: int
    order: int
    lane: int
    light: int
    when: str = ""


RESET_TIC, RESET_ORDER = 1, 1   # every light is reset in tic 1, after the carries (order 0)


@dataclass
class Schedule:
    phases: list[Phase]
    input_batches: list[list[int]]          # lane indices (or -1 for a constant input)
    read_batches: list[list[tuple[int, str]]]  # (light tag, label)
    output_slots: list[tuple[int, str]]     # read at the end of an inference: (tag, label)
    init_tics: int
    inference_tics: int                     # from the tic the pukes run to the ack
    speeds: dict[int, int] = field(default_factory=dict)  # lane index -> door mover speed
    writes: list[tuple[int, int]] = field(default_factory=list)  # (tic, door tag) plane writes
    pipeline: "Pipeline | None" = None     # the overlapped schedule, when the net allows one
    carries: list[Carry] = field(default_factory=list)  # what crosses from the step before
    # per leading read batch (the outputs, by the tic they are final): the tic after which
    # it may be read, mid-inference
    hand_on: list[int] = field(default_factory=list)
    # per input script: the input index of each argument, and the last tic it may start in
    input_slots: list[list[int]] = field(default_factory=list)
    input_need: list[int] = field(default_factory=list)

    @property
    def late_inputs(self) -> bool:
        return any(self.input_need)


def _read_batches(layout: Layout, outputs: list[tuple[int, str]], lane_end: list[int]
                  ) -> tuple[list[list[tuple[int, str]]], list[int]]:
    """Every light by label in batches of READ_SLOTS, the outputs first, a batch for the
    outputs final at each tic; and, for each of those batches, the tic of the inference
    after which it may be read: every lane that writes its outputs has finished, each by its
    own length (`lane_end`: its doll released with its phase and given the time the phase
    gives its longest lane, as if it were that lane; a read script started then runs a tic
    later). A map of a tiled run hands its values on that early, so the maps that take them
    start while it still rides (engine/tiled.py)."""
    c = layout.circuit
    writers = writer_lanes(layout)

    def final(tag: int) -> int:
        # A light no doll writes holds its reset (script tic 1) from the tic after: a read
        # script in the reset's own tic may run before it.
        return max((lane_end[i] for i in writers.get(tag, ())), default=RESET_TIC + 1)

    labels = {f"value:{name}" for _, name in outputs}
    by_tic: dict[int, list[tuple[int, str]]] = {}
    for tag, name in outputs:
        by_tic.setdefault(final(tag), []).append((tag, f"value:{name}"))
    # A batch holds outputs final at one tic only, so the early ones do not wait for the
    # late ones; then every other light, in node order.
    batches, hand_on = [], []
    for tic in sorted(by_tic):
        group = by_tic[tic]
        for i in range(0, len(group), READ_SLOTS):
            batches.append(group[i:i + READ_SLOTS])
            hand_on.append(tic)
    rest = []
    for n in c.net.nodes:
        if n.id in c.acc_light and c.acc_light[n.id] != c.value_light.get(n.id):
            role = c.light(c.acc_light[n.id]).role
            rest.append((c.acc_light[n.id], f"{role}:{n.name}"))
        if f"value:{n.name}" not in labels:
            rest.append((c.value_light[n.id], f"value:{n.name}"))
    batches += [rest[i:i + READ_SLOTS] for i in range(0, len(rest), READ_SLOTS)]
    return batches, hand_on


def door_speed(g) -> tuple[int, int]:
    """Mover speed and tics for a lane's door ceilings: every value they can be sent to,
    from anywhere they can be (a ceiling sent below a door's floor stops on the floor)."""
    lo = min(g.lane.plane_lo, min(s.floor for s in g.segments))
    hi = max(g.lane.plane_hi, max(s.floor for s in g.segments))
    return P.plane_speed(hi - lo, max(abs(lo), abs(hi)))


def run_tics(travel: float) -> int:
    return math.ceil(travel / P.DOLL_SPEED) + SETTLE_TICS


def plan(layout: Layout) -> Schedule:
    c = layout.circuit
    net = c.net
    by_phase: dict[int, list[int]] = {}
    for i, g in enumerate(layout.lanes):
        by_phase.setdefault(g.lane.phase, []).append(i)
    phases = []
    speeds = {}
    for p in sorted(by_phase):
        lanes = by_phase[p]
        copy = 1
        for i in lanes:
            speed, tics = door_speed(layout.lanes[i])
            speeds[i] = speed
            copy = max(copy, tics)
        phases.append(Phase(p, lanes, copy, run_tics(max(layout.lanes[i].reach() for i in lanes))))
    names = {n.id: n.name for n in net.nodes}
    outputs = [(c.value_light[o], names[o]) for o in net.outputs]
    init = INIT_TICS
    tic, writes, phase_start, lane_end = _timeline(layout, phases)
    input_batches, input_slots, input_need = _input_batches(layout, phase_start)
    read_batches, hand_on = _read_batches(layout, outputs, lane_end)
    # Before the reset, while the lights still hold the step before: prev lanes and (on fed
    # steps) fed-back inputs get their node's level.
    carries = [Carry(RESET_TIC, 0, i, g.lane.source[1]) for i, g in enumerate(layout.lanes)
               if g.lane.source[0] == "state"]
    carries += [Carry(RESET_TIC, 0, i, g.lane.feedback, "fed")
                for i, g in enumerate(layout.lanes) if g.lane.feedback is not None]
    sched = Schedule(phases, input_batches, read_batches,
                     outputs if len(outputs) <= READ_SLOTS else [], init, tic,
                     speeds=speeds, writes=writes, carries=carries, hand_on=hand_on,
                     input_slots=input_slots, input_need=input_need)
    sched.pipeline = plan_pipeline(layout, sched)
    return sched


def _timeline(layout: Layout, phases: list[Phase]
              ) -> tuple[int, list[tuple[int, int]], dict[int, int], list[int]]:
    """(the step's tics, the door writes (tic, door tag), each phase's start tic, each
    lane's end tic). Tic numbering inside an inference: tic 0 runs the pukes; the inference
    script waits one tic, then each phase writes its doors, waits, releases its dolls,
    waits for its longest lane and parks them. A lane is done once its own doll could have
    stopped: its phase's release plus the run its own length needs."""
    tic, writes, start, lane_end = 1, [], {}, [0] * len(layout.lanes)
    for ph in phases:
        start[ph.index] = tic
        for i in ph.lanes:
            writes.append((tic, layout.lanes[i].lane.door_tag))
            lane_end[i] = tic + ph.copy_tics + run_tics(layout.lanes[i].reach())
        tic += ph.copy_tics + ph.run_tics
    return tic, writes, start, lane_end


def _input_batches(layout: Layout, phase_start: dict[int, int]
                   ) -> tuple[list[list[int]], list[list[int]], list[int]]:
    """The input scripts: (lane per slot, -1 for an input with one possible value, which
    has no lane and still takes a slot so that Python sends every input; the input index
    per slot; per script, the last tic of the step it may start in). Four inputs a script,
    in declaration order, all started with the step, unless the lanes ride late
    (circuit.lower's late_inputs): then grouped by the tic their phase writes their doors,
    and a script may start as late as that very tic. A script started in a tic runs before
    the scripts already running (the engine links a new script at the head of its list),
    so its stores come before the inference script's write in that tic; measured in the
    engine (tests/test_late_inputs.py: a tic later reads the step before's inputs). Phase
    0's inputs start with the step (tic 0), whose inference script waits a tic for them."""
    net = layout.circuit.net
    lane_of, need, first = {}, {}, min(phase_start.values(), default=0)
    for i, g in enumerate(layout.lanes):
        if g.lane.source[0] == "input":
            k = g.lane.source[1]
            lane_of[k] = i
            w = phase_start[g.lane.phase]
            need[k] = min(need.get(k, 1 << 30), 0 if w == first else w)
    order = sorted(range(len(net.inputs)), key=lambda k: (need.get(k, 0), k))
    batches, slots, needs = [], [], []
    for k in order:
        t = need.get(k, 0)
        if not slots or len(slots[-1]) == P.PUKE_ARGS or needs[-1] != t:
            batches.append([]), slots.append([]), needs.append(t)
        batches[-1].append(lane_of.get(k, -1))
        slots[-1].append(k)
    return batches, slots, needs


# --- the pipelined beat -------------------------------------------------------------------
# Within a tic ACS runs statement by statement, so events of one tic are ordered: by slot,
# then output reads (of lights whose dolls finished in an earlier tic: first, so that the
# next beat of a batch may reset them in the same tic), copies (a light read onto doors)
# before resets (the light freed for the next inference), then releases and parks.
ORDER = {"read": 0, "copy": 1, "reset": 2, "release": 3, "park": 4}
# Door ceiling moves started in one tic cost the engine about quadratically in their number
# while door sectors played sound sequences (physics.SILENT_SEQUENCE; measured on the
# trained MNIST map: 1,920 door moves in one tic 16 ms of engine CPU, spread over four
# about 6 ms). With silent doors spreading is about neutral (MNIST: a beat of 14 tics
# spread, 13 not; CPU per inference 3 to 5% lower spread, within the machine's noise); the
# beat still starts at most this many per tic, the longest lanes first: the short lanes
# have slack in the beat to start later.
MAX_MOVES_PER_TIC = 480


@dataclass(frozen=True)
class Event:
    """One bus operation of the beat script: at `tic` of the beat (tic 0 runs the pukes),
    in `order` within the tic. `what` is a lane index (copy, release, park), a light tag
    (reset) or an output slot (read). The beat serves the inference that entered `offset`
    beats before it."""
    tic: int
    order: int
    kind: str
    what: int
    offset: int


@dataclass
class Pipeline:
    ii: int                    # slots per beat: phase p rides in slot p % ii
    beat_tics: int             # from the puke tic to the ack
    events: list[Event]        # every bus operation of script 4, sorted by (tic, order)
    lags: list[int]            # per output slot: beats from an inference's entry to its read
    # Tics between beats inside a batch script: beats overlap there (the next beat's copies
    # start while this one's slowest dolls still ride), as closely as checks.check_pipeline
    # proves safe (checks.fit_batch_period sets it; until then, no overlap).
    batch_period: int = 0

    @property
    def period(self) -> int:
        """Tics from one beat's puke to the next (the runner advances beat_tics + 1)."""
        return self.beat_tics + 1

    @property
    def batch_step(self) -> int:
        """Tics between beats in a batch script."""
        return self.batch_period or self.period


def lane_targets(layout: Layout, g) -> set[int]:
    """The lights a lane's lines add to or set (group tags resolved to their members)."""
    groups = layout.circuit.groups
    tags = [t for t, _ in g.lane.prelude + g.lane.prelude_sets]
    for door in g.lane.doors:
        tags += [t for t, _ in door.lines + door.sets]
    return {light for t in tags for light in groups.get(t, [t])}


def writer_lanes(layout: Layout) -> dict[int, list[int]]:
    """Light tag -> the lanes (indices) whose dolls add to it or set it."""
    out: dict[int, list[int]] = {}
    for i, g in enumerate(layout.lanes):
        for light in lane_targets(layout, g):
            out.setdefault(light, []).append(i)
    return out


def light_writers(layout: Layout) -> dict[int, set[int]]:
    """Light tag -> the phases whose dolls add to it or set it."""
    return {tag: {layout.lanes[i].lane.phase for i in lanes}
            for tag, lanes in writer_lanes(layout).items()}


def pipeline_need(layout: Layout, sched: Schedule) -> int:
    """The smallest initiation interval (slots per beat) the lights allow: a light is busy
    from its reset (before its first writer's slot) to its last read, and the next
    inference may only reset it after that."""
    writers = light_writers(layout)
    need = 1
    for g in layout.lanes:
        if g.lane.source[0] == "light" and writers.get(g.lane.source[1]):
            need = max(need, g.lane.phase - min(writers[g.lane.source[1]]))
    for tag, _ in sched.output_slots:
        if writers.get(tag):  # read after its last writer's slot: one slot more
            need = max(need, max(writers[tag]) - min(writers[tag]) + 1)
    return need


def beat_reads(layout: Layout, sched: Schedule) -> set[int]:
    """The lights the pipelined beat reads: lane sources (copied onto doors) and outputs."""
    return ({g.lane.source[1] for g in layout.lanes if g.lane.source[0] == "light"}
            | {tag for tag, _ in sched.output_slots})


def reset_slots(layout: Layout, sched: Schedule, writers: dict[int, set[int]],
                ii: int) -> dict[int, tuple[int, int]]:
    """Light -> (slot, offset) of its reset in the beat. A light the beat reads is reset in
    its first writer's slot, for that writer's inference (it then lives until its last read,
    pipeline_need). A light it never reads (the accumulator of a gate its range keeps
    constant, an identity nobody reads: only a one-at-a-time debug read sees them) may sum
    parts of several inferences; it is reset once a beat, in the earliest slot any of its
    writers rides in, so its level stays within the bounds proven for one inference."""
    read = beat_reads(layout, sched)
    out = {}
    for tag, phases in writers.items():
        p = min(phases) if tag in read else min(phases, key=lambda q: (q % ii, q))
        out[tag] = (p % ii, p // ii)
    return out


def plan_pipeline(layout: Layout, sched: Schedule, ii: int | None = None) -> Pipeline | None:
    """The overlapped schedule (module docstring), or None where a network cannot overlap
    inferences: spiking membranes carry state from one step to the next, more outputs
    than USER slots are read in batches after each inference, and inputs that ride late
    would be overwritten by the next beat's before their lanes read them. `ii` forces the interval
    (tests use it to build a wrong schedule for checks.check_pipeline to catch)."""
    c = layout.circuit
    if c.net.steps != 1 or any(l.persistent for l in c.lights) or not sched.output_slots \
            or not sched.phases or sched.late_inputs:
        return None
    ii = ii or pipeline_need(layout, sched)
    writers = light_writers(layout)
    by_phase = {ph.index: ph for ph in sched.phases}
    events: list[Event] = []
    tic = 1  # tic 0: the input scripts store their arguments
    reset_slot = reset_slots(layout, sched, writers, ii)
    for j in range(ii):
        lanes = [i for p in sorted(by_phase) if p % ii == j for i in by_phase[p].lanes]
        resets = {t: off for t, (slot, off) in reset_slot.items() if slot == j}
        events += _slot_events(layout, lanes, resets, ii, tic, 10 * j)
        tic = max([tic] + [e.tic for e in events])
        for k, (tag, _) in enumerate(sched.output_slots):
            last = max(writers.get(tag, {0}))
            if last % ii == j:
                events.append(Event(tic, 10 * j + ORDER["read"], "read", k, last // ii))
    lags = [max(writers.get(tag, {0})) // ii for tag, _ in sched.output_slots]
    return Pipeline(ii, tic, sorted(events, key=lambda e: (e.tic, e.order, e.what)), lags)


def _slot_events(layout: Layout, lanes: list[int], resets: dict[int, int], ii: int,
                 start: int, base: int) -> list[Event]:
    """One slot from tic `start`: copies (longest rides first, MAX_MOVES_PER_TIC door moves
    a tic), each light reset right after the copy that read it, each doll released once its
    doors have landed and the lights it adds to are reset, and parked as soon as it could
    have stopped (a doll on a conveyor costs the engine about as much pushing against a
    closed door as riding)."""
    order = sorted(lanes, key=lambda i: (-layout.lanes[i].travel(), i))
    copy_at, tic, moves = {}, start, 0
    for i in order:
        doors = len(layout.lanes[i].lane.doors)
        if moves and moves + doors > MAX_MOVES_PER_TIC:
            tic, moves = tic + 1, 0
        copy_at[i], moves = tic, moves + doors
    readers: dict[int, int] = {}  # light -> the last copy tic of this slot that reads it
    for i in lanes:
        src = layout.lanes[i].lane.source
        if src[0] == "light":
            readers[src[1]] = max(readers.get(src[1], start), copy_at[i])
    reset_at = {t: readers.get(t, start) for t in resets}
    events = [Event(t, base + ORDER["reset"], "reset", tag, resets[tag])
              for tag, t in reset_at.items()]
    for i in lanes:
        g = layout.lanes[i]
        off = g.lane.phase // ii
        land = copy_at[i] + (door_speed(g)[1] if g.lane.source[0] != "none" else 0)
        go = max([land] + [reset_at[t] + 1 for t in lane_targets(layout, g) if t in reset_at])
        if g.lane.source[0] != "none":
            events.append(Event(copy_at[i], base + ORDER["copy"], "copy", i, off))
        events.append(Event(go, base + ORDER["release"], "release", i, off))
        events.append(Event(go + run_tics(g.reach()), base + ORDER["park"], "park", i, off))
    return events


class Bus:
    """Writes ACS statements; offers only the machine's bus operations (module docstring)."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.depth = 0
        self.plain = False   # statements without their comments (the batch script's copies)

    def _emit(self, text: str) -> None:
        if self.plain:
            text = text.split("  //", 1)[0]
            if text.startswith("//"):
                return
        self.lines.append("    " * self.depth + text)

    def comment(self, text: str) -> None:
        for part in text.splitlines():
            self._emit(f"// {part}" if part else "//")

    def blank(self) -> None:
        self.lines.append("")

    def open_script(self, header: str) -> None:
        self._emit(header)
        self._emit("{")
        self.depth += 1

    def close_script(self) -> None:
        self.depth -= 1
        self._emit("}")

    def _note(self, what: str | None) -> str:
        """A statement's comment; none for a sub-lane after its lane's first (sub_lane_heads),
        whose comment names them all: a map may hold thousands of them."""
        return f"  // {what}" if what else ""

    def write_input(self, door_tag: int, speed: int, arg: str, what: str | None) -> None:
        self._emit(f"Ceiling_MoveToValue({door_tag}, {speed}, {arg}, 0);{self._note(what)}")

    def reset_light(self, tag: int, value: int, what: str) -> None:
        if value >= 0:
            self._emit(f"Light_ChangeToValue({tag}, {value});  // {what}")
        else:
            # Light_ChangeToValue with a negative value takes the brightest neighbour's
            # level instead (measured; tests/test_physics.py), so go through zero.
            self._emit(f"Light_ChangeToValue({tag}, 0); Light_LowerByValue({tag}, {-value});"
                       f"  // {what}")

    def park(self, tid: int, x: float, y: float, z: int, what: str | None) -> None:
        self._emit(f"SetActorPosition({tid}, {int(x) << 16}, {int(y) << 16}, {int(z) << 16}, 0);"
                   + self._note(what and f"doll of {what} back to its lane start"))
        self._emit(f"SetActorVelocity({tid}, 0, 0, 0, FALSE, FALSE);")

    def release(self, tid: int, what: str | None) -> None:
        self._emit(f"SetActorVelocity({tid}, {P.DOLL_SPEED << 16}, 0, 0, FALSE, FALSE);"
                   + self._note(what and f"go, {what}"))

    def stop_conveyor(self, tag: int) -> None:
        """The spawn strips' conveyor at rate 0 once every doll is named: nothing in the
        map is carried afterwards (dolls glide on frictionless lanes)."""
        self._emit(f"Scroll_Floor({tag}, 0, 0, 1);  // the spawn strips stop carrying")

    def store(self, var: str, arg: str, what: str) -> None:
        self._emit(f"{var} = {arg};  // {what}")

    def copy(self, door_tag: int, speed: int, light_tag: int, what: str | None) -> None:
        self._emit(f"Ceiling_MoveToValue({door_tag}, {speed}, "
                   f"GetSectorLightLevel({light_tag}), 0);{self._note(what)}")

    def load_input(self, k: int, slot: int, what: str) -> None:
        """A value another map handed on (hub play, mapgen/hub.py) -> input k."""
        self._emit(f"inputs[{k}] = hub[{slot}];  // input {what}, from the hub")

    def hand_on(self, slot: int, light_tag: int, what: str) -> None:
        """A light -> its slot of the hub array, for a later map (hub play)."""
        self._emit(f"hub[{slot}] = GetSectorLightLevel({light_tag});  // hands on {what}")

    def read(self, var: str, light_tag: int, what: str) -> None:
        self._emit(f"{var} = GetSectorLightLevel({light_tag});  // {what}")

    def delay(self, tics: int, why: str) -> None:
        self._emit(f"Delay({tics});  // {why}")

    def ack(self, var: str, value: str) -> None:
        self._emit(f"{var} = {value};")



    def guard(self, beat: int) -> None:
        """Open the block of batch beat `beat`: it runs if the batch has more beats (a
        count of beats, never a neuron value). Closed with close_script."""
        self._emit(f"if (n > {beat})")
        self._emit("{")
        self.depth += 1

    def enqueue(self, slot: int, arg: str) -> None:
        self._emit(f"queue[{slot}] = {arg};")

    def last_beat(self, beat: int, var: str, value: str) -> None:
        """End a batch after beat `beat` when it has no more beats (a count of beats)."""
        self._emit(f"if (n == {beat + 1}) {{ {var} = {value}; terminate; }}")


def acs_source(layout: Layout, sched: Schedule, title: str) -> str:
    """The map's ACS: declarations, the OPEN script, the input scripts, the membrane reset,
    the inference script (simple schedule), the pipelined beat, the read scripts."""
    names = {n.id: n.name for n in layout.circuit.net.nodes}
    who = lane_names(layout, names)
    b = Bus()
    _declarations(b, layout, sched, title)
    _open_script(b, layout, sched, who)
    _input_scripts(b, layout, sched, names)
    _begin_script(b, layout, names)
    _infer_script(b, layout, sched, who)
    if fed_inputs(layout):
        _infer_script(b, layout, sched, who, fed=True)
    if sched.pipeline:
        pipeline_source(b, layout, sched)
        b.blank()
    for k, batch in enumerate(sched.read_batches):
        b.open_script(f"script {read_base(sched) + k} (int token)")
        for slot, (tag, label) in enumerate(batch):
            b.read(f"user{slot + 1}", tag, label)
        b.ack("read_ack", "token")
        b.close_script()
        b.blank()
    return "\n".join(b.lines).rstrip() + "\n"


def _declarations(b: Bus, layout: Layout, sched: Schedule, title: str) -> None:
    b.comment(f"{title}: a neural network compiled into a Doom map by VoodooNet.")
    b.comment("The map computes: dolls ride conveyor lanes, each door they get under is one\n"
              "step of a neuron's activation, each weighted line they cross adds to a light.\n"
              "These scripts are only the bus and the clock: they write inputs, reset lights,\n"
              "release dolls, copy accumulators to door ceilings and read results back.")
    b.blank()
    b.lines.append('#include "zcommon.acs"')
    b.blank()
    for k in range(1, READ_SLOTS + 1):
        b.lines.append(f"global int {k}:user{k};")
    b.lines.append(f"global int {READ_ACK_VAR}:read_ack;   // token of the last read batch")
    b.lines.append(f"global int {ACK_VAR}:ack;        // -1: ready; then the last inference done")
    n_in = len(layout.circuit.net.inputs)
    if n_in:
        # One map array: the engine has only 128 map variables, and inputs can be many.
        b.lines.append(f"int inputs[{n_in}];  // the inputs, as received")
        k = batch_size(layout, sched)
        if k > 1:
            b.lines.append(f"int queue[{k * n_in}];  "
                           "// the inputs of a batch of beats")
    b.blank()


def lane_names(layout: Layout, names: dict) -> list[str | None]:
    """What each lane's statements say in their comments: its node, or for a lane cut into
    sub-lanes (mapgen/carry.py), at its first sub-lane its node and how many dolls ride it,
    and nothing at the others (a map holds thousands of sub-lanes: their comments were a
    third of its ACS, and the ACS compiler's limit is what bounds the sub-lanes)."""
    from collections import Counter

    count = Counter((g.lane.node, g.lane.role) for g in layout.lanes)
    seen, out = set(), []
    for g in layout.lanes:
        key = (g.lane.node, g.lane.role)
        name = names[g.lane.node] + g.lane.label
        out.append(None if key in seen else name if count[key] == 1 else
                   f"{name}, {count[key]} dolls from {g.lane.tid}")
        seen.add(key)
    return out


def _open_script(b: Bus, layout: Layout, sched: Schedule, who: list) -> None:
    b.open_script(f"script {SCRIPT_OPEN} OPEN")
    b.comment("Each doll is named by the Thing_ChangeTID line it rides over after spawning;\n"
              "then every doll waits on its pad, the invariant between inferences.")
    b.delay(sched.init_tics, "every doll has crossed its naming line")
    if layout.circuit.carry == "glide":
        b.stop_conveyor(spawn_tag_of(layout.conveyor_tag))
    for g, what in zip(layout.lanes, who):
        x, y, z = g.start
        b.park(g.lane.tid, x, y, z, what)
    b.ack("ack", "-1")
    b.close_script()
    b.blank()


def _input_scripts(b: Bus, layout: Layout, sched: Schedule, names: dict) -> None:
    for k, batch in enumerate(sched.input_batches):
        args = ["a", "b", "c", "d"][:len(batch)]
        b.open_script(f"script {SCRIPT_INPUT_BASE + k} ({', '.join('int ' + a for a in args)})")
        for arg, li, x in zip(args, batch, sched.input_slots[k]):
            if li < 0:
                b.comment(f"input slot {arg}: a constant input, nothing to write")
                continue
            g = layout.lanes[li]
            b.store(f"inputs[{x}]", arg, f"input {names[g.lane.node]}")
        b.close_script()
        b.blank()


def _begin_script(b: Bus, layout: Layout, names: dict) -> None:
    persistent = [l for l in layout.circuit.lights if l.persistent]
    starts = state_starts(layout)
    if not persistent and not starts:
        return
    b.open_script(f"script {SCRIPT_BEGIN} (void)")
    b.comment("A new sequence: spiking membranes back to their initial level, and the lights\n"
              "that prev lanes read to their init (the first step copies them to the doors);\n"
              "start this script in the same tic as the first step's inference.")
    for light in persistent:
        b.reset_light(light.tag, light.reset, f"membrane of {names[light.node]}")
    for tag, (init, node) in starts.items():
        b.reset_light(tag, init, f"what prev({names[node]}) reads at the first step")
    b.close_script()
    b.blank()


def state_starts(layout: Layout) -> dict[int, tuple[int, int]]:
    """Light tag -> (init, node) for every light a prev lane's doors are copied from."""
    net = layout.circuit.net
    out = {}
    for g in layout.lanes:
        if g.lane.source[0] == "state":
            gate = net.nodes[g.lane.node].gate
            out[g.lane.source[1]] = (-gate.init if g.lane.negated else gate.init, gate.src)
    return out


def fed_inputs(layout: Layout) -> list:
    """The lanes of fed-back inputs (a copy on fed steps, the input on the others)."""
    return [g for g in layout.lanes if g.lane.feedback is not None]


def _infer_script(b: Bus, layout: Layout, sched: Schedule, who: list, fed: bool = False
                  ) -> None:
    """One inference on the simple schedule: what crosses from the step before (prev lanes'
    copies, and in script 6, the fed step, fed-back inputs' copies; before any light is
    reset), reset, then phase by phase copy, release, wait and park; then the outputs to
    USER globals and the ack. Straight-line code, like every bus script (a function
    cannot wait: scripts 2 and 6 cannot share one)."""
    b.open_script(f"script {SCRIPT_FED if fed else SCRIPT_INFER} (int seq)")
    b.delay(1, "the input scripts started with this one have stored their arguments")
    carries = [c for c in sched.carries if fed or not c.when]
    if carries:
        b.comment("From the step before, while its lights still hold it: each prev lane's doors\n"
                  "get its node's value" + (", each fed-back input its node's." if fed else "."))
    names = {n.id: n.name for n in layout.circuit.net.nodes}
    for c in carries:
        g = layout.lanes[c.lane]
        what = who[c.lane] and (f"input {who[c.lane]}, fed back" if c.when else who[c.lane])
        b.copy(g.lane.door_tag, sched.speeds[c.lane], c.light, what)
    b.comment("Reset every light to its constant: bias plus the base values of its sources.")
    for light in layout.circuit.lights:
        if not light.persistent:
            b.reset_light(light.tag, light.reset, f"{light.role} of {names[light.node]}")
    for ph in sched.phases:
        b.blank()
        _copies(b, layout, sched, ph, who, fed)
        _ride(b, layout, sched, ph, who)
    b.blank()
    if sched.output_slots:
        b.comment("Outputs to USER globals.")
        for k, (tag, label) in enumerate(sched.output_slots):
            b.read(f"user{k + 1}", tag, f"output {label}")
    b.ack("ack", "seq")
    b.close_script()
    b.blank()


def _copies(b: Bus, layout: Layout, sched: Schedule, ph, who: list, fed: bool = False) -> None:
    """A phase's door ceilings get their values. Every doll waits on its pad, away from its
    doors: a doll inside a door sector would stop that door's ceiling from moving."""
    late = ph.index > 0 and any(layout.lanes[i].lane.source[0] == "input" for i in ph.lanes)
    b.comment(f"Phase {ph.index}: " + ("the inputs to their doors." if ph.index == 0 else
                                      "the final accumulators, and the inputs wanted now, to "
                                      "their doors." if late else
                                      "the final accumulators to their doors."))
    for i in ph.lanes:
        g = layout.lanes[i]
        speed = sched.speeds[i]
        if g.lane.source[0] in ("none", "state") or fed and g.lane.feedback is not None:
            continue  # a clock lane has no doors; prev and fed lanes' were copied at the start
        if g.lane.source[0] == "input":
            b.write_input(g.lane.door_tag, speed, f"inputs[{g.lane.source[1]}]",
                          who[i] and f"input {who[i]}")
        else:
            b.copy(g.lane.door_tag, speed, g.lane.source[1], who[i] and f"neuron {who[i]}")


def _ride(b: Bus, layout: Layout, sched: Schedule, ph, who: list) -> None:
    """A phase's dolls go once their doors have landed, and are parked once the slowest
    could have stopped."""
    b.delay(ph.copy_tics, "door ceilings reach their values")
    for i in ph.lanes:
        b.release(layout.lanes[i].lane.tid, who[i])
    b.delay(ph.run_tics, f"the longest lane of phase {ph.index} finishes")
    for i in ph.lanes:
        g = layout.lanes[i]
        x, y, z = g.start
        b.park(g.lane.tid, x, y, z, who[i])


def _entered(offset: int) -> str:
    return "the new inference" if offset == 0 else \
        f"the inference of {offset} beat{'s' if offset > 1 else ''} ago"


def pipeline_source(b: Bus, layout: Layout, sched: Schedule) -> None:
    """Script 4, one beat: the pipeline's events in time order, with delays between tics.
    Script 5 (seq, n) and its queue scripts, when the map has a batch: n overlapping beats."""
    pipe = sched.pipeline
    b.open_script(f"script {SCRIPT_PIPE} (int seq)")
    b.comment(f"One beat of the pipeline ({pipe.ii} slot(s)): every lane rides once, phase p\n"
              "for the inference that entered p // ii beats ago. Start the input scripts\n"
              "in the same tic with the new inference's inputs.")
    b.delay(1, "the input scripts started with this one have stored their arguments")
    _beat_body(b, layout, sched, 0)
    b.ack("ack", "seq")
    b.close_script()
    k = batch_size(layout, sched)
    if k < 2:
        return
    b.blank()
    _batch_script(b, layout, sched, k)
    b.blank()
    _queue_scripts(b, layout, sched, k)


def _batch_script(b: Bus, layout: Layout, sched: Schedule, k: int) -> None:
    """Script 5 (seq, n): beats 0..n-1 of a batch, beat j's events `batch_step * j` tics
    after beat 0's. Beats overlap: the events of every beat are merged into one timeline,
    in a tic earlier beats first, each beat's statements guarded by the batch's size."""
    pipe = sched.pipeline
    n_in, n_out, step = len(layout.circuit.net.inputs), len(sched.output_slots), pipe.batch_step
    b.open_script(f"script {SCRIPT_BATCH} (int seq, int n)")
    b.comment(f"n <= {k} beats, each exactly the events of script {SCRIPT_PIPE}, one every {step} "
              f"tics (script {SCRIPT_PIPE}\nstarted by a runner: one every {pipe.period}): "
              "beat j takes its inputs from the queue\n"
              f"(stored by scripts {queue_base(sched)}+) and reads its outputs into USER "
              f"{n_out}*j+1...")
    b.plain = True  # the beats repeat script 4, which carries the comments
    names = {n.id: n.name for n in layout.circuit.net.nodes}
    who = [None] * len(layout.lanes)   # plain statements: script 4 carries the comments
    END = len(ORDER) * 10 * pipe.ii  # after every event of its tic
    timeline = sorted([(j * step + e.tic, j, e.order, x, e) for j in range(k)
                       for x, e in enumerate(pipe.events)] +
                      [(j * step + pipe.beat_tics, j, END, 0, None) for j in range(k - 1)],
                      key=lambda t: t[:4])
    now, beat = 0, None  # the beat whose statements are being written; beat 0 is unguarded
    for tic, j, _, _, e in timeline:
        if beat and (tic > now or j != beat or e is None):
            b.close_script()
            beat = None
        if tic > now:
            b.delay(tic - now, "")
            now = tic
        if e is None:  # beat j was the batch's last: acknowledge now
            b.last_beat(j, "ack", "seq")
            beat = None
            continue
        if j != beat and j:
            b.guard(j)
        beat = j
        _event(b, layout, sched, e, names, who, j * n_out,
               lambda i, j=j: f"queue[{j * n_in + i}]")
    if beat:
        b.close_script()
    b.plain = False
    b.ack("ack", "seq")
    b.close_script()


def _beat_body(b: Bus, layout: Layout, sched: Schedule, out_base: int) -> None:
    """Script 4's beat from tic 1 to its end; output k is read into USER out_base+k+1."""
    pipe = sched.pipeline
    names = {n.id: n.name for n in layout.circuit.net.nodes}
    who = lane_names(layout, names)
    now = 1
    for e in pipe.events:
        if e.tic > now:
            b.delay(e.tic - now, "door ceilings reach their values" if e.kind == "release"
                    else "the slowest lane of the slot finishes")
            now = e.tic
        _event(b, layout, sched, e, names, who, out_base, lambda i: f"inputs[{i}]")
    if pipe.beat_tics > now:
        b.delay(pipe.beat_tics - now, "the beat ends")


def _event(b: Bus, layout: Layout, sched: Schedule, e: Event, names: dict, lanes: list,
           out_base: int, input_of) -> None:
    """One event of the beat as its bus statement; `input_of(i)` names where input i is;
    `lanes`: each lane's name in comments (lane_names)."""
    c = layout.circuit
    g = layout.lanes[e.what] if e.kind in ("copy", "release", "park") else None
    who = lanes[e.what] if g else ""
    if e.kind == "copy" and g.lane.source[0] == "input":
        b.write_input(g.lane.door_tag, sched.speeds[e.what], input_of(g.lane.source[1]),
                      who and f"input {who}")
    elif e.kind == "copy":
        b.copy(g.lane.door_tag, sched.speeds[e.what], g.lane.source[1],
               who and f"neuron {who}, {_entered(e.offset)}")
    elif e.kind == "release":
        b.release(g.lane.tid, who)
    elif e.kind == "park":
        x, y, z = g.start
        b.park(g.lane.tid, x, y, z, who)
    elif e.kind == "reset":
        light = c.light(e.what)
        b.reset_light(e.what, light.reset, f"{light.role} of {names[light.node]}, "
                                           f"free for {_entered(e.offset)}")
    elif e.kind == "read":
        tag, label = sched.output_slots[e.what]
        b.read(f"user{out_base + e.what + 1}", tag, f"output {label} of {_entered(e.offset)}")


def batch_size(layout: Layout, sched: Schedule) -> int:
    """Beats per batch script: as many as USER slots hold their outputs, within MAX_BATCH,
    a bound on the unrolled script's size and the script starts one tic takes
    (physics.MAX_SCRIPT_STARTS); 0 for a map without a pipelined beat."""
    if sched.pipeline is None or not sched.output_slots:
        return 0
    per_beat = len(sched.pipeline.events) + len(layout.circuit.net.inputs) + 4
    # The step starts every beat's queue scripts and the batch script in one tic.
    starts = (P.MAX_SCRIPT_STARTS - 1) // max(1, len(sched.input_batches))
    k = min(MAX_BATCH, READ_SLOTS // len(sched.output_slots), MAX_BATCH_STATEMENTS // per_beat,
            starts)
    return k if k > 1 else 1


def queue_base(sched: "Schedule") -> int:
    """First queue script: the next thousand clear of the read scripts."""
    return (read_base(sched) + len(sched.read_batches)) // SCRIPT_QUEUE_ALIGN \
        * SCRIPT_QUEUE_ALIGN + SCRIPT_QUEUE_ALIGN


def _queue_scripts(b: Bus, layout: Layout, sched: Schedule, k: int) -> None:
    """Script queue_base + j*G + g (a, b, c, d): inputs 4g..4g+3 of batch beat j."""
    n_in = len(layout.circuit.net.inputs)
    for j in range(k):
        for g, batch in enumerate(sched.input_batches):
            args = ["a", "b", "c", "d"][:len(batch)]
            b.open_script(f"script {queue_base(sched) + j * len(sched.input_batches) + g} "
                          f"({', '.join('int ' + a for a in args)})")
            for t, arg in enumerate(args):
                b.enqueue(j * n_in + P.PUKE_ARGS * g + t, arg)
            b.close_script()


def manifest(layout: Layout, sched: Schedule, title: str) -> dict:
    """What a runner needs to drive the map; stored as a JSON lump in the WAD."""
    c = layout.circuit
    names = {n.id: n.name for n in c.net.nodes}
    return {
        "format": "voodoonet.map", "version": 1, "title": title,
        "inputs": [names[i] for i in c.net.inputs],
        "input_ranges": [list(r) for r in c.net.input_ranges()],
        "input_scripts": [SCRIPT_INPUT_BASE + k for k in range(len(sched.input_batches))],
        "infer_script": SCRIPT_INFER,
        "steps": c.net.steps,
        "open": c.net.open,
        "begin_script": SCRIPT_BEGIN if any(l.persistent for l in c.lights)
        or state_starts(layout) else None,
        # Fed-back inputs: on a fed step (script 6 instead of 2) they take their node's value
        # of the step before, in the map.
        "feedback": [names[x] for x in c.net.inputs if x in c.net.feedback],
        "fed_script": SCRIPT_FED if fed_inputs(layout) else None,
        "done": None if c.net.done is None else c.net.outputs.index(c.net.done),
        "inference_tics": sched.inference_tics,
        "init_tics": sched.init_tics,
        "ack_var": ACK_VAR, "read_ack_var": READ_ACK_VAR,
        "outputs": [label for _, label in sched.output_slots],
        "all_outputs": [names[o] for o in c.net.outputs],
        "read_batches": [{"script": read_base(sched) + k, "labels": [lab for _, lab in batch]}
                         for k, batch in enumerate(sched.read_batches)],
        # The first len(hand_on) read batches hold the outputs, batch k those final once
        # script 2 (or 6) has run hand_on[k] tics: a read script started after that many
        # tics of the step reads them while the inference goes on.
        "hand_on": sched.hand_on,
        # Inputs wanted late (circuit.lower's late_inputs): input script k takes the inputs
        # input_slots[k] and may start as late as tic input_need[k] of the step.
        **({"input_slots": sched.input_slots, "input_need": sched.input_need}
           if sched.late_inputs else {}),
        "pipeline": None if sched.pipeline is None else {
            "script": SCRIPT_PIPE, "beat_tics": sched.pipeline.beat_tics,
            "ii": sched.pipeline.ii, "lags": sched.pipeline.lags,
            "batch": batch_size(layout, sched), "batch_script": SCRIPT_BATCH,
            "batch_period": sched.pipeline.batch_step,
            "queue_base": queue_base(sched)},
    }


# Every statement the generated ACS may contain: the bus operations with constant operands,
# the value being moved as a script argument, a map variable or a light level. Nothing
# else, in particular no operator applied to a neuron value.
_INT = r"-?\d+"
_BUS_FORMS = [
    rf"Ceiling_MoveToValue\({_INT}, {_INT}, ((inputs|queue)\[\d+\]|GetSectorLightLevel\({_INT}\)), 0\);",
    rf"Light_ChangeToValue\({_INT}, {_INT}\);( Light_LowerByValue\({_INT}, {_INT}\);)?",
    rf"SetActorPosition\({_INT}, {_INT}, {_INT}, {_INT}, 0\);",
    rf"SetActorVelocity\({_INT}, {_INT}, 0, 0, FALSE, FALSE\);",
    rf"Scroll_Floor\({_INT}, 0, 0, 1\);",
    rf"user\d+ = GetSectorLightLevel\({_INT}\);",
    r"inputs\[\d+\] = [abcd];",
    r"inputs\[\d+\] = hub\[\d+\];",                      # hub play: copies only
    rf"hub\[\d+\] = GetSectorLightLevel\({_INT}\);",
    r"queue\[\d+\] = [abcd];",
    r"if \(n > \d+\)",
    r"if \(n == \d+\) \{ ack = seq; terminate; \}",
    rf"Delay\({_INT}\);",
    r"ack = (-1|seq);",
    r"read_ack = token;",
    r"script \d+ (OPEN|\((int \w+(, int \w+)*|void)?\))",
    r"[{}]",
    r'#include "zcommon.acs"',
    r"global int \d+:\w+;",
    r"int inputs\[\d+\];",
    r"int queue\[\d+\];",
]
_BUS_RE = [__import__("re").compile(f"^{f}$") for f in _BUS_FORMS]


def bus_violations(source: str) -> list[tuple[int, str]]:
    """Lines of generated ACS that are not bus operations: (line number, text)."""
    bad = []
    for k, raw in enumerate(source.splitlines(), 1):
        line = raw.split("//", 1)[0].strip()
        if line and not any(r.match(line) for r in _BUS_RE):
            bad.append((k, raw.strip()))
    return bad
