"""Checks on a WAD read back for `build.py run x.wad`, before the engine sees it.

A WAD is user input: it may be damaged, hand-edited, or carry the manifest of another
netlist. Everything the runner will rely on is checked here with a message naming the WAD
and the lump: the manifest lump's shape (a map name -> an object with the keys, types and
values the runner reads, agreeing with the embedded netlist) and each map's TEXTMAP
(UDMF syntax, namespace first) and BEHAVIOR (an ACS header whose directory lies inside the
lump). What cannot be seen statically (a map that does not answer, an engine crash) is
caught by the engine runner as an EngineError.
"""
from __future__ import annotations

import re
import struct

from acs.wad import WadContents, WadError
from dsl.ir import Netlist

_INT_KEYS = ("inference_tics", "init_tics", "ack_var", "read_ack_var", "infer_script")
_USER_VARS = range(1, 61)


def check_manifest(path: str, lump: str, infos, net: Netlist) -> list[str]:
    """The map names, in order, after checking the manifest lump `infos` (parsed JSON)."""
    def bad(what: str) -> WadError:
        return WadError(f"{path}: the {lump} lump is damaged: {what}\n    hint: rebuild the "
                        "WAD with `python build.py compile NETLIST -o WAD`")

    if not isinstance(infos, dict) or not infos:
        raise bad("expected an object of maps (MAP01: {...})")
    names = sorted(infos)
    if names != [f"MAP{k + 1:02d}" for k in range(len(names))]:
        raise bad(f"map names {', '.join(map(str, names[:4]))} are not MAP01, MAP02, ...")
    ins = [net.nodes[i].name for i in net.inputs]
    outs = [net.nodes[o].name for o in net.outputs]
    for name in names:
        info = infos[name]
        if not isinstance(info, dict):
            raise bad(f"{name} is not an object")
        for key in _INT_KEYS:
            v = info.get(key)
            if not isinstance(v, int) or isinstance(v, bool) or not 0 <= v <= 10**7:
                raise bad(f"{name}.{key} is missing or not a small integer")
        for key in ("ack_var", "read_ack_var"):
            if info[key] not in _USER_VARS:
                raise bad(f"{name}.{key} = {info[key]} is not a USER variable (1..60)")
        _check_lists(info, name, bad)
        if len(names) == 1 and (info["inputs"] != ins or info["all_outputs"] != outs
                                or info["input_ranges"] != [list(r) for r in
                                                            net.input_ranges()]):
            raise bad(f"{name} was built for other inputs or outputs than the WAD's netlist "
                      f"(inputs {', '.join(map(str, info['inputs'][:4]))}...)")
    return names


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


# A UDMF text map is a list of `key = value;` assignments and `block { assignments }`.
_UDMF_TOKEN = re.compile(r"""\s*(?:(//[^\n]*|/\*.*?\*/)|([A-Za-z_][A-Za-z0-9_]*)|("(?:[^"\\]|\\.)*")
                             |([+-]?(?:0[xX][0-9A-Fa-f]+|[0-9]+\.?[0-9]*(?:[eE][+-]?[0-9]+)?
                                  |\.[0-9]+(?:[eE][+-]?[0-9]+)?))|([={};]))""",
                         re.S | re.X)


_WS = r"(?:\s|//[^\n]*|/\*.*?\*/)*"
_VALUE = (r'(?:"(?:[^"\\]|\\.)*"|[+-]?(?:0[xX][0-9A-Fa-f]+|[0-9]+\.?[0-9]*(?:[eE][+-]?[0-9]+)?'
          r'|\.[0-9]+(?:[eE][+-]?[0-9]+)?)|[A-Za-z_][A-Za-z0-9_]*)')
_ASSIGN = rf"[A-Za-z_][A-Za-z0-9_]*{_WS}={_WS}{_VALUE}{_WS};"
_UDMF = re.compile(rf"{_WS}namespace{_WS}={_WS}{_VALUE}{_WS};{_WS}(?:(?:{_ASSIGN}|"
                   rf"[A-Za-z_][A-Za-z0-9_]*{_WS}\{{{_WS}(?:{_ASSIGN}{_WS})*\}}){_WS})*",
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
