"""Every engine fact mapgen/physics.py relies on, measured in ViZDoom on a purpose-built map."""
import pytest

from mapgen import physics as P
from mapgen.udmf import MapModel, Sector, Thing
from enginekit import room, start


def _player(m):
    room(m)
    m.things.append(Thing(-1024 + 128, -1024 + 128, 1))


def _lane(m, x0, y0, floors, door_ceiling, conveyor_tag, door_tag, line_specials=()):
    """A one-lane corridor: pad, then one door per floor (ceiling at door_ceiling), each
    followed by a landing holding `line_specials` (special, arg0, arg1) lines."""
    from mapgen.layout import Segment
    W = P.LANE_WIDTH
    x = x0
    segs = [(x, x + P.PAD_LENGTH, floors[0], "pad")]
    x += P.PAD_LENGTH
    lines = []
    for f in floors:
        segs.append((x, x + P.DOOR_DEPTH, f, "door"))
        x += P.DOOR_DEPTH
        lx = x + P.LINE_LEAD
        for sp in line_specials:
            lines.append((lx, sp))
            lx += P.LINE_SPACING
        n = max(1, len(line_specials))
        length = P.LINE_LEAD + (n - 1) * P.LINE_SPACING + P.LANDING_CLEAR
        segs.append((x, x + length, f, "landing"))
        x += length
    segs.append((x, x + P.END_LENGTH, floors[-1], "end"))
    secs = []
    for a, b, f, kind in segs:
        if kind == "door":
            secs.append(m.sector(Sector(f, door_ceiling, 160, tag=door_tag, more_tags=(conveyor_tag,))))
        else:
            secs.append(m.sector(Sector(f, f + 72, 160, tag=conveyor_tag)))
    y1 = y0 + W
    m.wall((x0, y0), (x0, y1), secs[0])
    for k, (a, b, f, kind) in enumerate(segs):
        m.wall((a, y1), (b, y1), secs[k])
        m.wall((b, y0), (a, y0), secs[k])
        if k + 1 < len(segs):
            m.portal((b, y0), (b, y1), secs[k + 1], secs[k])
    m.wall((segs[-1][1], y1), (segs[-1][1], y0), secs[-1])
    for lx, (special, a0, a1) in lines:
        sec = next(secs[k] for k, (a, b, f, kind) in enumerate(segs) if a < lx < b)
        m.portal((lx, y0 + 2), (lx, y1 - 2), sec, sec, tex="-", special=special, args=(a0, a1),
                 flags=("playercross", "repeatspecial"))
    m.things.append(Thing(x0 + P.SPAWN_OFFSET, y0 + W / 2, 1))
    return segs


def _conveyor(m, tag, x=-2000, y=-2000, speed=P.DOLL_SPEED):
    ctrl = m.sector(Sector(0, 64, 0))
    L = speed * 32
    m.wall((x, y), (x, y + 32), ctrl)
    m.wall((x, y + 32), (x + L, y + 32), ctrl, special=P.SPECIAL["Scroll_Floor"], args=(tag, 4, 2, 0, 0))
    m.wall((x + L, y + 32), (x + L, y), ctrl)
    m.wall((x + L, y), (x, y), ctrl)


def _light_tile(m, x, y, tag, light=0):
    return m.rect_sector(x, y, x + 32, y + 32, Sector(0, 128, light, tag=tag))


@pytest.mark.parametrize("headroom,passes", [(55, 0), (56, 1), (57, 1), (0, 0)])
def test_door_threshold_is_exactly_the_doll_height(tmp_path, headroom, passes):
    """A doll passes a door iff ceiling - floor >= 56 (P.DOLL_HEIGHT)."""
    m = MapModel()
    _light_tile(m, 3000, 3000, 50)
    _lane(m, 0, 0, [-100], -100 + headroom, conveyor_tag=9, door_tag=8,
          line_specials=[(P.SPECIAL["Light_RaiseByValue"], 50, 1)])
    _conveyor(m, 9)
    _player(m)
    with start(tmp_path, m, "script 1 OPEN { Delay(60); g1 = GetSectorLightLevel(50); g2 = 1; }") as e:
        e.advance(65)
        assert e.user(2) == 1
        assert e.user(1) == passes
    assert P.DOLL_HEIGHT == 56


def test_staircase_relu_counts_doors(tmp_path):
    """Doors with floors t*s - 56 and ceiling v: the doll climbs min(max(v // s, 0), L)
    doors; measured for every v over the whole range at speed P.DOLL_SPEED."""
    s, L = 3, 5
    floors = [t * s - P.DOLL_HEIGHT for t in range(1, L + 1)]
    m = MapModel()
    _light_tile(m, 3000, 3000, 50)
    segs = _lane(m, 0, 0, floors, 0, conveyor_tag=9, door_tag=8,
                 line_specials=[(P.SPECIAL["Light_RaiseByValue"], 50, 1)])
    _conveyor(m, 9)
    _player(m)
    # The doll has no TID yet: it crosses no Thing_ChangeTID line. Name it from ACS by
    # its spawn spot instead: give the lane a TID line on the pad.
    tid_x = P.TID_LINE_OFFSET
    pad = m.sectors.index(next(sec for sec in m.sectors if sec.tag == 9))
    m.portal((tid_x, 2), (tid_x, P.LANE_WIDTH - 2), pad, pad, tex="-",
             special=P.SPECIAL["Thing_ChangeTID"], args=(0, 77), flags=("playercross",))
    sx, sy = P.START_OFFSET, P.LANE_WIDTH // 2
    acs = f"""
    script 2 (int v) {{
        SetActorPosition(77, {sx << 16}, {sy << 16}, {floors[0] << 16}, 0);
        SetActorVelocity(77, 0, 0, 0, FALSE, FALSE);
        Light_ChangeToValue(50, 0);
        Ceiling_MoveToValue(8, {P.plane_speed(200, 100)[0]}, v, 0);
        Delay(1);
        SetActorVelocity(77, {P.DOLL_SPEED << 16}, 0, 0, FALSE, FALSE);
        Delay(40);
        g1 = GetSectorLightLevel(50);
        g2 = v;
    }}"""
    with start(tmp_path, m, acs) as e:
        e.advance(60)
        for v in list(range(-4, L * s + 5)) + [3, -4, 16, 0]:
            e.puke(2, v)
            e.advance(45)
            assert e.user(2) == v
            assert e.user(1) == min(max(v // s, 0), L), v


def test_lights_are_concurrent_exact_accumulators(tmp_path):
    """Many adds to one light in the same tic all count; levels hold -32768..32767."""
    m = MapModel()
    for k in range(3):
        _light_tile(m, 3000 + 64 * k, 3000, 50 + k)
    _player(m)
    acs = """
    script 1 OPEN {
        Light_ChangeToValue(50, 0);
        for (int i = 0; i < 100; i++) Light_RaiseByValue(50, 7);
        for (int j = 0; j < 30; j++) Light_LowerByValue(50, 11);
        g1 = GetSectorLightLevel(50);
        Light_ChangeToValue(51, 32000); Light_RaiseByValue(51, 1000); g2 = GetSectorLightLevel(51);
        Light_ChangeToValue(52, 0); Light_LowerByValue(52, 40000); g3 = GetSectorLightLevel(52);
        Light_ChangeToValue(52, 0); Light_LowerByValue(52, 32768); g4 = GetSectorLightLevel(52);
    }"""
    with start(tmp_path, m, acs) as e:
        e.advance(3)
        assert e.users()[:4] == [700 - 330, P.LIGHT_MAX, P.LIGHT_MIN, -32768]


def test_negative_change_to_value_takes_a_neighbours_light(tmp_path):
    """Why program.Bus.reset_light resets a negative value through zero."""
    m = MapModel()
    hall = m.rect_sector(0, 0, 512, 512, Sector(0, 160, 192))
    tile = m.sector(Sector(0, 160, 5, tag=5))
    pts = [(100, 100), (100, 148), (148, 148), (148, 100)]
    for a, b in zip(pts, pts[1:] + pts[:1]):
        m.portal(a, b, tile, hall)
    m.things.append(Thing(40, 40, 1))
    acs = """
    script 1 OPEN {
        Light_ChangeToValue(5, -3); g1 = GetSectorLightLevel(5);
        Light_ChangeToValue(5, 0); Light_LowerByValue(5, 3); g2 = GetSectorLightLevel(5);
    }"""
    with start(tmp_path, m, acs) as e:
        e.advance(3)
        assert e.users()[:2] == [192, -3]


def test_plane_mover_speed_limit_and_floor_stop(tmp_path):
    """Moves within plane_speed land in one tic; a too-fast speed wraps around; a ceiling
    sent below its floor stops on the floor and later moves still work."""
    m = MapModel()
    for k in range(3):
        m.rect_sector(600 + 100 * k, 0, 664 + 100 * k, 64, Sector(-54, -54, 160, tag=10 + k))
    _player(m)
    safe, tics = P.plane_speed(4000, 2000)  # moves span up to 2000 - (-2000)
    assert tics == 1
    acs = f"""
    script 2 (int tag, int speed, int target) {{ Ceiling_MoveToValue(tag, speed, target, 0); }}
    """
    with start(tmp_path, m, acs, sectors=True) as e:
        e.advance(2)

        def move(tag, speed, target):
            e.puke(2, tag, speed, target)
            e.advance(1)
            return e.sectors()[tag - 10].ceiling  # sectors 0..2 are the test sectors

        assert move(10, safe, 2000) == 2000
        assert move(10, safe, -2000) == -54          # stops on the floor
        assert move(10, safe, 1500) == 1500          # and moves again from there
        assert move(11, safe, 300) == 300
        assert move(11, 262136, 1000) != 1000        # 262136 * 8192 + 300 * 65536 >= 2**31
        assert move(12, P.plane_speed(84, 54)[0], 30) == 30  # exactly the span: one tic


def test_one_mover_per_plane(tmp_path):
    """A second move order for a plane that is still moving is dropped silently."""
    m = MapModel()
    m.rect_sector(600, 0, 664, 64, Sector(0, 0, 160, tag=10))
    _player(m)
    acs = """
    script 1 OPEN {
        Delay(2);
        Ceiling_MoveToValue(10, 8, 100, 0);   // 1 unit per tic: still moving next tic
        Ceiling_MoveToValue(10, 8000, 50, 0); // dropped
        Delay(200);
        g1 = GetSectorCeilingZ(10, 0, 0) >> 16;
    }"""
    with start(tmp_path, m, acs) as e:
        e.advance(210)
        assert e.user(1) == 100


@pytest.mark.parametrize("n_lines", [1, 40])
def test_fast_doll_crosses_every_line_and_finishes_in_time(tmp_path, n_lines):
    """At P.DOLL_SPEED a doll triggers every line of a landing (spaced P.LINE_SPACING), and
    a long lane is done within program.run_tics of its length."""
    from mapgen.program import run_tics
    m = MapModel()
    _light_tile(m, 3000, 3000, 50)
    levels = 12
    floors = [t * 2 - P.DOLL_HEIGHT for t in range(1, levels + 1)]
    segs = _lane(m, 0, 0, floors, 1000, conveyor_tag=9, door_tag=8,
                 line_specials=[(P.SPECIAL["Light_RaiseByValue"], 50, 1)] * n_lines)
    _conveyor(m, 9)
    pad = m.sectors.index(next(sec for sec in m.sectors if sec.tag == 9))
    m.portal((P.TID_LINE_OFFSET, 2), (P.TID_LINE_OFFSET, P.LANE_WIDTH - 2), pad, pad, tex="-",
             special=P.SPECIAL["Thing_ChangeTID"], args=(0, 77), flags=("playercross",))
    _player(m)
    travel = segs[-1][1] - P.DOLL_RADIUS - P.START_OFFSET
    budget = run_tics(travel)
    acs = f"""
    script 2 (void) {{
        SetActorPosition(77, {P.START_OFFSET << 16}, {(P.LANE_WIDTH // 2) << 16}, {floors[0] << 16}, 0);
        SetActorVelocity(77, 0, 0, 0, FALSE, FALSE);
        Light_ChangeToValue(50, 0);
        Delay(1);
        SetActorVelocity(77, {P.DOLL_SPEED << 16}, 0, 0, FALSE, FALSE);
        Delay({budget});
        g1 = GetSectorLightLevel(50);
        g2 = GetActorX(77) >> 16;
    }}"""
    with start(tmp_path, m, acs) as e:
        e.advance(200)
        for _ in range(2):
            e.puke(2)
            e.advance(budget + 3)
            assert e.user(1) == levels * n_lines
            # resting against the end wall (a blocked doll stops within a unit of it)
            assert segs[-1][1] - P.DOLL_RADIUS - 2 <= e.user(2) <= segs[-1][1] - P.DOLL_RADIUS
