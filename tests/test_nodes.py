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


# -- GZDoom's flat vertex buffer ------------------------------------------------------------
def _flat_by_hand(textmap: str, znodes: bytes) -> int:
    """GZDoom's CreateVBO count, walked seg by seg from the WAD's own text and nodes (an
    independent reading: modding's TEXTMAP parser, a plain loop over the ZGL2 records)."""
    import struct
    import zlib

    from modding.textmap import parse_textmap

    tm = parse_textmap(textmap)
    raw = zlib.decompress(znodes[4:])
    fmt, none = {b"ZGLN": ("<IIHB", 0xFFFF), b"ZGL2": ("<IIIB", 0xFFFFFFFF)}[znodes[:4]]
    size = struct.calcsize(fmt)
    org, new = struct.unpack_from("<II", raw, 0)
    o = 8 + 8 * new
    nsub, = struct.unpack_from("<I", raw, o)
    counts = struct.unpack_from(f"<{nsub}I", raw, o + 4)
    o += 4 + 4 * nsub + 4
    per: dict[int, set] = {}
    k = 0
    for n in counts:
        vs, sec = [], None
        for j in range(n):
            v1, _, line, side = struct.unpack_from(fmt, raw, o + size * (k + j))
            vs.append(v1)
            if sec is None and line != none:
                sec = tm.side_sector(line, "back" if side else "front")
        k += n
        if n >= 3 and sec is not None:
            per.setdefault(sec, set()).update(vs)
    return 20 + 2 * sum(len(v) for v in per.values())


@needs_zdbsp
def test_gzdoom_flat_vertices_counted_as_gzdoom_does_and_estimated_before_nodes():
    """The exact count (numpy over the nodes) equals a seg-by-seg walk of the WAD's own text
    and nodes; the estimate made before nodes (checks.flat_vertices) is a few per cent
    under it; the report gives the count."""
    from mapgen.checks import flat_vertices

    net = load(os.path.join(ROOT, "circuits", "mlp3.dnet"))
    cm = compile_netlist(net).with_nodes()
    model = cm.layout.model
    sides = [s.sector for s in model.sides]
    exact = N.gl_flat_vertices(cm.nodes, [(sides[ln.front], sides[ln.back] if ln.back >= 0
                                           else -1) for ln in model.lines])
    assert exact == _flat_by_hand(cm.textmap, cm.nodes)
    est = flat_vertices(model)
    assert 0.9 * exact <= est <= exact, (est, exact)
    assert f"{exact:,} of the 2,000,000" in cm.report()


def test_weighted_lines_end_on_their_lane_walls():
    """A weighted line spans its landing from wall to wall: its ends are vertices the walls
    share, so a line costs GZDoom 2 vertices a plane, not the 4 of a line floating clear
    of the walls (the node builder splits the walls where the line's extension meets them)."""
    from mapgen import physics as P
    from mapgen.layout import build_layout
    from mapgen.circuit import lower

    net = load(os.path.join(ROOT, "circuits", "mlp3.dnet"))
    lay = build_layout(lower(net))
    m = lay.model
    weighted = (P.SPECIAL["Light_RaiseByValue"], P.SPECIAL["Light_LowerByValue"])
    lines = [ln for ln in m.lines if ln.special in weighted]
    assert lines
    for g in lay.lanes:
        for i, (x, special, *_rest) in enumerate(g.lines):
            if special in weighted:
                ln = m.lines[g.line_index[i]]
                ys = sorted((m.vertices[ln.v1][1], m.vertices[ln.v2][1]))
                assert ys == [g.y0, g.y0 + P.LANE_WIDTH]


def test_a_map_over_gzdooms_vertex_buffer_is_refused(monkeypatch):
    """Over the budget of GZDoom's flat vertex buffer the compiler refuses the map and says
    to split it, as for any other budget."""
    from dsl.diagnostics import CompileError
    from mapgen import physics as P

    net = load(os.path.join(ROOT, "circuits", "xor.dnet"))
    monkeypatch.setattr(P, "GZDOOM_FLAT_VERTICES", 200)
    with pytest.raises(CompileError) as e:
        compile_netlist(net)
    assert "vertices in GZDoom's flat buffer" in str(e.value)
    assert "split the network over several maps" in str(e.value)
