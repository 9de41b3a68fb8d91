"""UDMF TEXTMAP reading and writing, and Hexen binary maps converted to UDMF.

Owns the map as an editor leaves it: every block (thing, vertex, linedef, sidedef, sector,
and any other) with every field, keys lower-cased, in file order, so that a map read and
written again keeps everything its author put in (fields we do not know included). The
grammar is grammar/udmf.lark, parsed with Lark's LALR parser; values are built during the
parse (no tree), which keeps a 10 MB TEXTMAP to seconds.

Hexen-format maps (THINGS, LINEDEFS, SIDEDEFS, VERTEXES, SECTORS, BEHAVIOR) are read with
omgifol and converted field by field to UDMF namespace "zdoom"; Doom-format maps have no
ACS and no argument fields and are refused with a clear error.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

from lark import Lark, Transformer, v_args
from lark.exceptions import UnexpectedInput

from dsl.diagnostics import VoodooError

KINDS = ("thing", "vertex", "linedef", "sidedef", "sector")
_PARSER: Lark | None = None


class MapError(VoodooError):
    """A map that cannot be read, or cannot take what was asked of it."""


def _int(text: str) -> int:
    return int(text, 16) if text.lstrip("+-")[:2].lower() == "0x" else int(text)


def _string(text: str) -> str:
    s = text[1:-1]
    return s.replace('\\"', '"').replace("\\\\", "\\") if "\\" in s else s


def _keyword(text: str):
    low = text.lower()
    return True if low == "true" else False if low == "false" else str(text)


class _Build(Transformer):
    """The grammar's values, read by the same functions as the fast reader's."""
    def int_(self, t):
        return _int(t[0])

    def float_(self, t):
        return float(t[0])

    def string(self, t):
        return _string(t[0])

    def keyword(self, t):
        return _keyword(t[0])

    @v_args(inline=True)
    def assignment(self, name, value):
        return (str(name).lower(), value)

    def block(self, items):
        return (str(items[0]).lower(), dict(items[1:]))

    def start(self, items):
        return items


def _parser() -> Lark:
    global _PARSER
    if _PARSER is None:
        here = os.path.dirname(os.path.abspath(__file__))
        _PARSER = Lark.open(os.path.join(here, "..", "grammar", "udmf.lark"), parser="lalr",
                            transformer=_Build())
    return _PARSER


@dataclass
class TextMap:
    """A UDMF map: blocks by kind, each a dict of lower-cased fields, in file order."""
    namespace: str = "zdoom"
    things: list[dict] = field(default_factory=list)
    vertices: list[dict] = field(default_factory=list)
    linedefs: list[dict] = field(default_factory=list)
    sidedefs: list[dict] = field(default_factory=list)
    sectors: list[dict] = field(default_factory=list)
    others: list[tuple[str, dict]] = field(default_factory=list)
    globals: dict = field(default_factory=dict)
    _boxes: list | None = field(default=None, repr=False, compare=False)

    # -- geometry helpers ------------------------------------------------------------------
    def xy(self, v: int) -> tuple[float, float]:
        return float(self.vertices[v]["x"]), float(self.vertices[v]["y"])

    def line_ends(self, i: int) -> tuple[tuple[float, float], tuple[float, float]]:
        ln = self.linedefs[i]
        return self.xy(ln["v1"]), self.xy(ln["v2"])

    def side_sector(self, line: int, side: str) -> int:
        """Sector on the `front` or `back` of a line, -1 for none."""
        s = self.linedefs[line].get("side" + side, -1)
        return -1 if s is None or s < 0 else int(self.sidedefs[s]["sector"])

    def sector_tags(self, s: int) -> list[int]:
        """Every tag of a sector: its id, then its moreids."""
        sec = self.sectors[s]
        tags = [int(sec["id"])] if sec.get("id") else []
        more = sec.get("moreids")
        if more:
            tags += [int(t) for t in str(more).split()]
        return tags

    def extent(self) -> tuple[float, float, float, float]:
        xs = [float(v["x"]) for v in self.vertices]
        ys = [float(v["y"]) for v in self.vertices]
        if not xs:
            return 0.0, 0.0, 0.0, 0.0
        return min(xs), min(ys), max(xs), max(ys)

    def sector_boxes(self) -> list[tuple[float, float, float, float] | None]:
        """Bounding box of every sector, from the lines that bound it (None if none)."""
        if self._boxes is not None:
            return self._boxes
        boxes: list = [None] * len(self.sectors)
        for i in range(len(self.linedefs)):
            a, b = self.line_ends(i)
            sides = {self.side_sector(i, "front"), self.side_sector(i, "back")}
            if len(sides) == 1:  # a line floating inside one sector bounds nothing
                continue
            for s in sides:
                if s < 0:
                    continue
                x0, y0 = min(a[0], b[0]), min(a[1], b[1])
                x1, y1 = max(a[0], b[0]), max(a[1], b[1])
                old = boxes[s]
                boxes[s] = (x0, y0, x1, y1) if old is None else (
                    min(old[0], x0), min(old[1], y0), max(old[2], x1), max(old[3], y1))
        self._boxes = boxes
        return boxes

    # -- writing ---------------------------------------------------------------------------
    def text(self) -> str:
        out = [f'namespace = {_value(self.namespace)};']
        for k, v in self.globals.items():
            if k != "namespace":
                out.append(f"{k} = {_value(v)};")
        out.append("")
        for kind, blocks in (("thing", self.things), ("vertex", self.vertices),
                             ("linedef", self.linedefs), ("sidedef", self.sidedefs),
                             ("sector", self.sectors)):
            for b in blocks:
                out.append(_block(kind, b))
        for kind, b in self.others:
            out.append(_block(kind, b))
        return "\n".join(out) + "\n"


def _value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return f"{v:.3f}" if v == round(v, 3) else repr(v)
    return '"' + str(v).replace("\\", "\\\\").replace('"', '\\"') + '"'


def _block(kind: str, fields: dict) -> str:
    return kind + " { " + " ".join(f"{k} = {_value(v)};" for k, v in fields.items()) + " }"


# The fast reader: what a compiler or an editor writes (blocks of `key = value;`, no
# comments) read with one regular expression, about 7x faster than the LALR parse (the
# 30 MB TEXTMAP of bench/scale.py's first map: 4.2 s instead of 28 to 33 s). Anything else (a comment, a '/' or a brace outside a
# string, a value that is not one token of the grammar) goes to the Lark parser, whose
# result is the same and whose errors name line and column (tests/test_modding_damaged.py).
_WS = "[ \t\f\r\n]*"   # the grammar's whitespace (common.WS), not Python's \s
_VAL = r'("(?:[^"\\]|\\.)*"|[^;"/{} \t\f\r\n]+)'
# The last group takes any other character that is not whitespace: a comment, a stray
# brace or a half assignment, which sends the text to the Lark parser.
_TOKEN = re.compile(r'([A-Za-z_][A-Za-z0-9_]*)' + _WS + r'(?:(\{)|=' + _WS + _VAL + _WS
                    + r';)|(\})|([^ \t\f\r\n])', re.S)
_INT = re.compile(r'[+-]?(?:0[xX][0-9a-fA-F]+|[0-9]+)')
_FLOAT = re.compile(r'[+-]?[0-9]+(?:\.[0-9]*(?:[eE][+-]?[0-9]+)?|[eE][+-]?[0-9]+)')
_NAME = re.compile(r'[A-Za-z_][A-Za-z0-9_]*')
_BAD = object()


def _fast_value(v: str):
    """One value token as the grammar reads it (udmf.lark), or _BAD."""
    c = v[0]
    if c == '"':
        return _string(v)
    if c.isdigit() or c in "+-":
        if _INT.fullmatch(v):
            return _int(v)
        return float(v) if _FLOAT.fullmatch(v) else _BAD
    return _keyword(v) if _NAME.fullmatch(v) else _BAD


def _fast_items(text: str) -> list | None:
    """The parse's items, as the Lark transformer makes them, or None: not this form."""
    items, block, fields = [], None, None
    # A map repeats its keys and many of its values (0, true, a texture, a speed): each
    # read once (the CNN map's 11 million values are about 840,000 distinct ones).
    seen: dict[str, object] = {}
    keys: dict[str, str] = {}
    for name, opens, value, closes, stray in _TOKEN.findall(text):
        if stray:
            return None
        if closes:
            if block is None:
                return None
            items.append((block, fields))
            block = None
        elif opens:
            if block is not None:
                return None
            block, fields = name.lower(), {}
        else:
            v = seen.get(value, _BAD)
            if v is _BAD:
                v = seen[value] = _fast_value(value)
                if v is _BAD:
                    return None
            key = keys.get(name) or keys.setdefault(name, name.lower())
            if block is None:
                items.append((key, v))
            else:
                fields[key] = v
    return None if block is not None else items


def parse_textmap(text: str, where: str = "TEXTMAP") -> TextMap:
    """TEXTMAP text -> TextMap; a syntax error names the line and column."""
    try:
        items = _fast_items(text)
        if items is None:
            items = _parser().parse(text)
    except UnexpectedInput as e:
        raise MapError(f"{where}:{e.line}:{e.column}: error: not valid UDMF here\n"
                       f"    hint: {e.get_context(text).strip().splitlines()[0][:80]!r}") from None
    m = TextMap()
    lists = {"thing": m.things, "vertex": m.vertices, "linedef": m.linedefs,
             "sidedef": m.sidedefs, "sector": m.sectors}
    for item in items:
        key, value = item
        if isinstance(value, dict):
            if key in lists:
                lists[key].append(value)
            else:
                m.others.append((key, value))
        elif key == "namespace":
            m.namespace = str(value)
        else:
            m.globals[key] = value
    _check_refs(m, where)
    return m


def _check_refs(m: TextMap, where: str) -> None:
    """Every field the geometry is read through exists and points inside the map."""
    def bad(kind, i, what):
        raise MapError(f"{where}: {kind} {i}: {what}\n    hint: the map is damaged; open "
                       "and save it again in Ultimate Doom Builder or SLADE")

    for i, v in enumerate(m.vertices):
        if not all(isinstance(v.get(k), (int, float)) and not isinstance(v.get(k), bool)
                   for k in ("x", "y")):
            bad("vertex", i, "needs numbers x and y")
    for i, ln in enumerate(m.linedefs):
        for k, limit in (("v1", len(m.vertices)), ("v2", len(m.vertices)),
                         ("sidefront", len(m.sidedefs))):
            if not isinstance(ln.get(k), int) or not 0 <= ln[k] < limit:
                bad("linedef", i, f"{k} = {ln.get(k)!r} is not one of the map's "
                                  f"{limit} {'vertices' if k[0] == 'v' else 'sidedefs'}")
        back = ln.get("sideback", -1)
        if not isinstance(back, int) or back >= len(m.sidedefs):
            bad("linedef", i, f"sideback = {back!r} is not one of the map's sidedefs")
    for i, sd in enumerate(m.sidedefs):
        if not isinstance(sd.get("sector"), int) or not 0 <= sd["sector"] < len(m.sectors):
            bad("sidedef", i, f"sector = {sd.get('sector')!r} is not one of the map's "
                              f"{len(m.sectors)} sectors")
    for i, t in enumerate(m.things):
        if not all(isinstance(t.get(k), (int, float)) for k in ("x", "y", "type")):
            bad("thing", i, "needs x, y and type")


# ------------------------------------------------------------------------- Hexen binary maps
_HEXEN_LINE_FLAGS = {0x0001: "blocking", 0x0002: "blockmonsters", 0x0004: "twosided",
                     0x0008: "dontpegtop", 0x0010: "dontpegbottom", 0x0020: "secret",
                     0x0040: "blocksound", 0x0080: "dontdraw", 0x0100: "mapped",
                     0x0200: "repeatspecial"}
# SPAC (bits 10-12 of a Hexen line's flags): how the special is triggered.
_HEXEN_SPAC = {0: "playercross", 1: "playeruse", 2: "monstercross", 3: "impact",
               4: "playerpush", 5: "missilecross", 6: "passuse"}
_HEXEN_THING_FLAGS = {0x0001: ("skill1", "skill2"), 0x0002: ("skill3",),
                      0x0004: ("skill4", "skill5"), 0x0008: ("ambush",), 0x0010: ("dormant",),
                      0x0100: ("single",), 0x0200: ("coop",), 0x0400: ("dm",)}


def hexen_to_textmap(group, where: str) -> TextMap:
    """An omgifol map group in Hexen format -> TextMap (namespace zdoom)."""
    import omg
    import omg.mapedit

    if "BEHAVIOR" not in group:
        raise MapError(f"{where}: a Doom-format map (no BEHAVIOR lump): only Hexen-format "
                       "and UDMF maps are accepted\n    hint: convert it to UDMF in Ultimate "
                       "Doom Builder (Map > Map options > 'ZDoom: Doom (UDMF)') and save")
    try:
        ed = omg.mapedit.MapEditor(group)
    except Exception as e:  # omgifol raises plain exceptions on malformed lumps
        raise MapError(f"{where}: cannot read the Hexen-format map: {e}") from None
    m = TextMap()
    for v in ed.vertexes:
        m.vertices.append({"x": float(v.x), "y": float(v.y)})
    for s in ed.sidedefs:
        m.sidedefs.append({k: v for k, v in (
            ("offsetx", s.off_x), ("offsety", s.off_y), ("texturetop", s.tx_up),
            ("texturebottom", s.tx_low), ("texturemiddle", s.tx_mid), ("sector", s.sector))
            if v not in (0, "-") or k == "sector"})
    m.linedefs = [_hexen_line(ln) for ln in ed.linedefs]
    for s in ed.sectors:
        d = {"heightfloor": s.z_floor, "heightceiling": s.z_ceil, "texturefloor": s.tx_floor,
             "textureceiling": s.tx_ceil, "lightlevel": s.light}
        if s.type:
            d["special"] = s.type
        if s.tag:
            d["id"] = s.tag
        m.sectors.append(d)
    m.things = [_hexen_thing(t) for t in ed.things]
    return m


def _args(d: dict, obj) -> None:
    for k, a in enumerate((obj.arg0, obj.arg1, obj.arg2, obj.arg3, obj.arg4)):
        if a:
            d[f"arg{k}"] = a


def _hexen_line(ln) -> dict:
    d = {"v1": ln.vx_a, "v2": ln.vx_b, "sidefront": ln.front}
    if ln.back != 0xFFFF and ln.back >= 0:
        d["sideback"] = ln.back
    for bit, name in _HEXEN_LINE_FLAGS.items():
        if ln.flags & bit:
            d[name] = True
    if ln.action:
        d[_HEXEN_SPAC.get((ln.flags >> 10) & 7, "playercross")] = True
        d["special"] = ln.action
        _args(d, ln)
    return d


def _hexen_thing(t) -> dict:
    d = {"x": float(t.x), "y": float(t.y), "type": t.type}
    if t.tid:
        d["id"] = t.tid
    if t.height:
        d["height"] = float(t.height)
    if t.angle:
        d["angle"] = t.angle
    for bit, names in _HEXEN_THING_FLAGS.items():
        if t.flags & bit:
            for n in names:
                d[n] = True
    if t.action:
        d["special"] = t.action
        _args(d, t)
    return d
