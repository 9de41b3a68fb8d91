"""Tag placement: which of the engine's 256 tag-hash buckets each tag of a circuit goes in.

The engine finds a tag's sectors by walking the chain of its bucket (`tag % 256`) to its
end, through one entry per (sector, tag) pair of the whole map (docs/physics.md, "The tag
walk"). A walk costs the length of its bucket's chain, whatever tag it looks for. So a
step costs about sum over buckets of (walks into the bucket) x (entries in it), and the
tags are placed to make that small: each tag has its entries (a light: its sector; a weight
group: its members; a lane's door tag: its doors) and its walks a step (a light: its
reset, the copies that read it and the lines that add to it; a group: its lines; a door
tag: the one write of its doors); starting from the buckets the lowering gave them, each
tag moves, largest first, to the bucket where it adds the least, pass after pass. A
door's lines count as walked with the chance that a value uniform over its lane's
thresholds reaches the door: from the structure alone, no input distribution.

The map of stop 42's micro:bit size spent a third of its CPU in that walk: its 8,662 door
tags (27,016 door sectors) sat in 32 "cold" buckets with the value lights, so each door
a doll passed walked a chain of 750 entries for its value line (docs/physics.md, "The
micro:bit size").
"""
from __future__ import annotations

from collections import Counter

import numpy as np

from . import physics as P

RESERVED = 1024   # tags above the circuit's own, for the map around it (conveyor, controls)
PASSES = 12       # of the local search (`assign`), at most
SETTLED = 0.005   # a pass that gains less than this share of the cost is the last


def bucket_order(tag: int) -> tuple[int, int]:
    """Tags in the order of the engine's tag-hash buckets (tag % 256), then by number."""
    return tag % P.TAG_BUCKETS, tag


def load(circuit) -> tuple[Counter, Counter]:
    """Entries and expected walks a step of every tag of the circuit."""
    entries: Counter = Counter()
    walks: Counter = Counter()
    for light in circuit.lights:
        entries[light.tag] += 1
        walks[light.tag] += 1                      # its reset
    for g, members in circuit.groups.items():
        entries[g] += len(members)
    for lane in circuit.lanes:
        if lane.door_tag:    # (0: no tag yet, nothing to place)
            entries[lane.door_tag] += len(lane.doors)
            walks[lane.door_tag] += 1 if lane.doors else 0   # its doors written once a step
        if not lane.doors:   # no doors, nothing to write or read (and nothing in the map)
            continue
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

    A local search: from the buckets the lowering numbered the tags into (value lights and
    door tags in the cold ones), each tag in turn, largest load first, moves to the bucket
    where it adds least to sum(walks x entries), and the passes stop once one gains less
    than SETTLED of the cost. So the placement never costs more than the lowering's own, by
    this count. Buckets are counted from first_tag's (r = 0 holds first_tag); the lowest tag
    stays there and keeps its number, so a map's lowest tag tells where its tags start
    (modding/extract rebuilds a map from it); in a bucket, tags keep their order."""
    n = P.TAG_BUCKETS
    tags = sorted(entries.keys() | walks.keys())
    if not tags:
        return {}
    cap = np.array([len(range(first_tag + r, P.MAX_TAG - RESERVED + 1, n)) for r in range(n)])
    e = np.array([entries[t] for t in tags], dtype=float)
    f = np.array([walks[t] for t in tags], dtype=float)
    r = np.array([(t - first_tag) % n for t in tags])
    r[0] = 0
    used = np.bincount(r, minlength=n)
    E = np.bincount(r, weights=e, minlength=n)
    F = np.bincount(r, weights=f, minlength=n)
    order = np.argsort(-(e / max(1.0, e.sum()) + f / max(1.0, f.sum())), kind="stable")
    cost = float(E @ F)
    for _ in range(PASSES):
        for i in order[order != 0]:
            a, ei, fi = r[i], e[i], f[i]
            E[a] -= ei
            F[a] -= fi
            used[a] -= 1
            add = ei * F + fi * E
            add[used >= cap] = np.inf
            k = int(np.argmin(add))            # ties: the lowest r (deterministic)
            if not add[k] < add[a] - 1e-9:     # stay unless strictly better
                k = a
            r[i] = k
            E[k] += ei
            F[k] += fi
            used[k] += 1
        now = float(E @ F)
        settled = cost - now < SETTLED * cost
        cost = now
        if settled:
            break
    if (used > cap).any():
        return None
    out, count = {}, np.zeros(n, dtype=int)
    for i, t in enumerate(tags):
        out[t] = first_tag + int(r[i]) + n * int(count[r[i]])
        count[r[i]] += 1
    return out


def place(circuit, first_tag: int) -> None:
    """Renumber the circuit's tags in place (lights, groups, door tags, every line)."""
    m = assign(*load(circuit), first_tag)
    if m is None:
        return
    for light in circuit.lights:
        light.tag = m[light.tag]
        light.groups = sorted((m[g] for g in light.groups), key=bucket_order)
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
