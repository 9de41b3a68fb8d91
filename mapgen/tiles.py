"""Tiling: a network too big for one map is split over several maps (tiles).

Owns the partition and the sub-netlists. A tile computes a set of nodes; every value it
needs from outside (original inputs, or nodes computed by an earlier tile) becomes one of
its inputs, with the source's proven value range; the values it hands on are its outputs.
Python only carries values from one tile's outputs to the next tile's inputs: no
arithmetic happens between maps.

Nodes are assigned level by level (dependency depth), so every tile only needs tiles before
it. A level too costly for one map is split into chunks; `n_tiles` forces a split.

A multi-step netlist is tiled the same way, and each map keeps its own state: a spiking
membrane stays in its neuron's map, prev(h) is a prev node of the map that computes h
(read there from h's light, as in one map), and a fed-back input whose node is in the same
map is fed back there. What a map needs from another one crosses by name every step: this
step's values from earlier tiles, and, from any tile, the previous step's values of the
prev nodes and fed-back inputs it cannot keep itself (`carry_sequence`).
"""
from __future__ import annotations

from dataclasses import dataclass

from dsl.diagnostics import VoodooError
from dsl.ir import Identity, Input, Netlist, Node, Prev, Product
from dsl.ranges import analyse
from dsl.reference import levels

from . import physics as P

# Budgets for one map: beyond these the engine slows down more than splitting costs.
MAX_DOLLS = 700
MAX_LINES = 120_000


@dataclass
class Tile:
    index: int
    net: Netlist             # the tile as a netlist of its own
    inputs: list[str]        # names of the values it takes (in its input order)
    outputs: list[str]       # names of the values it hands on (in its output order)
    computes: list[str]      # names of the nodes it computes


def _cost(net: Netlist, nid: int, fanout: dict[int, int]) -> tuple[int, int]:
    """(dolls, weighted lines) a node's lane costs: an estimate from its door count."""
    n = net.nodes[nid]
    if isinstance(n.gate, Identity):
        return 0, 0
    fan = fanout.get(nid, 0) + 1
    r = net.acc_range[nid] if not n.is_input else net.value_range[nid]
    g = n.gate
    if n.is_input:
        doors = r.hi - r.lo
    elif hasattr(g, "L") and getattr(g, "L", None) is not None:
        doors = g.L
    else:
        doors = min(r.hi - r.lo, P.MAX_DOORS)
    return 1, doors * fan


def plan_tiles(net: Netlist, n_tiles: int | None = None, max_dolls: int = MAX_DOLLS,
               max_lines: int = MAX_LINES) -> list[Tile]:
    """Split `net` into tiles in dependency order (one tile when it fits)."""
    if any(isinstance(n.gate, Product) for n in net.nodes):
        from dsl.lower import lower_products
        net = lower_products(net)
    lv = [ids for ids in levels(net) if not net.nodes[ids[0]].is_input]
    fanout: dict[int, int] = {}
    for n in net.nodes:  # counted once: per node it would be quadratic in network size
        for s in n.weights:
            fanout[s] = fanout.get(s, 0) + 1
    cost = {n.id: _cost(net, n.id, fanout) for n in net.nodes}

    def tile_cost(ids: list[int]) -> tuple[int, int]:
        need = set()
        for i in ids:
            need.update(s for s in net.nodes[i].sources() if s not in ids)
        d = sum(cost[i][0] for i in ids) + sum(cost[s][0] or 1 for s in need)
        lines = sum(cost[i][1] for i in ids) + sum(cost[s][1] for s in need)
        return d, lines

    if n_tiles is None:
        groups: list[list[int]] = []
        for ids in lv:
            chunk: list[int] = []
            for i in ids:
                d, lines = tile_cost(chunk + [i])
                if chunk and (d > max_dolls or lines > max_lines):
                    groups.append(chunk)
                    chunk = []
                chunk.append(i)
            groups.append(chunk)
        # Whole consecutive levels that fit together share a map.
        merged: list[list[int]] = []
        for g in groups:
            if merged:
                d, lines = tile_cost(merged[-1] + g)
                if d <= max_dolls and lines <= max_lines and _whole_levels(merged[-1] + g, lv):
                    merged[-1] = merged[-1] + g
                    continue
            merged.append(g)
        groups = merged
    else:
        if n_tiles < 1:
            raise VoodooError("--tiles must be at least 1")
        groups = _forced_split(lv, cost, n_tiles, net)
    return [_make_tile(net, k, ids, groups) for k, ids in enumerate(groups)]


def _whole_levels(ids: list[int], lv: list[list[int]]) -> bool:
    s = set(ids)
    return all(set(level) <= s or not (set(level) & s) for level in lv)


def _forced_split(lv, cost, n_tiles: int, net: Netlist) -> list[list[int]]:
    """Exactly n_tiles tiles: whole levels when there are enough of them, else the costliest
    levels are cut into chunks of nodes."""
    total = sum(len(ids) for ids in lv)
    if n_tiles > total:
        raise VoodooError(f"{net.source}: cannot make {n_tiles} tiles out of {total} computed "
                          "nodes")
    if n_tiles <= len(lv):
        # Consecutive levels, as even as possible by node count.
        groups, per = [], len(lv) / n_tiles
        for k in range(n_tiles):
            a, b = round(k * per), round((k + 1) * per)
            groups.append([i for ids in lv[a:b] for i in ids])
        return groups
    pieces = [1] * len(lv)
    for _ in range(n_tiles - len(lv)):
        # Give one more chunk to the level with the most nodes per chunk.
        k = max(range(len(lv)), key=lambda j: len(lv[j]) / pieces[j]
                if pieces[j] < len(lv[j]) else -1)
        pieces[k] += 1
    groups = []
    for ids, p in zip(lv, pieces):
        for c in range(p):
            groups.append(ids[round(c * len(ids) / p):round((c + 1) * len(ids) / p)])
    return groups


def _make_tile(net: Netlist, k: int, ids: list[int], groups: list[list[int]]) -> Tile:
    mine = set(ids)
    need = []
    for i in sorted(mine):
        for s in net.nodes[i].sources():
            if s not in mine and s not in need:
                need.append(s)
    # A prev node of a node of this map is kept here (its state stays in the map); any
    # other value from outside becomes an input.
    local = set()
    for s in need:
        chain = _prev_chain(net, s)
        if chain and net.nodes[chain[-1]].gate.src in mine:
            local.update(chain)
    local_prev = sorted(local)
    need = sorted(s for s in need if s not in local)
    nodes: list[Node] = []
    remap: dict[int, int] = {}
    for s in need:
        src = net.nodes[s]
        r = net.value_range[s]
        remap[s] = len(nodes)
        nodes.append(Node(len(nodes), src.name, src.group, src.index, Input(r.lo, r.hi), src.pos))
    for i in local_prev + sorted(mine):
        n = net.nodes[i]
        remap[i] = len(nodes)
        nodes.append(Node(len(nodes), n.name, n.group, n.index, n.gate, n.pos,
                          {remap[s]: w for s, w in n.weights.items()}, n.bias))
    for i in local_prev:
        g = net.nodes[i].gate
        nodes[remap[i]].gate = Prev(remap[g.src], g.init)
    crossing = _read_elsewhere(net, mine, groups)
    outs = [i for i in sorted(mine) if i in net.outputs or i in crossing]
    # Keep the network's own output order for its outputs.
    outs.sort(key=lambda i: (net.outputs.index(i) if i in net.outputs else -1, i))
    groups_: dict[str, list[int]] = {}
    for n in nodes:
        groups_.setdefault(n.group, []).append(n.id)
    feedback = {remap[x]: remap[y] for x, y in net.feedback.items() if x in remap and y in mine}
    sub = Netlist(f"{net.name}_t{k + 1}", nodes, groups_, [remap[s] for s in need],
                  [remap[o] for o in outs], net.steps, net.source, open=net.open,
                  feedback=feedback, done=remap.get(net.done) if net.done in mine else None)
    analyse(sub)
    return Tile(k, sub, [net.nodes[s].name for s in need], [net.nodes[o].name for o in outs],
                [net.nodes[i].name for i in sorted(mine)])


def _prev_chain(net: Netlist, s: int) -> list[int]:
    """prev(prev(...h)): the prev nodes from s down to the one that reads h."""
    chain = []
    while net.nodes[s].is_prev:
        chain.append(s)
        s = net.nodes[s].gate.src
    return chain


def _read_elsewhere(net: Netlist, mine: set, groups: list[list[int]]) -> set[int]:
    """The values this map computes that cross to another one: read by a later tile in the
    same step, or by any other tile at the next step (through a prev node of theirs, or an
    input fed back from it)."""
    read = set()
    for g in groups:
        for j in g:
            if j in mine:
                continue
            for s in net.nodes[j].sources():
                read.add(s)
                chain = _prev_chain(net, s)
                if chain:
                    read.add(net.nodes[chain[-1]].gate.src)
                if s in net.feedback:
                    read.add(net.feedback[s])
    return read & mine


def carry(tiles: list[Tile], x: list[int], net: Netlist, run_tile) -> list[int]:
    """One sample through every tile: `run_tile(tile, inputs) -> outputs`. Values are only
    looked up by name and passed on."""
    values = {net.nodes[i].name: int(v) for i, v in zip(net.inputs, x)}
    for t in tiles:
        outs = run_tile(t, [values[name] for name in t.inputs])
        values.update(zip(t.outputs, outs))
    return [values[net.nodes[o].name] for o in net.outputs]


def compile_tiles(tiles: list[Tile], title: str, acc: str = "internal"):
    """Each tile as its own map, MAP01.. in order."""
    from .compile import compile_netlist

    return [compile_netlist(t.net, title=f"{title} ({k + 1}/{len(tiles)})",
                            map_name=f"MAP{k + 1:02d}", acc=acc) for k, t in enumerate(tiles)]


def carry_sequence(tiles: list, seq: list, net: Netlist, run_tile, fed_here: list[set]):
    """One run of a multi-step netlist through its tiles, step by step: `run_tile(k,
    inputs, t, fed) -> outputs` runs step t of tile k's map (which keeps its own state).
    Each step's inputs are the run's row (None: fed back), this step's values of earlier
    tiles, and the previous step's values of the prev nodes and fed-back inputs a map does
    not keep itself; `fed_here[k]` names the inputs tile k's map feeds back itself. Values
    are only looked up by name and passed on. Returns every step's values by name, up to
    the step at which the done node is 1."""
    names = {n.id: n.name for n in net.nodes}
    prevs = {n.name: n.gate for n in net.nodes if n.is_prev}
    fed_from = {names[x]: names[y] for x, y in net.feedback.items()}
    ranges = {names[i]: net.nodes[i].gate for i in net.inputs}
    before: dict | None = None
    steps = []
    for t, row in enumerate(seq):
        fed = any(v is None for v in row)
        values = {names[i]: v for i, v in zip(net.inputs, row)}
        for x, v in list(values.items()):
            if v is None and before is not None and fed_from[x] in before:
                values[x] = before[fed_from[x]]
        for name, g in prevs.items():  # None where only the map that keeps it knows it
            values[name] = g.init if before is None else before.get(names[g.src])
        for k, tile in enumerate(tiles):
            ins = []
            for name in tile.inputs:
                if values.get(name) is None and name in fed_here[k]:
                    ins.append(ranges[name].lo)  # fed back inside the map: not used
                else:
                    ins.append(values[name])
            values.update(zip(tile.outputs, run_tile(k, ins, t, fed and bool(fed_here[k]))))
        steps.append(values)
        before = values
        if net.done is not None and values.get(names[net.done]) == 1:
            break
    return steps
