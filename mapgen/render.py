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
    x0, y0, x1, y1 = layout.model.extent()
    margin = 64
    w, h = x1 - x0 + 2 * margin, y1 - y0 + 2 * margin
    scale = min(1.0, max_size / max(w, h))
    W, H = max(64, int(w * scale)), max(64, int(h * scale) + 28)
    img = Image.new("RGB", (W, H), BG)
    d = ImageDraw.Draw(img)

    def pt(x, y):  # map y grows up, image y grows down
        return (x - x0 + margin) * scale, (y1 - y + margin) * scale + 28

    def rect(a, b, c, e, fill, outline=None):
        (px0, py1), (px1, py0) = pt(a, b), pt(c, e)
        d.rectangle([px0, py0, max(px0 + 1, px1), max(py0 + 1, py1)], fill=fill, outline=outline)

    names = {n.id: n.name for n in layout.circuit.net.nodes}
    # Hall and light tiles.
    for tag, (a, b, c, e) in layout.light_tiles.items():
        light = layout.circuit.light(tag)
        if values is not None and tag in values:
            v = values[tag]
            span = max(1, max(abs(light.lo), abs(light.hi)))
            t = max(-1.0, min(1.0, v / span))
            fill = (int(60 + 195 * max(t, 0)), int(60 + 120 * abs(t)), int(60 + 195 * max(-t, 0)))
        else:
            fill = (90, 90, 110) if light.role == "acc" else (110, 100, 70)
        rect(a, b, c, e, fill, outline=(20, 20, 20))
        if scale >= 0.5:
            (tx, ty) = pt(a, e)
            label = names[light.node] + ("" if light.role == "value" else " acc")
            if values is not None and tag in values:
                label += f" = {values[tag]}"
            d.text((tx, ty + 2), label, fill=(210, 210, 210), font=_font(max(9, int(11 * scale))))
    # Lanes.
    passed: dict[int, int] = {}
    if values is not None:
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
    for g in layout.lanes:
        ya, yb = g.y0, g.y0 + P.LANE_WIDTH
        n_passed = passed.get(id(g), -1)
        for s in g.segments:
            if s.kind == "door":
                fill = DOOR_OPEN if s.door < n_passed else DOOR
            else:
                fill = {"spawn": END, "pad": PAD, "landing": LANDING, "ramp": RAMP,
                        "end": END}[s.kind]
            rect(s.x0, ya, s.x1, yb, fill)
        for x, special, a0, a1 in g.lines:
            if special == P.SPECIAL["Thing_ChangeTID"]:
                continue
            color = PLUS if special == P.SPECIAL["Light_RaiseByValue"] else MINUS
            (px, py0), (_, py1) = pt(x, ya + 4), pt(x, yb - 4)
            d.line([px, py1, px, py0], fill=color, width=1)
        sx, sy, _ = g.spawn if n_passed < 0 else g.start
        if n_passed >= 0:
            # Where the doll stopped: before the first door it could not pass.
            stop = [s for s in g.segments if s.kind == "door" and s.door == n_passed]
            sx = (stop[0].x0 - P.DOLL_RADIUS) if stop else g.segments[-1].x1 - P.DOLL_RADIUS
        (cx, cy) = pt(sx, sy)
        r = max(1.5, P.DOLL_RADIUS * scale)
        d.ellipse([cx - r, cy - r, cx + r, cy + r], fill=DOLL)
        if scale > 0.25:
            tx, ty = pt(g.x0 - 4, yb)
            d.text((max(0, tx - 60 * scale), ty), names[g.lane.node] + g.lane.label,
                   fill=(200, 200, 200),
                   font=_font(max(8, int(14 * scale * 2))))
    d.text((8, 6), title or layout.circuit.net.name, fill=(230, 230, 230), font=_font(16))
    legend = [(DOOR_OPEN, "door passed"), (DOOR, "door closed"), (PLUS, "line +w"),
              (MINUS, "line -w"), (DOLL, "doll")] if values is not None else \
        [(DOOR, "door"), (PLUS, "line +w"), (MINUS, "line -w"), (DOLL, "doll")]
    lx = 8 + 10 * len(title or layout.circuit.net.name) + 24
    for color, text in legend:
        d.rectangle([lx, 10, lx + 10, 20], fill=color)
        d.text((lx + 14, 6), text, fill=(200, 200, 200), font=_font(13))
        lx += 24 + 8 * len(text)
    return img


def save_png(img: Image.Image, path: str) -> None:
    import io

    from dsl.util import atomic_write

    buf = io.BytesIO()
    img.save(buf, format="PNG", optimize=False)
    atomic_write(path, buf.getvalue())
