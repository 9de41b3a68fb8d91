"""What one map of a tiled WAD hands the next: the range (and levels) of a value carried
between maps (`handed_input`), and `check_wiring`, which checks a tiled WAD's manifests
whole against the netlist before any engine starts. Apart from mapgen.tiles (the planner)
so that reading a WAD (mapgen.wadcheck) does not import the compiler."""
from __future__ import annotations

from dsl.ir import Input, Lut, Netlist


def handed_input(net: Netlist, s: int) -> Input:
    """The input that carries node s's value into another map: its range, and the levels
    it can take where they are fewer than the integers of the range (a lookup's: its lane
    then has a door per level; a token embedding of 45 values spread over -325..485 takes
    44 doors instead of 810, and a lane of more than ~520 doors would not fit a map)."""
    r = net.value_range[s]
    levels = _levels(net, s)
    if levels is not None:
        levels = tuple(sorted(v for v in levels if r.lo <= v <= r.hi))
        if len(levels) == r.hi - r.lo + 1 or len(levels) < 2:
            levels = None
    return Input(r.lo, r.hi, levels)


def _levels(net: Netlist, s: int) -> set[int] | None:
    """Every value node s can take, for a lookup (or the state of one); None otherwise."""
    n = net.nodes[s]
    if n.is_prev:
        src = _levels(net, n.gate.src)
        return None if src is None else src | {n.gate.init}
    if not isinstance(n.gate, Lut):
        return None
    g, a = n.gate, net.acc_range[s]
    k0, k1 = min(max(a.lo, g.lo), g.hi), min(max(a.hi, g.lo), g.hi)
    return set(g.table[k0 - g.lo:k1 - g.lo + 1])


def check_wiring(net: Netlist, infos: list[dict]) -> str | None:
    """What is wrong with the manifests of a tiled WAD's maps (in order) as a split of
    `net`, or None; checked whole before any engine starts, so a run never waits for a
    value no map hands on. Each map takes what its manifest's tile_inputs name, with the
    ranges the planner gives them (`handed_input`), and computes its tile_outputs; every
    value a map takes is an input of the network, the previous step's value of a prev
    node whose source is an input or handed on by some map, or handed on by an earlier
    map; no value is computed by two maps; every output of the network is handed on."""
    from dsl.lower import lower_products

    net = lower_products(net)
    node = {n.name: n for n in net.nodes}
    made: dict[str, int] = {}
    for k, info in enumerate(infos):
        problem = _tile_names(info, node) or _tile_ranges(net, info, node)
        if problem:
            return f"{_map(k)}: {problem}"
        for name in info["tile_outputs"]:
            if node[name].is_input or node[name].is_prev:
                return f"{_map(k)}: its tile_outputs name {name}, which no map computes"
            if name in made:
                return f"{_map(k)}: {name} is computed by {_map(made[name])} too"
            made[name] = k
    missing = [n.name for n in (net.nodes[o] for o in net.outputs) if n.name not in made]
    if missing:
        return f"no map hands on the network's output {missing[0]}"
    for k, info in enumerate(infos):
        for name in info["tile_inputs"]:
            problem = _source_problem(net, node, name, k, made, set(info.get("feedback") or []))
            if problem:
                return f"{_map(k)} takes {name}, {problem}"
    return None


def _map(k: int) -> str:
    return f"MAP{k + 1:02d}"


def _tile_names(info: dict, node: dict) -> str | None:
    """The map's own lists agree with its tile's, and name values of the netlist, once."""
    if "tile_inputs" not in info or "tile_outputs" not in info:
        return "tile_inputs and tile_outputs are missing (a map of several must name them)"
    for key, own in (("tile_inputs", "inputs"), ("tile_outputs", "all_outputs")):
        if info[key] != info[own]:
            return (f"its {key} ({', '.join(info[key][:4]) or 'none'}) are not the values "
                    f"the map's own {own} name ({', '.join(info[own][:4]) or 'none'})")
    for key in ("tile_inputs", "tile_outputs"):
        names = info[key]
        bad = next((n for n in names if n not in node), None)
        if bad is not None:
            return f"its {key} name {bad[:40]!r}, which is not a value of the netlist"
        seen: set[str] = set()
        twice = next((n for n in names if n in seen or seen.add(n)), None)
        if twice is not None:
            return f"its {key} name {twice} twice"
    return None


def _tile_ranges(net: Netlist, info: dict, node: dict) -> str | None:
    for name, r in zip(info["tile_inputs"], info["input_ranges"]):
        h = handed_input(net, node[name].id)
        if r != [h.lo, h.hi]:
            return (f"its input {name} takes {r[0]}..{r[1]}, but the netlist's {name} is "
                    f"{h.lo}..{h.hi}")
    return None


def _source_problem(net: Netlist, node: dict, name: str, k: int, made: dict,
                    fed_here: set) -> str | None:
    """Why no value reaches map k's input `name` (None when one does)."""
    n = node[name]
    while n.is_prev:   # the previous step's value of its source: from any map
        n = net.nodes[n.gate.src]
        if not n.is_input and not n.is_prev and n.name not in made:
            return f"the value of {n.name} at the step before, but no map hands it on"
    if n.is_input:
        fed = next((net.nodes[y].name for x, y in net.feedback.items() if x == n.id), None)
        if fed is not None and n.name not in fed_here and fed not in made:
            return f"fed back from {fed}, but no map hands {fed} on"
        return None
    if name == n.name and made.get(name, k) >= k:
        return ("which no map hands on" if name not in made else
                f"which only {_map(made[name])}, a later map, hands on")
    return None
