"""A small UDMF test map for running compiled ACS in the engine.

Owns the geometry every ACS engine test uses, generated as TEXTMAP text:
- sector 0 (tag 1) and sector 1 (tag 2): a 256x256 room split at x=128 by a two-sided
  line with id 5 (no special); the player starts at (32, 128) in sector 0, facing east,
  so `ThrustThing(0, force, 0, 0)` pushes the player across line 5;
- `extra` closed 64x64 rooms (sectors 2.., tags 10, 11, ...), floor 0, ceiling 128,
  light 100 + k, each bounded by lines with ids 100 + 4k .. 103 + 4k.
Light levels: sector 0 is 160, sector 1 is 144.
"""
from __future__ import annotations

EXTRA_TAG0 = 10
DIVIDER_LINE_ID = 5


def _sector(tag: int, light: int, floor: int = 0, ceiling: int = 128) -> str:
    return (f"sector {{ heightfloor = {floor}; heightceiling = {ceiling}; "
            f'texturefloor = "FLOOR0_1"; textureceiling = "CEIL1_1"; lightlevel = {light}; '
            f"id = {tag}; }}")


def room_textmap(extra: int = 4) -> str:
    verts: list[tuple[int, int]] = []
    lines: list[str] = []
    sides: list[str] = []
    sectors: list[str] = []

    def v(x, y) -> int:
        verts.append((x, y))
        return len(verts) - 1

    def side(sector: int) -> int:
        sides.append(f'sidedef {{ sector = {sector}; texturemiddle = "STARTAN2"; }}')
        return len(sides) - 1

    def wall(a: int, b: int, sector: int, line_id: int | None = None) -> None:
        extra_id = f" id = {line_id};" if line_id is not None else ""
        lines.append(f"linedef {{ v1 = {a}; v2 = {b}; sidefront = {side(sector)}; "
                     f"blocking = true;{extra_id} }}")

    # The split room: vertices counter-clockwise, so each wall's front faces inside.
    p = [v(0, 0), v(128, 0), v(256, 0), v(256, 256), v(128, 256), v(0, 256)]
    sectors.append(_sector(1, 160))
    sectors.append(_sector(2, 144))
    wall(p[1], p[0], 0)
    wall(p[2], p[1], 1)
    wall(p[3], p[2], 1)
    wall(p[4], p[3], 1)
    wall(p[5], p[4], 0)
    wall(p[0], p[5], 0)
    # Divider from (128,0) up to (128,256): a line's front is on the right of v1->v2,
    # here the east half (sector 1).
    front, back = side(1), side(0)
    sides[front] = 'sidedef { sector = 1; }'
    sides[back] = 'sidedef { sector = 0; }'
    lines.append(f"linedef {{ v1 = {p[1]}; v2 = {p[4]}; sidefront = {front}; "
                 f"sideback = {back}; twosided = true; id = {DIVIDER_LINE_ID}; }}")
    for k in range(extra):
        x0 = 400 + 100 * k
        q = [v(x0, 0), v(x0 + 64, 0), v(x0 + 64, 64), v(x0, 64)]
        sec = len(sectors)
        sectors.append(_sector(EXTRA_TAG0 + k, 100 + k))
        for i in range(4):
            wall(q[(i + 1) % 4], q[i], sec, 100 + 4 * k + i)
    out = ['namespace = "zdoom";']
    out += [f"vertex {{ x = {x}.0; y = {y}.0; }}" for x, y in verts]
    out += lines + sides + sectors
    out.append("thing { x = 32.0; y = 128.0; type = 1; angle = 0; skill1 = true; "
               "skill2 = true; skill3 = true; skill4 = true; skill5 = true; single = true; "
               "coop = true; dm = true; }")
    return "\n".join(out) + "\n"
