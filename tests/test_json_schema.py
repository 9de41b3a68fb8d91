"""Issue 15 items 16 and 17: the JSON form is checked against its schema (unknown keys,
wrong types, unsafe names, numbers too large to read) with errors naming the JSON path;
the network name never becomes a path outside wads/."""
import json
import os
import subprocess
import sys

import pytest

from conftest import ROOT
from dsl.diagnostics import CompileError
from dsl.jsonio import loads

BASE = {"format": "voodoonet.netlist", "version": 1, "name": "n", "steps": 1,
        "vectors": [{"name": "x", "size": 2, "gate": {"kind": "input", "lo": 0, "hi": 1}},
                    {"name": "y", "size": None, "gate": {"kind": "identity"}}],
        "lines": [["x[0]", "y", 1], ["x[1]", "y", -1]], "bias": {"y": 2}, "outputs": ["y"]}


def doc(**changes):
    d = json.loads(json.dumps(BASE))
    for path, value in changes.items():
        *keys, last = path.split("__")
        obj = d
        for k in keys:
            obj = obj[int(k)] if k.isdigit() else obj[k]
        if value is KeyError:
            del obj[last]
        else:
            obj[int(last) if last.isdigit() else last] = value
    return json.dumps(d)


def test_base_document_loads():
    assert loads(doc(), "n.json").nodes[-1].bias == 2


CASES = [
    (dict(lines=None), "net.json:lines: error: lines must be a list"),
    (dict(lines=3), "net.json:lines: error: lines must be a list"),
    (dict(lines=True), "net.json:lines: error: lines must be a list"),
    (dict(bias=None), "net.json:bias: error: bias must be an object"),
    (dict(biases={"y": 1}), "net.json:biases: error: unknown key 'biases'"),
    (dict(Lines=[]), "hint: did you mean 'lines'?"),
    (dict(vectors__1__gate__Kind="relu"), "net.json:vectors[1].gate.Kind: error: unknown key"),
    (dict(vectors__0__sise=2), "net.json:vectors[0].sise: error: unknown key 'sise'"),
    (dict(vectors__1__gate={"kind": "relux"}), "unknown gate 'relux'"),
    (dict(vectors__1__name="zz\n"), "net.json:vectors[1]: error: a vector needs a name"),
    (dict(outputs=["y\n"]), "bad element reference 'y\\n'"),
    (dict(name="../../../tmp/x"), "net.json:name: error: network name '../../../tmp/x' is not a name"),
    (dict(name="a\n"), "net.json:name: error: network name"),
    (dict(name=7), "net.json:name: error: network name '7' is not a name"),
]


@pytest.mark.parametrize("changes,message", CASES, ids=[m[-30:] for _, m in CASES])
def test_schema_errors_name_their_path(changes, message):
    with pytest.raises(CompileError) as ei:
        loads(doc(**changes), "net.json")
    assert message in str(ei.value)


def test_several_schema_errors_at_once():
    with pytest.raises(CompileError) as ei:
        loads(doc(biases={}, lines=None, name="x/y"), "net.json")
    assert len(ei.value.diagnostics) == 3


def test_huge_literals_are_positioned_errors():
    """A 5,000-digit literal ended in `internal error: ValueError: Exceeds the limit`."""
    text = doc().replace('"bias": {"y": 2}', '"bias": {"y": ' + "9" * 5000 + "}")
    with pytest.raises(CompileError) as ei:
        loads(text, "net.json")
    assert "net.json:bias.y: error: number 999999999999... (5000 digits) is too large" \
        in str(ei.value)
    text = doc().replace('"hi": 1', '"hi": -' + "1" * 5000)
    with pytest.raises(CompileError, match="too large"):
        loads(text, "net.json")


def cli(*args, cwd):
    return subprocess.run([sys.executable, os.path.join(ROOT, "build.py"), *args], cwd=cwd,
                          capture_output=True, text=True,
                          env={**os.environ, "VOODOO_WADS": str(cwd / "wads")})


def test_network_name_never_leaves_wads(tmp_path):
    src = tmp_path / "evil.json"
    src.write_text(doc(name="../../../" + "tmp_evil"))
    r = cli("compile", str(src), cwd=tmp_path)
    assert r.returncode == 1 and "is not a name" in r.stderr
    assert not (tmp_path / "wads").exists() or os.listdir(tmp_path / "wads") == []
    src.write_text(doc(name="fine"))
    r = cli("compile", str(src), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert os.listdir(tmp_path / "wads") == ["fine.wad"]


def test_embedded_netlist_lump_is_checked_too(tmp_path):
    """A WAD whose netlist lump has `"lines": null` gave TypeError through `run x.wad`."""
    from acs.wad import read_wad, write_wad
    r = cli("compile", os.path.join(ROOT, "circuits", "xor.dnet"), "-o",
            str(tmp_path / "x.wad"), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    c = read_wad(str(tmp_path / "x.wad"))
    lumps = dict(c.lumps)
    net = json.loads(lumps["VNETLIST"])
    net["lines"] = None
    write_wad(str(tmp_path / "bad.wad"), c.maps, extra_lumps={
        "VNETINFO": lumps["VNETINFO"], "VNETLIST": json.dumps(net).encode()})
    r = cli("run", str(tmp_path / "bad.wad"), "-i", "1,0", cwd=tmp_path)
    assert r.returncode == 1 and "VNETLIST:lines: error: lines must be a list" in r.stderr


def test_a_slice_where_an_element_goes_is_refused_with_its_path():
    """Issue 25 item 1: the JSON form spells elements out; a slice is a positioned error."""
    with pytest.raises(CompileError) as e:
        loads(doc(lines__0__0="x[0:2]"), "net.json")
    assert "net.json:lines[0]: error: 'x[0:2]' is a slice; the JSON form names one " \
           "element here" in str(e.value)
