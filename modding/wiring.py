"""The wiring file of `build.py embed`: which of a modder's lines and sectors drive a
circuit's inputs, and which sectors its outputs drive (format in docs/modding.md).

    # one statement per line; '#' starts a comment
    input s[0] = toggle sector 7          # entering sector 7 flips s[0] between lo and hi
    input s[1] = toggle use line 12       # pressing use on line 12 (a switch)
    input s[2] = set 1 cross line 30      # walking over line 30 sets s[2] to 1
    output lamp = light sector 3 5        # sectors 3 and 5 take lamp's value as light level
    output maj = floor sector 9           # sector 9's floor moves to maj's value
    output maj = door sector 11 open 128  # sector 11 opens (ceiling at 128) while maj > 0

Sectors and lines are indices in the map's TEXTMAP, as Ultimate Doom Builder and SLADE show
them. Errors name the wiring file's line and say what to write instead.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from dsl.diagnostics import VoodooError

_INPUT = re.compile(r"^input\s+(?P<name>\S+)\s*=\s*(?P<mode>toggle|set\s+-?\d+)\s+"
                    r"(?:(?P<how>use|cross)\s+line\s+(?P<line>\d+)|sector\s+(?P<sector>\d+))$")
_OUTPUT = re.compile(r"^output\s+(?P<name>\S+)\s*=\s*(?P<kind>light|floor|door)\s+sector\s+"
                     r"(?P<sectors>\d+(?:\s+\d+)*)(?:\s+open\s+(?P<open>-?\d+))?$")


class WiringError(VoodooError):
    pass


@dataclass
class InputWire:
    name: str
    value: int | None        # None: toggle between lo and hi
    line: int | None = None
    how: str = "use"         # use (a switch) or cross (walk over)
    sector: int | None = None
    where: str = ""


@dataclass
class OutputWire:
    name: str
    kind: str                # light, floor, door
    sectors: list[int]
    open: int | None = None  # a door's open ceiling height
    where: str = ""
    closed: int = 0          # a door's closed ceiling height (its floor)
    tag: int = 0             # the fresh tag a floor or door output's sectors carry


def parse_wiring(text: str, path: str) -> tuple[list[InputWire], list[OutputWire]]:
    ins, outs, bad = [], [], []
    for k, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        where = f"{path}:{k}"
        m = _INPUT.match(line)
        if m:
            mode = m.group("mode")
            digits = mode.split()[1] if mode != "toggle" else ""
            # No input range reaches 19 digits (and Python refuses int() of thousands).
            if len(digits.lstrip("-")) > 18:
                bad.append(f"{where}: error: set {digits[:12]}... ({len(digits)} digits) is "
                           "beyond any input's range\n    hint: set a value within the "
                           "input's range")
                continue
            value = None if mode == "toggle" else int(digits)
            ins.append(InputWire(m.group("name"), value,
                                 int(m.group("line")) if m.group("line") else None,
                                 m.group("how") or "use",
                                 int(m.group("sector")) if m.group("sector") else None, where))
            continue
        m = _OUTPUT.match(line)
        if m:
            outs.append(OutputWire(m.group("name"), m.group("kind"),
                                   [int(s) for s in m.group("sectors").split()],
                                   int(m.group("open")) if m.group("open") else None, where))
            continue
        bad.append(f"{where}: error: cannot read '{line}'\n    hint: write `input NAME = toggle "
                   "sector N`, `input NAME = set V use line N`, `output NAME = light sector N`"
                   " (or floor / door; see docs/modding.md)")
    if bad:
        raise WiringError("\n".join(bad))
    return ins, outs


def check_wiring(ins, outs, net, tm, path: str) -> None:
    """Every name is an input / a node of the circuit; every line and sector exists and is
    free to take our special; a `set` value lies in its input's range; a line drives one
    input and a sector is driven by one output (two outputs in one sector would both
    change its light, floor or ceiling: a wrong value, never a right one)."""
    bad = []
    ranges = {net.nodes[i].name: r for i, r in zip(net.inputs, net.input_ranges())}
    inputs = set(ranges)
    names = {n.name for n in net.nodes}
    for w in ins:
        if w.name not in inputs:
            bad.append(f"{w.where}: error: '{w.name}' is not an input of {net.source}\n    "
                       f"hint: its inputs are {', '.join(sorted(inputs))}")
        elif w.value is not None and not ranges[w.name][0] <= w.value <= ranges[w.name][1]:
            lo, hi = ranges[w.name]
            bad.append(f"{w.where}: error: set {_short(w.value)}: {w.name} takes "
                       f"{lo}..{hi}\n    hint: set a value within {lo}..{hi}")
        if w.line is not None:
            if w.line >= len(tm.linedefs):
                bad.append(f"{w.where}: error: the map has no line {w.line} "
                           f"(it has {len(tm.linedefs)})")
            elif tm.linedefs[w.line].get("special"):
                bad.append(f"{w.where}: error: line {w.line} already has special "
                           f"{tm.linedefs[w.line]['special']}: your map uses it\n    hint: wire "
                           "the input to a line without a special (or a sector)")
        if w.sector is not None and w.sector >= len(tm.sectors):
            bad.append(f"{w.where}: error: the map has no sector {w.sector} "
                       f"(it has {len(tm.sectors)})")
    for w in outs:
        if w.name not in names:
            bad.append(f"{w.where}: error: '{w.name}' is not a node of {net.source}")
        for s in w.sectors:
            if s >= len(tm.sectors):
                bad.append(f"{w.where}: error: the map has no sector {s} "
                           f"(it has {len(tm.sectors)})")
    bad += _shared(ins, outs)
    if bad:
        raise WiringError("\n".join(bad))


def _shared(ins, outs) -> list[str]:
    """A line wired to two inputs (it has one special), a sector to two outputs."""
    bad = []
    line_of: dict[int, InputWire] = {}
    for w in ins:
        if w.line is not None:
            if w.line in line_of:
                first = line_of[w.line]
                bad.append(f"{w.where}: error: line {w.line} already drives {first.name} "
                           f"({first.where}): a line has one special\n    hint: wire "
                           f"{w.name} to another line or a sector")
            line_of.setdefault(w.line, w)
    sector_of: dict[int, OutputWire] = {}
    for w in outs:
        for s in w.sectors:
            if s in sector_of:
                first = sector_of[s]
                what = f"listed twice for output {w.name}" if first is w else \
                    f"already driven by output {first.name} ({first.where})"
                bad.append(f"{w.where}: error: sector {s} is {what}: two drivers of one "
                           "sector would both change it, and it would show a wrong value"
                           f"\n    hint: give {w.name} sectors of its own, each once")
            sector_of.setdefault(s, w)
    return bad


def _short(v: int) -> str:
    text = str(v)
    return text if len(text) <= 24 else f"{text[:10]}...({len(text)} digits)"
