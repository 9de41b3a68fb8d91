"""The control room of any compiled circuit (mapgen/controls.py), played by a walking
visitor in ViZDoom (engine/visitor.py): every kind of control (toggle pads, a pad grid,
DEC / INC switches, preset pedals, RUN, AUTO), every display read back from its segments
and compared with the integer reference; and, without the engine, what the room is made
of: control ACS that never reads the machine, paths to every control that cross no other
control, textures that exist, the same bytes every build."""
from __future__ import annotations

import glob
import os

import pytest

from conftest import NEEDS_TILES_ROOM, ROOT
from dsl.diagnostics import CompileError
from dsl import load
from dsl.parser import parse
from dsl.reference import evaluate
from mapgen import display as D
from mapgen.compile import write_wad
from mapgen.controls import compile_room, control_violations, input_kinds

CIRCUITS = os.path.join(ROOT, "circuits")
WIDE = ("network wide\ninput v[20] : 0..2\nneuron s : identity = v[0] + v[1] + v[2] + v[3] + "
        "v[4] + v[5] + v[6] + v[7] + v[8] + v[9] + v[10] + v[11] + v[12] + v[13] + v[14] + "
        "v[15] + v[16] + v[17] + v[18] + v[19]\nneuron d : identity = v[0] - 2*v[19]\n"
        "output s, d\n")


def _room(tmp_path_factory, name: str, net=None):
    from engine.visitor import ControlRoomDriver

    net = net or load(os.path.join(CIRCUITS, f"{name}.dnet"))
    cm, full = compile_room(net)
    wad = str(tmp_path_factory.mktemp(name) / f"{name}.wad")
    write_wad(wad, [cm], full)
    return net, full, cm, ControlRoomDriver(wad, cm.manifest)


def _check(d, net, full) -> dict:
    """Every display shows the reference's value for the inputs the visitor set, the
    machine took exactly those inputs, and every light equals the reference."""
    d.wait_idle()
    lights = d.lights()
    assert [lights[net.nodes[i].name] for i in net.inputs] == d.inputs
    ref = evaluate(full, [d.inputs]).named(0)
    shown = d.shown(lights)
    assert shown == {k: ref[k] for k in shown}
    assert all(shown[net.nodes[o].name] is not None for o in net.outputs)
    assert all(lights[k] == ref[k] for k in lights)
    return shown


@pytest.fixture(scope="module")
def xor(tmp_path_factory):
    net, full, cm, d = _room(tmp_path_factory, "xor")
    with d:
        yield net, full, cm, d


def test_toggle_pads_run_on_every_change(xor):
    """AUTO is on at the start: stepping on a pad toggles its input and runs the machine."""
    net, full, cm, d = xor
    assert input_kinds(net) == {0: "pad", 1: "pad"}
    seen = []
    for a, b in ((1, 0), (1, 1), (0, 1), (0, 0)):
        d.set_input(0, a)
        d.set_input(1, b)
        seen.append(_check(d, net, full)["y"])
    assert seen == [1, 0, 1, 0]


@pytest.fixture(scope="module")
def mlp3(tmp_path_factory):
    net, full, cm, d = _room(tmp_path_factory, "mlp3")
    with d:
        yield net, full, cm, d


def test_dec_inc_switches_show_the_inputs_and_signed_outputs(mlp3):
    net, full, cm, d = mlp3
    assert set(input_kinds(net).values()) == {"dial"}
    for k, v in enumerate([2, 0, 3, 1]):
        d.set_input(k, v)
    shown = _check(d, net, full)
    assert [shown[f"x[{k}]"] for k in range(4)] == [2, 0, 3, 1]
    assert shown["o[1]"] < 0            # a signed output, its minus sign lit
    d.set_input(0, 0)                   # DEC below the range: stays at 0
    d.use("x[0] DEC", 2)
    assert d.inputs[0] == 0
    _check(d, net, full)


def test_auto_off_then_run(mlp3):
    """With AUTO off, changing inputs runs nothing (the displays keep the last run); RUN
    runs the machine on the inputs as they are."""
    net, full, cm, d = mlp3
    runs = d.wait_idle()
    before = d.shown()
    d.use("AUTO")
    assert d.status()[2] == 0
    d.set_input(1, 3)
    d.set_input(3, 3)
    assert d.wait_idle() == runs and d.shown() == before
    d.use("RUN")
    assert d.wait_idle() == runs + 1
    _check(d, net, full)
    d.use("AUTO")
    assert d.status()[2] == 1


def test_a_signed_single_output(tmp_path_factory):
    net, full, cm, d = _room(tmp_path_factory, "neuron")
    with d:
        for x in ([0, 3, 0], [3, 0, 3]):
            for k, v in enumerate(x):
                d.set_input(k, v)
            assert _check(d, net, full)["y"] == evaluate(net, [x]).last_outputs()[0][0]
    assert evaluate(net, [[0, 3, 0]]).last_outputs()[0][0] == -2


def test_a_grid_of_pads(tmp_path_factory):
    """Tic-tac-toe's 18 binary inputs are two 3x3 grids of pads; the visitor walks between
    pads to reach an inner one."""
    net, full, cm, d = _room(tmp_path_factory, "tictactoe")
    with d:
        assert set(input_kinds(net).values()) == {"pad"}
        names = [net.nodes[i].name for i in net.inputs]
        for name in ("x[4]", "x[0]", "o[8]"):
            d.set_input(names.index(name), 1)
        shown = _check(d, net, full)
        assert shown["move"] == evaluate(net, [d.inputs]).named(0)["move"]


def test_preset_pedals_and_the_image(tmp_path_factory):
    net = parse(WIDE, "<wide>")
    net, full, cm, d = _room(tmp_path_factory, "wide", net)
    with d:
        assert set(input_kinds(net).values()) == {"preset"}
        image = d.displays.images[0]
        for k in range(len(cm.manifest["controls"]["presets"])):
            d.use(f"v preset {k + 1}")
            assert d.inputs == cm.manifest["controls"]["presets"][k]
            _check(d, net, full)
            lights = d.lights()
            assert [lights[p] for p in image.pixels] == \
                [image.base + image.step * (x - image.lo) for x in d.inputs]


# -- without the engine ----------------------------------------------------------------------
@pytest.fixture(scope="module")
def built():
    out = {}
    for name in ("xor", "mlp3", "tictactoe"):
        out[name] = compile_room(load(os.path.join(CIRCUITS, f"{name}.dnet")))
    out["wide"] = compile_room(parse(WIDE, "<wide>"))
    return out


def test_controls_never_read_the_machine(built):
    for cm, _ in built.values():
        controls = cm.acs[cm.acs.index("// The visitor's controls"):]
        assert control_violations(controls) == []
    for bad in ("inputs[0] = GetSectorLightLevel(5);", "user1 = GetSectorLightLevel(5);",
                'Print(s:"y = ", d:user1);', "inputs[0] = inputs[1] + 1;",
                "Light_ChangeToValue(5, GetSectorLightLevel(6));", "x = GetActorX(0);"):
        assert control_violations(bad) == [bad]


def _segments(m, sector):
    """The boxes of the pads and posts of a room: what a path must not cross."""
    xs = {}
    for ln in m.lines:
        for side in (ln.front, ln.back):
            if side >= 0 and m.sides[side].sector == sector:
                for v in (ln.v1, ln.v2):
                    xs.setdefault(sector, []).append(m.vertices[v])
    pts = xs[sector]
    return (min(p[0] for p in pts), min(p[1] for p in pts), max(p[0] for p in pts),
            max(p[1] for p in pts))


def test_every_control_has_a_clear_path(built):
    """Walking a control's approach from its aisle (and along the aisles and the corridor)
    never puts the visitor's centre on another pad, nor its body in a post."""
    for name, (cm, _) in built.items():
        m, room = cm.layout.model, cm.manifest["controls"]
        things = [t for t in m.things if t.type == 9998]
        blocks = []
        for i, s in enumerate(m.sectors):
            if s.comment.startswith(("pad", "pedal", "AUTO", "switch post")):
                blocks.append((_segments(m, i), s.comment))
        assert len([b for b in blocks if not b[1].startswith("switch")]) >= len(
            [c for c in room["controls"] if c["kind"] == "pad"])
        assert things
        for c in room["controls"]:
            path = [(room["corridor"], c["aisle"])] + [tuple(p) for p in c["approach"]]
            for (x0, y0), (x1, y1) in zip(path, path[1:]):
                for k in range(0, 101):
                    x, y = x0 + (x1 - x0) * k / 100, y0 + (y1 - y0) * k / 100
                    for (bx0, by0, bx1, by1), what in blocks:
                        pad = not what.startswith("switch")
                        r = 0 if pad else 16
                        inside = bx0 - r < x < bx1 + r and by0 - r < y < by1 + r
                        own = pad and (bx0 < path[-1][0] < bx1 and by0 < path[-1][1] < by1)
                        assert not inside or own, f"{name}: {c['name']} crosses {what}"


def missing_textures(textmap: str) -> list[str]:
    """Wall textures and flats a map names that the IWAD (Freedoom 2) does not have."""
    import re

    import omg
    from omg.txdef import Textures

    from engine.gzdoom import freedoom2

    wad = omg.WAD(freedoom2())
    walls, flats = set(Textures(wad.txdefs)), set(wad.flats)
    used_walls = set(re.findall(r'texture(?:top|bottom|middle) = "([^"]+)"', textmap))
    used_flats = set(re.findall(r'texture(?:floor|ceiling) = "([^"]+)"', textmap))
    return sorted((used_walls - walls) | (used_flats - flats))


def test_the_room_is_well_formed_and_deterministic(built, tmp_path):
    from mapgen.compile import compile_netlist
    from mapgen.udmf import sidedness_errors

    for name, (cm, full) in built.items():
        assert sidedness_errors(cm.layout.model) == [], name
        assert missing_textures(cm.textmap) == [], name
    assert missing_textures(compile_netlist(load(os.path.join(CIRCUITS, "xor.dnet"))).textmap) == []
    assert missing_textures('texturemiddle = "NOSUCHTX";') == ["NOSUCHTX"]
    a, b = tmp_path / "a.wad", tmp_path / "b.wad"
    for path in (a, b):
        cm, full = compile_room(load(os.path.join(CIRCUITS, "mlp3.dnet")))
        write_wad(str(path), [cm], full)
    assert a.read_bytes() == b.read_bytes()


def test_a_spiking_network_gets_a_new_sequence_pad():
    cm, _ = compile_room(load(os.path.join(CIRCUITS, "spike_counter.dnet")))
    names = [c["name"] for c in cm.manifest["controls"]["controls"]]
    assert "NEW SEQUENCE" in names and "RUN" in names
    assert f"ACS_Execute({cm.manifest['begin_script']}, 0)" in cm.acs




def test_a_big_lane_hall_is_cut_into_strips(tmp_path_factory, monkeypatch):
    """A lane hall with more trench edges than a strip holds is several sectors, south to
    north, none over the limit, joined by open lines (the MNIST CNN's hall had 77,626 sides
    in one sector: ViZDoom crashed loading it); the visitor still plays it exactly."""
    from collections import Counter

    from mapgen import room

    monkeypatch.setattr(room, "HALL_STRIP_SIDES", 160)
    net = load(os.path.join(CIRCUITS, "mlp3.dnet"))
    net, full, cm, d = _room(tmp_path_factory, "strips", net)
    m = cm.layout.model
    halls = [k for k, s in enumerate(m.sectors) if s.comment.startswith("lane hall")]
    sides = Counter(side.sector for side in m.sides)
    assert len(halls) >= 3 and all(sides[h] <= 160 for h in halls)
    between = [ln for ln in m.lines if ln.comment == "between hall strips"]
    assert len(between) == len(halls) - 1 and all(ln.back >= 0 for ln in between)
    with d:
        for k, v in enumerate([3, 0, 2, 1]):
            d.set_input(k, v)
        _check(d, net, full)


# -- networks with state: one step per RUN ---------------------------------------------------
FED = ("network fed\ninput x[2] : 0..3\ninput n : 0..7\nfeedback n = h[0]\n"
       "neuron h[2] : relu(s=2, max=7)\nlines x -> h dense [[2, -1], [1, 2]]\n"
       "lines prev(h) -> h dense [[1, 1], [-1, 2]]\nlines n -> h dense [[1], [0]]\n"
       "bias h = [0, 1]\ninit h = [3, 0]\noutput h\n")


def _steps(d, net, full, xs: list[list[int]], fed: bool = False) -> list[dict]:
    """Set each step's inputs with the controls and press RUN once: after every step the
    machine's every light (prev lanes included) equals the reference of the sequence so
    far, the displays show it, and the run loop ran exactly one step per RUN. With `fed`,
    the fed-back inputs are the reference's None after the first step."""
    from engine.visitor import step_reference

    assert d.status()[2] == 0                # AUTO starts off: no run per INC
    runs, rows, out = d.wait_idle(), [], []
    for x in xs:
        for k, v in enumerate(x):
            d.set_input(k, v)
        assert d.wait_idle() == runs         # nothing ran yet
        d.use("RUN")
        runs += 1
        assert d.wait_idle() == runs
        rows.append([None if fed and rows and nid in net.feedback else v
                     for nid, v in zip(net.inputs, x)])
        ref = step_reference(full, rows)
        lights, shown = d.lights(), d.shown()
        assert {k: v for k, v in lights.items() if k in ref} == \
            {k: ref[k] for k in lights if k in ref}, f"step {len(rows) - 1}"
        assert shown == {k: ref[k] for k in shown}
        out.append(shown)
    return out


def test_a_recurrent_circuit_steps_once_per_run(tmp_path_factory):
    """running_max (`steps open`, `prev`): every RUN is one step of the sequence, the
    state kept in the map between them; NEW SEQUENCE puts the prev lane back to its init."""
    net, full, cm, d = _room(tmp_path_factory, "running_max")
    with d:
        shown = _steps(d, net, full, [[3], [1], [7], [2]])
        assert [s["m"] for s in shown] == [3, 3, 7, 7]
        d.use("NEW SEQUENCE")
        assert _steps(d, net, full, [[2]])[0]["m"] == 2


def test_a_recurrent_vector_circuit(tmp_path_factory):
    """elman: a vector input set with DEC / INC, three outputs fed back through prev(h)
    from their init; then a new sequence starts from the init again."""
    net, full, cm, d = _room(tmp_path_factory, "elman")
    with d:
        xs = [[2, 1], [0, 3], [3, 3]]
        first = _steps(d, net, full, xs)
        d.use("NEW SEQUENCE")
        assert _steps(d, net, full, xs[:1]) == first[:1]
        assert len({tuple(s.values()) for s in first}) > 1   # the state does move


def test_a_counter_without_inputs_shows_done(tmp_path_factory):
    """counter: no inputs, RUN alone steps it; its `done` output lights on the tenth step
    and RUN goes on stepping after it (the counter saturates)."""
    from engine.visitor import step_reference

    net, full, cm, d = _room(tmp_path_factory, "counter")
    with d:
        assert cm.manifest["done"] is not None
        d.use("RUN", 4)
        assert d.wait_idle(limit_runs=6) == 4
        assert d.shown() == {k: step_reference(full, [[]] * 4)[k] for k in ("c", "d")}
        d.use("RUN", 8)
        assert d.wait_idle(limit_runs=10) == 12
        ref = step_reference(full, [[]] * 12)
        assert d.shown() == {"c": ref["c"], "d": ref["d"]} and ref["d"] == 1


def test_fed_back_inputs_take_their_nodes_values_after_the_first_run(tmp_path_factory):
    """A fed-back input's controls set its first step; every later RUN of the sequence is a
    fed step (script 6 copies h[0] into n inside the map), equal to the reference with
    None at those steps; NEW SEQUENCE takes the controls' value again."""
    from engine.visitor import step_reference

    net = parse(FED, "<fed>")
    net, full, cm, d = _room(tmp_path_factory, "fed", net)
    assert f"else ACS_Execute({cm.manifest['fed_script']}, 0, runs);" in cm.acs
    with d:
        xs = [[1, 2, 2], [3, 0, 2], [0, 1, 2], [2, 2, 2]]
        _steps(d, net, full, xs, fed=True)
        fed_rows = [xs[0]] + [x[:2] + [None] for x in xs[1:]]
        assert step_reference(full, fed_rows) != step_reference(full, xs)  # feeding matters
        d.use("NEW SEQUENCE")
        _steps(d, net, full, xs[:1], fed=True)
        assert d.lights()["n"] == 2



@pytest.mark.parametrize("path", sorted(glob.glob(os.path.join(CIRCUITS, "*.dnet"))),
                         ids=lambda p: os.path.basename(p))
def test_every_circuit_gets_its_control_room(path):
    """`compile`'s default for every checked-in circuit: the room builds, passes every
    static check (the lane hall in strips where it is big) and has a control for every
    input that varies, a display for every output, RUN and AUTO; a network with state also
    NEW SEQUENCE. A circuit too big for one map is refused, naming tiles as the fix."""
    net = load(path)
    if os.path.basename(path) in NEEDS_TILES_ROOM:
        with pytest.raises(CompileError, match="split the network over several maps"):
            compile_room(net)
        return
    cm, full = compile_room(net)
    room = cm.manifest["controls"]
    names = {c["name"] for c in room["controls"]}
    kinds = input_kinds(net)
    assert {"RUN", "AUTO"} <= names and ("NEW SEQUENCE" in names) == (net.steps > 1)
    for k, nid in enumerate(net.inputs):
        name = net.nodes[nid].name
        want = {"pad": {name}, "dial": {f"{name} DEC", f"{name} INC"}, "none": set(),
                "preset": set()}[kinds[k]]
        assert want <= names, name
    assert {d.shows for d in D.Displays.from_json(room["displays"]).numbers} >= \
        {net.nodes[o].name for o in net.outputs}
    if "preset" in kinds.values():
        assert any(c["action"] == "preset" for c in room["controls"])
    assert control_violations(cm.acs[cm.acs.index("// The visitor's controls"):]) == []


# -- the command ---------------------------------------------------------------------------
def _cli(*args):
    import subprocess
    import sys

    return subprocess.run([sys.executable, os.path.join(ROOT, "build.py"), *args],
                          capture_output=True, text=True, env={**os.environ, "VOODOO_QUIET": "1"})


def test_the_compiled_wad_is_played_as_it_is(tmp_path):
    """Issue 24's "done when": `build.py compile circuits/mlp3.dnet -o ...` makes a map in
    which a walking visitor sets the inputs, presses RUN and reads every output, all equal
    to the reference; the WAD alone says where everything is."""
    from engine.visitor import ControlRoomDriver
    from mapgen.compile import load_wad

    wad = str(tmp_path / "mlp3.wad")
    r = _cli("compile", os.path.join(CIRCUITS, "mlp3.dnet"), "-o", wad)
    assert r.returncode == 0 and "with its control room" in r.stdout, r.stderr
    loaded = load_wad(wad)
    net = load(os.path.join(CIRCUITS, "mlp3.dnet"))
    with ControlRoomDriver(wad, loaded.infos[0]) as d:
        d.use("AUTO")                       # off: nothing runs until RUN
        for k, v in enumerate([1, 3, 2, 0]):
            d.set_input(k, v)
        runs = d.wait_idle()
        d.use("RUN")
        assert d.wait_idle() == runs + 1
        shown = d.shown()
    want = evaluate(net, [[1, 3, 2, 0]]).last_outputs()[0].tolist()
    assert [shown[f"o[{k}]"] for k in range(3)] == want


def test_pk3_and_plain(tmp_path):
    import zipfile

    xor = os.path.join(CIRCUITS, "xor.dnet")
    for name in ("a", "b"):
        r = _cli("compile", xor, "-o", str(tmp_path / f"{name}.wad"), "--pk3")
        assert r.returncode == 0, r.stderr
    a, b = tmp_path / "a.pk3", tmp_path / "b.pk3"
    assert a.read_bytes() == b.read_bytes()
    with zipfile.ZipFile(a) as z:
        assert sorted(z.namelist()) == ["mapinfo.txt", "maps/MAP01.wad",
                                        "voodoonet/manifest.json", "voodoonet/netlist.json"]
        assert z.read("mapinfo.txt").decode().startswith('map MAP01 "xor"')
        inner = z.read("maps/MAP01.wad")
    one = tmp_path / "inner.wad"
    one.write_bytes(inner)
    from acs.wad import read_wad

    contents = read_wad(str(one))
    assert [n for n, _ in contents.lumps] in (["MAP01", "TEXTMAP", "BEHAVIOR", "SCRIPTS", "ENDMAP"],
                                                ["MAP01", "TEXTMAP", "ZNODES", "BEHAVIOR", "SCRIPTS", "ENDMAP"])
    r = _cli("compile", xor, "-o", str(tmp_path / "p.wad"), "--plain", "--pk3",
             str(tmp_path / "p.pk3"))
    assert r.returncode == 0 and "control room" not in r.stdout and (tmp_path / "p.pk3").exists()
    from mapgen.compile import load_wad

    assert "controls" not in load_wad(str(tmp_path / "p.wad")).infos[0]
    assert "controls" in load_wad(str(tmp_path / "a.wad")).infos[0]


def test_bad_options_are_messages(tmp_path):
    xor = os.path.join(CIRCUITS, "xor.dnet")
    wad = str(tmp_path / "x.wad")
    for args, says in ((["--pk3", wad], "--pk3"), (["--plain", "--screenshot", "s.png"], "--screenshot"),
                       (["--pk3", str(tmp_path / "no" / "x.pk3")], "does not exist")):
        r = _cli("compile", xor, "-o", wad, *args)
        assert r.returncode == 1 and says in r.stderr and "Traceback" not in r.stderr, r.stderr
        assert not os.path.exists(wad)
