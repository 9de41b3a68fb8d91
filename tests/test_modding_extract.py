"""extract == embedded: for every circuit and demo, the netlist read back from the map's
geometry and bus is the embedded netlist after the compiler's lowering.

"Equal" is checked three ways (docs/modding.md): (1) the machine read from the TEXTMAP and
BEHAVIOR is, field by field, the machine `mapgen.circuit.lower` made of the embedded
netlist; (2) the extracted .dnet, compiled again, builds that same machine (extract checks
this itself; here it is checked again from the written text) -- for random networks, whose
folded identities can tighten a range, at least every gate does what the map's staircase
does over the range it reaches; (3) the extracted netlist's reference gives every node the
value the embedded netlist's reference gives it, on the range corners and random inputs.
"""
from __future__ import annotations

import glob
import os

import numpy as np
import pytest

from conftest import NEEDS_TILES, ROOT
from dsl import load
from dsl.lower import lower_products
from dsl.parser import parse
from dsl.reference import evaluate
from mapgen.circuit import lower
from mapgen.compile import compile_netlist, write_wad
from modding.extract import ExtractError, extract_wad, rebuild_difference
from modding.machine import from_circuit, from_map
from modding.textmap import parse_textmap

CIRCUITS = [p for p in sorted(glob.glob(os.path.join(ROOT, "circuits", "*.dnet")))
            if os.path.basename(p) not in NEEDS_TILES]   # one map each


def _inputs(net, n=12, seed=0):
    rng = np.random.default_rng(seed)
    r = net.input_ranges()
    rows = [[lo for lo, _ in r], [hi for _, hi in r]]
    rows += [[int(rng.integers(lo, hi + 1)) for lo, hi in r] for _ in range(n)]
    if net.multi_step:  # one sequence per row block (a run of 12 steps, if open)
        steps = 12 if net.open else net.steps
        return [rows[k:k + steps] for k in range(0, len(rows) - steps + 1, steps)] \
            or [[rows[0]] * steps]
    return rows


def _same_values(net, extracted, names):
    """Every node of the lowered embedded netlist has the extracted node's value."""
    lowered = lower_products(net)
    for xs in _inputs(net):
        batch = [xs]
        a = evaluate(lowered, batch)
        b = evaluate(extracted, batch)
        assert (a.last_outputs() == b.last_outputs()).all()
        for n in lowered.nodes:
            m = extracted.by_name(names[n.name])
            assert (a.value[0, :, n.id] == b.value[0, :, m.id]).all(), n.name


def _check(wad, net, circuit, map_name=None, same_machine=True):
    ex = extract_wad(wad, map_name)
    assert ex.machine.same_as(from_circuit(circuit, net.steps))
    if same_machine or ex.same_machine:
        # extract_wad says so only when its text, compiled again, built this very machine
        # (modding/extract.machine_netlist: rebuild_difference was None); doing it again
        # here took the chat map's test 30 s
        assert ex.same_machine
    else:  # identities folded away can tighten ranges: then the gates are checked instead
        from modding.extract import gate_difference, nodes_of

        assert gate_difference(ex.text, ex.names, nodes_of(ex.machine)[0], "t") is None
    return ex


@pytest.mark.parametrize("path", CIRCUITS, ids=lambda p: os.path.basename(p))
def test_extract_equals_embedded(path, tmp_path):
    net = load(path)
    m = compile_netlist(net)
    wad = str(tmp_path / "c.wad")
    write_wad(wad, [m], net)
    ex = _check(wad, net, m.circuit)
    extracted = ex.net     # its text as extract parsed it to rebuild the map (a chat's 10 s)
    assert extracted is not None
    assert [extracted.nodes[o].name for o in extracted.outputs] == \
        [ex.names[net.nodes[o].name] for o in net.outputs]
    _same_values(net, extracted, ex.names)


def test_extract_museum_demo(tmp_path):
    from demos.museum import build

    mm = build()
    wad = str(tmp_path / "museum.wad")
    write_wad(wad, [mm.compiled], mm.net)
    ex = _check(wad, mm.net, mm.compiled.circuit)
    _same_values(mm.net, parse(ex.text, "museum.dnet"), ex.names)


def test_extract_mnist_small_demo(tmp_path):
    """The MNIST demo's WAD as `build.py mnist --small` writes it (tiles and all)."""
    from mapgen.tiles import compile_tiles, plan_tiles
    from models.quantize import load_mnist_small

    net, _ = load_mnist_small()
    tiles = plan_tiles(net)
    maps = compile_tiles(tiles, "MNIST")
    wad = str(tmp_path / "mnist.wad")
    write_wad(wad, maps, net, tiles)
    for t, cm in zip(tiles, maps):
        ex = _check(wad, t.net, cm.circuit, cm.name)
        _same_values(t.net, parse(ex.text, "mnist.dnet"), ex.names)


def test_an_extracted_text_edited_does_not_rebuild_the_machine(tmp_path):
    """What extract's same_machine rests on can fail: the xor map's extracted text with one
    threshold changed compiles to another machine, and rebuild_difference says where."""
    import re

    net = load(os.path.join(ROOT, "circuits", "xor.dnet"))
    wad = str(tmp_path / "xor.wad")
    write_wad(wad, [compile_netlist(net)], net)
    ex = extract_wad(wad)
    assert ex.same_machine
    assert rebuild_difference(ex.text, ex.names, ex.machine, "t") is None
    edited, n = re.subn(r"step\(t=2\)", "step(t=1)", ex.text, count=1)
    assert n == 1, ex.text
    assert rebuild_difference(edited, ex.names, ex.machine, "t") is not None


def test_machine_of_an_edited_map_differs():
    """The comparison can fail: one line's amount changed in the TEXTMAP is seen."""
    net = load(os.path.join(ROOT, "circuits", "xor.dnet"))
    m = compile_netlist(net)
    tm = parse_textmap(m.textmap)
    k = next(i for i, ln in enumerate(tm.linedefs) if ln.get("special") == 110)
    tm.linedefs[k]["arg1"] = 2
    assert not from_map(tm, m.behavior).same_as(from_circuit(lower(net)))


def test_extract_refuses_a_foreign_wad(tmp_path):
    from acs import compile_source
    from acs.testmap import room_textmap
    from acs.wad import MapLump, write_wad as pack

    wad = str(tmp_path / "room.wad")
    pack(wad, [MapLump("MAP01", room_textmap(), compile_source("script 1 OPEN { Delay(1); }"))])
    with pytest.raises(Exception) as e:
        extract_wad(wad)
    assert "not a VoodooNet machine" in str(e.value)
    assert isinstance(e.value, ExtractError) or "script 2" in str(e.value)


@pytest.mark.parametrize("seed", range(8))
def test_extract_equals_embedded_on_random_networks(seed, tmp_path):
    """Random MLPs with every gate kind (and far-apart 'wide' thresholds on odd seeds)."""
    from dsl.random_net import mlp_text

    text = mlp_text(seed, [4, 5, 3, 2], gates=("relu", "step", "lut", "identity"),
                    wide=bool(seed % 2), out_gate=("identity", "relu", "lut", "step")[seed % 4])
    net = parse(text, f"random{seed}.dnet")
    m = compile_netlist(net)
    wad = str(tmp_path / "r.wad")
    write_wad(wad, [m], net)
    ex = _check(wad, net, m.circuit, same_machine=False)
    _same_values(net, parse(ex.text, "extracted.dnet"), ex.names)


@pytest.mark.parametrize("edit, needle", [
    (lambda t: t.replace("v1 = 5;", "v1 = 99999;", 1), "linedef"),
    (lambda t: t.replace("sector = 0;", "sector = 77777;", 1), "sidedef 0"),
    (lambda t: t.replace("vertex { x = ", "vertex { x = true; y2 = ", 1), "vertex 0"),
    (lambda t: t[:len(t) // 2] + " @@", "not valid UDMF"),
])
def test_damaged_textmap_is_a_clear_error(edit, needle, tmp_path):
    from modding.textmap import MapError
    from modding.wadio import read_lumps, replace_textmap, write_lumps

    net = load(os.path.join(ROOT, "circuits", "xor.dnet"))
    m = compile_netlist(net)
    wad = str(tmp_path / "x.wad")
    write_wad(wad, [m], net)
    bad = str(tmp_path / "bad.wad")
    write_lumps(bad, replace_textmap(read_lumps(wad), "MAP01", edit(m.textmap)))
    with pytest.raises(MapError) as e:
        extract_wad(bad)
    assert needle in str(e.value)


def test_garbage_behavior_is_a_clear_error(tmp_path):
    from modding.behavior import BehaviorError, read_scripts

    lump = compile_netlist(load(os.path.join(ROOT, "circuits", "xor.dnet"))).behavior
    for cut in (len(lump) // 3, len(lump) // 2):
        try:
            scripts = read_scripts(lump[:cut])
        except BehaviorError:
            continue
        assert all(s.error or s.ops is not None for s in scripts.values())
    with pytest.raises(BehaviorError):
        read_scripts(b"NOTACS" + bytes(20))
