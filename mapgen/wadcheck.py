"""Checks on a WAD read back for `build.py run x.wad`, before the engine sees it.

A WAD is user input: it may be damaged, hand-edited, or carry the manifest of another
netlist. Everything the runner, `extract`, `verify` and the embed play-test rely on is
checked here with a message naming the WAD and the lump: the manifest lump (`read_manifest`,
the one reader of it: a map name -> an object with the keys, types and values any of them
reads, agreeing with the embedded netlist; a tiled WAD's maps' manifests checked whole,
`check_tiled`: the wiring between them, sane timings, each map's inputs and outputs as its
own ACS source names them), the embedded netlist (`read_netlist`) and each
map's TEXTMAP (UDMF syntax, namespace first) and BEHAVIOR (an ACS header whose directory
lies inside the lump). What cannot be seen statically (a map that does not answer, an
engine crash) is caught by the engine runner as an EngineError.
"""
from __future__ import annotations

import json
import os
import re
import struct

from acs.wad import WadContents, WadError
from dsl.ir import MAX_STEPS, Netlist

MANIFEST_LUMP = "VNETINFO"
NETLIST_LUMP = "VNETLIST"
REBUILD = "rebuild the WAD with `python build.py compile NETLIST -o WAD`"
_INT_KEYS = ("inference_tics", "init_tics", "ack_var", "read_ack_var", "infer_script")
_PIPE_KEYS = ("script", "beat_tics", "ii", "batch", "batch_script", "batch_period",
              "queue_base")
_EMBED_KEYS = ("panel_script", "toggle_script", "set_script", "status_script")
_USER_VARS = range(1, 61)
# Timings the runner waits out (engine/runner.py): a map is ready after INIT_TICS (24)
# tics, and the slowest single map measured takes about 1,400 tics a step (the chat map;
# docs/chat.md). Half an hour of game time is far beyond any map, and what a tampered
# manifest could make a run wait is bounded by it.
MAX_INIT_TICS = 35 * 60
MAX_STEP_TICS = 35 * 60 * 30


def read_manifest(path: str, contents: WadContents, net: Netlist | None = None,
                  numbered: bool = False) -> dict[str, dict]:
    """The WAD's manifest: {map name: info}, checked (check_manifest); {} when the WAD has
    no manifest lump. `numbered`: the maps must be MAP01, MAP02, ... (a compiled WAD; an
    embedded circuit keeps its host map's name)."""
    lumps = dict(contents.lumps)
    if MANIFEST_LUMP not in lumps:
        return {}
    try:
        infos = json.loads(lumps[MANIFEST_LUMP].decode())
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise WadError(f"{path}: the {MANIFEST_LUMP} lump is damaged: not JSON\n    hint: "
                       f"{REBUILD}") from None
    names = check_manifest(path, MANIFEST_LUMP, infos, net,
                           maps=None if numbered else [m.name for m in contents.maps])
    if net is not None and len(names) > 1:
        check_tiled(path, contents, net, [infos[n] for n in names])
    return {n: infos[n] for n in names}


def check_tiled(path: str, contents: WadContents, net: Netlist, infos: list[dict]) -> None:
    """A manifest of several maps, whole: the wiring between them (mapgen.tiles.
    check_wiring), and each map's inputs and outputs against the ones its own ACS source
    names (a manifest moved to another map of the same shape is refused, not run)."""
    from .handoff import check_wiring

    problem = check_wiring(net, infos)
    scripts = {m.name: m.scripts for m in contents.maps}
    for k, info in enumerate(infos):
        if problem:
            break
        problem = _scripts_problem(f"MAP{k + 1:02d}", info, scripts.get(f"MAP{k + 1:02d}"))
    if problem:
        raise WadError(f"{path}: the {MANIFEST_LUMP} lump is damaged: {problem}\n    hint: "
                       f"{REBUILD}")


# The generated ACS (mapgen/program.py) names what each statement moves in a comment: the
# input scripts store `inputs[i] = a;  // input NAME`, the reads `userN = ...;  // output NAME`.
_SCRIPT_INPUT = re.compile(r"^\s*inputs\[(\d+)\] = \w+;\s*// input (\S+)\s*$", re.M)
_SCRIPT_OUTPUT = re.compile(r"^\s*user\d+ = GetSectorLightLevel\(\d+\);\s*// output (\S+)\s*$",
                            re.M)


def _scripts_problem(name: str, info: dict, source: str | None) -> str | None:
    """The manifest's inputs and outputs against the names the map's ACS source (its
    SCRIPTS lump) gives them, where it has one that names them."""
    if not source:
        return None   # a map in a part file, or a WAD without sources: the wiring only
    # An input no lane of the map reads is not stored: compare the ones the source names.
    ins = sorted((int(i), n) for i, n in _SCRIPT_INPUT.findall(source))
    outs = set(_SCRIPT_OUTPUT.findall(source))
    mine = info["inputs"]
    if any(i >= len(mine) or mine[i] != n for i, n in ins):
        return (f"{name} takes {', '.join(mine[:4])} by its manifest, but its scripts take "
                f"{', '.join(n for _, n in ins[:4])}: the manifest is another map's")
    if not outs <= set(info["outputs"]):
        return (f"{name} hands on {', '.join(info['outputs'][:4])} by its manifest, but its "
                f"scripts read {', '.join(sorted(outs)[:4])}: the manifest is another map's")
    return None


def read_netlist(path: str, contents: WadContents) -> Netlist | None:
    """The netlist embedded in the WAD, or None when it has none; a damaged one is a
    CompileError whose positions name the lump (`x.wad:VNETLIST:...`)."""
    from dsl.jsonio import loads

    lumps = dict(contents.lumps)
    if NETLIST_LUMP not in lumps:
        return None
    return loads(lumps[NETLIST_LUMP].decode("utf-8", errors="replace"),
                 f"{path}:{NETLIST_LUMP}")


def check_manifest(path: str, lump: str, infos, net: Netlist | None = None,
                   maps: list[str] | None = None) -> list[str]:
    """The map names, in order, after checking the manifest lump `infos` (parsed JSON).
    With `maps` (the WAD's map names) every name must be one of them; without, the maps
    are MAP01, MAP02, ... With `net`, a one-map manifest must agree with it."""
    def bad(what: str) -> WadError:
        return WadError(f"{path}: the {lump} lump is damaged: {what}\n    hint: {REBUILD}")

    if not isinstance(infos, dict) or not infos:
        raise bad("expected an object of maps (MAP01: {...})")
    names = sorted(infos)
    def elsewhere(n) -> bool:   # a map of a WAD too big for one file: in its part file
        return isinstance(infos[n], dict) and isinstance(infos[n].get("wad_part"), str)

    if maps is not None and any(n not in maps and not elsewhere(n) for n in names):
        missing = next(n for n in names if n not in maps and not elsewhere(n))
        raise bad(f"it describes map {str(missing)[:40]!r}, which the WAD does not have "
                  f"(it has {', '.join(maps) or 'no map'})")
    if maps is None and names != [f"MAP{k + 1:02d}" for k in range(len(names))]:
        raise bad(f"map names {', '.join(map(str, names[:4]))} are not MAP01, MAP02, ...")
    for name in names:
        info = infos[name]
        if not isinstance(info, dict):
            raise bad(f"{name} is not an object")
        _check_ints(info, name, bad)
        _check_lists(info, name, bad)
        _check_parts(info, name, bad)
        _check_recurrence(info, name, bad)
        part = info.get("wad_part")
        if part is not None and not (isinstance(part, str) and part.endswith(".wad")
                                     and part == os.path.basename(part)):
            raise bad(f"{name}.wad_part must name a .wad file beside the WAD")
        if part is not None and not isinstance(info.get("wad_part_sha256"), str):
            raise bad(f"{name}.wad_part_sha256 must be the part's SHA-256")
        if net is not None and len(names) == 1 and (
                info["inputs"] != [net.nodes[i].name for i in net.inputs]
                or info["all_outputs"] != [net.nodes[o].name for o in net.outputs]
                or info["input_ranges"] != [list(r) for r in net.input_ranges()]
                or info["steps"] != net.steps):
            raise bad(f"{name} was built for other inputs or outputs than the WAD's netlist "
                      f"(inputs {', '.join(map(str, info['inputs'][:4]))}...)")
    return names


def _small(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= 10**7


def _check_ints(info: dict, name: str, bad) -> None:
    for key in _INT_KEYS:
        if not _small(info.get(key)):
            raise bad(f"{name}.{key} is missing or not a small integer")
    for key, most in (("init_tics", MAX_INIT_TICS), ("inference_tics", MAX_STEP_TICS)):
        if info[key] > most:
            raise bad(f"{name}.{key} = {info[key]:,} tics: no map VoodooNet builds takes "
                      f"more than {most:,}")
    for key in ("ack_var", "read_ack_var"):
        if info[key] not in _USER_VARS:
            raise bad(f"{name}.{key} = {info[key]} is not a USER variable (1..60)")
    steps = info.get("steps", 1)
    if not (_small(steps) and 1 <= steps <= MAX_STEPS):
        raise bad(f"{name}.steps is not a number of time steps (1..{MAX_STEPS})")
    info.setdefault("steps", 1)  # WADs built before multi-step netlists


def _check_recurrence(info: dict, name: str, bad) -> None:
    """State across steps (a recurrent netlist): open-ended runs, fed-back inputs, the done
    output; absent in WADs built before them."""
    if not isinstance(info.get("open", False), bool):
        raise bad(f"{name}.open must be true or false")
    fb = info.get("feedback") or []
    if not (isinstance(fb, list) and all(isinstance(x, str) and x in info["inputs"]
                                         for x in fb)):
        raise bad(f"{name}.feedback must list inputs of the map")
    if fb and not _small(info.get("fed_script")):
        raise bad(f"{name}.fed_script must be the script of a fed step")
    done = info.get("done")
    if done is not None and not (_small(done) and done < len(info["all_outputs"])):
        raise bad(f"{name}.done must be null or the index of an output")


def _check_parts(info: dict, name: str, bad) -> None:
    """The pipelined beat and an embedded circuit's panel, when the map has them."""
    pipe = info.get("pipeline")
    if pipe is not None:
        if not (isinstance(pipe, dict) and all(_small(pipe.get(k, 1)) for k in _PIPE_KEYS)
                and all(_small(pipe.get(k)) for k in ("script", "beat_tics", "ii"))
                and all(pipe.get(k, 1) <= MAX_STEP_TICS for k in ("beat_tics", "batch_period",
                                                                 "batch"))
                and isinstance(pipe.get("lags"), list) and all(map(_small, pipe["lags"]))
                and len(pipe["lags"]) == len(info["outputs"])):
            raise bad(f"{name}.pipeline must be null or the beat's scripts, tics and one lag "
                      "per output")
    e = info.get("embed")
    if e is not None:
        if not (isinstance(e, dict) and isinstance(e.get("library"), str)
                and all(_small(e.get(k)) for k in _EMBED_KEYS)
                and all(isinstance(e.get(k, []), (list, dict)) for k in
                        ("inputs", "outputs", "spots"))):
            raise bad(f"{name}.embed must name the circuit's library lump and panel scripts")


def _check_lists(info: dict, name: str, bad) -> None:
    def ints(v) -> bool:
        return isinstance(v, int) and not isinstance(v, bool)

    def strs(v) -> bool:
        return isinstance(v, list) and all(isinstance(x, str) for x in v)

    if not strs(info.get("inputs")) or not strs(info.get("all_outputs")) \
            or not strs(info.get("outputs")):
        raise bad(f"{name}: inputs, outputs and all_outputs must be lists of names")
    if len(info["outputs"]) > len(_USER_VARS):
        raise bad(f"{name}: more outputs than USER variables")
    ranges = info.get("input_ranges")
    if not (isinstance(ranges, list) and len(ranges) == len(info["inputs"]) and all(
            isinstance(r, list) and len(r) == 2 and all(map(ints, r)) for r in ranges)):
        raise bad(f"{name}: input_ranges must hold one [lo, hi] per input")
    scripts = info.get("input_scripts")
    if not (isinstance(scripts, list) and all(map(ints, scripts))
            and 4 * len(scripts) >= len(info["inputs"])):
        raise bad(f"{name}: input_scripts must name a script per 4 inputs")
    _check_late_inputs(info, name, bad)
    if info.get("begin_script") is not None and not ints(info["begin_script"]):
        raise bad(f"{name}: begin_script must be a script number or null")
    batches = info.get("read_batches")
    if not (isinstance(batches, list) and all(
            isinstance(b, dict) and ints(b.get("script")) and strs(b.get("labels"))
            for b in batches)):
        raise bad(f"{name}: read_batches must be a list of {{script, labels}}")
    for key in ("tile_inputs", "tile_outputs"):
        if key in info and not strs(info[key]):
            raise bad(f"{name}: {key} must be a list of names")
    hand = info.get("hand_on", [])
    if not (isinstance(hand, list) and len(hand) <= len(batches) and all(
            ints(t) and 0 <= t <= info["inference_tics"] + 1 for t in hand)):
        raise bad(f"{name}.hand_on must list, for each of the first read batches, a tic "
                  f"of the step (0..inference_tics + 1)")


def _check_late_inputs(info: dict, name: str, bad) -> None:
    """A map whose inputs ride late: input_slots give each input script's inputs (every
    input once) and input_need the tic of the step each may start in."""
    if "input_slots" not in info and "input_need" not in info:
        return
    slots, need, n = info.get("input_slots"), info.get("input_need"), len(info["inputs"])
    if not (isinstance(slots, list) and len(slots) == len(info["input_scripts"]) and all(
            isinstance(s, list) and 0 < len(s) <= 4 and all(type(i) is int for i in s)
            for s in slots) and sorted(i for s in slots for i in s) == list(range(n))):
        raise bad(f"{name}.input_slots must give each input script up to 4 of the inputs, "
                  f"every input once")
    if not (isinstance(need, list) and len(need) == len(slots) and all(
            type(t) is int and 0 <= t <= info["inference_tics"] for t in need)):
        raise bad(f"{name}.input_need must give each input script a tic of the step "
                  f"(0..inference_tics)")


# A UDMF text map is a list of `key = value;` assignments and `block { assignments }`.
_UDMF_TOKEN = re.compile(r"""\s*(?:(//[^\n]*|/\*.*?\*/)|([A-Za-z_][A-Za-z0-9_]*)|("(?:[^"\\]|\\.)*")
                             |([+-]?(?:0[xX][0-9A-Fa-f]+|[0-9]+\.?[0-9]*(?:[eE][+-]?[0-9]+)?
                                  |\.[0-9]+(?:[eE][+-]?[0-9]+)?))|([={};]))""",
                         re.S | re.X)


# Possessive repeats (*+): items and blanks never give back what they matched, so the
# engine keeps no backtracking state per item (with plain * a 164 MB chat TEXTMAP took 14 GB
# and a minute to check; now a few seconds and no memory).
_WS = r"(?:\s|//[^\n]*|/\*.*?\*/)*+"
_VALUE = (r'(?:"(?:[^"\\]|\\.)*"|[+-]?(?:0[xX][0-9A-Fa-f]+|[0-9]+\.?[0-9]*(?:[eE][+-]?[0-9]+)?'
          r'|\.[0-9]+(?:[eE][+-]?[0-9]+)?)|[A-Za-z_][A-Za-z0-9_]*)')
_ASSIGN = rf"[A-Za-z_][A-Za-z0-9_]*{_WS}={_WS}{_VALUE}{_WS};"
_UDMF = re.compile(rf"{_WS}namespace{_WS}={_WS}{_VALUE}{_WS};{_WS}(?:(?:{_ASSIGN}|"
                   rf"[A-Za-z_][A-Za-z0-9_]*{_WS}\{{{_WS}(?:{_ASSIGN}{_WS})*+\}}){_WS})*+",
                   re.S | re.I)


def check_textmap(text: str) -> str | None:
    """None if `text` is a UDMF text map with `namespace` first, else what is wrong (one
    regular expression for the whole map; the token walk only to say where it fails)."""
    if _UDMF.fullmatch(text):
        return None
    return _textmap_problem(text) or "not a UDMF text map"


def _textmap_problem(text: str) -> str | None:
    pos, n = 0, len(text)
    state, depth, first = "key", 0, None   # key -> '=' -> value -> ';'   or key -> '{'
    while pos < n:
        m = _UDMF_TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            if text[pos:].strip() == "":
                break
            return f"unexpected text at offset {pos}"
        pos = m.end()
        comment, ident, string, number, punct = m.groups()
        if comment is not None:
            continue
        if state == "key":
            if ident is not None:
                first = first or ident.lower()
                state = "after_key"
            elif punct == "}" and depth == 1:
                depth = 0
            else:
                return f"expected a key at offset {m.start()}"
        elif state == "after_key":
            if punct == "=":
                state = "value"
            elif punct == "{" and depth == 0:
                depth, state = 1, "key"
            else:
                return f"expected '=' or '{{' at offset {m.start()}"
        elif state == "value":
            if ident is None and string is None and number is None:
                return f"expected a value at offset {m.start()}"
            state = "semi"
        elif punct == ";":
            state = "key"
        else:
            return f"expected ';' at offset {m.start()}"
    if state != "key" or depth:
        return "the text map ends inside a statement or block"
    if first != "namespace":
        return "the text map does not start with its namespace"
    return None


def check_behavior(data: bytes) -> str | None:
    """None if `data` starts like a compiled ACS lump whose directory is inside it."""
    if len(data) < 8 or data[:3] != b"ACS" or data[3:4] not in (b"\0", b"E", b"e"):
        return "not a compiled ACS lump (no ACS header)"
    (ofs,) = struct.unpack_from("<i", data, 4)
    if not 8 <= ofs <= len(data) - 4:
        return f"its directory offset {ofs} lies outside the {len(data)}-byte lump"
    return None


def check_maps(path: str, contents: WadContents, names: list[str]) -> None:
    maps = {m.name: m for m in contents.maps}
    for name in names:
        m = maps.get(name)
        if m is None:
            raise WadError(f"{path}: the manifest names {name} but the WAD has no such map")
        problem = check_textmap(m.textmap)
        if problem is None and m.behavior is None:
            problem = "BEHAVIOR: missing"
        elif problem is None:
            problem = check_behavior(m.behavior)
            problem = problem and f"BEHAVIOR: {problem}"
        else:
            problem = f"TEXTMAP: {problem}"
        if problem:
            raise WadError(f"{path}: map {name} is damaged: {problem}\n    hint: rebuild the "
                           "WAD with `python build.py compile NETLIST -o WAD`")
