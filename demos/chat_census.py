"""The chat map's census (bench/chat.py, docs/chat.md "What fits one map"): dolls, doors
and weighted lines per part of a chat netlist (models/chat_dnet.py) as the map compiler
lowers it, counted from the netlist without building the map.

Owns `census` and the parts of a step it counts by (`PARTS`)."""
from __future__ import annotations

import re

PARTS = [  # (part, node-name prefixes), in the order of a step
    ("inputs (character, noise)", ("c", "noise")),
    ("step counter, reply flag", ("t", "gen")),
    ("embedding", ("tok", "pe")),
    ("router", ("xr", "A", "lA", "lt", "mean", "rh", "rb", "route")),
    ("norms", ("z", "u", "sq", "rho", "y")),
    ("q k v g of every expert", ("q", "k", "v", "g")),
    ("state updates (kv, g S, g z)", ("kv", "sd", "zd")),
    ("state readout products (q S, q z)", ("qs", "qz")),
    ("division (log, divide)", ("lp", "ln", "ld", "op", "on")),
    ("MLPs of every expert", ("f",)),
    ("choice scores", ("sc",)),
    ("argmax (max tree, best, first)", ("mx", "best", "o")),
    ("repetition counts, y, done", ("rc", "y", "done")),
]


def _part(name: str) -> str:
    group = name.split("[")[0].split(".")[0]
    if group in ("o", "y"):   # the choice's o and y, not a layer's o{l}_{e} or a norm's y
        return PARTS[-2][0] if group == "o" else PARTS[-1][0]
    if re.fullmatch(r"(z|u|sq|rho|y)(a\d+|m\d+|f)(_r)?", group):
        return PARTS[4][0]
    stem = re.match(r"[A-Za-z]*", group).group(0)
    for part, prefixes in PARTS:
        if stem in prefixes:
            return part
    return "other"


def census(net) -> dict[str, dict[str, int]]:
    """Dolls, doors and weighted lines per part of the map a one-step chat netlist makes,
    as the map compiler lowers it (mapgen/circuit.py): a lane, and so a doll, per gated
    node with a door (a product is two quarter-square lookups); a door per step of its
    staircase over the proven accumulator range (`staircase`: a lookup has a door only
    where its table changes); per door a line to the node's value light and one per
    distinct weight among the accumulators that read it through identities (a weight
    group). The lanes of the `prev_` inputs are left out (in a recurrent map those values
    stay in lights). The totals are under "total", with the levels of one step."""
    from dsl.ir import Identity
    from dsl.lower import lower_products
    from mapgen.circuit import staircase  # the map's own staircases

    low = lower_products(net)
    weights: dict[int, set] = {}   # lane node -> the distinct weights it is read with
    expand: dict[int, dict[int, int]] = {}
    depth: dict[int, int] = {}
    for n in low.nodes:
        depth[n.id] = 0
        if n.is_input:
            continue
        terms: dict[int, int] = {}
        for src, wt in n.weights.items():
            sub = expand[src] if isinstance(low.nodes[src].gate, Identity) else {src: 1}
            for r, wr in sub.items():
                terms[r] = terms.get(r, 0) + wt * wr
        expand[n.id] = {r: v for r, v in terms.items() if v}
        depth[n.id] = max((depth[r] for r in expand[n.id]), default=0) + \
            (0 if isinstance(n.gate, Identity) else 1)
        for r, v in expand[n.id].items():
            weights.setdefault(r, set()).add(v)
    out: dict[str, dict[str, int]] = {}
    for n in low.nodes:
        if isinstance(n.gate, Identity) or n.name.startswith("prev_"):
            continue
        r = low.acc_range[n.id]
        doors = len(staircase(n.gate, r.lo, r.hi)[1])
        if not doors:
            continue
        for key in (_part(n.name), "total"):
            row = out.setdefault(key, {"dolls": 0, "doors": 0, "lines": 0})
            row["dolls"] += 1
            row["doors"] += doors
            row["lines"] += doors * (1 + len(weights.get(n.id, ())))
    out["total"]["levels"] = max(depth.values())
    return out
