"""Tiling: a network too big for one map is split over several maps (tiles).

Owns the partition, the sub-netlists and what one tile may cost. A tile computes a set of
nodes; every value it needs from outside (original inputs, or nodes computed by an earlier
tile) becomes one of its inputs, with the source's proven value range; the values it hands
on are its outputs. Python only carries values from one tile's outputs to the next tile's
inputs: no arithmetic happens between maps.

Only lane nodes (inputs and gated neurons) and the network's outputs are placed. An
identity neuron has no lane of its own, only a light and its consumers' lines, so it is
never handed between maps: a tile that needs one builds it again from its sources (as
the map compiler folds it into its consumers anyway), and its sources become the tile's
inputs. Tiles are filled one after the other, each closed when no more fits its budgets
(`MapBudget`, from the limits measured in bench/map_limits.py: docs/physics.md), with
nodes whose lane sources are all placed already, so every tile only needs tiles before
it. Which ready node comes next decides what crosses between maps, where a value costs
its readers' map a lane of as many doors as it has levels: the planner takes the
nodes whose new inputs cost the tile least, keeps together the groups of nodes whose
values cost most to hand on (`_clusters`), and keeps the plan with the fewest tiles of a
few such orders and of plain lane-depth order (`_greedy`). `n_tiles` forces a split into
exactly that many tiles instead, by lane-depth levels.

A multi-step netlist is tiled the same way, and each map keeps its own state: a spiking
membrane stays in its neuron's map, prev(h) is a prev node of the map that computes h
(read there from h's light, as in one map), and a fed-back input whose node is in the same
map is fed back there. What a map needs from another one crosses by name every step: this
step's values from earlier tiles, and, from any tile, the previous step's values of the
prev nodes and fed-back inputs it cannot keep itself (`carry_sequence`); the previous
step's value of an input is the run's own row, which no map hands on.

A tiled WAD's manifests say what each map takes and hands on; `check_wiring` checks them
whole against the netlist (names, ranges, who hands on what, in which order) before any
engine starts (mapgen/wadcheck.check_tiled).
"""
from __future__ import annotations

import heapq
import math
from dataclasses import dataclass
from functools import cached_property

from dsl.diagnostics import VoodooError
from dsl.ir import Identity, Netlist, Node, Prev, Product
from dsl.ranges import analyse

from . import physics as P
from .layout import COLUMN_GAP, lanes_per_column
from .handoff import check_wiring, handed_input  # noqa: F401  (check_wiring: where readers find it)


@dataclass(frozen=True)
class MapBudget:
    """What the planner lets one tile's map hold (docs/physics.md, "Limits of one map").
    ACS characters are an upper bound computed from the map's counts (`acs_bound`)."""
    dolls: int = P.TILE_DOLLS
    inputs: int = P.MAX_MAP_INPUTS
    acs_chars: int = P.TILE_ACS_CHARS
    lines: int = P.TILE_LINES
    sectors: int = P.MAX_SECTORS
    hall_lights: int = P.MAX_HALL_LIGHTS
    width: int = P.COORD_MAX - COLUMN_GAP    # the lanes' columns, from x 0 (layout.py)


@dataclass
class Tile:
    index: int
    net: Netlist             # the tile as a netlist of its own
    inputs: list[str]        # names of the values it takes (in its input order)
    outputs: list[str]       # names of the values it hands on (in its output order)
    computes: list[str]      # names of the nodes it places (identities it rebuilds aside)


@dataclass
class Cost:
    """One tile's map, counted before it is built (upper bounds where not exact)."""
    dolls: int = 0
    inputs: int = 0
    lights: int = 0
    lanes_doors: int = 0      # doors over every lane
    lines: int = 0
    sectors: int = 0
    lane_length: int = 0      # the lanes' lengths, summed (upper bounds)
    longest: int = 0          # the longest lane's

    @property
    def width(self) -> int:
        """The lanes' columns' width, at most: in columns of the longest lanes first
        (layout._columns_by_length), the longest lane plus the summed lengths over a
        column's lanes, and a gap between columns."""
        per = lanes_per_column()
        columns = -(-self.dolls // per)
        return self.longest + -(-self.lane_length // per) + COLUMN_GAP * max(0, columns - 1)

    @property
    def linedefs(self) -> int:
        """The lanes' lines, the hall's light tiles (4 lines each) and the conveyor's."""
        return self.lines + 4 * self.lights + 16

    def acs(self, name_len: int, outputs: int) -> int:
        return acs_bound(self.dolls, self.lights, self.inputs, outputs, name_len)

    def over(self, b: MapBudget, name_len: int, outputs: int) -> str | None:
        """What breaks the budget, or None."""
        checks = [("dolls", self.dolls, b.dolls), ("inputs", self.inputs, b.inputs),
                  ("ACS characters (bound)", self.acs(name_len, outputs), b.acs_chars),
                  ("linedefs (bound)", self.linedefs, b.lines),
                  ("sectors (bound)", self.sectors, b.sectors),
                  ("lights in the hall", self.lights, b.hall_lights),
                  ("units of width (bound; lanes as long as the value they climb to)",
                   self.width, b.width)]
        for what, n, most in checks:
            if n > most:
                return f"{n:,} {what}, more than the {most:,} one map takes"
        return None


def acs_bound(lanes: int, lights: int, inputs: int, outputs: int, name_len: int) -> int:
    """About the characters of a map's generated ACS (mapgen/program.py), from its counts,
    on the high side (tests/test_map_limits.py checks it against compiled maps): the OPEN
    script parks every doll; the simple and the pipelined schedule each reset every light
    and copy, release and park every doll; a read script reads every light; the input and
    queue scripts store every input; the batch script repeats the beat's events in plain
    statements for its beats. Per statement: P.ACS_LINE_CHARS with its comment, besides the
    node's name, P.ACS_PLAIN_CHARS without."""
    from .program import MAX_BATCH, MAX_BATCH_STATEMENTS, READ_SLOTS

    w = P.ACS_LINE_CHARS + name_len
    groups = -(-inputs // P.PUKE_ARGS)
    per_beat = 3 * lanes + lights + outputs
    k = min(MAX_BATCH, READ_SLOTS // max(1, outputs), MAX_BATCH_STATEMENTS // (per_beat + inputs + 4),
            (P.MAX_SCRIPT_STARTS - 1) // max(1, groups))
    batch = k * (per_beat + 2 * lanes // 3) * P.ACS_PLAIN_CHARS if k > 1 else 0
    queue = k * (inputs + 3 * groups) * P.ACS_PLAIN_CHARS if k > 1 else 0
    return (6000 + 9 * lanes * w + 3 * lights * w + 2 * inputs * w + 2 * outputs * w
            + batch + queue)


class _Net:
    """The planner's view of a netlist: each placeable node's lane sources (through
    identities), lane depth, and what each lane costs a map."""

    def __init__(self, net: Netlist, door_budget: int | None, pivots=False):
        from .circuit import pivot_of

        self.net, self.budget = net, door_budget
        nodes = net.nodes
        const: dict[int, int] = {}    # each accumulator's constant, through identities
        # node -> the lane nodes (inputs, gated) its accumulator reads, through identities,
        # and the identities on the way; every lane the tile's netlist will refer to
        self.lanes_of: dict[int, frozenset[int]] = {}
        self.idents_of: dict[int, frozenset[int]] = {}
        self.depth: dict[int, int] = {}
        weights: dict[int, dict[int, int]] = {}   # node -> lane -> weight, as lowered
        for n in nodes:
            if n.is_input or n.is_prev:   # lanes of values from outside the step
                self.depth[n.id] = 0
                continue
            lanes, idents, w = set(), set(), {}
            const[n.id] = n.bias
            for src, ws in n.weights.items():
                if isinstance(nodes[src].gate, Identity):
                    const[n.id] += ws * const[src]
                    lanes |= self.lanes_of[src]
                    idents |= self.idents_of[src] | {src}
                    for r, wr in weights[src].items():
                        w[r] = w.get(r, 0) + ws * wr
                else:
                    lanes.add(src)
                    w[src] = w.get(src, 0) + ws
            self.lanes_of[n.id], self.idents_of[n.id] = frozenset(lanes), frozenset(idents)
            weights[n.id] = {r: v for r, v in w.items() if v}
            self.depth[n.id] = 1 + max((self.depth[r] for r in lanes), default=0)
        # An identity is placed when it is an output, or a value read at the next step
        # (a prev node's, a fed-back input's): its light must be in one map.
        outputs = set(net.outputs) | {n.gate.src for n in nodes if n.is_prev} \
            | set(net.feedback.values())
        self.placed = [n.id for n in nodes if not (n.is_input or n.is_prev) and
                       (not isinstance(n.gate, Identity) or n.id in outputs)]
        self.placed.sort(key=lambda i: (self.depth[i], i))
        # two-sided lanes (circuit.plan_pivots): the pivot of each node that has one
        self.pivot = {n.id: p for n in nodes
                      if (p := pivot_of(net, n, const.get(n.id, 0), pivots)) is not None}
        self.own = {n.id: _own_stairs(net, n, self.pivot.get(n.id)) for n in nodes
                    if not isinstance(n.gate, Identity) and not (n.is_input or n.is_prev)}
        # lane -> the distinct weights its consumers take it with: lines per door (a
        # mirror light takes them negated: a pivoted lookup's, a pivoted prev's source's)
        mirrored = {n.id for n in nodes if n.id in self.pivot and not n.is_prev} | {
            n.gate.src for n in nodes if n.id in self.pivot and n.is_prev}
        distinct: dict[int, set[int]] = {}
        for i, ws in weights.items():
            if not isinstance(nodes[i].gate, Identity) or i in outputs:
                for r, v in ws.items():
                    distinct.setdefault(r, set()).update((v, -v) if i in mirrored else (v,))
        self.groups = {r: len(v) for r, v in distinct.items()}
        self.name_len = max((len(n.name) for n in nodes), default=1)
        # (dolls, linedefs, sectors, doors, length, longest) of each lane: its own, and as
        # a tile's input
        self.own_cost = {i: _lanes_cost([self.lane(sh, i) for sh in shapes])
                         for i, shapes in self.own.items()}
        lanes = {r for ls in self.lanes_of.values() for r in ls}
        self.in_cost = {r: _lanes_cost([self.lane(sh, r) for sh in self.in_shapes(r)])
                        for r in lanes}
        self.wide = {r for r in lanes if self.in_shape(r)[0] > P.MAX_DOORS}

    @cached_property
    def readers(self) -> dict[int, list[int]]:
        """lane -> the placed nodes that read it (through identities), in order."""
        out: dict[int, list[int]] = {}
        for i in self.placed:
            for s in self.lanes_of.get(i, ()):
                out.setdefault(s, []).append(i)
        return out

    def sublanes(self, doors: int) -> int:
        return 0 if doors <= 0 else (1 if self.budget is None else math.ceil(doors / self.budget))

    def lane(self, shape: tuple[int, int], lane: int) -> tuple[int, int, int, int, int]:
        """(dolls, linedefs, sectors, doors, length) of a lane of `shape` (doors, sectors)
        that carries node `lane`'s value: three walls and portals a sector (sub-lanes
        repeat the spawn strip, the pad and the end), a value line and a line per weight
        group per door. Its length (layout.lane_geometry) on the high side: each sub-lane's
        ends and a landing for a prelude, each door with its landing, each ramp stair."""
        doors, sectors = shape
        dolls = self.sublanes(doors)
        ramps = max(0, sectors - 4 - 2 * doors)
        sectors += 3 * max(0, dolls - 1)
        lines = 1 + self.groups.get(lane, 0)
        landing = P.LINE_LEAD + P.LANDING_CLEAR + P.LINE_SPACING * lines
        length = (max(1, dolls) * (P.SPAWN_LENGTH + P.PAD_LENGTH + P.END_LENGTH + landing)
                  + doors * (P.DOOR_DEPTH + landing) + ramps * P.RAMP_STEP_LENGTH)
        return dolls, 3 * sectors + 4 * dolls + doors * lines, sectors, doors, length

    def in_shape(self, s: int) -> tuple[int, int]:
        """(doors, sectors) of the input lane that carries node s's value into a tile."""
        gate = handed_input(self.net, s)
        return _stairs(gate, gate.lo, gate.hi)

    def in_shapes(self, s: int) -> list[tuple[int, int]]:
        """The lanes of a value from outside the step or the tile: one, or a pivoted prev
        node's two (counted as its own map keeps it)."""
        n = self.net.nodes[s]
        if s not in self.pivot or not n.is_prev:   # a value handed on: an input lane
            return [self.in_shape(s)]
        r = self.net.value_range[s]
        return _sided_stairs(n.gate, r.lo, r.hi, self.pivot[s])


def _lanes_cost(lanes: list[tuple]) -> tuple[int, int, int, int, int, int]:
    """(dolls, linedefs, sectors, doors, length, longest) of a node's lanes together."""
    sums = tuple(map(sum, zip(*lanes)))
    return (*sums, max(lane[4] for lane in lanes))


def _own_stairs(net: Netlist, n: Node, pivot: int | None = None) -> list[tuple[int, int]]:
    """(doors, sectors) of each lane of a gated node: one staircase (two pivoted, each
    side's doors one level apart), or a spiking neuron's fire lane, leak lane and (counted
    for each, on the high side) the clock doll."""
    from dsl.ir import Spike

    from .circuit import _leak_doors

    if pivot is not None:
        return _sided_stairs(n.gate, *net.acc_range[n.id], pivot)
    if not isinstance(n.gate, Spike):
        return [_stairs(n.gate, *net.acc_range[n.id])]
    st = net.state_range[n.id]
    leak = _leak_doors(n.gate.leak, st.lo, st.hi)
    return [(1, 6), (leak, 4 + 2 * leak), (1, 6)]   # leak doors are one level apart


def _sided_stairs(gate, lo: int, hi: int, pivot: int) -> list[tuple[int, int]]:
    """(doors, sectors) of each side of a two-sided lane (circuit.sides), counted without
    ramp stairs: the gliding maps that pivot climb each rise in one step."""
    from .circuit import sides, staircase

    steps = staircase(gate, lo, hi)[1]
    return [(len(st), 4 + 2 * len(st)) for st in sides(steps, pivot) if st]


def _stairs(gate, lo: int, hi: int) -> tuple[int, int]:
    """(doors, sectors) of a gate's lane over accumulators lo..hi: spawn, pad, a prelude,
    the end, each door and its landing, and the ramp stairs between doors (layout.py)."""
    from .circuit import staircase

    steps = staircase(gate, lo, hi)[1]
    ramps = sum(max(0, math.ceil((b - a) / P.MAX_RISE) - 1)
                for (a, _), (b, _) in zip(steps, steps[1:]))
    return len(steps), 4 + 2 * len(steps) + ramps


class _Packer:
    """The tile being filled: its nodes, the values it needs from before, its cost.
    Nodes arrive in a topological order: a node's lane sources before it."""

    def __init__(self, pn: _Net):
        self.pn, self.mine, self.mine_set = pn, [], set()
        self.need: set[int] = set()
        self.idents: set[int] = set()
        self.cost = Cost()

    def with_node(self, i: int, cost: Cost | None = None,
                  more: tuple[set, set, set] | None = None) -> Cost:
        """The tile's cost with node i added (to `cost`, with the nodes, inputs and
        rebuilt identities `more` besides the tile's: `with_nodes`)."""
        pn = self.pn
        new = Cost(**vars(cost or self.cost))
        mine, need, idents = more or ((), (), ())
        if i in pn.own:
            self._lane(new, pn.own_cost[i])
            new.lights += 2   # its accumulator and its value
        else:
            new.lights += 1   # an identity output: its accumulator is its value
        for s in pn.lanes_of.get(i, ()):
            if s not in self.mine_set and s not in self.need and s not in mine and \
                    s not in need:
                new.inputs += 1
                self._lane(new, pn.in_cost[s])
                new.lights += 1
        new.lights += sum(1 for j in pn.idents_of.get(i, ()) if j not in self.idents and
                          j not in self.mine_set and j not in idents and j not in mine)
        return new

    def with_nodes(self, ids) -> Cost:
        """The tile's cost with nodes `ids` added in turn; the tile is left as it is."""
        cost, more = self.cost, (set(), set(), set())
        for i in ids:
            cost = self.with_node(i, cost, more)
            more[1].update(s for s in self.pn.lanes_of.get(i, ())
                           if s not in self.mine_set and s not in more[0])
            more[0].add(i)
            more[2].update(self.pn.idents_of.get(i, ()))
        return cost

    @staticmethod
    def _lane(cost: Cost, lane: tuple[int, int, int, int, int, int]) -> None:
        dolls, lines, sectors, doors, length, longest = lane
        cost.dolls += dolls
        cost.lines += lines
        cost.sectors += sectors
        cost.lanes_doors += doors
        cost.lane_length += length
        cost.longest = max(cost.longest, longest)

    def add(self, i: int, cost: Cost) -> None:
        self.mine.append(i)
        self.mine_set.add(i)
        self.need |= {s for s in self.pn.lanes_of.get(i, ()) if s not in self.mine_set}
        self.idents |= self.pn.idents_of.get(i, frozenset())
        self.cost = cost


def plan_tiles(net: Netlist, n_tiles: int | None = None, max_dolls: int | None = None,
               door_budget: int | None = None, budget: MapBudget | None = None,
               pivots=False) -> list[Tile]:
    """Split `net` into tiles in dependency order (one tile when it fits). `door_budget`
    is the compiler's (staircases split into sub-lanes of that many doors: more dolls);
    `pivots` too (two-sided lanes, circuit.pivot_of)."""
    if any(isinstance(n.gate, Product) for n in net.nodes):
        from dsl.lower import lower_products
        net = lower_products(net)
    budget = budget or MapBudget()
    if max_dolls is not None:
        budget = MapBudget(**{**vars(budget), "dolls": max_dolls})
    pn = _Net(net, door_budget, pivots)
    _every_node_fits(pn, budget)
    if n_tiles is None:
        groups = _greedy(pn, budget)
    else:
        if n_tiles < 1:
            raise VoodooError("--tiles must be at least 1")
        groups = _forced_split(pn, n_tiles, net)
        _forced_tiles_fit(pn, groups, budget)
    if len(groups) == 1 and not _unread_inputs(pn):
        # The network itself is its one tile (no need to analyse it again). With inputs
        # nobody reads it is not: those would still get lanes the plan did not cost.
        names = [n.name for n in net.nodes]
        return [Tile(0, net, [names[i] for i in net.inputs], [names[o] for o in net.outputs],
                     [names[i] for i in sorted(groups[0])])]
    return [_make_tile(pn, k, ids, groups) for k, ids in enumerate(groups)]


def _unread_inputs(pn: _Net) -> list[int]:
    """The inputs no placed node's lanes read (an input read only by identities nobody
    places, or through weights that cancel, has a lane in the network's own map)."""
    net = pn.net
    read = ({s for i in pn.placed for s in pn.lanes_of.get(i, ())} | set(net.outputs)
            | {n.gate.src for n in net.nodes if isinstance(n.gate, Prev)}
            | set(net.feedback))
    return [i for i in net.inputs if i not in read]


def estimate(net: Netlist, door_budget: int | None = None, pivots=False) -> Cost:
    """What the planner expects `net` to cost as one map (tests compare it with the map)."""
    if any(isinstance(n.gate, Product) for n in net.nodes):
        from dsl.lower import lower_products
        net = lower_products(net)
    pn = _Net(net, door_budget, pivots)
    p = _Packer(pn)
    for i in pn.placed:
        p.add(i, p.with_node(i))
    return p.cost


def _every_node_fits(pn: _Net, budget: MapBudget) -> None:
    """A plan exists iff every node fits a map of its own (the tile of one node after
    the tiles of its sources): otherwise say which node, and why, before any work."""
    for i in pn.placed:
        why = _Packer(pn).with_node(i).over(budget, pn.name_len, 1)
        if why:
            n = pn.net.nodes[i]
            raise VoodooError(
                f"{n.pos}: error: no tile plan can hold '{n.name}': alone in a map it needs "
                f"{why} (it reads {len(pn.lanes_of.get(i, ()))} values)\n    hint: split "
                "its sum over several neurons (partial sums), or narrow its inputs' ranges")


def _no_wide_inputs(pn: _Net, i: int, mine: set[int]) -> None:
    """A value of more levels than a lane has doors cannot be handed to another map: its
    readers must be in its own tile."""
    for s in sorted(pn.wide & pn.lanes_of.get(i, frozenset()) - mine):
        n, src = pn.net.nodes[i], pn.net.nodes[s]
        raise VoodooError(
            f"{n.pos}: error: '{n.name}' reads '{src.name}' from another map, and its values "
            f"{pn.net.value_range[s]} are too many to hand between maps (an input lane of "
            f"more than {P.MAX_DOORS} doors)\n    hint: requantise '{src.name}' (a relu "
            "with s > 1, a smaller max or table), or give its tile more room (fewer tiles)")


def _greedy(pn: _Net, budget: MapBudget) -> list[list[int]]:
    """The tiles of `net` filled in turn, each closed when no more fits: the plan with the
    fewest tiles (then the fewest lines) of a few orders (`PACKINGS`)."""
    p = _Packer(pn)
    for i in pn.placed:
        p.add(i, p.with_node(i))
    if not p.cost.over(budget, pn.name_len, len(pn.placed)):
        return [list(pn.placed)]   # one map holds it
    plans = [groups for _, groups in _plans(pn, budget)]
    ok = [groups for groups in plans if not isinstance(groups, VoodooError)]
    if not ok:   # a value too wide to hand on, read in another map, in every order
        raise plans[0]
    return min(ok, key=lambda groups: (len(groups), _totals(pn, groups)))


# The orders `_greedy` tries: (None, _) lane-depth order, else (cap, regroup) of `_Filler`
# (cap 0: no groups). No one of them is best on every network (docs/physics.md, "The tile
# planner"); lane-depth order is the planner's old one, so no plan has more tiles than it.
PACKINGS = [(None, False), (0.0, False), (0.25, True), (0.375, False), (0.5, False)]


def _plans(pn: _Net, budget: MapBudget):
    """(order, its tiles' nodes or the VoodooError it ended with) for each of PACKINGS."""
    for frac, regroup in PACKINGS:
        if frac is None:
            what = "lane depth"
        elif frac:
            what = f"groups up to {frac:g} of a map{', regrouped' if regroup else ''}"
        else:
            what = "cheapest new inputs first"
        try:
            yield what, (_by_depth(pn, budget) if frac is None
                         else _Filler(pn, budget, frac, regroup).plan())
        except VoodooError as e:
            yield what, e


def _totals(pn: _Net, groups: list[list[int]]) -> tuple[int, int]:
    """The linedefs and sectors of a plan's maps, as planned (upper bounds)."""
    lines = sectors = 0
    for ids in groups:
        p = _Packer(pn)
        for i in ids:
            p.add(i, p.with_node(i))
        lines, sectors = lines + p.cost.linedefs, sectors + p.cost.sectors
    return lines, sectors


def _by_depth(pn: _Net, budget: MapBudget) -> list[list[int]]:
    """Nodes in lane-depth order, a tile closed when the next one does not fit."""
    groups: list[list[int]] = []
    p = _Packer(pn)
    for i in pn.placed:
        cost = p.with_node(i)
        if p.mine and cost.over(budget, pn.name_len, len(p.mine) + 1):
            groups.append(p.mine)
            p = _Packer(pn)
            cost = p.with_node(i)
        _no_wide_inputs(pn, i, p.mine_set)
        p.add(i, cost)
    if p.mine:
        groups.append(p.mine)
    return groups


def _weights(pn: _Net, budget: MapBudget) -> tuple[dict[int, int], dict[int, int]]:
    """What handing each lane to a map costs it, and what each placed node costs its own
    map, in lines: a sector, a doll, an input are worth the lines budget over their own."""
    per = {k: budget.lines // max(1, getattr(budget, k)) for k in ("sectors", "dolls", "inputs")}

    def lines(dolls, lines_, sectors):
        return lines_ + per["sectors"] * sectors + per["dolls"] * dolls

    hand = {s: lines(*c[:3]) + per["inputs"] for s, c in pn.in_cost.items()}
    own = {i: lines(*pn.own_cost.get(i, (0, 0, 0))[:3]) for i in pn.placed}
    return hand, own


class _Groups:
    """Nodes that should share a map (`_clusters`): a union-find whose groups stay convex
    (no path leaves a group and comes back into it), so each can be placed whole."""

    def __init__(self, pn: _Net, own: dict[int, int], cap: int):
        self.cap, self.tau = cap, {i: k for k, i in enumerate(pn.placed)}
        self.parent = {i: i for i in pn.placed}
        self.size, self.hi = dict(own), dict(self.tau)
        self.failed: set[tuple[int, int]] = set()
        # each group's readers outside it, as a heap by lane-depth order (entries that
        # fell inside the group are dropped when they come up)
        self.outs = {i: sorted((self.tau[r], r) for r in pn.readers.get(i, ()))
                     for i in pn.placed}

    def find(self, x: int) -> int:
        while self.parent[x] != x:
            self.parent[x] = x = self.parent[self.parent[x]]
        return x

    def union(self, a: int, b: int) -> bool:
        """Join the groups of a and b if the result is within the cap and convex: every
        reader outside it comes after its last node in lane-depth order (so no path can
        come back). False if not."""
        a, b = self.find(a), self.find(b)
        if a == b:
            return True
        if self.size[a] + self.size[b] > self.cap or (a, b) in self.failed:
            return False
        hi = max(self.hi[a], self.hi[b])
        (ta, aside_a), (tb, aside_b) = self._first_out(a, b), self._first_out(b, a)
        if min(ta, tb) <= hi:
            for g, aside in ((a, aside_a), (b, aside_b)):
                for e in aside:
                    heapq.heappush(self.outs[g], e)
            self.failed.add((a, b))
            return False
        if len(self.outs[a]) < len(self.outs[b]):
            a, b = b, a
        self.parent[b] = a
        self.size[a] += self.size.pop(b)
        self.hi[a] = hi
        for e in self.outs.pop(b):
            heapq.heappush(self.outs[a], e)
        return True

    def _first_out(self, g: int, other: int) -> tuple[int, list]:
        """The first reader of group g outside g and `other`; the entries into `other`
        are set aside (put back if the groups are not joined). Past 256 of them the join
        is refused (-1): a refused join puts them all back, which must stay cheap."""
        h, aside = self.outs[g], []
        while h:
            r = self.find(h[0][1])
            if r == g:
                heapq.heappop(h)
            elif r == other:
                aside.append(heapq.heappop(h))
                if len(aside) > 256:
                    return -1, aside
            else:
                return h[0][0], aside
        return 1 << 62, aside


def _clusters(pn: _Net, hand: dict[int, int], own: dict[int, int], cap: int,
              regroup: bool) -> list[list[int]]:
    """Groups of nodes that should share a map, each in lane-depth order: the values
    that cost most to hand on first, each joins its producer and its readers while the
    group costs at most `cap` and stays convex (`_Groups`). With `regroup`, the readers
    that no longer fit with the producer join each other (they read it in one map)."""
    g = _Groups(pn, own, cap)
    tau = g.tau
    for s in sorted(pn.readers, key=lambda s: (-hand.get(s, 0), s)):
        readers = sorted(pn.readers[s], key=tau.get)
        anchor = s if s in tau else readers[0]
        for r in readers:
            if not g.union(anchor, r) and regroup:
                anchor = r
    out: dict[int, list[int]] = {}
    for i in pn.placed:
        out.setdefault(g.find(i), []).append(i)
    return list(out.values())


class _Filler:
    """Tiles filled in a locality-aware topological order. A node is ready once every
    lane source it computes from is placed; a group of `_clusters` (at most `frac` of a
    map) is ready once everything its nodes read from outside it is. The tile being
    filled takes, in turn: a ready reader of a value too wide to hand on that the tile
    holds; else the ready group whose new inputs cost the tile least, whole, if it fits;
    else the single ready node whose new inputs and own value (if read on) cost least,
    if it fits; else the tile is closed. So a value's readers follow it into its map
    instead of waiting for their level in another one, and the nodes whose values cost
    most to hand on (a product's lookups and their sum, a norm and its readers) share one.
    Among equals, the latest ready goes first (depth-first)."""

    # Groups (nodes) tried, cheapest first, before the next step: a tile near its end
    # fits few of them, and each try costs a walk over a group's lanes.
    TRIES = 30

    def __init__(self, pn: _Net, budget: MapBudget, frac: float, regroup: bool):
        self.pn, self.budget = pn, budget
        self.hand, own = _weights(pn, budget)
        groups = _clusters(pn, self.hand, own, int(frac * budget.lines), regroup) \
            if frac else [[i] for i in pn.placed]
        self.gid = {i: k for k, ids in enumerate(groups) for i in ids}
        self.left = [dict.fromkeys(ids) for ids in groups]   # unplaced, in order
        self.least = [[sum(x) for x in zip(*map(self._own, ids))] for ids in groups]
        self.cross = {i: self.hand[i] if i in pn.readers else 0 for i in pn.placed}
        placed = set(pn.placed)
        self.waiting = {i: sum(1 for s in pn.lanes_of.get(i, ()) if s in placed)
                        for i in pn.placed}
        self.ext = [{s for i in ids for s in pn.lanes_of.get(i, ()) if self.gid.get(s) != k}
                    for k, ids in enumerate(groups)]          # what a group reads
        self.gwaiting = [sum(1 for i in ids for s in pn.lanes_of.get(i, ())
                             if s in placed and self.gid[s] != k) for k, ids in enumerate(groups)]
        self.greaders: dict[int, list[int]] = {}
        for k, e in enumerate(self.ext):
            for s in e:
                self.greaders.setdefault(s, []).append(k)
        self.tiles: list[list[int]] = []
        self.done: set[int] = set()
        self.urgent: list[int] = []
        self.stamp = 0
        self.p = _Packer(pn)
        self.nadd = {i: 0 for i in pn.placed if not self.waiting[i]}   # ready node -> cost
        self._costs()

    def _own(self, i: int) -> tuple[int, int, int, int]:
        dolls, lines, sectors = self.pn.own_cost.get(i, (0, 0, 0))[:3]
        return lines, sectors, dolls, 2 if i in self.pn.own else 1

    def _new(self, lanes) -> int:
        """What the lanes the tile does not hold yet cost it."""
        p = self.p
        return sum(self.hand[s] for s in lanes if s not in p.mine_set and s not in p.need)

    def _costs(self) -> None:
        """Every ready group's and node's cost to the tile, from the start."""
        self.gheap, self.nheap, self.gadd = [], [], {}
        for k, left in enumerate(self.left):
            if left and not self.gwaiting[k]:
                self._gset(k, self._new(self.ext[k]))
        for i in self.nadd:
            self._nset(i, self._new(self.pn.lanes_of.get(i, ())))

    def _gset(self, k: int, cost: int) -> None:
        self.gadd[k] = cost
        self.stamp += 1
        heapq.heappush(self.gheap, (cost, -self.stamp, k))

    def _nset(self, i: int, cost: int) -> None:
        self.nadd[i] = cost
        self.stamp += 1
        heapq.heappush(self.nheap, (cost + self.cross[i], -self.stamp, i))

    def plan(self) -> list[list[int]]:
        while len(self.done) < len(self.pn.placed):
            if not (self._urgent() or self._group() or self._node()):
                if not self.p.mine:
                    raise AssertionError("a ready node that fits no map")  # _every_node_fits
                self.tiles.append(self.p.mine)
                self.p = _Packer(self.pn)
                self._costs()
        if self.p.mine:
            self.tiles.append(self.p.mine)
        return self.tiles

    def _fits(self, cost: Cost, more: int) -> bool:
        return not cost.over(self.budget, self.pn.name_len, len(self.p.mine) + more)

    def _urgent(self) -> bool:
        while self.urgent:
            i = self.urgent.pop()
            cost = None if i in self.done else self.p.with_node(i)
            if cost and self._fits(cost, 1):
                self._place(i, cost)
                return True
        return False

    def _group(self) -> bool:
        """Place the cheapest ready group that fits whole, if one of the first TRIES does."""
        def fits(k):
            lines, sectors, dolls, lights = self.least[k]
            c, b = self.p.cost, self.budget
            if c.lines + lines + 4 * (c.lights + lights) + 16 > b.lines or \
                    c.sectors + sectors > b.sectors or c.dolls + dolls > b.dolls:
                return None   # its own lanes alone are too many
            cost = self.p.with_nodes(self.left[k])
            return cost if self._fits(cost, len(self.left[k])) else None

        k = self._cheapest(self.gheap, lambda k, key: self.gadd.get(k) == key, fits)
        if k is None:
            return False
        del self.gadd[k]
        for i in list(self.left[k]):
            self._place(i, self.p.with_node(i))
        return True

    def _node(self) -> bool:
        def fits(i):
            cost = self.p.with_node(i)
            return cost if self._fits(cost, 1) else None

        def valid(i, key):
            return i in self.nadd and self.nadd[i] + self.cross[i] == key

        got = self._cheapest(self.nheap, valid, fits, with_cost=True)
        if got is None:
            return False
        self._place(*got)
        return True

    def _cheapest(self, heap, valid, fits, with_cost=False):
        """The first of the cheapest TRIES valid entries that `fits`; the others stay."""
        tried, got = [], None
        while heap and len(tried) < self.TRIES:
            entry = heapq.heappop(heap)
            if not valid(entry[2], entry[0]):
                continue
            tried.append(entry)
            cost = fits(entry[2])
            if cost is not None:
                tried.pop()
                got = (entry[2], cost) if with_cost else entry[2]
                break
        for entry in tried:
            heapq.heappush(heap, entry)
        return got

    def _place(self, i: int, cost: Cost) -> None:
        """Node i into the tile: what it brings makes its readers (nodes, groups) cheaper;
        the nodes (groups) that waited only for it are ready."""
        pn, p = self.pn, self.p
        _no_wide_inputs(pn, i, p.mine_set)
        new = [s for s in pn.lanes_of.get(i, ()) if s not in p.mine_set and s not in p.need]
        p.add(i, cost)
        self.done.add(i)
        del self.nadd[i]
        k0 = self.gid[i]
        del self.left[k0][i]
        self.least[k0] = [a - b for a, b in zip(self.least[k0], self._own(i))]
        self.gadd.pop(k0, None)   # begun: no longer placed whole in this tile
        for s in new:
            for k in self.greaders.get(s, ()):
                if k in self.gadd:
                    self._gset(k, self.gadd[k] - self.hand[s])
            for r in pn.readers.get(s, ()):
                if r in self.nadd:
                    self._nset(r, self.nadd[r] - self.hand[s])
        for r in pn.readers.get(i, ()):
            self.waiting[r] -= 1
            if not self.waiting[r]:
                self._nset(r, self._new(pn.lanes_of.get(r, ())))
                if pn.wide & pn.lanes_of[r] & p.mine_set:
                    self.urgent.append(r)
            k = self.gid[r]
            if k != k0:
                self.gwaiting[k] -= 1
                if not self.gwaiting[k] and self.left[k]:
                    self._gset(k, self._new(self.ext[k]))


def _forced_split(pn: _Net, n_tiles: int, net: Netlist) -> list[list[int]]:
    """Exactly n_tiles tiles: whole levels when there are enough of them, else the
    levels with the most nodes per tile are cut into chunks of nodes."""
    lv: list[list[int]] = []
    for i in pn.placed:
        if lv and pn.depth[lv[-1][0]] == pn.depth[i]:
            lv[-1].append(i)
        else:
            lv.append([i])
    total = len(pn.placed)
    if n_tiles > total:
        raise VoodooError(f"{net.source}: cannot make {n_tiles} tiles out of {total} computed "
                          "nodes")
    if n_tiles <= len(lv):
        groups, per = [], len(lv) / n_tiles
        for k in range(n_tiles):
            a, b = round(k * per), round((k + 1) * per)
            groups.append([i for ids in lv[a:b] for i in ids])
        return groups
    pieces = [1] * len(lv)
    for _ in range(n_tiles - len(lv)):
        k = max(range(len(lv)), key=lambda j: len(lv[j]) / pieces[j]
                if pieces[j] < len(lv[j]) else -1)
        pieces[k] += 1
    groups = []
    for ids, p in zip(lv, pieces):
        for c in range(p):
            groups.append(ids[round(c * len(ids) / p):round((c + 1) * len(ids) / p)])
    return groups


def _forced_tiles_fit(pn: _Net, groups, budget: MapBudget) -> None:
    for k, ids in enumerate(groups):
        p = _Packer(pn)
        for i in ids:
            _no_wide_inputs(pn, i, p.mine_set | set(ids))
            p.add(i, p.with_node(i))
        why = p.cost.over(budget, pn.name_len, len(ids))
        if why:
            raise VoodooError(f"{pn.net.source}: tile {k + 1} of {len(groups)} needs "
                              f"{why}\n    hint: more tiles (--tiles N), or --tiles auto")


def _make_tile(pn: _Net, k: int, ids: list[int], groups: list[list[int]]) -> Tile:
    """Tile k as a netlist: its inputs (the lane values it reads from before), the
    identities it rebuilds, its nodes; outputs are the network's outputs among its nodes
    and what later tiles read."""
    net = pn.net
    mine = set(ids)
    need = sorted({s for i in ids for s in pn.lanes_of.get(i, ()) if s not in mine})
    idents = sorted({j for i in ids for j in pn.idents_of.get(i, ()) if j not in mine})
    # A prev node of a node of this map is kept here (its state stays in the map); any
    # other value from outside becomes an input.
    local = set()
    for s in need:
        chain = _prev_chain(net, s)
        if chain and net.nodes[chain[-1]].gate.src in mine:
            local.update(chain)
    local_prev = sorted(local)
    need = [s for s in need if s not in local]
    nodes: list[Node] = []
    remap: dict[int, int] = {}
    for s in need:
        src = net.nodes[s]
        remap[s] = len(nodes)
        nodes.append(Node(len(nodes), src.name, src.group, src.index, handed_input(net, s),
                          src.pos))
    for i in local_prev + sorted(set(idents) | mine):  # original ids: a topological order
        n = net.nodes[i]
        remap[i] = len(nodes)
        nodes.append(Node(len(nodes), n.name, n.group, n.index, n.gate, n.pos,
                          {remap[s]: w for s, w in n.weights.items()}, n.bias))
    for i in local_prev:
        g = net.nodes[i].gate
        nodes[remap[i]].gate = Prev(remap[g.src], g.init)
    crossing = _read_elsewhere(pn, k, groups)
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


def _read_elsewhere(pn: "_Net", k: int, groups: list[list[int]]) -> set[int]:
    """The values tile k computes that cross to another map: read by a later tile in the
    same step, or by any other tile at the next step (through a prev node of theirs, or an
    input fed back from it). Reads go through identities (`_Net.lanes_of`)."""
    net, read = pn.net, set()
    for g, ids in enumerate(groups):
        if g == k:
            continue
        for j in ids:
            for s in pn.lanes_of.get(j, ()):
                read.add(s)
                chain = _prev_chain(net, s)
                root = net.nodes[chain[-1]].gate.src if chain else s
                read.add(root)
                if root in net.feedback:   # a fed-back input, or the prev of one
                    read.add(net.feedback[root])
    return read & set(groups[k])


def carry(tiles: list[Tile], x: list[int], net: Netlist, run_tile) -> list[int]:
    """One sample through every tile: `run_tile(tile, inputs) -> outputs`. Values are only
    looked up by name and passed on."""
    values = {net.nodes[i].name: int(v) for i, v in zip(net.inputs, x)}
    for t in tiles:
        outs = run_tile(t, [values[name] for name in t.inputs])
        values.update(zip(t.outputs, outs))
    return [values[net.nodes[o].name] for o in net.outputs]


def compile_tiles(tiles: list[Tile], title: str, acc: str = "internal",
                  door_budget: int | None = None, workers: int | None = None,
                  lean: bool = False, carry: str = "glide", nodes: bool = True,
                  pivots=False, late_inputs: bool = False):
    """Each tile as its own map, MAP01.. in order; compiled in parallel processes
    (`workers`, default one per core) when there are several. With `lean`, an iterator of
    the maps as they finish, each with only what a WAD holds (no circuit, layout or
    schedule: a map of 400,000 lines is gigabytes of them), for `write_wad`. `carry` and
    `nodes` as compile_netlist's and write_wad's (bench/speed.py builds the old way too),
    `pivots` as compile_netlist's (by node name, so the same for every tile), and
    `late_inputs` (maps of a streamed multi-step run: each starts once the inputs its
    first phase wants are there, engine/tiled.stream_sequence)."""
    import os

    jobs = [(t.net, f"{title} ({k + 1}/{len(tiles)})", f"MAP{k + 1:02d}", acc, door_budget,
             lean, carry, nodes, pivots, late_inputs) for k, t in enumerate(tiles)]
    workers = min(len(jobs), workers or os.cpu_count() or 1)
    maps = map(_compile_one, jobs) if workers <= 1 else _compiled_in_pool(jobs, workers)
    return maps if lean else list(maps)


def _compiled_in_pool(jobs, workers: int):
    import multiprocessing as mp

    from tqdm import tqdm

    with mp.get_context("spawn").Pool(workers) as pool:
        yield from tqdm(pool.imap(_compile_one, jobs, chunksize=1), total=len(jobs),
                        desc="compile", unit="map")


def _compile_one(job):
    from .compile import compile_netlist

    net, title, name, acc, door_budget, lean, carry, nodes, pivots, late = job
    m = compile_netlist(net, title=title, map_name=name, acc=acc, door_budget=door_budget,
                        carry=carry, pivots=pivots, late_inputs=late)
    if nodes:
        m.with_nodes()  # here, in the pool, not one map at a time in write_wad
    if lean:
        m.circuit = m.layout = m.schedule = None
    return m


class SequenceCarry:
    """What crosses maps in one run of a multi-step netlist, step by step: each step's
    inputs are the run's row (None: fed back), this step's values of earlier tiles, and the
    previous step's values of the prev nodes and fed-back inputs a map does not keep
    itself; `fed_here[k]` names the inputs tile k's map feeds back itself. Values are only
    looked up by name and passed on (`carry_sequence`, engine/tiled.stream_sequence)."""

    def __init__(self, tiles: list, net: Netlist, fed_here: list[set], seq: list):
        names = {n.id: n.name for n in net.nodes}
        self.tiles, self.net, self.fed_here, self.seq = tiles, net, fed_here, seq
        self.inputs = [names[i] for i in net.inputs]
        self.position = {name: k for k, name in enumerate(self.inputs)}
        self.prevs = {n.name: (names[n.gate.src], n.gate.init) for n in net.nodes if n.is_prev}
        self.fed_from = {names[x]: names[y] for x, y in net.feedback.items()}
        self.lo = {names[i]: net.nodes[i].gate.lo for i in net.inputs}
        self.done = None if net.done is None else names[net.done]

    def tile_inputs(self, k: int, t: int, get) -> list[int]:
        """Tile k's inputs at step t; `get(step, name)` is a value some map handed on."""
        return [self.tile_input(k, t, i, get) for i in range(len(self.tiles[k].inputs))]

    def tile_input(self, k: int, t: int, i: int, get) -> int:
        """Tile k's input i at step t (waits in `get` until a map has handed it on)."""
        name = self.tiles[k].inputs[i]
        fed = name in self.position and self.seq[t][self.position[name]] is None
        if fed and name in self.fed_here[k]:   # fed back by the map itself: not used
            return self.lo[name]
        return self.value(name, t, get)

    def value(self, name: str, t: int, get) -> int:
        """A value at step t as a map that does not compute it sees it: a prev node's is
        its init, then its source's of the step before (an input's included: the run's
        row, which no map hands on); an input's is the row's, or, fed back, its source's
        of the step before; anything else is what its map handed on at step t."""
        if name in self.prevs:
            src, init = self.prevs[name]
            return init if t == 0 else self.value(src, t - 1, get)
        if name in self.lo:
            v = self.seq[t][self.position[name]]
            if v is not None:
                return v
            return self.lo[name] if t == 0 else get(t - 1, self.fed_from[name])
        return get(t, name)

    def fed(self, k: int, row: list) -> bool:
        return any(v is None for v in row) and bool(self.fed_here[k])

    def step_values(self, t: int, row: list, handed: dict, before: dict | None) -> dict:
        """Step t's values by name: the inputs taken (fed-back ones resolved where a map
        handed their node on), the prev values known outside their map (else None), and
        what every map handed on."""
        values = dict(zip(self.inputs, row))
        for x, v in list(values.items()):
            if v is None and before is not None and self.fed_from[x] in before:
                values[x] = before[self.fed_from[x]]
        for name, (src, init) in self.prevs.items():
            values[name] = init if before is None else before.get(src)
        values.update(handed)
        return values


def carry_sequence(tiles: list, seq: list, net: Netlist, run_tile, fed_here: list[set]):
    """One run of a multi-step netlist through its tiles, step by step (`SequenceCarry`):
    `run_tile(k, inputs, t, fed) -> outputs` runs step t of tile k's map (which keeps its
    own state). Returns every step's values by name, up to the step at which the done node
    is 1."""
    rules = SequenceCarry(tiles, net, fed_here, seq)
    steps: list[dict] = []
    for t, row in enumerate(seq):
        handed: dict = {}

        def get(step, name):
            return handed[name] if step == t else steps[step][name]

        for k, tile in enumerate(tiles):
            ins = rules.tile_inputs(k, t, get)
            handed.update(zip(tile.outputs, run_tile(k, ins, t, rules.fed(k, row))))
        steps.append(rules.step_values(t, row, handed, steps[-1] if steps else None))
        if rules.done is not None and steps[-1].get(rules.done) == 1:
            break
    return steps


def compare(net: Netlist, budget: MapBudget | None = None,
            door_budget: int | None = None) -> list[tuple[str, str]]:
    """What each order `_greedy` tries makes of `net`: (order, its tiles, linedefs and
    sectors as planned, or the error it ended with). `python -m mapgen.tiles` prints it."""
    if any(isinstance(n.gate, Product) for n in net.nodes):
        from dsl.lower import lower_products
        net = lower_products(net)
    pn = _Net(net, door_budget)
    _every_node_fits(pn, budget or MapBudget())
    rows = []
    for what, groups in _plans(pn, budget or MapBudget()):
        if isinstance(groups, VoodooError):
            rows.append((what, str(groups).splitlines()[0]))
        else:
            lines, sectors = _totals(pn, groups)
            rows.append((what, f"{len(groups):5} {lines:12,} {sectors:11,}"))
    return rows


def main(argv=None) -> int:
    """python -m mapgen.tiles NET.dnet [--dolls N] [--door-budget N]"""
    import argparse
    import time

    from dsl import load

    ap = argparse.ArgumentParser(description="Each tile plan the planner tries on a "
                                             "netlist, and the one it keeps.")
    ap.add_argument("netlist")
    ap.add_argument("--dolls", type=int, default=P.TILE_DOLLS, help="dolls a map (budget)")
    ap.add_argument("--door-budget", type=int, default=None)
    args = ap.parse_args(argv)
    net = load(args.netlist)
    budget = MapBudget(dolls=args.dolls)
    t0 = time.perf_counter()
    tiles = plan_tiles(net, door_budget=args.door_budget, budget=budget)
    took = time.perf_counter() - t0
    print(f"{args.netlist}: {len(tiles)} tile(s), planned in {took:.1f} s")
    if len(tiles) > 1:
        print(f"  {'order':44} {'tiles':>5} {'linedefs':>12} {'sectors':>11}")
        for what, row in compare(net, budget, args.door_budget):
            print(f"  {what:44} {row}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
