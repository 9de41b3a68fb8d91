"""Displays computed by the network (mapgen/display.py): for every value a node can take,
the display neurons' reference values are segments that read back as that value; the
lowered circuit computes the same lights; lanes stay short; a bad pattern reads as
nothing; the netlist's own nodes are untouched."""
import pytest

from dsl.parser import parse
from dsl.reference import evaluate
from mapgen import display as D
from mapgen.circuit import lower, simulate


def _net(lo, hi, scale=1):
    """y = scale * x + 3 over x in lo..hi: outputs spread over a wide range."""
    return parse(f"network t\ninput x : {lo}..{hi}\nneuron y : identity = {scale}*x + 3\n"
                 "output y\n", "<t>")


@pytest.mark.parametrize("lo,hi,scale", [(0, 1, 1), (0, 3, 1), (-2, 10, 1), (-88, 73, 1),
                                         (-72, 58, 10), (0, 99, 101), (-9, 0, 1), (5, 5, 1)])
def test_every_value_reads_back_as_itself(lo, hi, scale):
    net = _net(lo, hi, scale)
    full, disp = D.add_displays(net, numbers=[net.outputs[0], net.inputs[0]])
    xs = [[x] for x in range(lo, hi + 1)]
    res = evaluate(full, xs)
    for i, (x,) in enumerate(xs):
        vals = res.named(i)
        assert D.shown_value(disp.numbers[0], vals.__getitem__) == scale * x + 3
        assert D.shown_value(disp.numbers[1], vals.__getitem__) == x
        lit = [vals[n] for n in disp.nodes() if n in vals]
        assert set(lit) <= {D.ON, D.OFF}


def test_the_map_computes_the_display():
    """The lowered circuit (what the map computes, without the engine) lights exactly the
    reference's segments."""
    net = _net(-30, 40)
    full, disp = D.add_displays(net, numbers=[net.outputs[0]])
    c = lower(full)
    light = {c.net.nodes[n].name: t for n, t in c.value_light.items()}
    for x in (-30, -7, 0, 9, 10, 33, 40):
        level = simulate(c, [x])
        assert D.shown_value(disp.numbers[0], lambda n: level[light[n]]) == x + 3


def test_lanes_stay_short_and_constants_cost_no_doll():
    net = _net(-300, 300, 37)        # -11097..11103: five digits
    full, disp = D.add_displays(net, numbers=[net.outputs[0]])
    c = lower(full)
    assert len(disp.numbers[0].digits) == 5 and disp.numbers[0].minus
    shown = set(disp.nodes()) | {n.name for n in full.nodes if n.name.startswith("disp.")}
    display_lanes = [ln for ln in c.lanes if c.net.nodes[ln.node].name in shown]
    assert display_lanes and max(len(ln.doors) for ln in display_lanes) <= D.CHUNK_DOORS
    # 0..1: b and c always lit, g always dark: constants; a, d, e, f one shared lut.
    net = _net(0, 1)
    full, disp = D.add_displays(net, numbers=[net.inputs[0]])
    segs = disp.numbers[0].digits[0]
    gates = {s: full.by_name(n).gate.kind for s, n in zip(D.SEGMENTS, segs)}
    assert gates == {"a": "lut", "b": "identity", "c": "identity", "d": "identity",
                     "e": "identity", "f": "identity", "g": "identity"}
    assert len([ln for ln in lower(full).lanes if lower(full).net.nodes[ln.node].name in segs]) == 1


def test_a_pattern_that_is_no_number_reads_as_none():
    d = D.Digits("y", -99, 99, [[f"u{s}" for s in D.SEGMENTS], [f"t{s}" for s in D.SEGMENTS]],
                 "minus")

    def levels(units: str, tens: str, minus: bool, odd=None):
        v = {f"u{s}": D.ON if s in units else D.OFF for s in D.SEGMENTS}
        v.update({f"t{s}": D.ON if s in tens else D.OFF for s in D.SEGMENTS})
        v["minus"] = D.ON if minus else D.OFF
        if odd:
            v[odd] = 100
        return v.__getitem__

    assert D.shown_value(d, levels(D.DIGITS[7], D.DIGITS[4], True)) == -47
    assert D.shown_value(d, levels(D.DIGITS[0], "", False)) == 0
    assert D.shown_value(d, levels("abc" + "g", D.DIGITS[1], False)) is None   # not a digit
    assert D.shown_value(d, levels("", D.DIGITS[1], False)) is None            # dark units
    assert D.shown_value(d, levels(D.DIGITS[0], "", True)) is None             # "-0"
    assert D.shown_value(d, levels(D.DIGITS[5], "", False, odd="ua")) is None  # half lit


def test_the_netlist_itself_is_untouched():
    from dsl import load

    from conftest import ROOT

    net = load(f"{ROOT}/circuits/mlp3.dnet")
    full, disp = D.add_displays(net, numbers=list(net.outputs))
    assert [n.name for n in full.nodes[:len(net.nodes)]] == [n.name for n in net.nodes]
    assert full.outputs == net.outputs and full.inputs == net.inputs
    assert [n.pos for n in full.nodes[:len(net.nodes)]] == [n.pos for n in net.nodes]
    x = [[3, 2, 2, 1], [0, 3, 1, 2]]
    assert (evaluate(full, x).last_outputs() == evaluate(net, x).last_outputs()).all()
    assert [d.shows for d in disp.numbers] == ["o[0]", "o[1]", "o[2]"]
