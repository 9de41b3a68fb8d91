"""WAD -> netlist: the network a map computes, read from its geometry and its bus.

Owns turning a `Machine` (modding/machine.py) back into a netlist and its .dnet text:

- a node per name found on the lights (`acc light of h[3]`, `value light of h[3]`);
  a node with an accumulator and a value light is gated, with only an accumulator it is an
  identity, with only a value light an input, with a membrane a spiking neuron;
- a gated node's gate is the staircase of its lane: base value + the door thresholds, each
  door adding the amount its first line adds to the node's value light. Every element of a
  vector must be one function; it is written as `step`, `relu` or `lut` (whichever states it);
- weights: the amount a door's line adds to a consumer's light (through a group tag to every
  light carrying it) divided by the door's step; it must be the same at every door;
- biases: the reset of the accumulator minus what the sources add at their base values;
- state across steps: a lane whose doors the bus copies from a light before the step's
  resets is prev(x) of the node that light belongs to (written `prev(x)`, with the init
  script 3 sets the light to), a fed-back input's lane names its node (`feedback`), and the
  manifest says whether a run is open and which output is `done`.

What comes out is the netlist after the compiler's own lowering (docs/modding.md): products
appear as their two quarter-square lookup tables and an identity, identity neurons take
their sources' sources directly (their weights multiplied through), and every gate is what
it does over the values its accumulator can reach. `extract` checks its result: the
extracted netlist, compiled again, must build the very machine read from the map.
"""
from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field
from functools import lru_cache

from dsl.diagnostics import VoodooError
from dsl.ir import Netlist

from .machine import Machine

_ELEMENT = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)\[(\d+)\]$")
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_KEYWORDS = {"network", "steps", "input", "neuron", "lines", "bias", "output", "dense",
             "sparse", "diag", "all", "prev", "init", "feedback", "done", "table"}


class ExtractError(VoodooError):
    """A map whose machine is not a netlist (each problem names where it is in the map)."""


@dataclass
class XNode:
    name: str
    acc: int | None = None
    value: int | None = None
    membrane: int | None = None
    kind: str = ""                     # input, gated, identity, spike, prev
    base: int = 0
    doors: list[tuple[int, int]] = field(default_factory=list)   # (threshold, delta)
    weights: dict[str, int] = field(default_factory=dict)        # source name -> weight
    bias: int = 0
    spike: dict = field(default_factory=dict)
    prev_of: str | None = None         # a prev node: the node whose value it is, one step late
    init: int = 0
    fed_from: str | None = None        # a fed-back input: the node fed back into it

    @property
    def tags(self) -> list[int]:
        return [t for t in (self.acc, self.value, self.membrane) if t is not None]

    @property
    def first_tag(self) -> int:
        return min(self.tags)


def nodes_of(m: Machine) -> tuple[list[XNode], list[str]]:
    """The nodes of a machine, in node order, and the problems found (empty if it is a
    netlist)."""
    problems: list[str] = []
    mirrors = sorted(l.name for l in m.lights.values() if l.role == "mirror")
    if mirrors:   # lanes counting down on a negated light: no gate of the language
        return [], [f"{len(mirrors)} of its lanes are two-sided ({mirrors[0]}'s first: a "
                    "lane counting down on a mirror light, docs/physics.md), which extract "
                    "does not read back; extract a map built without pivots"]
    nodes: dict[str, XNode] = {}
    for l in m.lights.values():
        n = nodes.setdefault(l.name, XNode(l.name))
        role = l.role or ("membrane" if l.persistent else "")
        if role in ("acc", "value", "membrane"):
            setattr(n, role, l.tag)
        else:  # no comment: the lane structure decides below
            n.acc = l.tag
    owner = {}
    for n in nodes.values():
        for t in (n.acc, n.value, n.membrane):
            if t is not None:
                owner[t] = n
    _pair_by_lanes(m, nodes, owner)
    for n in nodes.values():
        n.kind = ("spike" if n.membrane is not None else "gated" if n.acc is not None and
                  n.value is not None else "identity" if n.acc is not None else "input")
    problems += unreadable_lanes(m, owner)
    lanes = _lane_roles(m, owner, problems)
    _recurrence(m, nodes, lanes, owner, problems)
    for n in nodes.values():
        _staircase(m, n, lanes, problems)
    for n in nodes.values():
        _weights(m, n, lanes, owner, problems)
    for n in nodes.values():
        _bias(m, n, lanes, nodes)
    return in_node_order(nodes.values(), m.reset_order), problems


def in_node_order(nodes, resets=()) -> list[XNode]:
    """The netlist's node order: the order in which script 2 resets the lights (the
    circuit's order of lights, made node by node), where every node has a light there.
    Else (an edited bus), read off the tags as maps made before tags were placed in hash
    buckets (mapgen/tags.py) have them: the lowering numbered accumulators (and
    membranes) in node order in the hot buckets and value lights in node order in the cold
    ones (circuit.new_tag), so each kind's tags give one order, and a node with both ties
    the two together. Where they do not decide (an input beside an identity), an input or
    prev node (cold tags only) goes first; the tags either way are the same. A map made
    before value lights were cold has every light in the hot buckets: one order."""
    from mapgen import physics as P

    pos = {t: k for k, t in enumerate(resets)}   # (tags once each: the bus's reset dict)
    nodes = list(nodes)
    if all(any(t in pos for t in n.tags) for n in nodes):
        return sorted(nodes, key=lambda n: (min(pos[t] for t in n.tags if t in pos), n.name))

    def order(cold: bool) -> list[XNode]:
        keyed = [(min(ts), n.name, n) for n in nodes
                 if (ts := [t for t in n.tags if P.cold(t) == cold])]
        return [n for _, _, n in sorted(keyed, key=lambda k: (k[0], k[1]))]

    cold, hot = order(True), order(False)
    in_cold, in_hot = {id(n) for n in cold}, {id(n) for n in hot}
    out, taken, i, j = [], set(), 0, 0
    while i < len(cold) or j < len(hot):
        while i < len(cold) and id(cold[i]) in taken:
            i += 1
        while j < len(hot) and id(hot[j]) in taken:
            j += 1
        c = cold[i] if i < len(cold) else None
        h = hot[j] if j < len(hot) else None
        if c is None and h is None:
            break
        if h is None or c is h or (c is not None and id(c) not in in_hot):
            pick = c
        elif c is None or id(h) not in in_cold:
            pick = h
        else:   # two different nodes each waiting for the other: an edited map
            pick = min((c, h), key=lambda n: (n.first_tag, n.name))
        out.append(pick)
        taken.add(id(pick))
    return out


def _pair_by_lanes(m: Machine, nodes, owner) -> None:
    """Lights without a name comment: a lane reading light a whose doors add to light v
    makes a and v one node."""
    for lane in m.lanes:
        if lane.source[0] != "light" or not lane.doors or not lane.doors[0].lines:
            continue
        a, v = lane.source[1], lane.doors[0].lines[0][0]
        na, nv = owner.get(a), owner.get(v)
        if na is None or nv is None or na is nv or nv.acc is None or nv.value is not None:
            continue
        if not nv.name.startswith("n") or na.value is not None:
            continue
        na.value, nv.acc = nv.acc, None
        owner[v] = na
        del nodes[nv.name]


def unreadable_lanes(m: Machine, owner) -> list[str]:
    """Lanes an edit broke, each named by the node whose value its doors take (for a
    spiking neuron, its membrane) and where: doors the bus writes that no doll reaches,
    and lanes whose chain of sectors ends at a door (the landing after it, with the lines
    a doll crosses there, is no longer reached)."""
    out = []
    cause = ("the chain of sectors a doll rides east from its spawn strip breaks there: a "
             "moved vertex or sector?")
    for tag, (src, sectors) in sorted(m.stray_doors.items()):
        where = ", ".join(f"sector {s} at ({x:g}, {y:g})" for s, x, y in sectors[:3]) \
            or "no sector"
        out.append(f"{_lane_of(src, owner)} could not be read: its doors (tag {tag}; {where}) "
                   f"are on no doll's lane ({cause})")
    for lane in m.lanes:
        end = lane.segments[-1] if lane.segments else None
        if end is not None and end.kind == "door":
            out.append(f"{_lane_of(lane.source, owner)} (doll {lane.tid}) could not be read: "
                       f"it ends at its door, sector {end.sector} at x {end.x0:g}..{end.x1:g}, "
                       f"y {lane.y[0]:g}..{lane.y[1]:g} ({cause})")
    return out


def _lane_of(src, owner) -> str:
    """Whose lane reads from `src` (a bus source), in words."""
    n = owner.get(src[1]) if src[0] == "light" else None
    if n is not None and src[1] == n.membrane:
        return f"a lane of spiking neuron {n.name} (reading its membrane, light {src[1]})"
    if n is not None:
        return f"the lane of {n.name} (reading light {src[1]})"
    return f"the lane of input slot {src[1]}" if src[0] == "input" else "a lane"


def _lane_roles(m: Machine, owner, problems) -> dict:
    """node name -> {"gate"/"fire"/"leak"/"input": lane}, and "clock" -> the clock lane."""
    out: dict = {}
    for lane in m.lanes:
        if lane.source[0] == "none":
            out.setdefault("clock", []).append(lane)
            continue
        if lane.source[0] in ("input", "state"):
            v = m.value_target(lane.doors[0])
            n = owner.get(v)
            if n is None:
                problems.append(f"the {lane.source[0]} lane of doll {lane.tid} adds to no light")
                continue
            _add_gate(out.setdefault(n.name, {}), lane)
            continue
        n = owner.get(lane.source[1])
        if n is None:
            problems.append(f"the lane of doll {lane.tid} reads light {lane.source[1]}, "
                            "which is not a light of the machine")
            continue
        if n.membrane is not None:
            leak = all(t == n.membrane for d in lane.doors for t, _ in d.lines) and not any(
                d.sets for d in lane.doors) and not (lane.doors and
                                                    m.value_target(lane.doors[0]) == n.value)
            out.setdefault(n.name, {})["leak" if leak else "fire"] = lane
        else:
            _add_gate(out.setdefault(n.name, {}), lane)
    return out


def _add_gate(roles: dict, lane) -> None:
    """A node's gate lane, or one more of its sub-lanes (mapgen.carry cuts a long staircase
    into lanes riding side by side, each with some of its doors): read as one staircase,
    doors in threshold order."""
    from dataclasses import replace

    had = roles.get("gate")
    if had is None or had.source != lane.source or had.phase != lane.phase:
        roles["gate"] = lane
        return
    roles["gate"] = replace(had, doors=sorted(had.doors + lane.doors, key=lambda d: d.threshold),
                            prelude=had.prelude + lane.prelude,
                            prelude_sets=had.prelude_sets + lane.prelude_sets,
                            lines=had.lines + lane.lines)


def _recurrence(m: Machine, nodes: dict, lanes, owner, problems) -> None:
    """Prev nodes (lanes copied from a light at the start of a step) and fed-back inputs."""
    for n in list(nodes.values()):
        lane = lanes.get(n.name, {}).get("gate")
        if lane is None:
            continue
        if lane.source[0] == "state":
            src = owner.get(lane.source[1])
            if src is None or lane.source[1] not in (src.value, src.acc):
                problems.append(f"the doors of {n.name} are copied from light "
                                f"{lane.source[1]}, which holds no node's value")
                continue
            n.kind, n.prev_of, n.init = "prev", src.name, m.inits.get(lane.source[1], 0)
        if lane.feedback is not None:
            src = owner.get(lane.feedback)
            if src is None:
                problems.append(f"input {n.name} is fed back from light {lane.feedback}, "
                                "which holds no node's value")
                continue
            n.fed_from = src.name


def _staircase(m: Machine, n: XNode, lanes, problems) -> None:
    if n.kind == "identity":
        return
    n.base = m.lights[n.value].reset
    lane = lanes.get(n.name, {}).get("fire" if n.kind == "spike" else "gate")
    if lane is None:
        if n.kind == "spike":  # fires on every step (no door), or its lane is unreadable
            _spike(m, n, lanes, problems)
        return
    for k, d in enumerate(lane.doors):
        delta = [a for t, a in d.lines if t == n.value]
        if len(delta) != 1 or not delta[0]:
            problems.append(f"door {k} of {n.name} (sector {d.sector}) does not add its step "
                            f"to {n.name}'s value light exactly once")
            continue
        n.doors.append((d.threshold, delta[0]))
    thresholds = [t for t, _ in n.doors]
    if thresholds != sorted(set(thresholds)):
        problems.append(f"the doors of {n.name} are not in rising threshold order "
                        f"({thresholds}): a doll stopped by one never reaches the next")
    if n.kind == "spike":
        _spike(m, n, lanes, problems)


def _spike(m: Machine, n: XNode, lanes, problems) -> None:
    fire = lanes.get(n.name, {}).get("fire")
    leak = lanes.get(n.name, {}).get("leak")
    sp = {"init": m.lights[n.membrane].reset, "leak": 0, "reset": "subtract"}
    if fire is not None and fire.doors:
        d = fire.doors[0]
        sp["threshold"] = d.threshold
        sets = [v for t, v in d.sets if t == n.membrane]
        if sets:
            sp["reset"] = sets[0]
    elif not any(src == ("light", n.membrane) for src, _ in m.stray_doors.values()):
        sector = m.lights[n.membrane].sector
        problems.append(f"spiking neuron {n.name}: no lane with a door reads its membrane "
                        f"(light {n.membrane}, sector {sector}): its fire lane is gone")
    if leak is not None:
        lbase = sum(a for t, a in leak.prelude if t == n.membrane)
        sp["leak"] = -lbase + len(leak.doors)
    n.spike = sp


def _weights(m: Machine, n: XNode, lanes, owner, problems) -> None:
    roles = lanes.get(n.name, {})
    lane = roles.get("fire") or roles.get("gate")
    if lane is None:
        return
    for k, d in enumerate(lane.doors):
        delta = dict(n.doors).get(d.threshold)
        if not delta:
            continue
        for (tag, amount), li in zip(d.lines, d.line_index or (None,) * len(d.lines)):
            if tag == n.value or (n.kind == "spike" and tag == n.membrane):
                continue
            for t in m.groups.get(tag, (tag,)):
                dst = owner.get(t)
                if dst is None or t not in (dst.acc, dst.membrane):
                    problems.append(f"line {li} in the lane of {n.name} adds to tag {t}, "
                                    "which is no neuron's accumulator")
                    continue
                if amount % delta:
                    problems.append(f"line {li}: {n.name} -> {dst.name} adds {amount} at a "
                                    f"door of step {delta}: not a whole weight")
                    continue
                w = amount // delta
                old = dst.weights.setdefault(n.name, w) if k == 0 else dst.weights.get(n.name)
                if old != w:
                    problems.append(f"line {li}: {n.name} -> {dst.name} adds {w} per step "
                                    f"at door {k} but {old} at door 0: one connection has "
                                    "one weight")


def _bias(m: Machine, n: XNode, lanes, nodes) -> None:
    if n.kind in ("input", "prev"):
        return
    tag = n.membrane if n.kind == "spike" else n.acc
    if n.kind == "spike":
        total = sum(a for lane in lanes.get("clock", []) for t, a in lane.prelude if t == tag)
    else:
        total = m.lights[tag].reset
    n.bias = total - sum(w * nodes[s].base for s, w in n.weights.items())


# ----------------------------------------------------------------------------- .dnet text
def dnet_name(name: str, taken: set) -> str:
    """A .dnet name for a map name (`p0.qsum` -> `p0_qsum`), unique among `taken`."""
    out = re.sub(r"[^A-Za-z0-9_]", "_", name)
    if not _NAME.match(out) or out in _KEYWORDS:
        out = "n_" + out
    while out in taken:
        out += "_"
    taken.add(out)
    return out


def gate_text(doors: list[tuple[int, int]], base: int, plain: bool = False) -> str:
    """The gate that makes this staircase: step, relu or lut over the doors' span (with
    `plain`, always the lut: the map's staircase on every integer, as luts clamp)."""
    if not doors:
        return f"lut(0..0, [{base}])"
    lo, hi = doors[0][0] - 1, doors[-1][0]
    table, v, di = [], base, dict(doors)
    for x in range(lo, hi + 1):
        v += di.get(x, 0) if x > lo else 0
        table.append(v)
    if plain:
        return f"lut({lo}..{hi}, [{', '.join(map(str, table))}])"
    if len(doors) == 1 and doors[0][1] == 1 and base == 0:
        return f"step(t={doors[0][0]})"
    if all(d == 1 for _, d in doors):
        gaps = {b[0] - a[0] for a, b in zip(doors, doors[1:])}
        s = gaps.pop() if len(gaps) == 1 else (doors[0][0] // (base + 1)
                                              if len(doors) == 1 else 0)
        L = table[-1]
        if s >= 1 and all(t == min(max(x // s, 0), L) for x, t in zip(range(lo, hi + 1), table)):
            return f"relu(s={s}, max={L})"
    return f"lut({lo}..{hi}, [{', '.join(map(str, table))}])"


def merged_doors(elements: list[XNode]) -> tuple[list[tuple[int, int]], int] | None:
    """One staircase every element of a vector follows (base at the lowest point), or None
    when two elements disagree where both are known."""
    known: dict[int, int] = {}
    for n in elements:
        if not n.doors:
            continue
        v = n.base
        known_here = {n.doors[0][0] - 1: v}
        for t, d in n.doors:
            for x in range(max(known_here) + 1, t):
                known_here[x] = v
            v += d
            known_here[t] = v
        for x, val in known_here.items():
            if known.setdefault(x, val) != val:
                return None
    if not known:
        bases = {n.base for n in elements}
        return ([], bases.pop()) if len(bases) == 1 else None
    xs = sorted(known)
    doors, prev = [], known[xs[0]]
    for x in range(xs[0] + 1, xs[-1] + 1):
        cur = known.get(x, prev)
        if cur != prev:
            doors.append((x, cur - prev))
        prev = cur
    return doors, known[xs[0]]


def to_dnet(nodes: list[XNode], outputs: list[str], name: str, steps: int, source: str,
            vectors: bool = True, plain: bool = False, open_: bool = False,
            done: str | None = None) -> tuple[str, dict[str, str]]:
    """The .dnet text of extracted nodes. With `vectors`, elements h[0..n-1] that follow one
    gate are written as the vector h; otherwise every node is a scalar. Returns the text
    and each node's name in it."""
    groups = _groups(nodes) if vectors else {}
    taken: set = set()
    ref: dict[str, str] = {}
    out = [f"# extracted by VoodooNet from the geometry and ACS bus of {source}",
           "# (after the compiler's lowering: products as quarter-square luts, identities",
           "#  folded into their consumers, gates as their staircases; docs/modding.md)",
           f"network {dnet_name(name, set())}"]
    if open_:
        out.append("steps open")
    elif steps > 1:
        out.append(f"steps {steps}")
    out.append("")
    seen = set()
    for n in nodes:
        if n.name in seen:
            continue
        g = groups.get(n.name)
        if g is not None:
            gname, elems, gate = g
            vname = dnet_name(gname, taken)
            for i, e in enumerate(elems):
                ref[e.name] = f"{vname}[{i}]"
                seen.add(e.name)
            out.append(_decl(elems[0], f"{vname}[{len(elems)}]", gate))
            continue
        if n.kind == "prev":
            continue  # written prev(x) where it is read, once x has its name
        ref[n.name] = dnet_name(n.name, taken)
        out.append(_decl(n, ref[n.name], gate_text(n.doors, n.base, plain)
                         if n.kind == "gated" else None))
    by_name = {n.name: n for n in nodes}
    for n in nodes:  # prev(prev(x)) after prev(x): follow the chain to a named node
        chain = [n]
        while chain[-1].kind == "prev" and chain[-1].name not in ref:
            chain.append(by_name[chain[-1].prev_of])
        for p in reversed(chain[:-1]):
            ref[p.name] = f"prev({ref[p.prev_of]})"
    out.append("")
    out += _lines_text(nodes, ref)
    out += [f"init {ref[n.prev_of]} = {n.init}" for n in nodes if n.kind == "prev" and n.init]
    out += [f"feedback {ref[n.name]} = {ref[n.fed_from]}" for n in nodes if n.fed_from]
    out.append("")
    out.append("output " + ", ".join(ref[o] for o in outputs))
    if done is not None:
        out.append(f"done {ref[done]}")
    return "\n".join(out) + "\n", ref


def _lines_text(nodes: list[XNode], ref: dict[str, str]) -> list[str]:
    """Connections and biases: a dense matrix between two vectors (zeros where there is no
    line), one `lines` statement per connection otherwise."""
    vec = {}
    sizes: dict[str, int] = {}
    for name, r in ref.items():
        m = _ELEMENT.match(r)
        if m:
            vec[name] = (m.group(1), int(m.group(2)))
            sizes[m.group(1)] = max(sizes.get(m.group(1), 0), int(m.group(2)) + 1)
    pairs: dict[tuple[str, str], dict] = {}
    out, done = [], set()
    for n in nodes:
        for s, w in n.weights.items():
            if s in vec and n.name in vec:
                pairs.setdefault((vec[s][0], vec[n.name][0]), {})[
                    (vec[n.name][1], vec[s][1])] = w
    for (sv, dv), cells in pairs.items():
        if len(cells) < sizes[dv]:
            continue   # sparse: per connection below
        rows = [[cells.get((j, i), 0) for i in range(sizes[sv])] for j in range(sizes[dv])]
        out.append(f"lines {sv} -> {dv} dense [\n" + ",\n".join(
            "  [" + ", ".join(map(str, row)) + "]" for row in rows) + "\n]")
        done.add((sv, dv))
    biases: dict[str, list] = {}
    for n in nodes:
        for s, w in n.weights.items():
            if not (s in vec and n.name in vec and (vec[s][0], vec[n.name][0]) in done):
                out.append(f"lines {ref[s]} -> {ref[n.name]} all {w}")
        if n.kind == "input":
            continue
        if n.name in vec:
            biases.setdefault(vec[n.name][0], [0] * sizes[vec[n.name][0]])[
                vec[n.name][1]] = n.bias
        elif n.bias:
            out.append(f"bias {ref[n.name]} = {n.bias}")
    for v, b in biases.items():
        if any(b):
            out.append(f"bias {v} = [{', '.join(map(str, b))}]")
    return out


def _decl(n: XNode, name: str, gate: str | None) -> str:
    if n.kind == "input":
        # (a tile's input of a lookup's levels has a door per level: its deltas add up)
        return f"input {name} : {n.base}..{n.base + sum(d for _, d in n.doors)}"
    if n.kind == "identity":
        return f"neuron {name} : identity"
    if n.kind == "spike":
        sp = n.spike
        return (f"neuron {name} : spike(threshold={sp['threshold']}, leak={sp['leak']}, "
                f"reset={sp['reset']}, init={sp['init']})")
    return f"neuron {name} : {gate or gate_text(n.doors, n.base)}"


def _groups(nodes: list[XNode]) -> dict[str, tuple]:
    """first element name -> (vector name, elements, gate text) for every vector that can
    be declared as one."""
    by: dict[str, dict[int, XNode]] = {}
    for n in nodes:
        m = _ELEMENT.match(n.name)
        if m:
            by.setdefault(m.group(1), {})[int(m.group(2))] = n
    out = {}
    order = {n.name: k for k, n in enumerate(nodes)}
    for gname, els in by.items():
        if sorted(els) != list(range(len(els))):
            continue
        elems = [els[i] for i in range(len(els))]
        idx = [order[e.name] for e in elems]
        if idx != list(range(idx[0], idx[0] + len(idx))) or len({e.kind for e in elems}) != 1:
            continue
        kind = elems[0].kind
        gate = None
        if kind == "input":
            if len({(e.base, tuple(e.doors)) for e in elems}) != 1:
                continue
        elif kind == "spike":
            if len({tuple(sorted(e.spike.items())) for e in elems}) != 1:
                continue
        elif kind == "gated":
            merged = merged_doors(elems)
            if merged is None:
                continue
            gate = gate_text(*merged)
        out[elems[0].name] = (gname, elems, gate)
    return out


# --------------------------------------------------------------------------------- driver
@dataclass
class Extracted:
    text: str                  # the .dnet
    machine: Machine           # what the map builds
    names: dict[str, str]      # map name -> name in the .dnet's netlist (prev(h): h.prev)
    vectors: bool              # written with vectors (False: every node a scalar)
    same_machine: bool = True  # compiled again it builds this very machine (else: the same
                               # gates over tighter ranges, so fewer doors)
    net: Netlist | None = None  # the .dnet parsed (as the checks above parsed it)

    @property
    def verdict(self) -> str:
        return ("compiled again it builds the same machine" if self.same_machine else
                "it computes what the map computes, gate by gate over the ranges its "
                "accumulators reach (tighter than the map's: compiled again, fewer doors)")


def output_names(m: Machine, nodes: list[XNode]) -> list[str]:
    by_tag = {}
    for n in nodes:
        if n.value is not None:
            by_tag[n.value] = n.name
        elif n.acc is not None:
            by_tag[n.acc] = n.name
    missing = [t for t in m.outputs if t not in by_tag]
    if missing:
        raise ExtractError(f"the map reads light {missing[0]} as an output, but it is no "
                           "node's value light")
    return [by_tag[t] for t in m.outputs]


def machine_netlist(m: Machine, name: str, where: str) -> Extracted:
    """The netlist of a machine, checked: compiled again it builds the same machine."""
    nodes, problems = nodes_of(m)
    if problems:
        raise ExtractError(f"{where}: the map is not a netlist any more:\n  "
                           + "\n  ".join(problems[:20]))
    outs = output_names(m, nodes)
    last = ""
    done = None if m.done is None else outs[m.done]
    for vectors, plain in ((True, False), (False, False), (False, True)):
        text, ref = to_dnet(nodes, outs, name, m.steps, where, vectors, plain, m.open, done)
        diff = rebuild_difference(text, ref, m, where)
        if diff is None:
            return Extracted(text, m, _net_names(ref), vectors, net=_parsed(text, where))
        if not any(n.kind in ("spike", "prev") for n in nodes) and \
                gate_difference(text, ref, nodes, where) is None:
            return Extracted(text, m, _net_names(ref), vectors, same_machine=False,
                             net=_parsed(text, where))
        last = diff
    raise ExtractError(f"{where}: the extracted netlist does not rebuild the map's machine: "
                       f"{last}\n    hint: this map's machine has no netlist form (report it)")


@lru_cache(maxsize=1)
def _parsed(text: str, where: str) -> Netlist:
    """The .dnet parsed once for the checks of one extraction (a chat map's text takes the
    parser about 10 s); a text that does not parse raises, and is not kept."""
    from dsl.parser import parse

    return parse(text, f"{where}.dnet")


def rebuild_difference(text: str, ref: dict[str, str], m: Machine, where: str) -> str | None:
    """None if the .dnet compiles to machine `m` (names mapped back); else what differs."""
    from mapgen import physics as P
    from mapgen.circuit import lower

    from .machine import from_circuit

    try:
        net = _parsed(text, where)
    except VoodooError as e:
        return f"it is not a valid netlist: {str(e).splitlines()[0]}"
    ref = _net_names(ref)
    back = {v: k for k, v in ref.items()}
    # Only connections the .dnet has can have a line of their own.
    has = {(s, n.name) for n in net.nodes for s in (net.nodes[i].name for i in n.weights)}
    # Which connections have a line of their own is a layout choice the .dnet does not
    # carry: the ones the amounts reveal, else every connection not in a weight group.
    # Tags are placed in hash buckets (mapgen/tags.py) since stop 43. Maps built before
    # have every value light in the cold buckets (stop 42: `place=False`), or, older
    # still, tags in node order (`chains=False`): those layouts are tried after.
    old = ({"chains": True, "place": False}
           if all(P.cold(t) for t, l in m.lights.items() if l.role == "value")
           else {"chains": False})
    layouts = ({"chains": True}, old)
    # A map whose inputs ride late (a tile of a streamed run) was lowered with late_inputs.
    late = any(l.source[0] == "input" and l.phase > 0 for l in m.lanes)
    shown = None   # the difference reported: the map's own layout, every solo line
    for how, solo in itertools.product(layouts, (solo_lines(m), solo_lines(m, every=True))):
        # Tags and dolls numbered from where the map's start (an embedded circuit's are
        # above its host map's).
        c = lower(net, first_tag=min([*m.lights, *m.groups,
                                      *(l.door_tag for l in m.lanes if l.door_tag)], default=1),
                  solo={(ref[a], ref[b]) for a, b in solo if (ref.get(a), ref.get(b)) in has},
                  late_inputs=late, **how)
        for k, lane in enumerate(c.lanes):
            lane.tid = min((l.tid for l in m.lanes), default=1000) + k
        again = from_circuit(c, net.steps)
        for l in again.lights.values():
            l.name = back.get(l.name, l.name)
        if again.same_as(m):
            return None
        if how is layouts[0]:
            shown = again
    return first_difference(m, shown)


def _net_names(ref: dict[str, str]) -> dict[str, str]:
    return {k: net_name(v) for k, v in ref.items()}


def net_name(ref: str) -> str:
    """The netlist's name for a reference of the .dnet text: prev(h[1]) is h.prev[1],
    prev(prev(h)) is h.prev2 (dsl.ir.prev_name)."""
    from dsl.ir import prev_name

    depth = 0
    while ref.startswith("prev(") and ref.endswith(")"):
        ref, depth = ref[5:-1], depth + 1
    if not depth:
        return ref
    if ref.endswith("]"):
        base, idx = ref[:-1].split("[")
        return f"{prev_name(base, depth)}[{idx}]"
    return prev_name(ref, depth)


def gate_difference(text: str, ref: dict[str, str], nodes: list[XNode],
                    where: str) -> str | None:
    """None if every gate of the .dnet does, over the range its accumulator can reach in the
    .dnet, what the map's staircase does there (the map's staircase is exact on every
    integer: below its first door the base value, above its last the top one)."""
    from mapgen.circuit import staircase

    try:
        net = _parsed(text, where)
    except VoodooError as e:
        return f"it is not a valid netlist: {str(e).splitlines()[0]}"
    for n in nodes:
        if n.kind != "gated":
            continue
        node = net.by_name(ref[n.name])
        a = net.acc_range[node.id]
        want_base = n.base + sum(d for t, d in n.doors if t <= a.lo)
        want = (want_base, [(t, d) for t, d in n.doors if a.lo < t <= a.hi])
        got = staircase(node.gate, a.lo, a.hi)
        if (got[0], list(got[1])) != want:
            return f"gate of {n.name} over {a.lo}..{a.hi}: {got} vs the map's {want}"
    return None


def solo_lines(m: Machine, every: bool = False) -> set[tuple[str, str]]:
    """Connections with a line of their own although others of their lane share its weight
    (a map keeps one rewirable, like the museum's MUTATE line): (source, destination).
    With `every`, every connection whose line aims at one light rather than a group."""
    out = set()
    for lane in m.lanes:
        if not lane.doors or lane.source[0] == "none":
            continue
        d = lane.doors[0]
        value = m.value_target(d)
        src = m.lights[value].name if value in m.lights else None
        by_amount: dict[int, int] = {}
        others = [(t, a) for t, a in d.lines if t != value]
        for t, a in others:
            by_amount[a] = by_amount.get(a, 0) + len(m.groups.get(t, (t,)))
        for t, a in others:
            if t not in m.groups and (by_amount[a] > 1 or every) and t in m.lights and src:
                out.add((src, m.lights[t].name))
    return out


def first_difference(a: Machine, b: Machine) -> str:
    for t in sorted(set(a.lights) | set(b.lights)):
        la, lb = a.lights.get(t), b.lights.get(t)
        if la is None or lb is None or la.key() != lb.key():
            return f"light {t}: {la.key() if la else None} vs {lb.key() if lb else None}"
    for la, lb in zip(a.lanes, b.lanes):
        if la.key() != lb.key():
            return f"lane of doll {la.tid}: {la.key()} vs {lb.key()}"
    if len(a.lanes) != len(b.lanes):
        return f"{len(a.lanes)} lanes vs {len(b.lanes)}"
    return f"groups or outputs: {a.key()[2:]} vs {b.key()[2:]}"


def read_map(path: str, map_name: str | None = None
             ) -> tuple[int, str, "object", bytes | None, dict | None]:
    """(its index among the WAD's maps, name, TextMap, BEHAVIOR, manifest or None) of the
    map `map_name` of a WAD (the only one when None); the manifest through the one reader
    every command uses (mapgen/wadcheck.read_manifest). A map of a WAD too big for one file
    is read from its part file beside it (mapgen/compile.map_file), checked first to be
    the part the WAD was built with."""
    from acs.wad import read_wad
    from mapgen.wadcheck import read_manifest

    from .textmap import MapError, parse_textmap

    contents = read_wad(path)
    infos = read_manifest(path, contents)
    # the maps in part files come first (write_wad fills the parts in order)
    names = [n for n in infos if infos[n].get("wad_part")] + [m.name for m in contents.maps]
    if not names:
        raise MapError(f"{path}: no UDMF map in this WAD")
    if map_name is None and len(names) > 1:
        raise ExtractError(f"{path} holds {len(names)} maps ({', '.join(names)}); name one "
                           "with --map")
    name = names[0] if map_name is None else map_name
    if name not in names:
        raise ExtractError(f"{path}: no map {map_name} (it has {', '.join(names)})")
    info = infos.get(name)
    if info and info.get("wad_part"):
        contents = read_wad(_part(path, name, info))
    mp = next((m for m in contents.maps if m.name == name), None)
    if mp is None:
        raise MapError(f"{path}: the manifest puts {name} in {info['wad_part']}, which has "
                       "no such map\n    hint: rebuild the WAD")
    return (names.index(name), name, parse_textmap(mp.textmap, f"{path}:{name}:TEXTMAP"),
            _behavior(path, name, mp.behavior, info, dict(contents.lumps)), info)


def _part(path: str, name: str, info: dict) -> str:
    """The part file holding map `name`, the very one the WAD was built with (its
    SHA-256 in the manifest), or an error naming it."""
    import os

    from dsl.util import file_digest
    from mapgen.compile import map_file

    full = map_file(path, info)
    if not os.path.isfile(full):
        raise ExtractError(f"{path}: its map {name} is in {info['wad_part']}, which is "
                           "missing\n    hint: keep the parts beside the WAD")
    if file_digest(full) != info.get("wad_part_sha256"):
        raise ExtractError(f"{path}: {info['wad_part']} is not the part it was built with "
                           f"(its map {name})\n    hint: rebuild the WAD")
    return full


def _behavior(path: str, name: str, behavior, info: dict | None, lumps: dict):
    """The map's BEHAVIOR; for a circuit embedded in someone's map, our ACS library."""
    from .textmap import MapError

    if not (info and info.get("embed")):
        return behavior
    library = info["embed"]["library"]
    if library not in lumps:
        raise MapError(f"{path}:{name}: the manifest names the circuit's ACS library "
                       f"{library[:40]!r}, which the WAD does not hold\n    hint: embed the "
                       "circuit again")
    return lumps[library]


def extract_wad(path: str, map_name: str | None = None) -> Extracted:
    import os

    from .machine import from_map

    _, name, tm, behavior, info = read_map(path, map_name)
    where = f"{path}:{name}"
    m = from_map(tm, behavior, where, info)
    net_name = os.path.splitext(os.path.basename(path))[0]
    return machine_netlist(m, net_name, where)
