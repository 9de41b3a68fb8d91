"""Every engine fact mapgen/physics.py relies on, measured in ViZDoom on a purpose-built map."""
import pytest

from mapgen import physics as P
from mapgen.udmf import MapModel, Sector, Thing
from enginekit import room, start


def _player(m):
    room(m)
    m.things.append(Thing(-1024 + 128, -1024 + 128, 1))


def _lane(m, doors, conveyor_tag=10, door_tag=8, tid=77):
    """One lane built by the real layout code: doors is [(threshold, [(light tag, amount)])]."""
    from mapgen.circuit import Door, Lane
    from mapgen.layout import emit_lane
    from mapgen.lanes import lane_geometry
    lane = Lane(0, 0, [Door(t, 1, adds, lines=adds) for t, adds in doors], 0, 0, 0, ("input", 0),
                door_tag=door_tag, tid=tid)
    g = lane_geometry(lane, 0, 0)
    emit_lane(m, g, conveyor_tag)
    x, y, _ = g.spawn
    m.things.append(Thing(x, y, 1))
    return g


def _ride(g, tid=77, pre="", delay=40, speed=P.DOLL_SPEED):
    """ACS for one ride: park the doll, `pre`, release it, wait `delay` tics."""
    x, y, z = g.start
    return f"""
        Scroll_Floor(9, 0, 0, 1);
        SetActorPosition({tid}, {int(x) << 16}, {int(y) << 16}, {z << 16}, 0);
        SetActorVelocity({tid}, 0, 0, 0, FALSE, FALSE);
        {pre}
        Delay(1);
        SetActorVelocity({tid}, {speed << 16}, 0, 0, FALSE, FALSE);
        Delay({delay});"""


def _conveyor(m, tag=10, x=-2000, y=-2000):
    """The lanes' controls as the compiler makes them: frictionless lanes of `tag`, the
    spawn strips carrying new dolls over their naming lines. A released doll glides at the
    speed it is given."""
    from mapgen.layout import conveyor_control
    conveyor_control(m, tag, x, y)


def _light_tile(m, x, y, tag, light=0):
    return m.rect_sector(x, y, x + 32, y + 32, Sector(0, 128, light, tag=tag))


@pytest.mark.parametrize("headroom,passes", [(55, 0), (56, 1), (57, 1), (0, 0)])
def test_door_threshold_is_exactly_the_doll_height(tmp_path, headroom, passes):
    """A doll passes a door iff ceiling - floor >= 56 (P.DOLL_HEIGHT)."""
    m = MapModel()
    _light_tile(m, 3000, 3000, 50)
    g = _lane(m, [(100, [(50, 1)])])
    _conveyor(m)
    _player(m)
    floor = 100 - P.DOLL_HEIGHT
    speed = P.plane_speed(200, 200)[0]
    acs = ("script 1 OPEN { Delay(30);" + _ride(g, pre=f"Light_ChangeToValue(50, 0); "
           f"Ceiling_MoveToValue(8, {speed}, {floor + headroom}, 0);")
           + " g1 = GetSectorLightLevel(50); g2 = 1; }")
    with start(tmp_path, m, acs) as e:
        e.advance(80)
        assert e.user(2) == 1
        assert e.user(1) == passes
    assert P.DOLL_HEIGHT == 56


@pytest.mark.parametrize("factor", [1, 2])
def test_staircase_relu_counts_doors(tmp_path, factor):
    """Doors at thresholds t*s with every ceiling at v: the doll climbs min(max(v // s, 0), L)
    doors; measured for every v over the whole range at speed P.DOLL_SPEED and at twice it."""
    s, L = 3, 5
    m = MapModel()
    _light_tile(m, 3000, 3000, 50)
    g = _lane(m, [(t * s, [(50, 1)]) for t in range(1, L + 1)])
    _conveyor(m)
    _player(m)
    speed = P.plane_speed(200, 100)[0]
    acs = ("script 2 (int v) {" + _ride(g, pre=f"Light_ChangeToValue(50, 0); "
           f"Ceiling_MoveToValue(8, {speed}, v, 0);", speed=P.DOLL_SPEED * factor) + " g1 = GetSectorLightLevel(50); g2 = v; }")
    with start(tmp_path, m, acs) as e:
        e.advance(30)
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
    acs = """
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
@pytest.mark.parametrize("factor", [1, 2])
def test_fast_doll_crosses_every_line_and_finishes_in_time(tmp_path, n_lines, factor):
    """At P.DOLL_SPEED a doll triggers every line of a landing (spaced P.LINE_SPACING), and
    a long lane is done within program.run_tics of its length: by then it has met the end
    wall, bounced (gliding on a frictionless floor, it rebounds at half its speed) and been
    stopped by the first portal it crosses going back (Thing_Stop from the east); riding back
    west counts none of its lines again. Twice as fast it still counts every line: the
    margin the chosen speed keeps."""
    from mapgen.program import run_tics
    m = MapModel()
    _light_tile(m, 3000, 3000, 50)
    levels = 12
    g = _lane(m, [(2 * t, [(50, 1)] * n_lines) for t in range(1, levels + 1)])
    _conveyor(m)
    _player(m)
    budget = run_tics(g.travel())
    acs = ("script 2 (void) {" + _ride(g, pre="Light_ChangeToValue(50, 0); "
           f"Ceiling_MoveToValue(8, {P.plane_speed(200, 100)[0]}, 1000, 0);", delay=budget,
                       speed=P.DOLL_SPEED * factor)
           + " g1 = GetSectorLightLevel(50); g2 = GetActorVelX(77); g4 = GetActorX(77) >> 16;"
             " Delay(60); g3 = GetSectorLightLevel(50); g5 = GetActorX(77) >> 16; }")
    end = g.segments[-1].x1
    with start(tmp_path, m, acs) as e:
        e.advance(30)
        for _ in range(2):
            e.puke(2)
            e.advance(budget + 3)
            assert e.user(1) == levels * n_lines
            # it met the end wall, bounced and was stopped, within the budget
            assert e.user(2) == 0
            assert g.segments[-1].x0 - P.DOLL_SPEED * factor <= e.user(4) \
                <= end - P.DOLL_RADIUS
            e.advance(61)
            assert e.user(3) == levels * n_lines   # the way back counted nothing
            assert e.user(5) == e.user(4)          # and it rests


def test_parked_doll_stays_put(tmp_path):
    """A doll parked on its pad (not a conveyor) does not move, even with its door open."""
    m = MapModel()
    _light_tile(m, 3000, 3000, 50)
    g = _lane(m, [(2, [(50, 1)])])
    _conveyor(m)
    _player(m)
    x, y, z = g.start
    acs = f"""script 2 (void) {{
        Ceiling_MoveToValue(8, {P.plane_speed(200, 100)[0]}, 1000, 0);
        Light_ChangeToValue(50, 0);
        SetActorPosition(77, {int(x) << 16}, {int(y) << 16}, {z << 16}, 0);
        SetActorVelocity(77, 0, 0, 0, FALSE, FALSE);
        Delay(60);
        g1 = GetSectorLightLevel(50); g2 = GetActorX(77) >> 16; g3 = 1;
    }}"""
    with start(tmp_path, m, acs) as e:
        e.advance(30)
        e.puke(2)
        e.advance(65)
        assert e.users()[:3] == [0, int(x), 1]


def test_a_group_tag_reaches_every_sector_carrying_it(tmp_path):
    """Weight groups rely on this: a light special aimed at a tag acts on every sector that
    carries the tag among its moreids, and only on them."""
    m = MapModel()
    for k, (tag, more) in enumerate([(50, (60,)), (51, (60, 61)), (52, (61,)), (53, ())]):
        m.rect_sector(3000 + 64 * k, 3000, 3032 + 64 * k, 3032,
                      Sector(0, 128, 0, tag=tag, more_tags=more))
    _player(m)
    acs = """script 1 OPEN {
        Light_RaiseByValue(60, 5); Light_LowerByValue(61, 2);
        g1 = GetSectorLightLevel(50); g2 = GetSectorLightLevel(51);
        g3 = GetSectorLightLevel(52); g4 = GetSectorLightLevel(53);
    }"""
    with start(tmp_path, m, acs) as e:
        e.advance(3)
        assert e.users()[:4] == [5, 3, -2, 0]


@pytest.mark.parametrize("rise,full_speed", [(P.MAX_RISE, True), (P.MAX_RISE + 1, False)])
def test_rises_above_max_rise_stop_a_fast_doll(tmp_path, monkeypatch, rise, full_speed):
    """Doors each `rise` above the last (no ramps between them), all open: at MAX_RISE the
    doll keeps lane speed; one unit more and it halts on the way (measured at the sixth)."""
    monkeypatch.setattr(P, "MAX_RISE", 24)   # build the raw staircase, without stairs
    m = MapModel()
    _light_tile(m, 3000, 3000, 50)
    g = _lane(m, [(rise * t, [(50, 1)]) for t in range(1, 17)])
    _conveyor(m)
    _player(m)
    tics = 10
    acs = ("script 2 (void) {" + _ride(g, pre="Light_ChangeToValue(50, 0); "
           f"Ceiling_MoveToValue(8, {P.plane_speed(500, 500)[0]}, 1000, 0);", delay=tics)
           + " g1 = GetActorX(77) >> 16; g2 = 1; }")
    with start(tmp_path, m, acs) as e:
        e.advance(30)
        e.puke(2)
        e.advance(tics + 4)
        assert e.user(2) == 1
        at_speed = g.start[0] + P.DOLL_SPEED * (tics - 1)
        assert (e.user(1) >= at_speed) == full_speed, e.user(1)


@pytest.mark.parametrize("tread,through", [(P.RAMP_STEP_LENGTH, True), (32, False)])
def test_ramp_treads_long_enough_for_one_tic_of_ride(tmp_path, monkeypatch, tread, through):
    """A ramp of 12-unit stairs between two doors 240 apart: with treads of
    RAMP_STEP_LENGTH (DOLL_SPEED * MAX_RISE / MAX_STEP) the doll rides over it and crosses
    the far door's line in the scheduled run_tics; with 32-unit treads (fine at 64 units per
    tic) one tic's move rises more than MAX_STEP and the doll halts on the ramp."""
    from mapgen.program import run_tics
    monkeypatch.setattr(P, "RAMP_STEP_LENGTH", tread)
    m = MapModel()
    _light_tile(m, 3000, 3000, 50)
    g = _lane(m, [(0, [(50, 1)]), (240, [(50, 10)])])
    assert sum(s.kind == "ramp" for s in g.segments) == 19
    _conveyor(m)
    _player(m)
    acs = ("script 2 (void) {" + _ride(g, pre="Light_ChangeToValue(50, 0); "
           f"Ceiling_MoveToValue(8, {P.plane_speed(2000, 2000)[0]}, 1000, 0);",
           delay=run_tics(g.travel())) + " g1 = GetSectorLightLevel(50); g2 = 1; }")
    with start(tmp_path, m, acs) as e:
        e.advance(30)
        e.puke(2)
        e.advance(run_tics(g.travel()) + 4)
        assert e.user(2) == 1
        assert (e.user(1) == 11) == through, e.user(1)


def test_a_ride_is_over_within_run_tics(tmp_path):
    """mapgen.program.run_tics of a lane's reach (its last line, at DOLL_SPEED, plus
    SETTLE_TICS) covers that line on a lane whose every door is open; two tics fewer do
    not: the bound is tight."""
    from mapgen.program import run_tics
    m = MapModel()
    _light_tile(m, 3000, 3000, 50)
    g = _lane(m, [(12 * t, [(50, 1)]) for t in range(16)])
    _conveyor(m)
    _player(m)
    T = run_tics(g.reach())
    reads = "".join(f"Delay(1); g{k} = GetSectorLightLevel(50);" for k in range(1, T + 1))
    acs = ("script 2 (void) {" + _ride(g, pre="Light_ChangeToValue(50, 0); "
           f"Ceiling_MoveToValue(8, {P.plane_speed(500, 500)[0]}, 1000, 0);", delay=0)
           + reads + " }")
    with start(tmp_path, m, acs) as e:
        e.advance(30)
        e.puke(2)
        e.advance(T + 4)
        seen = e.users()[:T]   # the light after 1, 2, ..., T tics of ride
        assert seen[-1] == 16, seen
        assert seen[-3] < 16, (T, str(seen))
