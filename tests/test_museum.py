"""The museum in the engine: pedals, READ, the display, MUTATE / RESTORE, a walking visitor."""
import pytest

from dsl.reference import evaluate
from mapgen.compile import write_wad
from demos.museum import (DIGITS, PEDAL_OFF, PEDAL_ON, SEGMENTS, MuseumDriver, build, mutated,
                           pattern, ui_violations)


@pytest.fixture(scope="module")
def museum(tmp_path_factory):
    mm = build()
    path = str(tmp_path_factory.mktemp("museum") / "museum.wad")
    write_wad(path, [mm.compiled])
    with MuseumDriver(path, mm.compiled.manifest) as d:
        yield mm, d


def reference(net, bits):
    return evaluate(net, [bits]).last_outputs()[0].tolist()


def test_network_has_the_published_shape(museum):
    mm, _ = museum
    net = mm.net
    assert 130 <= net.n_connections <= 140
    assert {w for n in net.nodes for w in n.weights.values()} == {1, -1}
    assert len(net.inputs) == 7 and len(net.outputs) == 7


ONE_MISSING = [("8 without g", [1, 1, 1, 1, 1, 1, 0]), ("3 without a", [0, 1, 1, 1, 0, 0, 1]),
               ("4 without f", [0, 1, 1, 0, 0, 0, 1]), ("nothing", [0] * 7)]


@pytest.mark.parametrize("name,bits", [(f"digit {d}", pattern(d)) for d in range(10)] + ONE_MISSING,
                         ids=lambda v: v if isinstance(v, str) else "")
def test_pedals_and_read_light_the_reference(museum, name, bits):
    mm, d = museum
    d.set_digit(bits)
    lights, flag = d.status()
    assert lights == [PEDAL_ON if b else PEDAL_OFF for b in bits]  # pedals show their state
    assert flag == 0
    d.press("READ")
    shown = d.display()
    assert shown == reference(mm.net, bits)
    if name.startswith("digit"):
        digit = int(name.split()[1])
        assert [v > 100 for v in shown] == [s in DIGITS[digit] for s in SEGMENTS]


def test_mutate_makes_seven_read_as_one_and_restore_undoes_it(museum):
    mm, d = museum
    seven = pattern(7)
    d.set_digit(seven)
    d.press("READ")
    assert d.display() == reference(mm.net, seven)
    d.press("MUTATE")                       # rewires one line, then reads again
    after = d.display()
    assert after == reference(mutated(mm.net), seven)
    assert [v > 100 for v in after] == [bool(b) for b in pattern(1)]   # a 7 now reads as 1
    assert d.status()[1] == 1
    d.set_digit(pattern(1))                 # the mutation touches only 7's detector
    d.press("READ")
    assert d.display() == reference(mutated(mm.net), pattern(1))
    d.set_digit(seven)
    d.press("RESTORE")
    assert d.display() == reference(mm.net, seven)
    assert [v > 100 for v in d.display()] == [bool(b) for b in seven]
    assert d.status()[1] == 0


def test_a_visitor_walks_onto_a_pedal(museum):
    """The real player, walking forward, steps on pedal d and toggles it (and only it)."""
    mm, d = museum
    d.set_digit([0] * 7)
    d.warp("approach")
    for _ in range(18):
        d.engine.advance(1, [1.0, 0.0])      # MOVE_FORWARD, facing north
    d.engine.advance(10, [0.0, 0.0])
    lights, _ = d.status()
    assert lights == [PEDAL_ON if s == "d" else PEDAL_OFF for s in SEGMENTS]


def test_controls_never_read_a_neuron(museum):
    mm, _ = museum
    pedals = mm.pedal_tags
    assert ui_violations(f"user1 = GetSectorLightLevel({pedals[0]});", pedals) == []
    neuron = mm.display_tags[0]
    assert ui_violations(f"user1 = GetSectorLightLevel({neuron});", pedals) != []
    assert ui_violations(f"if (GetSectorCeilingZ({pedals[0]}, 0, 0) > 3) in0 = 1;", pedals) != []
    controls = mm.compiled.acs.split("// The visitor's controls.")[1]
    assert "GetSectorLightLevel" in controls and ui_violations(controls, pedals) == []
