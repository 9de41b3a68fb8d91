"""Recurrent netlists in ViZDoom: state kept in the map from step to step (prev lanes'
doors copied by the bus), fed-back inputs, networks that end their own run; every output
and, with debug, every light at every step equal to the reference."""
import os

import pytest

from conftest import ROOT
from dsl import load
from dsl.lower import lower_products
from dsl.parser import parse
from dsl.random_net import recurrent
from dsl.sequence import plan_steps, random_sequence
from engine.runner import MapRunner, compare_sequence
from mapgen.compile import compile_netlist, write_wad


def run_sequence(tmp_path, net, seq, debug=True, name="rnn.wad"):
    cm = compile_netlist(net)
    path = os.path.join(str(tmp_path), name)
    write_wad(path, [cm])
    with MapRunner(path, cm.manifest) as runner:
        return compare_sequence(runner, net, lower_products(net), seq, debug=debug)


def test_random_recurrent_nets_over_fifty_steps_every_light_exact(tmp_path):
    for seed in (1, 4, 7):
        net = recurrent(seed, n_hidden=4, feedback=seed == 4)
        got = run_sequence(tmp_path, net, random_sequence(net, 50, seed), name=f"r{seed}.wad")
        assert len(got) == 50
        bad = [(t, c) for t, c in enumerate(got) if not c.exact]
        assert not bad, (seed, bad[:1])


def test_elman_cell_for_a_hundred_steps(tmp_path):
    net = load(os.path.join(ROOT, "circuits", "elman.dnet"))
    got = run_sequence(tmp_path, net, random_sequence(net, 100, 3), debug=False)
    assert len(got) == 100 and all(c.exact for c in got)
    assert len({tuple(c.engine) for c in got}) > 3  # the state does move


def test_the_network_ends_its_own_run_at_the_right_step(tmp_path):
    net = load(os.path.join(ROOT, "circuits", "counter.dnet"))
    got = run_sequence(tmp_path, net, plan_steps(net, [], 100))
    assert len(got) == 10 and all(c.exact for c in got)
    assert [c.engine for c in got][-2:] == [[9, 0], [10, 1]]


def test_fed_back_input_is_copied_in_the_map(tmp_path):
    net = parse("input n : 0..15\nfeedback n = c\ninput k : 1..3\n"
                "neuron c : relu(s=1, max=15) = n + k\nneuron d : step(t=15) = c\ndone d\n"
                "output c\n")
    # Two prompt steps, then the map feeds c back into n (k is given every step).
    seq = [[2, 1], [0, 3]] + [[None, 2]] * 20
    got = run_sequence(tmp_path, net, seq)
    assert [c.engine[0] for c in got] == [3, 3, 5, 7, 9, 11, 13, 15]
    assert all(c.exact for c in got)


def test_debug_names_the_first_divergence_with_its_step(tmp_path, monkeypatch):
    """A map whose prev lane adds one too many to its reader: right at step 0 (the prev
    value is its init, no door passed), wrong from step 1, where debug must point."""
    import mapgen.compile as mc
    from mapgen import circuit

    real = circuit.lower

    def broken(net, **kw):
        c = real(net, **kw)
        lane = next(l for l in c.lanes if l.source[0] == "state")
        door = lane.doors[0]
        tag, amount = door.lines[-1]
        door.lines[-1] = (tag, amount + 1)
        return c

    monkeypatch.setattr(mc, "lower", broken)
    net = load(os.path.join(ROOT, "circuits", "counter.dnet"))
    got = run_sequence(tmp_path, net, plan_steps(net, [], 5))
    assert got[0].exact and not got[1].exact
    assert got[1].first_divergence.startswith("step 1: acc:c engine 3 reference 2")


def test_delay_chain_runs_in_the_map(tmp_path):
    net = parse("steps 8\ninput y : 0..5\nneuron d : delay(y, 3)\nneuron e : delay(y, 1)\n"
                "output d, e\n")
    seq = [[v] for v in (1, 5, 0, 3, 2, 4, 5, 1)]
    got = run_sequence(tmp_path, net, seq)
    assert all(c.exact for c in got)
    assert [c.engine for c in got][3:5] == [[1, 0], [5, 3]]


def _tiled(tmp_path, net, n, name):
    from mapgen.compile import load_wad
    from mapgen.tiles import compile_tiles, plan_tiles

    tiles = plan_tiles(net, n_tiles=n)
    path = os.path.join(str(tmp_path), name)
    write_wad(path, compile_tiles(tiles, net.name), net, tiles)
    return tiles, load_wad(path)


def test_recurrent_nets_over_tiles_keep_their_state_in_each_map(tmp_path):
    """Over 2 and 3 maps: prev nodes kept in the map of their node, the previous values
    other maps need carried by name, a fed-back input crossing maps; every output and
    every value crossing maps exact at every step."""
    from engine.tiled import run_sequence

    for seed, n in ((2, 2), (4, 3)):
        net = recurrent(seed, n_hidden=4, feedback=True)
        tiles, lw = _tiled(tmp_path, net, n, f"t{seed}.wad")
        assert len(lw.infos) == n
        assert any(t.net.nodes[i].is_prev for t in tiles for i in range(len(t.net.nodes)))
        # Split within the cell (3 maps), prev values cross maps too.
        assert any(name.endswith(".prev") for t in tiles for name in t.inputs) == (n == 3)
        got = run_sequence(lw.path, lw.infos, lw.tiles, net, random_sequence(net, 50, seed))
        assert len(got) == 50 and all(c.exact for c in got), (seed, n)


def test_spiking_and_done_over_tiles(tmp_path):
    from dsl.random_net import spiking_text
    from engine.tiled import run_sequence

    net = parse(spiking_text(3, n_in=2, n_out=3, steps=12))
    _, lw = _tiled(tmp_path, net, 2, "spk.wad")
    got = run_sequence(lw.path, lw.infos, lw.tiles, net, random_sequence(net, 12, 1))
    assert len(got) == 12 and all(c.exact for c in got)
    counter = load(os.path.join(ROOT, "circuits", "counter.dnet"))
    _, lw = _tiled(tmp_path, counter, 2, "counter.wad")
    got = run_sequence(lw.path, lw.infos, lw.tiles, counter, plan_steps(counter, [], 40))
    assert len(got) == 10 and got[-1].engine == [10, 1] and all(c.exact for c in got)


def test_extract_and_verify_read_recurrent_machines_back(tmp_path, capsys):
    """prev lanes (copied before the resets), inits (script 3), fed-back inputs (script 6)
    and done come back out of the map; compiled again, the same machine; verify runs it."""
    import build

    src = str(tmp_path / "fb.dnet")
    with open(src, "w") as f:
        f.write("input n : 0..9\nfeedback n = c\ninput k : 0..2\n"
                "neuron c : relu(s=1, max=9) = n + k + prev(c) - 1\ninit c = 2\n"
                "neuron d : step(t=9) = c\ndone d\noutput c\n")
    for path in (os.path.join(ROOT, "circuits", "elman.dnet"), src):
        wad, back = str(tmp_path / "m.wad"), str(tmp_path / "back.dnet")
        assert build.main(["compile", path, "-o", wad]) == 0
        assert build.main(["extract", wad, "-o", back]) == 0
        assert capsys.readouterr().out.rstrip().endswith("builds the same machine")
        text = open(back).read()
        assert "steps open" in text and "prev(" in text
        if path == src:
            assert "feedback n = c" in text and "done d" in text and "init c = 2" in text
        assert build.main(["verify", wad, "--runs", "12"]) == 0
        assert capsys.readouterr().out.rstrip().endswith("engine exact")


def test_a_wad_too_big_for_one_file_runs_from_its_parts(tmp_path):
    """A WAD's lump offsets are 32-bit: maps past `part_bytes` of TEXTMAP go into files
    beside it (the micro:bit chat's 46 maps are about 5 GB). Written lean and streamed from
    the compiler, each map in its own part here, it runs as the one-file WAD does, every
    value exact at every step; a missing part, or another build's, is a clear error."""
    import json

    from acs.wad import WadError, read_wad
    from engine.tiled import run_sequence
    from mapgen.compile import MANIFEST_LUMP, load_wad, part_path
    from mapgen.tiles import compile_tiles, plan_tiles

    net = recurrent(4, n_hidden=4, feedback=True)
    tiles = plan_tiles(net, n_tiles=3)
    path = os.path.join(str(tmp_path), "parts.wad")
    write_wad(path, compile_tiles(tiles, net.name, lean=True), net, tiles, part_bytes=1)
    assert [m.name for m in read_wad(part_path(path, 1)).maps] == ["MAP01"]
    assert [m.name for m in read_wad(part_path(path, 2)).maps] == ["MAP02"]
    assert [m.name for m in read_wad(path).maps] == ["MAP03"]
    lw = load_wad(path)
    assert [i.get("wad_part") for i in lw.infos] == ["parts.1.wad", "parts.2.wad", None]
    seq = random_sequence(net, 20, 4)
    for stream in (True, False):
        got = run_sequence(lw.path, lw.infos, lw.tiles, net, seq, stream=stream)
        assert len(got) == 20 and all(c.exact for c in got), stream
    os.rename(part_path(path, 1), part_path(path, 7))
    os.rename(part_path(path, 2), part_path(path, 1))   # another map under part 1's name
    with pytest.raises(WadError, match=r"parts.1.wad is not the part it was built with"):
        load_wad(path)
    os.rename(part_path(path, 7), part_path(path, 1))   # part 1 back, part 2 gone
    with pytest.raises(WadError, match=r"MAP02\.\.MAP02 are in parts.2.wad, which is missing"):
        load_wad(path)
    infos = json.loads(dict(read_wad(path).lumps)[MANIFEST_LUMP])
    assert infos["MAP01"]["wad_part"] == "parts.1.wad"
