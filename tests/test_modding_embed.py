"""`embed` on maps nobody here wrote: the ViZDoom scenarios, played with their own
configuration, still play exactly as before while the embedded circuit computes exactly;
wiring errors, placement limits, Doom-format refusal and Hexen-format conversion."""
from __future__ import annotations

import os
import random

import pytest

from conftest import ROOT
from dsl.diagnostics import VoodooError
from engine.scenario import Scenario
from mapgen.compile import load_wad
from modding.embed import EmbedError, embed, place
from modding.playtest import PanelDriver
from modding.textmap import MapError, TextMap, parse_textmap

PEDALS = os.path.join(ROOT, "circuits", "pedals.dnet")
WIRING = os.path.join(ROOT, "circuits", "pedals-my_way_home.wiring")


def _scenarios() -> str:
    import vizdoom

    return os.path.join(os.path.dirname(vizdoom.__file__), "scenarios")


def _wiring(tmp_path, text: str) -> str:
    p = tmp_path / "w.wiring"
    p.write_text(text)
    return str(p)


def test_my_way_home_pads_compute_exactly_and_the_maze_is_still_won(tmp_path):
    """Three maze rooms are the pedals: walking into one toggles its input; every light of
    the machine equals the reference after every toggle, the lamp room's light is the lamp
    and the floor output's room stands at maj. Then the armour still ends the episode with
    its reward, exactly as in the original WAD (same seed, same actions)."""
    src = os.path.join(_scenarios(), "my_way_home.wad")
    wad = str(tmp_path / "mwh.wad")
    embed(PEDALS, src, "MAP01", WIRING, wad)
    loaded = load_wad(wad)
    cfg = os.path.join(_scenarios(), "my_way_home.cfg")
    with Scenario(cfg, wad, seed=3, sectors=True) as s:
        d = PanelDriver(s, loaded.infos[0], loaded.net)
        d.settle()
        for name in ["s[0]", "s[1]", "s[2]", "s[1]", "s[0]", "s[1]"]:
            d.leave((240, -176))
            d.toggle(name, via="pad")
            d.settle()
            ok, got, want = d.check()
            assert ok, (d.x, got, want)
            assert d.driven()[0] == want["value:lamp"]
            assert s.sector(12)[0] == want["value:maj"]
    results = []
    for w in (src, wad):
        with Scenario(cfg, w, seed=3) as s:
            rng = random.Random(1)
            for _ in range(150):
                s.act((rng.choice(s.buttons),))
            midway = (round(s.total_reward(), 6), s.var("POSITION_X"), s.var("POSITION_Y"))
            s.command("warp 1040 -352")   # onto the armour: their script 3 exits the map
            for _ in range(40):
                if s.finished():
                    break
                s.act(())
            results.append((midway, s.finished(), round(s.total_reward(), 6)))
    assert results[0] == results[1] and results[0][1] is True and results[0][2] > 0.9


class Agent:
    """A fixed agent (turn left, shoot three tics in four) that plays every tic advanced,
    whoever advances it: the test's waits and the driver's reads alike."""

    def __init__(self, scenario):
        self.s = scenario
        self.k = 0
        self.rewards = []

    def act(self, pressed=(), tics=1):
        for _ in range(tics):
            if self.s.finished():
                return
            r = self.s.act(("TURN_LEFT", "ATTACK") if self.k % 4 else ("TURN_LEFT",))
            if r:
                self.rewards.append((self.k, r))
            self.k += 1

    def __getattr__(self, name):
        return getattr(self.s, name)


def test_defend_the_center_plays_tic_for_tic_as_before_while_the_circuit_runs(tmp_path):
    """The arena's light is the lamp. The same agent plays the original and the embedded WAD
    with the same seed; in the embedded one the inputs are flipped through the panel every
    40 tics and the whole machine is read back. Rewards (kills) arrive in the same tics and
    the episode ends in the same tic, and every read equals the reference."""
    src = os.path.join(_scenarios(), "defend_the_center.wad")
    wad = str(tmp_path / "dtc.wad")
    embed(PEDALS, src, "MAP01", _wiring(tmp_path, "output lamp = light sector 0\n"), wad)
    loaded = load_wad(wad)
    cfg = os.path.join(_scenarios(), "defend_the_center.cfg")
    runs = []
    for w in (src, wad):
        with Scenario(cfg, w, seed=7) as s:
            a = Agent(s)
            if w == src:
                a.act(tics=3000)
            else:
                d = PanelDriver(a, loaded.infos[0], loaded.net)
                checks = 0
                while not s.finished():
                    a.act(tics=40)
                    if s.finished():
                        break
                    d.toggle(f"s[{checks % 3}]", via="script")
                    try:
                        d.settle()
                        ok, got, want = d.check()
                        lamp = d.driven()[0]
                    except VoodooError:
                        assert s.finished()   # the marine died mid-read: the episode is over
                        break
                    assert ok, (d.x, got, want)
                    assert lamp == want["value:lamp"]
                    checks += 1
                assert checks >= 3
            runs.append((a.rewards, a.k, s.total_reward()))
    assert runs[0] == runs[1]
    assert sum(1 for _, r in runs[0][0] if r > 0) >= 2


def test_embedding_keeps_their_lumps_and_is_deterministic(tmp_path):
    from acs.wad import read_wad

    src = os.path.join(_scenarios(), "defend_the_center.wad")
    a, b = str(tmp_path / "a.wad"), str(tmp_path / "b.wad")
    w = _wiring(tmp_path, "output lamp = light sector 0\n")
    embed(PEDALS, src, "MAP01", w, a)
    embed(PEDALS, src, "MAP01", w, b)
    assert open(a, "rb").read() == open(b, "rb").read()
    theirs = dict(read_wad(src).lumps)
    ours = read_wad(a)
    names = [n for n, _ in ours.lumps]
    assert "ZNODES" not in names and "DECORATE" in names
    assert dict(ours.lumps)["BEHAVIOR"] == theirs["BEHAVIOR"]
    assert dict(ours.lumps)["LOADACS"].strip() == b"VNETLIB"
    tm = parse_textmap(ours.maps[0].textmap)
    assert tm.things[-1]["type"] == 1 or any(t["type"] == 1 for t in tm.things[-3:])


@pytest.mark.parametrize("text, needle", [
    ("input q = toggle sector 3\n", "'q' is not an input"),
    ("input s[0] = toggle sector 999\n", "no sector 999"),
    ("input s[0] = flip sector 3\n", "cannot read"),
    ("output nope = light sector 0\n", "'nope' is not a node"),
])
def test_wiring_errors_name_the_line(tmp_path, text, needle):
    src = os.path.join(_scenarios(), "my_way_home.wad")
    with pytest.raises(VoodooError) as e:
        embed(PEDALS, src, "MAP01", _wiring(tmp_path, "# first line\n" + text),
              str(tmp_path / "o.wad"))
    assert needle in str(e.value) and "w.wiring:2" in str(e.value)
    assert not os.path.exists(tmp_path / "o.wad")


def test_a_line_with_their_special_is_refused(tmp_path):
    from acs import compile_source
    from acs.testmap import room_textmap
    from acs.wad import MapLump, write_wad

    tm = parse_textmap(room_textmap())
    tm.linedefs[0].update(special=12, arg0=5)
    wad = str(tmp_path / "room.wad")
    write_wad(wad, [MapLump("MAP01", tm.text(), compile_source("script 1 OPEN {}"))])
    with pytest.raises(VoodooError) as e:
        embed(PEDALS, wad, "MAP01", _wiring(tmp_path, "input s[0] = toggle use line 0\n"),
              str(tmp_path / "o.wad"))
    assert "line 0 already has special 12" in str(e.value)


def test_no_free_space_is_a_clear_error():
    tm = TextMap(vertices=[{"x": -32700.0, "y": -32700.0}, {"x": 32700.0, "y": 32700.0}])
    with pytest.raises(EmbedError) as e:
        place(tm, (0, -500, 2000, 500))
    assert "no free space" in str(e.value)


def test_doom_format_map_is_refused(tmp_path):
    from modding.wadio import write_lumps

    wad = str(tmp_path / "doom.wad")
    write_lumps(wad, [("MAP01", b""), ("THINGS", b""), ("LINEDEFS", b""), ("SIDEDEFS", b""),
                      ("VERTEXES", b""), ("SECTORS", b"")])
    with pytest.raises(MapError) as e:
        embed(PEDALS, wad, "MAP01", _wiring(tmp_path, "output lamp = light sector 0\n"),
              str(tmp_path / "o.wad"))
    assert "Doom-format map" in str(e.value) and "UDMF" in str(e.value)


def _hexen_room(path: str) -> None:
    """A Hexen-format WAD: a 256x256 room, a smaller room (sector 1) as a door, a script."""
    import omg
    import omg.mapedit as me

    from acs import compile_source

    ed = me.MapEditor()
    ed.Thing, ed.Linedef = me.ZThing, me.ZLinedef
    pts = [(0, 0), (0, 256), (256, 256), (256, 0)]
    ed.vertexes = [me.Vertex(x, y) for x, y in pts + [(96, 96), (96, 160), (160, 160), (160, 96)]]
    ed.sectors = [me.Sector(z_floor=0, z_ceil=128, tx_floor="FLOOR0_1", tx_ceil="CEIL1_1",
                            light=160),
                  me.Sector(z_floor=0, z_ceil=96, tx_floor="FLAT5", tx_ceil="CEIL1_1",
                            light=200)]
    for k in range(4):
        ed.sidedefs.append(me.Sidedef(tx_mid="STARTAN2", sector=0))
        ed.linedefs.append(me.ZLinedef(vx_a=k, vx_b=(k + 1) % 4, flags=1, front=k,
                                       back=0xFFFF))
    for k in range(4):
        ed.sidedefs.append(me.Sidedef(tx_up="STARTAN2", tx_low="STARTAN2", sector=0))
        ed.sidedefs.append(me.Sidedef(sector=1))
        ed.linedefs.append(me.ZLinedef(vx_a=4 + (k + 1) % 4, vx_b=4 + k, flags=4,
                                       front=4 + 2 * k, back=5 + 2 * k))
    ed.things = [me.ZThing(x=32, y=32, type=1, angle=0, flags=0x707)]
    ed.behavior = omg.Lump(compile_source('#include "zcommon.acs"\n'
                                          "global int 40:theirs;\n"
                                          "script 1 OPEN { theirs = 4242; }"))
    w = omg.WAD()
    w.maps["MAP01"] = ed.to_lumps()
    w.to_file(path)


def test_hexen_map_is_converted_and_a_door_output_opens(tmp_path):
    """A Hexen-format map becomes UDMF; sector 1 is a door driven by maj: shut while fewer
    than two inputs are on, open (ceiling 120) once two are; their OPEN script still runs."""
    from engine.doom import Engine

    src = str(tmp_path / "hexen.wad")
    _hexen_room(src)
    wad = str(tmp_path / "o.wad")
    embed(PEDALS, src, "MAP01", _wiring(tmp_path, "output maj = door sector 1 open 120\n"
                                                  "input s[2] = set 1 use line 2\n"), wad)
    loaded = load_wad(wad)
    info = loaded.infos[0]
    tm = parse_textmap(dict(__import__("acs.wad", fromlist=["read_wad"]).read_wad(wad)
                            .lumps)["TEXTMAP"].decode())
    assert tm.namespace == "zdoom" and len(tm.sectors) > 2

    class Player:  # PanelDriver plays through act(); the plain engine advances
        def __init__(self, e):
            self.e = e

        def act(self, pressed=(), tics=1):
            self.e.advance(tics)

        def __getattr__(self, name):
            return getattr(self.e, name)

    with Engine(wad, sectors=True, buttons=("USE",)) as e:
        d = PanelDriver(Player(e), info, loaded.net)
        d.settle()
        assert e.user(40) == 4242
        e.advance(30)   # the door moves 8 units per tic: give it time to shut
        assert e.sectors()[1].ceiling == 0
        for k, want in ((0, 0), (1, 120), (2, 120), (0, 120), (1, 0)):
            d.toggle(f"s[{k}]", via="script")
            d.settle()
            ok, got, ref = d.check()
            assert ok, (d.x, got, ref)
            e.advance(30)   # the door moves 8 units per tic
            assert e.sectors()[1].ceiling == want, (d.x, e.sectors()[1])
        # Their east wall (line 2) is a switch now: pressing use on it sets s[2] to 1.
        e.command("warp 224 32")
        e.advance(2)
        e.advance(1, [1.0])
        d.x[2] = 1
        d.settle()
        ok, got, ref = d.check()
        assert ok and got["value:s[2]"] == 1, (d.x, got, ref)


def test_commands_fail_cleanly(tmp_path):
    """Foreign or broken input: a message and a non-zero exit, never a traceback."""
    import subprocess
    import sys

    from acs.testmap import room_textmap
    from acs.wad import MapLump, write_wad

    room = str(tmp_path / "room.wad")
    write_wad(room, [MapLump("MAP01", room_textmap())])
    build = os.path.join(ROOT, "build.py")
    cases = [
        (["extract", room], "not a VoodooNet machine"),
        (["verify", str(tmp_path / "missing.wad")], "cannot read the WAD"),
        (["embed", PEDALS, "--into", "vizdoom:nope", "--wiring", WIRING, "-o",
          str(tmp_path / "o.wad")], "no scenario nope.wad"),
        (["embed", PEDALS, "--into", room, "--map", "MAP07", "--wiring", WIRING, "-o",
          str(tmp_path / "o.wad")], "no map MAP07"),
    ]
    for args, needle in cases:
        r = subprocess.run([sys.executable, build, *args], capture_output=True, text=True)
        assert r.returncode != 0 and needle in r.stderr and "Traceback" not in r.stderr, \
            (args, r.stderr)
    assert not os.path.exists(tmp_path / "o.wad")


def test_an_embedded_circuit_is_extracted_and_verified_from_the_host_map(tmp_path):
    """extract and verify read the machine from the host map plus our library (scripts
    renumbered, tags above the host's), and the host's light-output sector (same tag, no
    comment) is not mistaken for the lamp's own light."""
    from dsl import load
    from mapgen.circuit import lower
    from modding.extract import extract_wad
    from modding.verify import verify_map

    wad = str(tmp_path / "mwh.wad")
    embed(PEDALS, os.path.join(_scenarios(), "my_way_home.wad"), "MAP01", WIRING, wad)
    ex = extract_wad(wad)
    net = load(PEDALS)
    c = lower(net)
    names = {n.id: n.name for n in c.net.nodes}
    assert sorted((l.name, l.role, l.reset) for l in ex.machine.lights.values()) == \
        sorted((names[l.node], l.role, l.reset) for l in c.lights)
    assert min(ex.machine.lights) == 100   # the next hundred above every tag of the host
    rep = verify_map(wad, runs=4)
    assert rep.changes == [] and rep.errors == [] and rep.exact is True, rep.engine


def test_a_map_without_a_player_start_is_refused(tmp_path):
    from acs.testmap import room_textmap
    from acs.wad import MapLump, write_wad

    tm = parse_textmap(room_textmap())
    tm.things = []
    wad = str(tmp_path / "room.wad")
    write_wad(wad, [MapLump("MAP01", tm.text())])
    with pytest.raises(EmbedError) as e:
        embed(PEDALS, wad, "MAP01", _wiring(tmp_path, "output lamp = light sector 0\n"),
              str(tmp_path / "o.wad"))
    assert "no player 1 start" in str(e.value)
