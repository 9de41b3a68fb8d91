"""Drop a circuit into someone else's map: `build.py embed CIRCUIT --into THEIRS.wad`.

Owns merging our machine into a foreign map without breaking it:

- **their map** is read as UDMF (or converted from Hexen format); every block and field is
  kept, in order. Our tags start above every tag, line id and thing id they use, our dolls'
  TIDs above theirs, our script numbers above theirs.
- **our hall** (mapgen.layout.build_layout, at a chosen origin) goes into free space beside
  their geometry: its bounding box must not overlap theirs and must stay inside the engine's
  coordinates. Our dolls come first in the thing list, so their last player-1 start stays
  the player; our player start is dropped.
- **our ACS** is a library (LOADACS + A_START/A_END), so their BEHAVIOR runs untouched
  beside it. It is the machine's bus (mapgen/program.py, renumbered) plus a small panel:
  their wired lines and sectors run `toggle` / `set` scripts that change an input and mark
  it dirty; the panel runs an inference whenever an input changed, then copies outputs to
  the floors and doors they drive. Light outputs need no ACS: the driven sectors carry the
  output light's tags (moreids), so they ARE the accumulator. A door output adds two nodes
  to the circuit (`NAME__open : step(t=1)` and `NAME__door`, its ceiling height), so that
  the network computes the height and ACS only copies it.
- the result is one UDMF map in a copy of their WAD: their other lumps are kept verbatim,
  their stale ZNODES dropped (the engine builds nodes for a map without them).
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass

from dsl.diagnostics import VoodooError
from mapgen import physics as P

from .textmap import TextMap, hexen_to_textmap, parse_textmap
from .wiring import OutputWire, check_wiring, parse_wiring

LIBRARY = "VNETLIB"
SEC_ACT_ENTER = 9998
ACS_EXECUTE_ALWAYS = 226
GAP = 256                   # between their geometry and our hall
PANEL = 50                  # panel scripts: ours + PANEL + 0 (OPEN loop), 1 toggle, 2 set, 3 status
OUTPUT_SPEED = 64           # floors and doors move 8 units per tic: one sees them move


class EmbedError(VoodooError):
    pass


@dataclass
class Foreign:
    path: str
    map_name: str
    lumps: list
    tm: TextMap
    behavior: bytes | None
    fmt: str                # udmf or hexen


def load_foreign(path: str, map_name: str) -> Foreign:
    """Their WAD and map, as lumps and a TextMap; Doom-format maps are refused."""
    from .wadio import map_span, read_lumps

    lumps = read_lumps(path)
    span = map_span(lumps, map_name)
    if span is None:
        found = [n for i, (n, _) in enumerate(lumps) if i + 1 < len(lumps)
                 and lumps[i + 1][0] in ("TEXTMAP", "THINGS")]
        raise EmbedError(f"{path}: no map {map_name} (it has {', '.join(found) or 'none'})")
    i, j = span
    group = dict(lumps[i + 1:j])
    if "TEXTMAP" in group:
        tm = parse_textmap(group["TEXTMAP"].decode("utf-8", "replace"), f"{path}:{map_name}")
        if tm.namespace.lower() not in ("zdoom", "hexen", "zdoomtranslated"):
            raise EmbedError(f"{path}:{map_name}: UDMF namespace \"{tm.namespace}\" has no "
                             "action arguments or sector tags lists\n    hint: save the map in "
                             "the \"zdoom\" namespace (UDB: ZDoom: Doom (UDMF))")
        tm.namespace = "zdoom"
        return Foreign(path, map_name, lumps, tm, group.get("BEHAVIOR"), "udmf")
    import omg

    wad = omg.WAD(path)
    tm = hexen_to_textmap(wad.maps[map_name], f"{path}:{map_name}")
    return Foreign(path, map_name, lumps, tm, group.get("BEHAVIOR"), "hexen")


def their_numbers(f: Foreign) -> dict[str, int]:
    """The largest tag, TID and script number their map uses."""
    return {k: v for k, (v, _) in their_largest(f).items()}


def their_largest(f: Foreign) -> dict[str, tuple[int, str]]:
    """The largest tag (over sector tags, line ids and thing ids: our tags start above all
    of them), TID and script number their map uses, each with what in their map has it."""
    tags = [(0, "")]
    for i in range(len(f.tm.sectors)):
        tags += [(t, f"sector {i} (tag {t})") for t in f.tm.sector_tags(i)]
    tags += [(int(ln.get("id", 0) or 0), f"line {i} (id {ln.get('id')})")
             for i, ln in enumerate(f.tm.linedefs)]
    tids = [(0, "")] + [(int(t.get("id", 0) or 0), f"thing {i} (id {t.get('id')})")
                        for i, t in enumerate(f.tm.things)]
    scripts = [(0, "")] + [(n, f"script {n}") for n in script_numbers(f.behavior)]
    return {"tag": max(tags + tids), "tid": max(tids), "script": max(scripts)}


def check_room(f: Foreign, kind: str, start: int, top: int, unit: int) -> None:
    """Our `kind` numbers (tag, tid or script) run from `start`, the next multiple of
    `unit` above their largest, to `top`: refuse, naming what in their map leaves no room,
    when `top` passes the engine's limit (tags 65535, script numbers 32767)."""
    from acs.compiler import MAX_SCRIPT
    from mapgen.checks import MAX_TAG

    limit, what, any_other = {
        "tag": (MAX_TAG, "tags", "tag, line id or thing id"),
        "tid": (2**31 - 1, "thing ids", "thing id"),
        "script": (MAX_SCRIPT, "script numbers", "script number")}[kind]
    if top <= limit:
        return
    value, who = their_largest(f)[kind]
    room = (limit - (top - start)) // unit * unit   # theirs below this leaves enough
    fix = (f"renumber {who.split(' (')[0]} (and any other {any_other} of {room} or more) "
           f"below {room}" if room > 0 else f"the circuit alone needs more {what} than that")
    raise EmbedError(f"{f.path}:{f.map_name}: {who} leaves no room for the circuit: its "
                     f"{what} start above {value} and would reach {top}, beyond the engine's "
                     f"{limit}\n    hint: {fix} in your map, then embed again")


def holds_a_circuit(f: Foreign) -> str | None:
    """What in their WAD shows a VoodooNet circuit is already there, or None."""
    from mapgen.compile import MANIFEST_LUMP

    names = {n for n, _ in f.lumps}
    if LIBRARY in names:
        return f"its {LIBRARY} library"
    if MANIFEST_LUMP in names:
        return f"its {MANIFEST_LUMP} manifest"
    return None


def script_numbers(lump: bytes | None) -> list[int]:
    """Script numbers of a BEHAVIOR lump (old ACS0 or new ACSE/ACSe)."""
    import struct

    if not lump or len(lump) < 8:
        return []
    if lump[:4] == b"ACS\0":
        (d,) = struct.unpack_from("<I", lump, 4)
        (n,) = struct.unpack_from("<I", lump, d)
        return [struct.unpack_from("<I", lump, d + 4 + 12 * k)[0] % 1000 for k in range(n)]
    from .behavior import chunks

    table = chunks(lump).get(b"SPTR", [b""])[0]
    return [struct.unpack_from("<h", table, k)[0] for k in range(0, len(table) - 11, 12)]


def augmented_source(path: str, outs: list[OutputWire]) -> str:
    """The circuit's text plus, per door output, the two nodes that compute its ceiling."""
    from dsl.parser import read_text

    text = read_text(path)
    extra = []
    for w in outs:
        if w.kind != "door":
            continue
        base = re.sub(r"[^A-Za-z0-9_]", "_", w.name)
        closed = w.closed
        extra += [f"neuron {base}__open : step(t=1) = {w.name}",
                  f"neuron {base}__door : identity = {w.open - closed}*{base}__open + {closed}"]
    return text + ("\n# added by build.py embed: door outputs\n" + "\n".join(extra) + "\n"
                   if extra else "")


def _door_heights(tm: TextMap, outs: list[OutputWire]) -> None:
    """A door's closed ceiling is its floor; open, by default, the lowest neighbouring
    ceiling (as Doom's doors open)."""
    for w in outs:
        if w.kind != "door":
            continue
        s = w.sectors[0]
        w.closed = int(tm.sectors[s].get("heightfloor", 0))
        if w.open is None:
            nb = [int(tm.sectors[o].get("heightceiling", 0)) for o in _neighbours(tm, s)]
            w.open = min(nb) - 4 if nb else w.closed + 128
        if any(int(tm.sectors[o].get("heightfloor", 0)) != w.closed for o in w.sectors):
            raise EmbedError(f"{w.where}: door sectors of one output must share one floor "
                             "height")


def _neighbours(tm: TextMap, s: int) -> set[int]:
    out = set()
    for i in range(len(tm.linedefs)):
        f, b = tm.side_sector(i, "front"), tm.side_sector(i, "back")
        if s in (f, b) and f != b and min(f, b) >= 0:
            out.add(b if f == s else f)
    return out


def place(tm: TextMap, ours: tuple[float, float, float, float]) -> tuple[float, float]:
    """An origin shift putting our box beside theirs (east, north, west, south, in that
    order) with GAP between, inside the engine's coordinates."""
    x0, y0, x1, y1 = tm.extent()
    a0, b0, a1, b1 = ours
    w, h = a1 - a0, b1 - b0
    for dx, dy in ((x1 + GAP - a0, y0 - b0), (x0 - a0, y1 + GAP - b0),
                   (x0 - GAP - a1, y0 - b0), (x0 - a0, y0 - GAP - b1)):
        nx0, ny0 = a0 + dx, b0 + dy
        if P.COORD_MIN <= nx0 and nx0 + w <= P.COORD_MAX and P.COORD_MIN <= ny0 \
                and ny0 + h <= P.COORD_MAX and not _overlap((nx0, ny0, nx0 + w, ny0 + h),
                                                            (x0, y0, x1, y1)):
            return dx, dy
    raise EmbedError(f"no free space for the circuit's hall ({w:g} x {h:g} units) beside the "
                     f"map (x {x0:g}..{x1:g}, y {y0:g}..{y1:g}) inside the engine's "
                     f"coordinates {P.COORD_MIN}..{P.COORD_MAX}\n    hint: a smaller circuit, "
                     "or a map with room to one side")


def _overlap(a, b) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


# ------------------------------------------------------------------------------- the build
@dataclass
class Embedded:
    path: str
    info: dict                       # the manifest (script numbers renumbered) + "embed"
    net: object                      # the (augmented) netlist
    origin: tuple[float, float]
    extent: tuple                    # our hall's box
    theirs: tuple                    # their map's box
    textmap: str
    library: bytes


def embed(circuit: str, into: str, map_name: str, wiring: str, out: str,
          title: str | None = None) -> Embedded:
    from dsl.parser import read_text

    f = load_foreign(into, map_name)
    held = holds_a_circuit(f)
    if held:  # one circuit per map: a second would share the first's library and manifest
        raise EmbedError(f"{into}: the WAD already holds a VoodooNet circuit ({held}); "
                         "embed puts one circuit in a map\n    hint: embed into the WAD "
                         "without it, or write both networks as one netlist and embed that")
    if not any(int(t.get("type", 0)) == 1 for t in f.tm.things):
        raise EmbedError(f"{into}:{map_name}: the map has no player 1 start; the last of our "
                         "dolls would become the player\n    hint: add a player 1 start")
    ins, outs = parse_wiring(read_text(wiring), wiring)
    _door_heights(f.tm, outs)
    net = _load_circuit(circuit, outs)
    check_wiring(ins, outs, net, f.tm, wiring)
    nums = their_numbers(f)
    lay, sched = _our_layout(net, f, nums, len(outs))
    offset = 1000 * (nums["script"] // 1000 + 1)
    for k, w in enumerate(outs):
        w.tag = lay.conveyor_tag + 1 + k   # a fresh tag the driven sectors also carry
    source, info = _our_acs(lay, sched, title or net.name, offset, ins, outs, net)
    check_room(f, "script", offset,
               max(int(n) for n in re.findall(r"^script (\d+)", source, re.M)), 1000)
    from mapgen.compile import compile_acs

    library = compile_acs(source, f"{net.name}-embed.acs")
    tm, spots = _merge(f.tm, lay, ins, outs, net, info)
    info["embed"].update(spots=spots, map=map_name)
    _write(f, tm.text(), library, info, net, out)
    return Embedded(out, info, net, (lay.lanes[0].x0, lay.lanes[0].y0) if lay.lanes else (0, 0),
                    lay.model.extent(), f.tm.extent(), tm.text(), library)


def _load_circuit(path: str, outs):
    from dsl import load
    from dsl.parser import parse

    if not any(w.kind == "door" for w in outs):
        return load(path)
    if not path.endswith(".dnet"):
        raise EmbedError(f"{path}: door outputs add nodes to the circuit: give it as .dnet")
    return parse(augmented_source(path, outs), path)


def _our_layout(net, f: Foreign, nums, n_outs: int):
    from mapgen.checks import run_all
    from mapgen.circuit import lower
    from mapgen.layout import build_layout, conveyor_tag_for
    from mapgen.program import plan

    tm = f.tm
    first = (nums["tag"] // 100 + 1) * 100
    circuit = lower(net, first_tag=first)
    tid0 = max(1000, nums["tid"] + 1)
    # The conveyor's tag follows the circuit's; one fresh tag per output after it.
    check_room(f, "tag", first, conveyor_tag_for(circuit) + n_outs, 100)
    check_room(f, "tid", tid0, tid0 + len(circuit.lanes) - 1, 1)
    for k, lane in enumerate(circuit.lanes):
        lane.tid = tid0 + k
    dx, dy = place(tm, build_layout(circuit).model.extent())
    lay = build_layout(circuit, origin=(dx, dy))
    lay.model.things.pop()  # our player start: their last player-1 start is the player
    box = lay.model.extent()
    x0, y0, x1, y1 = tm.extent()
    if _overlap(box, (x0, y0, x1, y1)) or min(box) < P.COORD_MIN or max(box) > P.COORD_MAX:
        raise EmbedError(f"the circuit's hall ({box}) would overlap the map or leave the "
                         "engine's coordinates")
    sched = plan(lay)
    run_all(lay, sched)
    return lay, sched


def _our_acs(lay, sched, title, offset, ins, outs, net) -> tuple[str, dict]:
    from mapgen.program import acs_source, bus_violations, manifest

    source = acs_source(lay, sched, title)
    bad = bus_violations(source)
    if bad:
        raise AssertionError(f"generated ACS line {bad[0][0]} is not a bus operation")
    source = re.sub(r"^script (\d+)", lambda m: f"script {int(m.group(1)) + offset}", source,
                    flags=re.M)
    info = manifest(lay, sched, title)
    info["infer_script"] += offset
    info["input_scripts"] = [s + offset for s in info["input_scripts"]]
    if info["begin_script"]:
        info["begin_script"] += offset
    for b in info["read_batches"]:
        b["script"] += offset
    c = lay.circuit
    index = {net.nodes[i].name: k for k, i in enumerate(net.inputs)}
    panel = offset + PANEL
    info["embed"] = {"panel_script": panel, "toggle_script": panel + 1, "set_script": panel + 2,
                     "status_script": panel + 3, "library": LIBRARY,
                     "inputs": [[w.name, index[w.name], w.value] for w in ins],
                     "outputs": [[w.name, w.kind, w.sectors] for w in outs]}
    return source + "\n" + panel_source(c, net, info, outs, offset), info


def _output_light(c, net, name: str) -> int:
    node = net.by_name(name)
    return c.value_light[node.id] if node.id in c.value_light else c.acc_light[node.id]


def panel_source(c, net, info, outs, offset) -> str:
    """The panel: inputs flipped or set by their map, an inference whenever one changed,
    outputs copied to the floors and doors they drive. It moves values and never computes
    on a neuron's value (a copy is a bus operation)."""
    panel = offset + PANEL
    ranges = net.input_ranges()
    n = len(ranges)
    lines = ["// ---------------------------------------------------------------------------",
             "// The panel (build.py embed): the map's wired lines and sectors flip or set an",
             "// input; whenever one changed, run the machine, then copy outputs to the floors",
             "// and doors they drive. Light outputs need nothing: those sectors carry the",
             "// output light's tags, so the machine lights them itself.",
             f"int lo[{n}] = {{{', '.join(str(a) for a, _ in ranges)}}};",
             f"int hi[{n}] = {{{', '.join(str(b) for _, b in ranges)}}};",
             "int dirty = 1;  // run once at the start: the outputs of the initial inputs",
             "int seq;", "",
             f"script {panel} OPEN", "{"]
    lines += [f"    inputs[{k}] = lo[{k}];" for k in range(n)]
    lines += [f"    Delay({info['init_tics'] + 1});  // the dolls are on their pads",
              "    while (TRUE)", "    {", "        if (dirty)", "        {",
              "            dirty = 0;", "            seq = seq + 1;",
              f"            ACS_Execute({info['infer_script']}, 0, seq);",
              f"            Delay({info['inference_tics'] + 1});"]
    for w in outs:
        if w.kind == "light":
            continue
        light = _output_light(c, net, w.name if w.kind == "floor" else
                              re.sub(r"[^A-Za-z0-9_]", "_", w.name) + "__door")
        mover = "Floor_MoveToValue" if w.kind == "floor" else "Ceiling_MoveToValue"
        lines.append(f"            {mover}({w.tag}, {OUTPUT_SPEED}, "
                     f"GetSectorLightLevel({light}), 0);  // {w.kind} output {w.name}")
    lines += ["        }", "        else", "            Delay(1);", "    }", "}", "",
              f"script {panel + 1} (int k)  // toggle input k between lo and hi", "{",
              "    if (inputs[k] == lo[k])", "        inputs[k] = hi[k];", "    else",
              "        inputs[k] = lo[k];", "    dirty = 1;", "}", "",
              f"script {panel + 2} (int k, int v)  // set input k to v", "{",
              "    inputs[k] = v;", "    dirty = 1;", "}", "",
              f"script {panel + 3} (int token)  // for tests: inputs, the driven sectors' lights, "
              "inferences run, busy",
              "{"]
    lines += [f"    user{k + 1} = inputs[{k}];" for k in range(min(n, 28))]
    lines += [f"    user{29 + j} = GetSectorLightLevel({w.tag});  // {w.kind} output {w.name}"
              for j, w in enumerate(outs[:28])]
    lines += ["    user57 = seq;", "    user58 = dirty;", "    read_ack = token;", "}", ""]
    return "\n".join(lines)


def _inside(tm: TextMap, s: int, p) -> bool:
    n = 0
    for i in range(len(tm.linedefs)):
        f, b = tm.side_sector(i, "front"), tm.side_sector(i, "back")
        if f == b or s not in (f, b):
            continue
        (x1, y1), (x2, y2) = tm.line_ends(i)
        if (y1 > p[1]) != (y2 > p[1]) and x1 + (p[1] - y1) * (x2 - x1) / (y2 - y1) > p[0]:
            n += 1
    return n % 2 == 1


def _spot(tm: TextMap, s: int) -> tuple[float, float]:
    """A point inside sector s (its box centre if inside, else the first grid point that
    is), for a sector-action thing."""
    box = tm.sector_boxes()[s]
    if box is None:
        raise EmbedError(f"sector {s} has no lines: nothing to step on")
    for k in range(1, 9):
        for i in range(1, 2 ** k, 2):
            for j in range(1, 2 ** k, 2):
                p = (box[0] + (box[2] - box[0]) * i / 2 ** k,
                     box[1] + (box[3] - box[1]) * j / 2 ** k)
                if _inside(tm, s, p):
                    return round(p[0]), round(p[1])
    raise EmbedError(f"sector {s}: no point found inside it")


_THING_FLAGS = {f"skill{k}": True for k in range(1, 9)} | {"single": True, "coop": True,
                                                           "dm": True}


def _merge(theirs: TextMap, lay, ins, outs, net, info) -> tuple[TextMap, dict]:
    ours = parse_textmap(lay.model.textmap(), "our hall")
    tm = TextMap(theirs.namespace, [dict(t) for t in theirs.things],
                 [dict(v) for v in theirs.vertices], [dict(l) for l in theirs.linedefs],
                 [dict(s) for s in theirs.sidedefs], [dict(s) for s in theirs.sectors],
                 list(theirs.others), dict(theirs.globals))
    nv, ns, nsec = len(tm.vertices), len(tm.sidedefs), len(tm.sectors)
    tm.vertices += ours.vertices
    for ln in ours.linedefs:
        ln["v1"] += nv
        ln["v2"] += nv
        ln["sidefront"] += ns
        if "sideback" in ln:
            ln["sideback"] += ns
    tm.linedefs += ours.linedefs
    for sd in ours.sidedefs:
        sd["sector"] += nsec
    tm.sidedefs += ours.sidedefs
    tm.sectors += ours.sectors
    tm.things = ours.things + tm.things   # our dolls first: their player stays the player
    spots = _wire_inputs(tm, theirs, ins, net, info["embed"])
    _wire_outputs(tm, lay.circuit, outs, net)
    return tm, spots


def _wire_inputs(tm: TextMap, theirs: TextMap, ins, net, e: dict) -> dict:
    """Their wired lines get our toggle/set special; their pads a sector-action thing."""
    index = {net.nodes[i].name: k for k, i in enumerate(net.inputs)}
    spots = {}
    for w in ins:
        script = e["toggle_script"] if w.value is None else e["set_script"]
        args = {"arg0": script, "arg2": index[w.name]}
        if w.value is not None:
            args["arg3"] = w.value
        if w.line is not None:
            ln = tm.linedefs[w.line]
            ln.update(special=ACS_EXECUTE_ALWAYS, repeatspecial=True,
                      **{"playeruse" if w.how == "use" else "playercross": True}, **args)
            ln["comment"] = f"VoodooNet: {'toggles' if w.value is None else 'sets'} {w.name}"
        else:
            x, y = _spot(theirs, w.sector)
            tm.things.append({"x": float(x), "y": float(y), "type": SEC_ACT_ENTER,
                              "special": ACS_EXECUTE_ALWAYS, **args, **_THING_FLAGS,
                              "comment": f"VoodooNet: entering toggles {w.name}"})
            spots[w.name] = [x, y]
    return spots


def _wire_outputs(tm: TextMap, c, outs, net) -> None:
    """Driven sectors carry the output light's tags (light) or the output's fresh tag."""
    for w in outs:
        if w.kind == "light":
            light = c.light(_output_light(c, net, w.name))
            tags = [light.tag, *light.groups, w.tag]
        else:
            tags = [w.tag]
        for s in w.sectors:
            sec = tm.sectors[s]
            more = str(sec.get("moreids", "")).split()
            sec["moreids"] = " ".join(more + [str(t) for t in tags])


def _write(f: Foreign, textmap: str, library: bytes, info: dict, net, out: str) -> None:
    from dsl.jsonio import dumps
    from mapgen.compile import MANIFEST_LUMP, NETLIST_LUMP

    from .wadio import map_span, write_lumps

    lumps = list(f.lumps)
    i, j = map_span(lumps, f.map_name)
    if f.fmt == "udmf":
        group = [(n, textmap.encode() if n == "TEXTMAP" else b) for n, b in lumps[i:j]
                 if n != "ZNODES"]
    else:
        group = [(f.map_name, b""), ("TEXTMAP", textmap.encode())] + [
            (n, b) for n, b in lumps[i + 1:j] if n in ("BEHAVIOR", "SCRIPTS")] + [("ENDMAP", b"")]
    lumps = lumps[:i] + group + lumps[j:]
    loadacs = [k for k, (n, _) in enumerate(lumps) if n == "LOADACS"]
    if loadacs:
        k = loadacs[0]
        lumps[k] = ("LOADACS", lumps[k][1].rstrip() + f"\n{LIBRARY}\n".encode())
    else:
        lumps.append(("LOADACS", f"{LIBRARY}\n".encode()))
    lumps += [("A_START", b""), (LIBRARY, library), ("A_END", b""),
              (MANIFEST_LUMP, json.dumps({f.map_name: info}, sort_keys=True).encode()),
              (NETLIST_LUMP, dumps(net).encode())]
    write_lumps(out, lumps)
