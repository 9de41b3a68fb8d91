"""Nodes built ahead (mapgen/nodes.py): zdbsp's ZNODES in the WAD, the map's own TEXTMAP
untouched, and the same results in the engine with nodes and without."""
import os
import subprocess
import sys

import pytest

from acs.wad import read_wad
from conftest import ROOT
from dsl import load
from dsl.reference import evaluate
from engine.runner import MapRunner
from mapgen import nodes as N
from mapgen.compile import compile_netlist, write_wad

needs_zdbsp = pytest.mark.skipif(N.zdbsp() is None,
                                 reason="zdbsp is not installed (make demo installs it)")


@pytest.fixture(scope="module")
def hello():
    net = load(os.path.join(ROOT, "circuits", "hello.dnet"))
    return net, compile_netlist(net)


@needs_zdbsp
def test_nodes_are_zdbsps_and_the_textmap_is_ours(tmp_path, hello, monkeypatch):
    net, cm = hello
    monkeypatch.setenv("VOODOO_CACHE", str(tmp_path / "cache"))
    with_nodes, without = str(tmp_path / "n.wad"), str(tmp_path / "plain.wad")
    write_wad(with_nodes, [cm], net)
    write_wad(without, [cm], net, nodes=False)
    a, b = read_wad(with_nodes).maps[0], read_wad(without).maps[0]
    assert a.nodes[:3] == b"ZGL" and b.nodes is None        # compressed GL nodes
    assert a.textmap == b.textmap == cm.textmap
    assert os.listdir(tmp_path / "cache" / "nodes")          # cached by content
    again = str(tmp_path / "again.wad")                      # the cache gives the same bytes
    cm.nodes = None
    write_wad(again, [cm], net)
    with open(with_nodes, "rb") as f, open(again, "rb") as g:
        assert f.read() == g.read()


def test_without_zdbsp_the_engine_builds_them_and_says_so_once(tmp_path):
    """With no node builder the WAD has no ZNODES, one note says why, and the map still
    computes the reference."""
    code = f"""
import sys; sys.path.insert(0, {ROOT!r})
from dsl import load
from mapgen.compile import compile_netlist, write_wad
net = load({os.path.join(ROOT, 'circuits', 'xor.dnet')!r})
cm = compile_netlist(net)
write_wad({str(tmp_path / 'a.wad')!r}, [cm], net)
write_wad({str(tmp_path / 'b.wad')!r}, [compile_netlist(net)], net)
"""
    env = dict(os.environ, VOODOO_ZDBSP="")
    run = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert run.stderr.count("zdbsp is not installed") == 1
    assert read_wad(str(tmp_path / "a.wad")).maps[0].nodes is None


@needs_zdbsp
def test_same_outputs_with_nodes_and_without(tmp_path, hello):
    net, cm = hello
    xs = [[lo for lo, _ in net.input_ranges()], [hi for _, hi in net.input_ranges()],
          [1, 2, 0, 3, 1, 2, 3, 0, 1, 1, 2, 2]]
    want = evaluate(net, xs).last_outputs().tolist()
    for nodes in (True, False):
        path = str(tmp_path / f"hello-{nodes}.wad")
        write_wad(path, [cm], net, nodes=nodes)
        with MapRunner(path, cm.manifest) as runner:
            assert [runner.infer(x) for x in xs] == want
