"""Playing a hub WAD (mapgen/hub.py) as a visitor, and checking what it shows.

Owns the scripted visits of a hub and the probe that watches them:

- **the hub probe**: an ACS library loaded with `-file` into every map (LOADACS, as
  engine/gzdoom.py's probe). Whenever the map's ack or `hub_map` changes it logs the map's
  number, both, every slot of the hub array and, on the last map, the light of every
  display segment. Nothing is aligned by tics: the records say which map and which run;
- `visit_gzdoom`: GZDoom headless, one console line as a visitor plays: it warps onto a
  preset pedal of MAP01, waits for the dolls, warps onto the EXIT pad (which leaves the map
  only once it has handed its values on), and so on, map after map; the last map's
  displays, read from the log, are the result. The values cross maps in the engine's own
  ACS globals, as for a player;
- `visit_vizdoom`: the same visit in ViZDoom, in one engine. ViZDoom ends its episode at
  an intermission (and `change_map` starts a new game, clearing the ACS globals), but a
  hub's maps skip the intermission (MAPINFO), so the EXIT takes ViZDoom to the next map
  with the globals kept, as GZDoom. Python only waits (on the ack) and warps.

`check_visit` compares a visit with the integer reference: every slot each map handed on
and every display of the last map, with `==`.
"""
from __future__ import annotations

import os
import re
import shutil
import tempfile
from dataclasses import dataclass, field

from engine.doom import EngineError

PROBE_SCRIPT = 32001
MARK = "VNH"
CHUNK = 12
# Console tics a map is given beyond its predicted tics: the console runs ahead of the
# map's tics, and more so under load (engine/gzdoom.py, TAIL).
MARGIN = 70


@dataclass
class Record:
    """One probe record: map number (1-based), ack, hub_map, the hub's slots, and the
    display lights of the last map (empty elsewhere)."""
    level: int
    ack: int
    hub_map: int
    slots: list[int] = field(default_factory=list)
    lights: list[int] = field(default_factory=list)


def _log_calls(kind: str, exprs: list[str]) -> list[str]:
    marker = ", ".join(f"c:'{ch}'" for ch in MARK)
    out = []
    for k in range(0, len(exprs), CHUNK):
        items = "".join(f", c:' ', d:{e}" for e in exprs[k:k + CHUNK])
        out.append(f"Log({marker}, c:' ', d:lv, c:' ', d:n, c:' ', c:'{kind}', c:' ', "
                   f"d:{k}{items});")
    return out


def probe_source(infos: list[dict]) -> str:
    """The hub probe's ACS (module docstring): `infos` are the WAD's manifests."""
    hub = infos[0]["hub"]
    n_slots, last = hub["slots"], len(infos)
    tags = list(infos[-1]["hub"]["lights"].values())
    body = _log_calls("M", ["lv", "ack", "hub_map"])
    body += _log_calls("H", [f"hub[{s}]" for s in range(n_slots)])
    L = ['#library "vnhub"', '#include "zcommon.acs"', "",
         "// VoodooNet's hub probe (engine/hubplay.py): logs a record at every change.",
         "global int 60:ack;", f"global int {hub['hub_var']}:hub[];",
         f"global int {hub['hub_map_var']}:hub_map;", "",
         f"script {PROBE_SCRIPT} OPEN", "{", "    int n;", "    int lv;",
         "    int a = -3;", "    int h = -3;",
         "    lv = GetLevelInfo(LEVELINFO_LEVELNUM);", "    while (TRUE)", "    {",
         "        if (ack != a || hub_map != h)", "        {",
         "            a = ack;", "            h = hub_map;", "            n = n + 1;"]
    L += [f"            {c}" for c in body]
    L += [f"            if (lv == {last})", "            {"]
    L += [f"                {c}" for c in _log_calls("D", [f"GetSectorLightLevel({t})"
                                                           for t in tags])]
    L += ["            }", "        }", "        Delay(1);", "    }", "}", ""]
    return "\n".join(L)


def write_library(path: str, source: str, lump: str) -> None:
    """A PWAD with the compiled library and the LOADACS lump that loads it."""
    import omg.wadio

    from mapgen.compile import compile_acs

    behavior = compile_acs(source, lump.lower() + ".acs")
    tmp = path + ".tmp"
    w = omg.wadio.WadIO(tmp)
    for name, data in (("LOADACS", f"{lump}\n".encode()), ("A_START", b""), (lump, behavior),
                       ("A_END", b"")):
        w.insert(name, data)
    w.save()
    os.replace(tmp, path)


_LINE = re.compile(rf"^{MARK} (-?\d+) (\d+) ([MHD]) (\d+)((?: -?\d+)*)\s*$")


def parse_log(text: str, infos: list[dict]) -> list[Record]:
    """The probe's records, in order; a record cut short by the quit is dropped."""
    n_slots = infos[0]["hub"]["slots"]
    n_lights = len(infos[-1]["hub"]["lights"])
    rows: dict[tuple, dict] = {}   # (visit, n): a map entered again counts n from 1
    visit, last = 0, None
    for raw in text.splitlines():
        m = _LINE.match(raw.strip())
        if not m:
            continue
        key = (int(m.group(1)), int(m.group(2)))
        if last is not None and key != last and key in {k[1:] for k in rows}:
            visit += 1
        last = key
        row = rows.setdefault((visit, *key), {"M": [], "H": [], "D": []})
        row[m.group(3)].append((int(m.group(4)), [int(v) for v in m.group(5).split()]))
    out = []
    for n in rows:
        row = {k: [v for _, vals in sorted(parts) for v in vals] for k, parts in rows[n].items()}
        if len(row["M"]) != 3 or len(row["H"]) != n_slots:
            continue
        lv, ack, hm = row["M"]
        if lv == len(infos) and len(row["D"]) != n_lights:
            continue
        out.append(Record(lv, ack, hm, row["H"], row["D"]))
    return out


# -- checking ---------------------------------------------------------------------------
def expected(net, infos: list[dict], preset: int) -> tuple[dict[str, int], list[int]]:
    """(every node's value by name, the network's outputs) of preset `preset`, by the
    integer reference."""
    from dsl.reference import evaluate

    x = infos[0]["hub"]["presets"][preset]["values"]
    r = evaluate(net, [x])
    return r.named(0), [int(v) for v in r.last_outputs()[0]]


def handed(infos: list[dict], k: int, slots: list[int]) -> dict[str, int]:
    """What map k (0-based) handed on, by name, from the hub's slots."""
    info = infos[k]
    return {name: slots[s] for name, s in zip(info["tile_outputs"], info["hub"]["slots_out"])}


def shown(infos: list[dict], lights: list[int]) -> dict[str, int | None]:
    """Each output of the last map as its display shows it (None: no number)."""
    from mapgen.display import Displays, shown_value

    hub = infos[-1]["hub"]
    level = dict(zip(hub["lights"], lights))
    disp = Displays.from_json(hub["displays"])
    return {d.shows: shown_value(d, level.get) for d in disp.numbers}


def check_visit(net, infos: list[dict], preset: int, after: list[Record]) -> list[str]:
    """What differs from the reference (empty: all EXACT): `after[k]` is the record of
    map k once it handed on; the last one's displays too."""
    values, outs = expected(net, infos, preset)
    bad = []
    for k, rec in enumerate(after):
        for name, v in handed(infos, k, rec.slots).items():
            if v != values[name]:
                bad.append(f"MAP{k + 1:02d} handed on {name} = {v}, the reference says "
                           f"{values[name]}")
    names = [net.nodes[o].name for o in net.outputs]
    got = shown(infos, after[-1].lights)
    for name, v in zip(names, outs):
        if got.get(name) != v:
            bad.append(f"the display of {name} shows {got.get(name)}, the reference says {v}")
    return bad


def done_records(records: list[Record], n_maps: int) -> list[Record]:
    """For each map, the record of it having handed on (hub_map == its number)."""
    out = []
    for k in range(1, n_maps + 1):
        rec = next((r for r in records if r.level == k and r.hub_map == k), None)
        if rec is None:
            raise EngineError(f"MAP{k:02d} never handed its values on in the probe's log "
                              f"({len(records)} records)")
        out.append(rec)
    return out


# -- GZDoom --------------------------------------------------------------------------------
def visit_timeline(infos: list[dict], preset: int) -> str:
    """The visitor's console line: onto the pedal, then map by map onto the EXIT once the
    map has had its time (its start and its run, with margins), and `quit` at the end."""
    from engine.gzdoom import TAIL

    px, py = infos[0]["hub"]["pedals"][preset]
    parts = [f"wait {infos[0]['init_tics'] + MARGIN}", f"warp {px:g} {py:g}"]
    for k, info in enumerate(infos):
        ex, ey = info["hub"]["exit"]
        if k:   # a new map: its dolls are named before it runs
            parts.append(f"wait {info['init_tics']}")
        parts += [f"wait {info['inference_tics'] + MARGIN}", f"warp {ex:g} {ey:g}"]
        if k < len(infos) - 1:
            parts.append("wait 2")   # onto the pad of the next map's start: nothing there
    return "; ".join(parts[:-1] + [f"wait {TAIL}", "quit"])


def visit_gzdoom(binary: str, wad: str, infos: list[dict], preset: int,
                 timeout: float = 900) -> list[Record]:
    """A visit in GZDoom (module docstring); the probe's records."""
    from engine.gzdoom import FAST, _gzdoom

    work = tempfile.mkdtemp(prefix="voodoonet-hub-")
    try:
        probe = os.path.join(work, "vnhub.wad")
        write_library(probe, probe_source(infos), "VNHUB")
        r, text = _gzdoom(binary, [wad, probe], visit_timeline(infos, preset), work, timeout,
                          timescale=FAST)
        records = parse_log(text, infos)
        if not records:
            raise EngineError(f"GZDoom exited {r.returncode} without a hub probe log:\n"
                              f"{text[-1500:]}\n{r.stderr[-1500:]}")
        return records
    finally:
        shutil.rmtree(work, ignore_errors=True)


# -- ViZDoom -------------------------------------------------------------------------------
def visit_vizdoom(wad: str, infos: list[dict], preset: int) -> list[Record]:
    """The same visit in ViZDoom, in one engine (it changes maps through the EXIT and keeps
    the ACS globals, since no intermission ends its episode): the probe's records."""
    from engine.doom import Engine

    work = tempfile.mkdtemp(prefix="voodoonet-hubvz-")
    try:
        probe, log = os.path.join(work, "vnhub.wad"), os.path.join(work, "hub.log")
        write_library(probe, probe_source(infos), "VNHUB")
        extra = (f"-file {probe}", f"+logfile {log}", "+autosave 0")
        with Engine(wad, "MAP01", extra_args=extra) as engine:
            for k, info in enumerate(infos):
                _wait_ack(engine, info, k, -1, info["init_tics"] + MARGIN)
                if k == 0:
                    engine.command("warp {:g} {:g}".format(*info["hub"]["pedals"][preset]))
                _wait_ack(engine, info, k, 1, info["inference_tics"] + MARGIN)
                engine.advance(3)   # the hub loop copies out in the tic after the ack
                if k < len(infos) - 1:
                    engine.command("warp {:g} {:g}".format(*info["hub"]["exit"]))
                    engine.advance(2)
        return parse_log(open(log, errors="replace").read(), infos)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _wait_ack(engine, info: dict, k: int, value: int, tics: int) -> None:
    for _ in range(tics):
        if engine.user(info["ack_var"]) == value:
            return
        engine.advance(1)
    raise EngineError(f"MAP{k + 1:02d}: the map's ack never became {value} in ViZDoom "
                      f"({tics} tics)")
