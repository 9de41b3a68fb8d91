"""The ACS emitter: exact, readable source text; what it writes compiles and runs."""
from __future__ import annotations

import pytest

import acs
from acs.emit import Fixed, Program, Str
from acs.external import find_acc
from acs.testmap import room_textmap
from acs.wad import MapLump, write_wad
from engine.doom import Engine


def small_program() -> Program:
    prog = Program(comment="digit museum: readback\ngenerated, do not edit")
    prog.define("DOOR_SPEED", 8000, comment="1000 units per tic")
    prog.global_var(1, "out0", comment="USER1: logit of class 0")
    prog.map_var("weights", values=[3, -2, 7], comment="layer 1 weights")
    s = prog.script(3, args=["int v"], comment="neuron h3: copy accumulator light to door ceiling")
    s.call("Ceiling_MoveToValue", 12, "DOOR_SPEED", "v", 0)
    with s.if_("v > 0") as then:
        then.assign("out0", "v * weights[2]")
    s.blank()
    s.delay(1, comment="let the door move")
    return prog


def test_source_text_is_exact_and_readable():
    assert small_program().source() == '''\
// digit museum: readback
// generated, do not edit

#include "zcommon.acs"

// 1000 units per tic
#define DOOR_SPEED 8000

// USER1: logit of class 0
global int 1:out0;
// layer 1 weights
int weights[] = {3, -2, 7};

// neuron h3: copy accumulator light to door ceiling
script 3 (int v)
{
    Ceiling_MoveToValue(12, DOOR_SPEED, v, 0);
    if (v > 0)
    {
        out0 = v * weights[2];
    }

    // let the door move
    Delay(1);
}
'''


def full_program() -> Program:
    prog = Program(comment="every construct of the emitter")
    prog.define("TAG", 10)
    for i in range(1, 10):
        prog.global_var(i, f"u{i}")
    prog.world_var(3, "wv")
    prog.global_var(5, "garr", array=True)
    prog.map_var("counter", 5)
    prog.map_var("label", Str('say "hi"'), type="str")
    prog.map_var("table", size=4)
    prog.map_var("flag", True, type="bool")

    f = prog.function("twice", returns="int", params=["int x"], comment="x * 2")
    f.return_("x * 2")
    g = prog.function("note", params=["int v"])
    g.assign("u9", "v")

    s = prog.script(1, kind="open", comment="at map start")
    s.assign("u1", "counter + 1")
    s.assign("u2", "StrLen(label)")

    s = prog.script(2, args=["int a", "int b"], net=True)
    s.declare("i", 0)
    s.declare("acc")
    with s.for_("i = 0", "i < a", "i++") as body:
        body.assign("acc", "b", op="+=")
        with body.if_("i == 2") as then:
            then.continue_()
    s.assign("u3", "acc")
    loop = s.while_("acc > 0")
    loop.assign("acc", 1, op="-=")
    s.assign("u4", "twice(b)")
    branch = s.if_("a > b")
    branch.then.assign("u5", 1)
    branch.else_().assign("u5", 2)
    sw = s.switch("a")
    sw.case(1).assign("u6", 10).break_()
    sw.case(3).assign("u6", 30).break_()
    sw.default().assign("u6", 99)
    s.call("Light_ChangeToValue", "TAG", 77)
    s.assign("u7", "GetSectorLightLevel(TAG)")
    s.print_(("s", Str("acc ")), ("d", "acc"), ("f", Fixed(1.5)))
    with s.do_while("wv < 3") as body:
        body.assign("wv", 1, op="+=")
    s.assign("garr[2]", "wv")
    s.assign("u8", "garr[2]")
    s.call("note", 123)
    s.delay(1)
    s.terminate()
    return prog


def test_emitted_program_compiles_and_runs(tmp_path):
    text = full_program().source()
    lump = acs.compile_source(text, "emitted.acs")
    wad = tmp_path / "emit.wad"
    write_wad(str(wad), [MapLump("MAP01", room_textmap(), lump, text, "Emitter")])
    with Engine(str(wad)) as e:
        e.advance(1)
        assert e.users()[:2] == [6, 8]
        e.puke(2, 3, 4)
        e.advance(3)
        assert e.users()[:9] == [6, 8, 12, 8, 2, 30, 77, 3, 123]


def test_bad_input_to_the_emitter_is_refused():
    prog = Program()
    with pytest.raises(ValueError, match="is not a usable ACS name"):
        prog.map_var("while")
    with pytest.raises(ValueError, match="out of range 0..63"):
        prog.global_var(64, "g")
    prog.map_var("x")
    with pytest.raises(ValueError, match="declared twice"):
        prog.map_var("X")
    with pytest.raises(ValueError, match="at most 4 arguments"):
        prog.script(1, args=["int a", "int b", "int c", "int d", "int e"])
    with pytest.raises(ValueError, match="open scripts take no arguments"):
        prog.script(2, kind="open", args=["int a"])
    prog.script(3)
    with pytest.raises(ValueError, match="defined twice"):
        prog.script(3)
    with pytest.raises(ValueError, match="one non-empty line"):
        prog.script(4).assign("x", "1\n2")
    with pytest.raises(ValueError, match="32-bit"):
        prog.script(5).assign("x", 1 << 40)


def test_same_program_gives_same_text_and_lump():
    a, b = full_program().source(), full_program().source()
    assert a == b
    assert acs.compile_source(a) == acs.compile_source(b)


@pytest.mark.skipif(find_acc() is None, reason="acc (the external ACS compiler) is not installed")
def test_real_acc_accepts_emitted_source(tmp_path):
    from acs.external import compile_file_external

    path = tmp_path / "emitted.acs"
    path.write_text(full_program().source())
    assert compile_file_external(str(path))[:3] == b"ACS"


@pytest.mark.parametrize("action,message", [
    (lambda p: p.script(9).assign("x", 1, op="=="), "unknown assignment operator '=='"),
    (lambda p: p.map_var("y", type="float"), "unknown ACS type 'float'"),
    (lambda p: p.script(9, kind="weird"), "unknown script kind 'weird'"),
    (lambda p: p.script(9, args=["float a"]), "a parameter is 'int name' (or str/bool): 'float a'"),
    (lambda p: p.include('a"b'), "bad include file name 'a\"b'"),
    (lambda p: p.script(9).print_(("q", 1)), "unknown print item kind 'q'"),
    (lambda p: p.script(9).call("Delay", Fixed(1e30)), "fixed-point value 1e+30 cannot be written in ACS"),
    (lambda p: p.map_var("z", 1, size=3), "an array takes `values`, not `value`"),
    (lambda p: p.script("9x"), "script number must be an int or a #define'd name: '9x'"),
    (lambda p: p.script(0), "script number 0 is out of range 1..32767"),
    (lambda p: p.world_var(256, "w"), "world variable index 256 is out of range 0..255"),
    (lambda p: p.script(9).call("Delay", 1.5), "cannot write float as an ACS expression"),
    (lambda p: p.function("f", returns="float"), "unknown return type 'float'"),
    (lambda p: p.script(9).declare("v", type="char"), "unknown ACS type 'char'"),
])
def test_emitter_messages(action, message):
    with pytest.raises((ValueError, TypeError)) as info:
        action(Program())
    assert str(info.value) == message
