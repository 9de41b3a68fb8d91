"""A small map model (vertices, sectors, lines, sides, things) and its UDMF TEXTMAP writer.

Namespace "zdoom", so GZDoom, ViZDoom, Ultimate Doom Builder and SLADE open the maps.
The builder deduplicates vertices and writes everything in insertion order with fixed
number formatting, so the same circuit always gives byte-identical text. We write the text
ourselves rather than through omgifol's UMapEditor, which is quadratic on large maps.
"""
from __future__ import annotations

from dataclasses import dataclass, field

WALL = "STARTAN2"
FLOOR = "FLOOR0_1"
CEIL = "CEIL3_5"


@dataclass
class Sector:
    floor: int
    ceiling: int
    light: int = 160
    tag: int = 0
    more_tags: tuple[int, ...] = ()
    floor_tex: str = FLOOR
    ceil_tex: str = CEIL
    sequence: str = ""
    comment: str = ""
    special: int = 0       # sector special bits (physics.FRICTION_SPECIAL: own friction)
    # The ceiling's (floor's) own light, whatever the sector's level (UDMF lightceiling,
    # lightfloor, absolute): a display panel whose level is a machine's light leaves the
    # other plane of its sector alone.
    ceiling_light: int | None = None
    floor_light: int | None = None


@dataclass
class Line:
    v1: int
    v2: int
    front: int            # sidedef index
    back: int = -1
    special: int = 0
    args: tuple[int, ...] = ()
    flags: tuple[str, ...] = ()
    id: int = 0
    comment: str = ""


@dataclass
class Side:
    sector: int
    top: str = "-"
    bottom: str = "-"
    middle: str = "-"


@dataclass
class Thing:
    x: float
    y: float
    type: int
    angle: int = 0
    id: int = 0
    z: float = 0.0
    comment: str = ""
    special: int = 0
    args: tuple[int, ...] = ()


@dataclass
class MapModel:
    vertices: list[tuple[float, float]] = field(default_factory=list)
    sectors: list[Sector] = field(default_factory=list)
    lines: list[Line] = field(default_factory=list)
    sides: list[Side] = field(default_factory=list)
    things: list[Thing] = field(default_factory=list)
    _vindex: dict = field(default_factory=dict)
    # Sectors several builders share, by what makes them one (layout's spawn closets).
    shared: dict = field(default_factory=dict)

    # -- building --------------------------------------------------------------------------
    def vertex(self, x: float, y: float) -> int:
        key = (x, y)
        i = self._vindex.get(key)
        if i is None:
            i = len(self.vertices)
            self.vertices.append(key)
            self._vindex[key] = i
        return i

    def sector(self, s: Sector) -> int:
        self.sectors.append(s)
        return len(self.sectors) - 1

    def side(self, sector: int, **tex) -> int:
        self.sides.append(Side(sector, **tex))
        return len(self.sides) - 1

    def wall(self, a: tuple, b: tuple, sector: int, tex: str = WALL, **kw) -> int:
        """A one-sided wall from a to b; `sector` lies on its right (the front side)."""
        front = self.side(sector, middle=tex)
        self.lines.append(Line(self.vertex(*a), self.vertex(*b), front, -1,
                               flags=("blocking",) + tuple(kw.pop("flags", ())), **kw))
        return len(self.lines) - 1

    def portal(self, a: tuple, b: tuple, front: int, back: int, tex: str = WALL, **kw) -> int:
        """A two-sided line from a to b; `front` on its right, `back` on its left."""
        f = self.side(front, top=tex, bottom=tex)
        k = self.side(back, top=tex, bottom=tex)
        self.lines.append(Line(self.vertex(*a), self.vertex(*b), f, k, **kw))
        return len(self.lines) - 1

    def rect_sector(self, x0, y0, x1, y1, s: Sector, tex: str = WALL,
                    around: int | None = None) -> int:
        """A rectangular sector: closed by walls, or, inside sector `around`, bounded by
        two-sided lines (a tile in a floor, a pedal, a display panel)."""
        sec = self.sector(s)
        corners = [(x0, y0), (x0, y1), (x1, y1), (x1, y0)]
        for a, b in zip(corners, corners[1:] + corners[:1]):  # clockwise: inside on the right
            if around is None:
                self.wall(a, b, sec, tex)
            else:
                self.portal(a, b, sec, around)
        return sec

    def extent(self) -> tuple[float, float, float, float]:
        xs = [v[0] for v in self.vertices]
        ys = [v[1] for v in self.vertices]
        return min(xs), min(ys), max(xs), max(ys)

    # -- writing ----------------------------------------------------------------------------
    def textmap(self) -> str:
        out = ['namespace = "zdoom";', ""]
        w = out.append
        for x, y in self.vertices:
            w(f"vertex {{ x = {_num(x)}; y = {_num(y)}; }}")
        for ln in self.lines:
            parts = [f"v1 = {ln.v1};", f"v2 = {ln.v2};", f"sidefront = {ln.front};"]
            if ln.back >= 0:
                parts.append(f"sideback = {ln.back};")
                parts.append("twosided = true;")
            for fl in ln.flags:
                parts.append(f"{fl} = true;")
            if ln.id:
                parts.append(f"id = {ln.id};")
            parts += _special(ln.special, ln.args)
            if ln.comment:
                parts.append(f'comment = "{_esc(ln.comment)}";')
            w("linedef { " + " ".join(parts) + " }")
        for sd in self.sides:
            parts = [f"sector = {sd.sector};"]
            if sd.top != "-":
                parts.append(f'texturetop = "{sd.top}";')
            if sd.bottom != "-":
                parts.append(f'texturebottom = "{sd.bottom}";')
            if sd.middle != "-":
                parts.append(f'texturemiddle = "{sd.middle}";')
            w("sidedef { " + " ".join(parts) + " }")
        for s in self.sectors:
            parts = [f"heightfloor = {int(s.floor)};", f"heightceiling = {int(s.ceiling)};",
                     f'texturefloor = "{s.floor_tex}";', f'textureceiling = "{s.ceil_tex}";',
                     f"lightlevel = {int(s.light)};"]
            if s.tag:
                parts.append(f"id = {s.tag};")
            if s.more_tags:
                parts.append(f'moreids = "{" ".join(str(t) for t in s.more_tags)}";')
            if s.special:
                parts.append(f"special = {s.special};")
            if s.sequence:
                parts.append(f'soundsequence = "{_esc(s.sequence)}";')
            if s.ceiling_light is not None:
                parts.append(f"lightceiling = {int(s.ceiling_light)}; lightceilingabsolute = true;")
            if s.floor_light is not None:
                parts.append(f"lightfloor = {int(s.floor_light)}; lightfloorabsolute = true;")
            if s.comment:
                parts.append(f'comment = "{_esc(s.comment)}";')
            w("sector { " + " ".join(parts) + " }")
        for t in self.things:
            parts = [f"x = {_num(t.x)};", f"y = {_num(t.y)};", f"type = {t.type};"]
            if t.z:
                parts.append(f"height = {_num(t.z)};")
            if t.angle:
                parts.append(f"angle = {t.angle};")
            if t.id:
                parts.append(f"id = {t.id};")
            parts += _special(t.special, t.args) if t.special else _args(t.args)
            parts.append("skill1 = true; skill2 = true; skill3 = true; skill4 = true; "
                         "skill5 = true; single = true; coop = true; dm = true;")
            if t.comment:
                parts.append(f'comment = "{_esc(t.comment)}";')
            w("thing { " + " ".join(parts) + " }")
        return "\n".join(out) + "\n"


def _special(special: int, args) -> list[str]:
    """A line's or thing's special and its non-zero arguments (UDMF defaults are 0)."""
    if not special:
        return []
    return [f"special = {special};"] + [f"arg{k} = {int(a)};" for k, a in enumerate(args) if a]


def _args(args) -> list[str]:
    """Arguments of a thing without a special (a camera's pitch...)."""
    return [f"arg{k} = {int(a)};" for k, a in enumerate(args) if a]


def _num(v: float) -> str:
    return f"{float(v):.3f}"


def _esc(s: str) -> str:
    return s.replace("\\", "\\\\").replace('"', '\\"')


def sidedness_errors(m: MapModel, limit: int = 20) -> list[str]:
    """Lines whose sides face the wrong sectors: a point just right of a line's midpoint must
    lie inside its front sector (and just left, inside its back sector). Sector areas are
    taken from their boundary lines by the even-odd rule, so holes count. A map that fails
    this renders with holes in the world (measured: a gallery wound the wrong way)."""
    import numpy as np

    edges: dict[int, list[int]] = {}
    for i, ln in enumerate(m.lines):
        fs = m.sides[ln.front].sector
        bs = m.sides[ln.back].sector if ln.back >= 0 else -1
        if fs == bs:
            continue  # a line floating inside one sector bounds nothing
        edges.setdefault(fs, []).append(i)
        if bs >= 0:
            edges.setdefault(bs, []).append(i)
    V = np.array(m.vertices, dtype=float)
    seg = {s: (V[[m.lines[i].v1 for i in idx]], V[[m.lines[i].v2 for i in idx]])
           for s, idx in edges.items()}

    def inside(sector: int, p) -> bool:
        a, b = seg[sector]
        ya, yb = a[:, 1], b[:, 1]
        crosses = (ya > p[1]) != (yb > p[1])
        with np.errstate(divide="ignore", invalid="ignore"):
            x = a[:, 0] + (p[1] - ya) * (b[:, 0] - a[:, 0]) / (yb - ya)
        return bool(np.count_nonzero(crosses & (x > p[0])) % 2)

    errors = []
    for i, ln in enumerate(m.lines):
        fs = m.sides[ln.front].sector
        bs = m.sides[ln.back].sector if ln.back >= 0 else -1
        if fs == bs:
            continue
        (x1, y1), (x2, y2) = m.vertices[ln.v1], m.vertices[ln.v2]
        length = ((x2 - x1) ** 2 + (y2 - y1) ** 2) ** 0.5
        nx, ny = (y2 - y1) / length, -(x2 - x1) / length   # the right-hand normal
        mx, my = (x1 + x2) / 2, (y1 + y2) / 2
        eps = 0.25
        if not inside(fs, (mx + eps * nx, my + eps * ny)):
            errors.append(f"line {i} ({x1:g},{y1:g})->({x2:g},{y2:g}): front sector {fs} "
                          "is not on its right")
        if bs >= 0 and not inside(bs, (mx - eps * nx, my - eps * ny)):
            errors.append(f"line {i} ({x1:g},{y1:g})->({x2:g},{y2:g}): back sector {bs} "
                          "is not on its left")
        if len(errors) >= limit:
            break
    return errors
