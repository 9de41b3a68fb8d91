"""Tag placement: which of the engine's 256 tag-hash buckets each tag of a circuit goes in.

The engine finds a tag's sectors by walking the chain of its bucket (`tag % 256`) to its
end, through one entry per (sector, tag) pair of the whole map (docs/physics.md, "The tag
walk"). A walk costs the length of its bucket's chain, whatever tag it looks for. So a
step costs about sum over buckets of (walks into the bucket) x (entries in it), and the
tags are placed to make that small: each tag has its entries (a light: its sector; a weight
group: its members; a lane's door tag: its doors) and its walks a step (a light: its
reset, the copies that read it and the lines that add to it; a group: its lines; a door
tag: the one write of its doors), and is put, largest first, in the bucket where it adds
the least. A door's lines count as walked with the chance that a value uniform over its
lane's thresholds reaches the door.

The map of stop 42's micro:bit size spent a third of its CPU in that walk: its 8,662 door
tags (27,016 door sectors) sat in 32 "cold" buckets with the value lights, so each door
a doll passed walked a chain of 750 entries for its value line. Placed, a walk averages
about a third as long (`python bench/speed.py --only microbit --quick`, docs/physics.md).
"""
from __future__ import annotations

from collections import Counter

import numpy as np

from . import physics as P

RESERVED = 1024   # tags above the circuit's own, for the map around it (conveyor, controls)


def load(circuit) -> tuple[Counter, Counter]:
    """Entries and expected walks a step of every tag of the circuit."""
    entries: Counter = Counter()
    walks: Counter = Counter()
    for light in circuit.lights:
        entries[light.tag] += 1
        walks[light.tag] += 1                      # its reset
    for g, members in circuit.groups.items():
        entries[g] += len(members)
        walks[g] += 0
    for lane in circuit.lanes:
        walks[lane.door_tag] += 0
        if not lane.doors:   # no doors, nothing to write or read (and nothing in the map)
            continue
        entries[lane.door_tag] += len(lane.doors)
        walks[lane.door_tag] += 1                  # its doors written once a step
        if lane.source[0] in ("light", "state"):
            walks[lane.source[1]] += 1             # the copy reads its light
        if lane.feedback is not None:
            walks[lane.feedback] += 1
        for t, a in lane.prelude:
            walks[t] += 1 if a else 0              # (a line adding 0 is not built)
        for t, _ in lane.prelude_sets:
            walks[t] += 1
        # From the thresholds alone (a map's extracted netlist must place its tags alike,
        # and its proven ranges may be tighter): a value uniform from just below the first
        # door to the last.
        lo, hi = lane.doors[0].threshold - 1, lane.doors[-1].threshold
        for door in lane.doors:
            p = (hi - door.threshold + 1) / (hi - lo + 1)
            for t, _ in door.lines + door.sets:
                walks[t] += p
    return entries, walks


def assign(entries: Counter, walks: Counter, first_tag: int) -> dict[int, int] | None:
    """Old tag -> placed tag (all >= first_tag), or None if they do not fit below MAX_TAG.
    Buckets are counted from first_tag's (r = 0 is tag first_tag, r = 1 first_tag + 1, ...)
    and ties go to the lowest r: the first tag placed is first_tag itself, so a map's
    lowest tag tells where its tags start (modding/extract rebuilds a map from it)."""
    n = P.TAG_BUCKETS
    top = P.MAX_TAG - RESERVED
    cap = np.array([len(range(first_tag + r, top + 1, n)) for r in range(n)])
    tags = sorted(entries.keys() | walks.keys())
    if len(tags) > cap.sum():
        return None
    e_all = max(1, sum(entries.values()))
    f_all = max(1.0, sum(walks.values()))
    order = sorted(tags, key=lambda t: (-(entries[t] / e_all + walks[t] / f_all), t))
    E, F = np.zeros(n), np.zeros(n)
    used = np.zeros(n, dtype=int)
    out: dict[int, int] = {}
    for t in order:
        e, f = entries[t], walks[t]
        cost = f * E + e * F
        cost[used >= cap] = np.inf
        r = int(np.argmin(cost))      # ties: the lowest r, so placement is deterministic
        out[t] = first_tag + r + n * int(used[r])
        used[r] += 1
        E[r] += e
        F[r] += f
    return out


def place(circuit, first_tag: int) -> None:
    """Renumber the circuit's tags in place (lights, groups, door tags, every line)."""
    m = assign(*load(circuit), first_tag)
    if m is None:
        return
    for light in circuit.lights:
        light.tag = m[light.tag]
        light.groups = sorted((m[g] for g in light.groups), key=lambda t: (t % P.TAG_BUCKETS, t))
    circuit.groups = {m[g]: [m[t] for t in members] for g, members in circuit.groups.items()}
    circuit.acc_light = {k: m[t] for k, t in circuit.acc_light.items()}
    circuit.value_light = {k: m[t] for k, t in circuit.value_light.items()}
    done: set[int] = set()       # a door object may be shared: retag it once
    for lane in circuit.lanes:
        if lane.door_tag:
            lane.door_tag = m[lane.door_tag]
        if lane.source[0] in ("light", "state"):
            lane.source = (lane.source[0], m[lane.source[1]])
        if lane.feedback is not None:
            lane.feedback = m[lane.feedback]
        lane.prelude = [(m[t], a) for t, a in lane.prelude]
        lane.prelude_sets = [(m[t], v) for t, v in lane.prelude_sets]
        for door in lane.doors:
            if id(door) in done:
                continue
            done.add(id(door))
            door.adds = [(m[t], a) for t, a in door.adds]
            door.lines = [(m[t], a) for t, a in door.lines]
            door.sets = [(m[t], v) for t, v in door.sets]
    circuit.__post_init__()


def walk_cost(entries: Counter, walks: Counter) -> float:
    """Expected entries walked a step: sum over buckets of walks into it x entries in it."""
    E, F = np.zeros(P.TAG_BUCKETS), np.zeros(P.TAG_BUCKETS)
    for t in entries.keys() | walks.keys():
        E[t % P.TAG_BUCKETS] += entries[t]
        F[t % P.TAG_BUCKETS] += walks[t]
    return float(E @ F)
