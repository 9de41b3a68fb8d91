"""Top-down pictures of compiled maps: lanes, doors, weighted lines, lights and dolls.

`render(layout, values=None, inputs=None)` draws the map to a PIL image. With `values` (a
light tag -> level dict from an engine run or the circuit simulator) and the `inputs`, the
doors each doll passed are lit, each doll is drawn where it stopped and the light tiles show
their levels: a picture of one inference's path through the map.
"""
from __future__ import annotations

from PIL import Image, ImageDraw, ImageFont

from . import physics as P
from .layout import Layout

BG = (18, 18, 24)
PAD = (70, 70, 80)
LANDING = (55, 60, 72)
RAMP = (48, 52, 64)
END = (40, 40, 48)
DOOR = (170, 60, 50)
DOOR_OPEN = (250, 200, 60)
PLUS = (80, 200, 120)
MINUS = (220, 90, 200)
DOLL = (255, 255, 255)
HALL = (35, 38, 46)


def _font(size: int):
    try:
        return ImageFont.load_default(size=size)
    except TypeError:  # older Pillow
        return ImageFont.load_default()


def render(layout: Layout, values: dict[int, int] | None = None, inputs=None,
           max_size: int = 2400, title: str = "") -> Image.Image:
    """A top-down picture of a compiled map; with `values` (light levels after a run, e.g.
    from circuit.simulate) the lights are coloured and each doll stands where it stopped."""
    cv = _Canvas(layout, max_size)
    names = {n.id: n.name for n in layout.circuit.net.nodes}
    _draw_tiles(cv, layout, values, names)
    passed = _doors_passed(layout, values, inputs) if values is not None else {}
    for g in layout.lanes:
        _draw_lane(cv, g, passed.get(id(g), -1), names)
    _draw_legend(cv, title or layout.circuit.net.name, values is not None)
    return cv.img


class _Canvas:
    """The image and the map-to-pixel transform (map y grows up, image y grows down)."""

    def __init__(self, layout: Layout, max_size: int):
        self.x0, y0, x1, self.y1 = layout.model.extent()
        self.margin = 64
        w, h = x1 - self.x0 + 2 * self.margin, self.y1 - y0 + 2 * self.margin
        self.scale = min(1.0, max_size / max(w, h))
        W, H = max(64, int(w * self.scale)), max(64, int(h * self.scale) + 28)
        self.img = Image.new("RGB", (W, H), BG)
        self.d = ImageDraw.Draw(self.img)

    def pt(self, x, y):
        return ((x - self.x0 + self.margin) * self.scale,
                (self.y1 - y + self.margin) * self.scale + 28)

    def rect(self, a, b, c, e, fill, outline=None):
        (px0, py1), (px1, py0) = self.pt(a, b), self.pt(c, e)
        self.d.rectangle([px0, py0, max(px0 + 1, px1), max(py0 + 1, py1)], fill=fill,
                         outline=outline)


def _draw_tiles(cv: _Canvas, layout: Layout, values, names) -> None:
    """The light tiles, coloured by value (warm positive, cool negative) when known."""
    for tag, (a, b, c, e) in layout.light_tiles.items():
        light = layout.circuit.light(tag)
        if values is not None and tag in values:
            v = values[tag]
            span = max(1, max(abs(light.lo), abs(light.hi)))
            t = max(-1.0, min(1.0, v / span))
            fill = (int(60 + 195 * max(t, 0)), int(60 + 120 * abs(t)), int(60 + 195 * max(-t, 0)))
        else:
            fill = (90, 90, 110) if light.role == "acc" else (110, 100, 70)
        cv.rect(a, b, c, e, fill, outline=(20, 20, 20))
        if cv.scale >= 0.5:
            (tx, ty) = cv.pt(a, e)
            label = names[light.node] + ("" if light.role == "value" else " acc")
            if values is not None and tag in values:
                label += f" = {values[tag]}"
            cv.d.text((tx, ty + 2), label, fill=(210, 210, 210),
                      font=_font(max(9, int(11 * cv.scale))))


def _doors_passed(layout: Layout, values, inputs) -> dict[int, int]:
    """How many doors each lane's doll passes, from the value its doors read."""
    passed: dict[int, int] = {}
    for g in layout.lanes:
        lane = g.lane
        if lane.source[0] == "light":
            v = values.get(lane.source[1])
        elif lane.source[0] == "input":
            v = None if inputs is None else int(inputs[lane.source[1]])
        else:
            v = 0  # a clock lane: no doors, it always rides to the end
        if v is not None:
            passed[id(g)] = sum(1 for door in lane.doors if v >= door.threshold)
    return passed


def _draw_lane(cv: _Canvas, g, n_passed: int, names) -> None:
    """One lane: its segments, its weighted lines, and its doll (where it stopped)."""
    ya, yb = g.y0, g.y0 + P.LANE_WIDTH
    for s in g.segments:
        if s.kind == "door":
            fill = DOOR_OPEN if s.door < n_passed else DOOR
        else:
            fill = {"spawn": END, "pad": PAD, "landing": LANDING, "ramp": RAMP,
                    "end": END}[s.kind]
        cv.rect(s.x0, ya, s.x1, yb, fill)
    for x, special, a0, a1 in g.lines:
        if special == P.SPECIAL["Thing_ChangeTID"]:
            continue
        color = PLUS if special == P.SPECIAL["Light_RaiseByValue"] else MINUS
        (px, py0), (_, py1) = cv.pt(x, ya + 4), cv.pt(x, yb - 4)
        cv.d.line([px, py1, px, py0], fill=color, width=1)
    sx, sy, _ = g.spawn if n_passed < 0 else g.start
    if n_passed >= 0:
        # Where the doll stopped: before the first door it could not pass.
        stop = [s for s in g.segments if s.kind == "door" and s.door == n_passed]
        sx = (stop[0].x0 - P.DOLL_RADIUS) if stop else g.segments[-1].x1 - P.DOLL_RADIUS
    (cx, cy) = cv.pt(sx, sy)
    r = max(1.5, P.DOLL_RADIUS * cv.scale)
    cv.d.ellipse([cx - r, cy - r, cx + r, cy + r], fill=DOLL)
    if cv.scale > 0.25:
        tx, ty = cv.pt(g.x0 - 4, yb)
        cv.d.text((max(0, tx - 60 * cv.scale), ty), names[g.lane.node] + g.lane.label,
                  fill=(200, 200, 200), font=_font(max(8, int(14 * cv.scale * 2))))


def _draw_legend(cv: _Canvas, title: str, ran: bool) -> None:
    cv.d.text((8, 6), title, fill=(230, 230, 230), font=_font(16))
    legend = [(DOOR_OPEN, "door passed"), (DOOR, "door closed"), (PLUS, "line +w"),
              (MINUS, "line -w"), (DOLL, "doll")] if ran else \
        [(DOOR, "door"), (PLUS, "line +w"), (MINUS, "line -w"), (DOLL, "doll")]
    lx = 8 + 10 * len(title) + 24
    for color, text in legend:
        cv.d.rectangle([lx, 10, lx + 10, 20], fill=color)
        cv.d.text((lx + 14, 6), text, fill=(200, 200, 200), font=_font(13))
        lx += 24 + 8 * len(text)


def save_png(img: Image.Image, path: str) -> None:
    import io

    from dsl.util import atomic_write

    buf = io.BytesIO()
    img.save(buf, format="PNG", optimize=False)
    atomic_write(path, buf.getvalue())
