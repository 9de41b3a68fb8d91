"""Lowering: a netlist becomes a physical circuit of lights, lanes, doors and weighted lines.

This pass owns the arithmetic of the machine, before any geometry exists:

- Every non-input node has an **accumulator light**: a sector whose light level is reset
  to a constant and then receives `Light_RaiseByValue` / `Light_LowerByValue` from the
  weighted lines dolls cross. Light changes are instant and commute, so any number of
  dolls may add to one light in the same tic.
- Every gated node (and every input) has a **lane**: a corridor with a staircase of
  **doors** whose ceilings are all set, by ACS, to one value (the node's accumulator, or
  the input). A doll riding the lane passes door k iff that value >= the door's threshold,
  and after each door it crosses lines adding `w * delta_k` to each consumer's light,
  where `delta_k` is the step of the gate's function there. Relu, step and lut are all the
  same construction with different thresholds and deltas.
- Identity neurons need no lane: their consumers take their inputs directly, with the
  weights multiplied through (their own light still exists, so they remain readable).
- Each gated node also has a **value light** (reset to the gate's value at the bottom of
  its range, +delta per door passed), so every node's value can be read back.

The pass also computes, for every light and door plane, a proven range of every value it
can hold at any moment (partial sums included), which mapgen/checks.py compares with the
engine limits.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from dsl.ir import Identity, Input, Lut, Netlist, Prev, Relu, Spike, Step
from dsl.lower import lower_products
from dsl.diagnostics import CompileError, Diagnostic, Pos

from . import carry as carry_model
from . import physics as P
from .tags import bucket_order
from .tags import place as place_tags


@dataclass
class Light:
    tag: int
    node: int              # IR node id (in the lowered netlist)
    role: str              # "acc" or "value"
    reset: int             # written at the start of every inference
    lo: int = 0            # proven bounds of the level at any moment
    hi: int = 0
    groups: list[int] = field(default_factory=list)  # group tags it also carries (moreids)
    # A spiking neuron's membrane keeps its level from one time step to the next: it is
    # reset to `reset` only when a new sequence begins.
    persistent: bool = False


@dataclass
class Door:
    threshold: int         # the doll passes iff the lane's plane value >= threshold
    delta: int             # the node's value goes up by delta when the doll passes
    adds: list[tuple[int, int]] = field(default_factory=list)  # (light tag, amount)
    # The lines actually built: (tag, amount), where a tag may be a group tag that several
    # lights carry, so that one line serves every consumer with the same weight.
    lines: list[tuple[int, int]] = field(default_factory=list)
    # Lines that set a light to a constant (a spike's reset of its membrane), after the adds.
    sets: list[tuple[int, int]] = field(default_factory=list)


@dataclass
class Lane:
    node: int
    phase: int             # dolls of phase p run after every phase < p has finished
    doors: list[Door]
    base: int              # the node's value when the doll passes no door
    plane_lo: int          # range of the value ACS writes to the door ceilings
    plane_hi: int
    # ("input", k); ("light", acc tag); ("state", tag of the light whose level at the end
    # of the previous step the doors hold: a prev node's lane); ("none",) for a clock lane
    source: tuple
    door_tag: int = 0
    tid: int = 0
    role: str = "gate"     # gate; fire / leak (a spiking neuron's two lanes); clock
    # Lines crossed on every ride, before the first door: (tag, amount) adds, then sets.
    prelude: list[tuple[int, int]] = field(default_factory=list)
    prelude_sets: list[tuple[int, int]] = field(default_factory=list)
    # An input fed back (`feedback x = y`): on a fed step the bus copies this light (y's
    # value of the step before) to the doors instead of writing the given input.
    feedback: int | None = None
    # The lower side of a two-sided lane (`lower(pivots=...)`): its source light holds the
    # negation of the node's accumulator (or value), so it counts down from the pivot.
    negated: bool = False

    @property
    def label(self) -> str:
        return {"gate": "", "fire": "", "leak": " (leak)", "clock": " (clock)"}[self.role]


@dataclass
class Circuit:
    net: Netlist                    # the lowered netlist the circuit computes
    lights: list[Light]
    lanes: list[Lane]
    acc_light: dict[int, int]       # node id -> tag of its accumulator light
    value_light: dict[int, int]     # node id -> tag of the light that holds its value
    n_phases: int
    groups: dict[int, list[int]] = field(default_factory=dict)  # group tag -> light tags
    # How dolls ride: "glide" (released with their speed onto frictionless lanes) or
    # "conveyor" (every lane a conveyor: the geometry before, kept to measure against).
    carry: str = "glide"
    # Lanes without ramp stairs (the dolls' class steps up each rise): gliding maps, unless a
    # map cannot declare the player class (a circuit embedded in someone else's map).
    steep: bool = True

    def light(self, tag: int) -> Light:
        return self._by_tag[tag]

    def __post_init__(self):
        self._by_tag = {l.tag: l for l in self.lights}


def staircase(gate, lo: int, hi: int) -> tuple[int, list[tuple[int, int]]]:
    """(base value, [(threshold, delta), ...]) of a gate over plane values in [lo, hi].

    Doors whose threshold is <= lo are always passed and fold into the base; doors above hi
    are never passed and are left out.
    """
    if isinstance(gate, Input) and gate.levels:  # a door per level it can take
        return gate.levels[0], [(b, b - a) for a, b in zip(gate.levels, gate.levels[1:])]
    if isinstance(gate, (Input, Prev)):  # the lane counts its value, door by door
        return lo, [(t, 1) for t in range(lo + 1, hi + 1)]
    if isinstance(gate, Relu):
        base = min(max(lo // gate.s, 0), gate.L)
        doors = [(k * gate.s, 1) for k in range(1, gate.L + 1) if lo < k * gate.s <= hi]
        return base, doors
    if isinstance(gate, Step):
        return int(lo >= gate.t), ([(gate.t, 1)] if lo < gate.t <= hi else [])
    if isinstance(gate, Lut):
        base = gate(lo)
        doors = []
        for k in range(max(lo, gate.lo) + 1, min(hi, gate.hi) + 1):
            d = gate(k) - gate(k - 1)
            if d:
                doors.append((k, d))
        return base, doors
    raise TypeError(gate)


def _door_count(gate, lo: int, hi: int) -> int:
    """An upper bound on a staircase's doors, without building it."""
    if isinstance(gate, Input) and gate.levels:
        return len(gate.levels) - 1
    if isinstance(gate, Relu):
        return min(gate.L, max(0, hi // gate.s - lo // gate.s))
    if isinstance(gate, Step):
        return 1
    if isinstance(gate, Lut):
        # A door only where the table changes (staircase): count those, not the keys, so
        # a wide but mostly flat table (GELU, elu + 1 over a pushed accumulator) fits.
        a, b = max(lo, gate.lo), min(hi, gate.hi)
        t = gate.table
        return sum(t[k - gate.lo] != t[k - 1 - gate.lo] for k in range(a + 1, b + 1))
    return hi - lo


def plane_range(net: Netlist, n) -> tuple[int, int]:
    """The values the bus may write to a gated node's doors: an input's range, a prev
    node's value range (it copies the value its node ended the step before with), else the
    accumulator's range."""
    if n.is_input:
        return n.gate.lo, n.gate.hi
    r = net.value_range[n.id] if n.is_prev else net.acc_range[n.id]
    return r.lo, r.hi


def pivot_of(net: Netlist, n, const: int, pivots) -> int | None:
    """The pivot of node n's two-sided lane (`_Lowering.plan_pivots`), or None for one
    lane. `pivots`: True gives a lookup its accumulator's constant (`const`: the bias
    through identities, the value when every source is 0) and a prev node 0; a dict gives
    the pivots by node name (a calibration's medians, demos/chat.py). Inputs (the bus
    writes them, it cannot negate) and other gates keep one lane, as does a node whose
    doors all lie above its pivot."""
    if not pivots or n.is_input or not isinstance(n.gate, (Lut, Prev)):
        return None
    if isinstance(pivots, dict):
        p = pivots.get(n.name)
    else:
        p = 0 if n.is_prev else const
    lo, hi = plane_range(net, n)
    if p is None or _door_count(n.gate, lo, hi) > P.MAX_DOORS:
        return None
    return p if any(t <= p for t, _ in staircase(n.gate, lo, hi)[1]) else None


def sides(steps: list[tuple[int, int]], p: int | None) -> tuple[list, list]:
    """A staircase pivoted at p (None: not at all): the doors above p, and those at or
    below p as the lower lane counts them on the negated plane: it passes the door of
    threshold t iff -plane >= 1 - t, that is iff the value is below t, and takes the step
    back down."""
    k0 = 0 if p is None else sum(1 for t, _ in steps if t <= p)
    return steps[k0:], [(1 - t, -d) for t, d in reversed(steps[:k0])]


def _leak_doors(leak: int, lo: int, hi: int) -> int:
    """The doors of a membrane's leak lane over [lo, hi], without building it: the leak
    max(u - leak, 0) - u steps by -1 at every u <= leak and is flat above."""
    return max(0, min(hi, leak) - lo)


def _too_many_doors(n, lo: int, hi: int, what: str, fix: str) -> Diagnostic:
    from dsl.util import short_int

    return Diagnostic(n.pos, f"'{n.name}' needs a {what} of more than {P.MAX_DOORS} doors "
                             f"(values {short_int(lo)}..{short_int(hi)})",
                      f"narrow its range: smaller input ranges, {fix}")


def lower(net: Netlist, first_tag: int = 1, solo: set[tuple[str, str]] = frozenset(),
          door_budget: int | None = None, carry: str = "glide",
          steep: bool | None = None, split: bool = True, chains: bool | None = None,
          pivots: bool | dict[str, int] = False, place: bool | None = None,
          late_inputs: bool = False) -> Circuit:
    """Netlist -> Circuit. Tags are numbered from first_tag in node order, then placed in
    hash buckets (`place`), both deterministic.
    Connections named in `solo` (source name, destination name) get a line of their own,
    outside any weight group, so that a map can rewire that one connection. With a
    `door_budget`, staircases longer than that are split into parallel sub-lanes
    (split_lanes); without one, gliding lanes are split where mapgen/carry.py's cost model
    finds a step cheaper (carry="conveyor": the old geometry, never split; `split=False`:
    one lane per staircase, as the tile planner counts them). `chains`: tags placed for
    short hash chains (value lights in the cold buckets, group tags in bucket order); by
    default on, off for the conveyor geometry, which keeps the placement it had (the old
    way, whole, for bench/speed.py). `pivots`: two-sided lanes (`_Lowering.plan_pivots`):
    True for the default pivots, or {node name: pivot} (`pivot_of`). `place`: tags renumbered
    into the hash buckets where they walk the least (mapgen/tags.py); by default with
    `chains` (False: the cold buckets of stop 42, which `modding/extract` still reads).
    `late_inputs`: each input lane rides in the phase before its first reader's
    (`_Lowering.phase_inputs_late`), so a map of a streamed run can start before all of its
    inputs are there (program.plan's input_need)."""
    chains = carry != "conveyor" if chains is None else chains
    lw = _Lowering(lower_products(net), first_tag, chains)
    lw.make_lights()
    lw.expand_identities()
    lw.plan_pivots(pivots)
    lw.make_lanes()
    if late_inputs:
        lw.phase_inputs_late()
    # Lines before sub-lanes: the cost model measures each landing by its lines, and the
    # sub-lanes of a staircase share its doors, so its weight groups too.
    lw.group_lines(solo)
    steep = carry == "glide" if steep is None else steep
    if door_budget is not None:
        lw.lanes = split_lanes(lw.lanes, door_budget)
    elif carry == "glide" and split:  # sub-lanes where the cost model finds a step cheaper
        lw.lanes = carry_model.split(lw.net, lw.lanes, len(lw.lights), steep)
    lw.set_resets()
    lw.bound_lights()
    circuit = Circuit(lw.net, lw.lights, lw.lanes, lw.acc_light, lw.value_light,
                      1 + max((l.phase for l in lw.lanes), default=0), lw.groups,
                      carry=carry, steep=steep)
    for lane in lw.lanes:
        lane.door_tag = lw.new_tag(cold=True)
    for k, lane in enumerate(lw.lanes):
        lane.tid = 1000 + k
    if chains if place is None else place:
        place_tags(circuit, first_tag)
    return circuit


def split_lanes(lanes: list[Lane], budget: int) -> list[Lane]:
    """Split every neuron staircase of more than `budget` doors into sub-lanes of at most
    `budget` consecutive doors, each with a doll of its own, all in the lane's phase.

    Exact because thresholds rise along a lane: the doll of a sub-lane passes its door k
    iff the plane value reaches threshold k, and then it has reached every earlier
    threshold too, so the same doors are passed as by the single doll, only in parallel
    (a phase lasts as long as its longest staircase; docs/physics.md). Light bounds are
    computed afterwards, per sub-lane, since parallel dolls add in any interleaving.
    Input lanes are split the same way (their thresholds rise too): the bus writes the
    input to every sub-lane's doors, a copy like any other. Spiking lanes are left whole."""
    if budget < 1:
        raise CompileError([Diagnostic(Pos("<compile>"), f"door budget {budget} is not positive",
                                       "give at least 1 door per lane")])
    out: list[Lane] = []
    for lane in lanes:
        if lane.role != "gate" or lane.source[0] not in ("light", "input", "state") \
                or len(lane.doors) <= budget:
            out.append(lane)
            continue
        for k in range(0, len(lane.doors), budget):
            out.append(Lane(lane.node, lane.phase, lane.doors[k:k + budget], lane.base,
                            lane.plane_lo, lane.plane_hi, lane.source,
                            feedback=lane.feedback, negated=lane.negated))
    return out


class _Lowering:
    """The state of one lowering, passed through its steps in order (see `lower`)."""

    def __init__(self, net: Netlist, first_tag: int, chains: bool = True):
        self.net = net
        self.chains = chains        # tags placed for short hash chains (new_tag, group_lines)
        self.tag = first_tag
        self.cold_tag = first_tag   # door tags: buckets of their own (new_tag)
        self.lights: list[Light] = []
        self.acc_light: dict[int, int] = {}
        self.value_light: dict[int, int] = {}
        self.lanes: list[Lane] = []
        self.base_of: dict[int, int] = {}
        self.phase_of: dict[int, int] = {}
        self.clock: list[tuple[int, int]] = []   # (membrane, node): gets its per-step constant
        self.pivot: dict[int, int] = {}          # node id -> pivot of its two-sided lane
        self.neg: dict[int, int] = {}            # light tag -> its negated mirror's tag

    def new_tag(self, cold: bool = False) -> int:
        """The next free tag of its kind. The engine finds a tag's sectors by walking the
        chain of its hash bucket (tag % 256) to its end, and a weighted line walks its
        light's chain every time a doll crosses it: so lights and weight groups (hot: every
        crossing) take tags whose bucket no door shares, and door tags (cold: written once a
        phase, each naming many sectors) take the first COLD_BUCKETS buckets. Measured on
        the CNN map: weighted lines are 77 % of a ride's CPU (bench/speed.py, docs/physics.md)."""
        if cold:
            t = self.cold_tag
            while not P.cold(t):
                t += 1
            if t <= P.MAX_TAG:
                self.cold_tag = t + 1
                return t
            cold = False          # past the engine's tags: any free tag, shared bucket or not
        t = self.tag
        while P.cold(t):
            t += 1
        self.tag = t + 1
        return t

    def make_lights(self) -> None:
        """An accumulator light per non-input node (a membrane for spiking ones) and a value
        light per gated node; an identity's value is its accumulator."""
        for n in self.net.nodes:
            if not (n.is_input or n.is_prev):  # their value is their lane's, not a sum
                self.acc_light[n.id] = self.new_tag()
                spike = isinstance(n.gate, Spike)
                self.lights.append(Light(self.acc_light[n.id], n.id,
                                         "membrane" if spike else "acc",
                                         n.gate.init if spike else 0, persistent=spike))
                if isinstance(n.gate, Identity):
                    self.value_light[n.id] = self.acc_light[n.id]
            if not isinstance(n.gate, Identity):
                # A value light takes a line at every door its lane passes: in the cold
                # buckets its chain holds no weight group (docs/physics.md).
                self.value_light[n.id] = self.new_tag(cold=self.chains)
                self.lights.append(Light(self.value_light[n.id], n.id, "value", 0))
        self.by_tag = {l.tag: l for l in self.lights}

    def expand_identities(self) -> None:
        """Expand every accumulator over lane-driving nodes, through identity neurons:
        acc(x) = const[x] + sum_r W[x][r] * value(r), with r an input or gated node."""
        net = self.net
        const: dict[int, int] = {}
        expand: dict[int, dict[int, int]] = {}
        for n in net.nodes:
            if n.is_input or n.is_prev:
                continue
            c, w = n.bias, {}
            for s, ws in n.weights.items():
                src = net.nodes[s]
                if isinstance(src.gate, Identity):
                    c += ws * const[s]
                    for r, wr in expand[s].items():
                        w[r] = w.get(r, 0) + ws * wr
                else:
                    w[s] = w.get(s, 0) + ws
            const[n.id] = c
            expand[n.id] = {r: v for r, v in w.items() if v}
        self.const, self.expand = const, expand
        # Consumers of each lane node: light tag -> composed weight.
        self.fanout: dict[int, dict[int, int]] = {}
        for x, ws in expand.items():
            for r, w in ws.items():
                self.fanout.setdefault(r, {})[self.acc_light[x]] = w

    def plan_pivots(self, pivots) -> None:
        """Two-sided lanes (docs/physics.md): a lane counts its value door by door from the
        bottom of its range, so a value in the middle of a wide range crosses half its
        doors. A node with a pivot p gets the doors above p on its lane (plane: the
        accumulator, as before) and those at or below p on a second lane counting down from
        p, whose plane is a mirror light: it receives every line the accumulator (or, for a
        prev node, the value light it reads) receives, negated, since the bus only copies.
        Crossings |v - p| instead of v - lo, for a doll and a light more. `pivots`: True
        (lookups at their accumulator's constant, prev nodes at 0) or {node name: p}; a node
        whose doors all lie above its pivot keeps one lane (`pivot_of`)."""
        for n in self.net.nodes:
            p = pivot_of(self.net, n, self.const.get(n.id, 0), pivots)
            if p is None:
                continue
            light = self.value_light[n.gate.src] if n.is_prev else self.acc_light[n.id]
            self.pivot[n.id] = p
            if light not in self.neg:
                self.neg[light] = self.new_tag()
                self.lights.append(Light(self.neg[light], self.by_tag[light].node, "mirror", 0))
                self.by_tag[self.neg[light]] = self.lights[-1]
        # A mirror of an accumulator gets each of its lines negated (a consumer, grouped
        # by weight like any other); a mirror of a value light, each door's value line.
        for adds in self.fanout.values():
            for t, w in list(adds.items()):
                if t in self.neg:
                    adds[self.neg[t]] = -w

    def make_lanes(self) -> None:
        """A lane per gated node and input, phased after the lanes it reads; every problem
        is collected before raising."""
        bad: list[Diagnostic] = []
        for n in self.net.nodes:
            if isinstance(n.gate, Identity):
                continue
            phase = 0 if n.is_input or n.is_prev else \
                1 + max((self.phase_of[r] for r in self.expand[n.id]), default=0)
            if isinstance(n.gate, Spike):
                self.spike_lanes(n, phase, bad)
            else:
                self.gate_lane(n, phase, bad)
        if bad:
            raise CompileError(bad)

    def phase_inputs_late(self) -> None:
        """Each input lane in the phase before its first reader's (phase 0 for an input
        nothing in the map reads, or one fed back: a fed step copies it at the step's start).
        A value wanted late can then arrive late: the bus writes an input's doors at its
        phase, and a streamed run sends it just before (engine/runner.py)."""
        first: dict[int, int] = {}
        for n in self.net.nodes:
            if n.id in self.phase_of and not (n.is_input or n.is_prev):
                for r in self.expand[n.id]:
                    first[r] = min(first.get(r, self.phase_of[n.id]), self.phase_of[n.id])
        for lane in self.lanes:
            if lane.source[0] == "input" and lane.feedback is None:
                lane.phase = max(0, first.get(lane.node, 1) - 1)

    def gate_lane(self, n, phase: int, bad: list[Diagnostic]) -> None:
        """An input's or a relu/step/lut node's staircase of doors."""
        plo, phi = plane_range(self.net, n)
        if n.is_input:
            source = ("input", self.net.inputs.index(n.id))
        elif n.is_prev:
            # Read from the light that holds its node's value at the end of a step.
            source = ("state", self.value_light[n.gate.src])
        else:
            source = ("light", self.acc_light[n.id])
        if _door_count(n.gate, plo, phi) > P.MAX_DOORS:
            bad.append(_too_many_doors(n, plo, phi, "lane",
                                       "a requantising relu (s > 1) or a smaller max"))
            # Its readers still need a phase and a base to be checked: give the lane's.
            self.phase_of[n.id], self.base_of[n.id] = phase, 0
            return
        base, steps = staircase(n.gate, plo, phi)
        fed = self.net.feedback.get(n.id)
        feedback = None if fed is None else self.value_light[fed]
        # Two-sided (plan_pivots) or not (no doors down): the value at the pivot is the
        # base of both lanes.
        up, down = sides(steps, self.pivot.get(n.id))
        at_pivot = base - sum(d for _, d in down)
        self.base_of[n.id], self.phase_of[n.id] = at_pivot, phase
        if up:
            self.lanes.append(Lane(n.id, phase, self._doors(n, up, bad), at_pivot, plo, phi,
                                   source, feedback=feedback))
        if down:
            self.lanes.append(Lane(n.id, phase, self._doors(n, down, bad), at_pivot, -phi, -plo,
                                   (source[0], self.neg[source[1]]), feedback=feedback,
                                   negated=True))

    def _doors(self, n, steps: list[tuple[int, int]], bad: list[Diagnostic]) -> list[Door]:
        """A staircase's doors: each adds its step to the node's value light (and that
        light's mirror, if a prev lane reads it two-sided) and its weight times the step to
        every consumer."""
        doors = []
        vl = self.value_light[n.id]
        for threshold, delta in steps:
            adds = [(vl, delta)] + ([(self.neg[vl], -delta)] if vl in self.neg else [])
            for t, w in sorted(self.fanout.get(n.id, {}).items()):
                adds.append((t, w * delta))
            for t, amount in adds:
                if abs(amount) > P.LIGHT_MAX:
                    bad.append(Diagnostic(n.pos, f"'{n.name}' would add {amount} to a light "
                                                 "in one line crossing",
                                          "light levels hold -32768..32767; use smaller weights"))
            doors.append(Door(threshold, delta, adds))
        return doors

    def spike_lanes(self, n, phase: int, bad: list[Diagnostic]) -> None:
        """A spiking neuron: its membrane light M integrates like an accumulator but is not
        reset between steps. A clock doll adds the per-step constant; the fire lane (one door
        at the threshold, read from M) adds 1 to the value light, w to each consumer and
        resets M; the leak lane (read from M after firing) adds max(u - leak, 0) - u to M."""
        g = n.gate
        M = self.acc_light[n.id]
        st = self.net.state_range[n.id]
        base, steps = staircase(Step(g.threshold), st.lo, st.hi)
        self.base_of[n.id] = base
        self.phase_of[n.id] = phase
        self.clock.append((M, n.id))
        fire = (M, -g.threshold) if g.reset is None else None
        reset = None if g.reset is None else (M, g.reset)
        if base:  # it fires on every step: the membrane effect needs no door
            self.lanes.append(Lane(n.id, phase, [], base, st.lo, st.hi, ("light", M),
                                   role="fire", prelude=[fire] if fire else [],
                                   prelude_sets=[reset] if reset else []))
        elif steps:
            adds = [(self.value_light[n.id], 1)] + sorted(self.fanout.get(n.id, {}).items())
            door = Door(g.threshold, 1, adds + ([fire] if fire else []),
                        sets=[reset] if reset else [])
            self.lanes.append(Lane(n.id, phase, [door], 0, st.lo, st.hi, ("light", M),
                                   role="fire"))
        if _leak_doors(g.leak, st.lo, st.hi) > P.MAX_DOORS:
            # Checked before the staircase is built: its table spans the whole range.
            bad.append(_too_many_doors(n, st.lo, st.hi, "leak lane",
                                       "a smaller leak, or inputs that keep the membrane "
                                       "low"))
            return
        leak = Lut(st.lo, tuple(max(u - g.leak, 0) - u for u in range(st.lo, st.hi + 1)))
        lbase, lsteps = staircase(leak, st.lo, st.hi)
        if lbase or lsteps:
            self.lanes.append(Lane(n.id, phase + 1, [Door(t, d, [(M, d)]) for t, d in lsteps],
                                   0, st.lo, st.hi, ("light", M), role="leak",
                                   prelude=[(M, lbase)] if lbase else []))

    def set_resets(self) -> None:
        """Reset values: the constant part plus every source's base value. A membrane gets
        that constant from the clock doll on every step instead."""
        step_const = {}
        for x, ws in self.expand.items():
            c = self.const[x] + sum(w * self.base_of[r] for r, w in ws.items())
            if isinstance(self.net.nodes[x].gate, Spike):
                step_const[self.acc_light[x]] = c
            else:
                self.by_tag[self.acc_light[x]].reset = c
        clock_adds = [(M, step_const[M]) for M, _ in self.clock if step_const[M]]
        if clock_adds:
            self.lanes.insert(0, Lane(self.clock[0][1], 0, [], 0, 0, 0, ("none",),
                                      role="clock", prelude=clock_adds))
        for n in self.net.nodes:
            if not isinstance(n.gate, Identity):
                self.by_tag[self.value_light[n.id]].reset = self.base_of[n.id]
        for t, m in self.neg.items():
            self.by_tag[m].reset = -self.by_tag[t].reset

    def bound_lights(self) -> None:
        """Proven bounds of every light at any moment: the reset value plus, for every lane
        that adds to it, the lowest and highest running total of that lane's additions.
        A membrane starts a step anywhere in its state range."""
        net = self.net
        lo = {l.tag: (net.state_range[l.node].lo if l.persistent else l.reset)
              for l in self.lights}
        hi = {l.tag: (net.state_range[l.node].hi if l.persistent else l.reset)
              for l in self.lights}
        # The two sides of a pivoted node never both ride doors (its value is above the
        # pivot or not): their swings combine as the larger, not the sum.
        two_sided: dict[int, list[dict[int, tuple[int, int]]]] = {}
        for lane in self.lanes:
            swing = _swing(lane)
            if lane.node in self.pivot and lane.role == "gate":
                side = two_sided.setdefault(lane.node, [{}, {}])[lane.negated]
                for t, (a, b) in swing.items():
                    a0, b0 = side.get(t, (0, 0))
                    side[t] = (a0 + a, b0 + b)  # sub-lanes of one side ride together
                continue
            for t, (a, b) in swing.items():
                lo[t] += a
                hi[t] += b
        for up, down in two_sided.values():
            for t in set(up) | set(down):
                lo[t] += min(up.get(t, (0, 0))[0], down.get(t, (0, 0))[0])
                hi[t] += max(up.get(t, (0, 0))[1], down.get(t, (0, 0))[1])
        for l in self.lights:
            l.lo, l.hi = lo[l.tag], hi[l.tag]

    def group_lines(self, solo) -> None:
        """Group the consumers of each lane by weight: one line per distinct weight, aimed at
        a tag every consumer with that weight carries. A lane feeding 600 neurons with
        weights -1..1 needs 3 lines per door instead of 601 (lines are what slows dolls)."""
        net, acc_light = self.net, self.acc_light
        self.groups: dict[int, list[int]] = {}
        solo_tags = {(net.by_name(a).id, acc_light[net.by_name(b).id]) for a, b in solo}
        done: dict[int, tuple] = {}   # a two-sided lane's sides share their groups
        for lane in self.lanes:
            if lane.role == "clock":
                continue
            if lane.role == "gate" and lane.node in done:
                self._lines_of(lane, *done[lane.node])
                continue
            by_w: dict[tuple, list[int]] = {}
            for t, w in sorted(self.fanout.get(lane.node, {}).items()):
                key = (w, t) if (lane.node, t) in solo_tags else (w, 0)
                by_w.setdefault(key, []).append(t)
            target = {}
            for key, members in sorted(by_w.items()):
                if len(members) == 1:
                    target[key] = members[0]
                    continue
                g = self.new_tag()
                self.groups[g] = members
                for t in members:
                    self.by_tag[t].groups.append(g)
                target[key] = g
            done[lane.node] = (by_w, target)
            self._lines_of(lane, by_w, target)
        # A crossing walks its tag's hash chain through every sector's tag list; with each
        # light's tags in bucket order, the tags one chain visits in a sector lie side by
        # side (one cache line, not one each): the 784 -> 1280 layer rides 1.6x faster.
        if self.chains:
            for light in self.lights:
                light.groups.sort(key=bucket_order)

    def _lines_of(self, lane, by_w: dict, target: dict) -> None:
        """Each door's lines: its value line first, then one per distinct weight (a leak
        lane's doors only have their own additions)."""
        if lane.role == "leak":
            for door in lane.doors:
                door.lines = list(door.adds)
            return
        vl = self.value_light[lane.node]
        mirror = [(self.neg[vl], -1)] if vl in self.neg else []
        for door in lane.doors:
            door.lines = [(vl, door.delta)] + [(t, k * door.delta) for t, k in mirror] + [
                (target[key], key[0] * door.delta) for key in sorted(by_w)]
            if lane.role == "fire":  # the subtracting reset of the membrane, if any
                door.lines += [a for a in door.adds if a[0] == self.acc_light[lane.node]]


def _swing(lane: Lane) -> dict[int, tuple[int, int]]:
    """Light tag -> the lowest and highest running total of one lane's additions to it."""
    running: dict[int, int] = {}
    out: dict[int, tuple[int, int]] = {}
    for t, amount in lane.prelude + [a for door in lane.doors for a in door.adds]:
        running[t] = running.get(t, 0) + amount
        a, b = out.get(t, (0, 0))
        out[t] = (min(a, running[t]), max(b, running[t]))
    return out


def simulate(circuit: Circuit, x, state: dict[int, int] | None = None,
             passed: dict[int, int] | None = None) -> dict[int, int]:
    """What the map computes, without the engine: every light's level after one step.

    Dolls pass exactly the doors whose threshold their plane value reaches; each passed
    door adds its amounts. `state` is every light's level after the previous step of a
    sequence (None starts a new one): membranes carry on, prev lanes read their node's
    light, and a fed-back input (None in x) its node's. Used by tests to check the
    lowering against the reference, so that engine tests only have the physics left to
    prove. `passed`, if given, counts the doors passed, by node id (bench/crossings.py).
    """
    level = {l.tag: (state[l.tag] if l.persistent and state is not None else l.reset)
             for l in circuit.lights}

    def plane(lane) -> int:
        kind = lane.source[0]
        if kind == "input":
            v = x[lane.source[1]]
            return state[lane.feedback] if v is None else int(v)
        if kind == "state":
            init = circuit.net.nodes[lane.node].gate.init
            return (-init if lane.negated else init) if state is None \
                else state[lane.source[1]]
        return level[lane.source[1]] if kind == "light" else 0

    def add(tag, amount):
        for t in circuit.groups.get(tag, [tag]):
            level[t] += amount

    for phase in range(circuit.n_phases):
        # Every door of the phase is written before any of its dolls rides.
        values = {}
        for k, lane in enumerate(circuit.lanes):
            if lane.phase == phase:
                values[k] = plane(lane)
        for k, lane in enumerate(circuit.lanes):
            if lane.phase != phase:
                continue
            for tag, amount in lane.prelude:
                add(tag, amount)
            for tag, v in lane.prelude_sets:
                level[tag] = v
            for door in lane.doors:
                if values[k] < door.threshold:
                    break
                if passed is not None:
                    passed[lane.node] = passed.get(lane.node, 0) + 1
                for tag, amount in door.lines:
                    add(tag, amount)
                for tag, v in door.sets:
                    level[tag] = v
    return level
