"""Convolutions and pools (dsl/conv.py): the .dnet forms, the graph API and the JSON IR.

Every form is compared with torch's own conv2d / avg_pool2d (a sum) / max_pool2d on
random inputs, `==` on every output; shape mistakes are positioned errors; the JSON form
keeps a convolution compact and round-trips it; a small convolutional map runs exactly in
the engine, every intermediate read back."""
from __future__ import annotations

import json

import numpy as np
import pytest

import torch  # pinned: a missing one fails
import torch.nn.functional as F

from dsl.diagnostics import CompileError
from dsl.graph import Graph, GraphError
from dsl.jsonio import dumps, loads
from dsl.parser import parse
from dsl.reference import evaluate

W1 = [[1, 0, -1, 2, 0, -2, 1, 0, -1, 3, 1, 0, 0, 1, 2, -1, -1, 0],
      [0, 1, 0, 1, -4, 1, 0, 1, 0, 2, 0, 2, 1, 1, 1, -2, 0, 1],
      [2, 2, -1, 0, 0, 1, -3, 1, 1, 0, 0, 0, 1, -1, 1, 0, 2, 0]]
TEXT = f"""network convs
input x[50] : 0..3                       # 2 channels of 5x5
neuron c[27] : relu(s=2, max=7)
lines x -> c conv(in=[2, 5, 5], out=3, kernel=3, stride=2, pad=1) {W1}
bias c = [{', '.join(['1'] * 9 + ['0'] * 9 + ['-2'] * 9)}]
neuron p[12] : identity
lines c -> p avgpool(in=[3, 3, 3], kernel=2, stride=1)
neuron m[12] : maxpool(c, in=[3, 3, 3], kernel=3, stride=2, pad=1)
neuron r[6] : relu(s=3, max=9)
lines x[25:50] -> r conv(in=[1, 5, 5], out=3, kernel=[2, 5], stride=[2, 1]) [
  [1, 2, 3, 0, 0, -1, -2, -3, 1, 1], [0, 0, 1, 0, 0, 1, 0, 0, 1, 0], [3, 0, 0, 0, -3, 1, 1, 1, 1, 1]]
output p, m, r
"""


def torch_reference(x: np.ndarray) -> np.ndarray:
    t = torch.tensor(x, dtype=torch.float64)
    w = torch.tensor(W1, dtype=torch.float64).reshape(3, 2, 3, 3)
    b = torch.tensor([1.0, 0.0, -2.0], dtype=torch.float64)
    c = torch.clamp(torch.floor(F.conv2d(t.reshape(-1, 2, 5, 5), w, b, 2, 1) / 2), 0, 7)
    p = F.avg_pool2d(c, 2, 1, divisor_override=1).flatten(1)
    m = F.max_pool2d(c, 3, 2, 1).flatten(1)
    w2 = torch.tensor([[1, 2, 3, 0, 0, -1, -2, -3, 1, 1], [0, 0, 1, 0, 0, 1, 0, 0, 1, 0],
                       [3, 0, 0, 0, -3, 1, 1, 1, 1, 1]], dtype=torch.float64).reshape(3, 1, 2, 5)
    r = torch.clamp(torch.floor(F.conv2d(t[:, 25:].reshape(-1, 1, 5, 5), w2, None, (2, 1))
                                / 3), 0, 9).flatten(1)
    return torch.cat([p, m, r], 1).numpy().astype(np.int64)


def _random(n, size, seed=0):
    return np.random.default_rng(seed).integers(0, 4, (n, size))


def test_forms_equal_torch():
    net = parse(TEXT)
    x = np.vstack([np.zeros((1, 50), int), np.full((1, 50), 3), _random(400, 50)])
    assert np.array_equal(np.asarray(evaluate(net, x).last_outputs()), torch_reference(x))
    assert [r.conv.kind for r in net.convs] == ["conv", "avgpool", "conv"]
    assert net.convs[2].src_start == 25
    assert "m_0__max" in net.groups  # the max operation's parts, named after the element


@pytest.mark.parametrize("body, message", [
    ("lines x -> c conv(in=[2, 5, 5], out=3, kernel=3, stride=2, pad=1) [[1, 2]]",
     "conv weights have 1 rows but out=3"),
    ("lines x -> c conv(in=[2, 5, 4], out=3, kernel=3, stride=2, pad=1) " + str(W1),
     "the source has 50 elements but in=[2, 5, 4] holds 40"),
    ("lines x -> c conv(in=[2, 5, 5], out=3, kernel=3, stride=1, pad=1) " + str(W1),
     "the destination has 27 elements but the result is [3, 5, 5] = 75"),
    ("lines x -> c conv(in=[2, 5, 5], out=3, kernal=3) " + str(W1),
     "conv has no parameter 'kernal'"),
    ("lines x -> c conv(in=[2, 5, 5], out=3, kernel=9) " + str(W1),
     "the kernel 9 is larger than the padded image's height 5"),
    ("lines x -> c conv(in=[2, 5, 5], kernel=3) " + str(W1), "conv needs the parameter 'out'"),
    ("lines x -> c convv(in=[2, 5, 5], out=3, kernel=3)", "unknown lines form 'convv'"),
    ("lines x -> c avgpool(in=[2, 5, 5], kernel=2, pad=2)", "pad=2 is more than half"),
    ("lines x -> c avgpool(in=[2, 5, 5], kernel=2) [[1]]", "avgpool takes no weights"),
    ("lines x -> c conv(in=[2, 5, 5], out=3, kernel=3, stride=0) " + str(W1),
     "stride=0 is out of range"),
    ("lines x -> c conv(in=[2, 5], out=3, kernel=3) " + str(W1), "'in' must be [channels"),
])
def test_shape_mistakes_are_positioned(body, message):
    text = f"network bad\ninput x[50] : 0..3\nneuron c[27] : relu(s=2)\n{body}\noutput c\n"
    with pytest.raises(CompileError) as e:
        parse(text, "bad.dnet")
    first = str(e.value).splitlines()[0]
    assert first.startswith("bad.dnet:4:") and message in first, first


def test_maxpool_mistakes():
    head = "network bad\ninput x[8] : 0..3\n"
    with pytest.raises(CompileError, match="bad.dnet:3:15: error: maxpool needs its source"):
        parse(head + "neuron m[2] : maxpool(in=[2, 2, 2], kernel=2)\noutput m\n", "bad.dnet")
    with pytest.raises(CompileError, match="destination has 3 elements but the result is"):
        parse(head + "neuron m[3] : maxpool(x, in=[2, 2, 2], kernel=2)\noutput m\n", "bad.dnet")
    with pytest.raises(CompileError, match="unknown name 'y'"):
        parse(head + "neuron m[2] : maxpool(y, in=[2, 2, 2], kernel=2)\noutput m\n", "bad.dnet")
    later = parse(head + "neuron m[2] : maxpool(h, in=[2, 2, 2], kernel=2)\n"
                         "neuron h[8] : relu(s=1) \nlines x -> h diag [1, 1, 1, 1, 1, 1, 1, 1]\n"
                         "output m\n")  # a source declared after its pool
    x = _random(50, 8)
    assert np.array_equal(np.asarray(evaluate(later, x).last_outputs()),
                          x.reshape(-1, 2, 4).max(2))


def test_json_keeps_convolutions_compact_and_round_trips():
    net = parse(TEXT)
    doc = json.loads(dumps(net))
    assert [c["kind"] for c in doc["convs"]] == ["conv", "avgpool", "conv"]
    assert doc["convs"][0] == {"kind": "conv", "from": "x", "to": "c", "in": [2, 5, 5],
                               "out": 3, "kernel": 3, "stride": 2, "pad": 1, "weights": W1}
    assert doc["convs"][2]["from"] == "x[25:50]" and doc["convs"][2]["kernel"] == [2, 5]
    covered = sum(1 for n in net.nodes if n.group in ("c", "p", "r") for _ in n.weights)
    assert len(doc["lines"]) == net.n_connections - covered  # only the maxpool's parts
    back = loads(dumps(net))
    assert dumps(back) == dumps(net)
    x = _random(100, 50, 3)
    assert np.array_equal(evaluate(back, x).last_outputs(), evaluate(net, x).last_outputs())


def test_json_conv_errors_name_the_path():
    doc = json.loads(dumps(parse(TEXT)))
    doc["convs"][0]["out"] = 4
    with pytest.raises(CompileError, match=r"<json>:convs\[0\]: error: conv weights have 3 "
                                           r"rows but out=4"):
        loads(json.dumps(doc))
    doc = json.loads(dumps(parse(TEXT)))
    doc["convs"][1]["kernal"] = 2
    with pytest.raises(CompileError, match=r"convs\[1\]\.kernal: error: unknown key"):
        loads(json.dumps(doc))
    doc = json.loads(dumps(parse(TEXT)))
    doc["convs"][2]["from"] = "x[25:51]"
    with pytest.raises(CompileError, match=r"convs\[2\]\.from: error: slice x\[25:51\]"):
        loads(json.dumps(doc))


def test_edited_lines_are_written_out():
    """A netlist whose lines no longer are the convolution's writes them as lines."""
    net = parse(TEXT)
    c0 = net.nodes[net.groups["c"][0]]
    src = next(iter(c0.weights))
    c0.weights[src] += 1
    doc = json.loads(dumps(net))
    assert [c["kind"] for c in doc["convs"]] == ["avgpool", "conv"]
    back = loads(json.dumps(doc))
    x = _random(60, 50, 4)
    assert np.array_equal(evaluate(back, x).last_outputs(), evaluate(net, x).last_outputs())


def test_graph_api_writes_the_forms():
    g = Graph("gconv")
    x = g.inputs("x", 50, 0, 3)
    w = np.array(W1).reshape(3, 2, 3, 3)
    c = g.conv2d(x, (2, 5, 5), w, [1, 0, -2], stride=2, pad=1, s=2, cap=7, name="c")
    p = g.avgpool(c, (3, 3, 3), 2, stride=1, name="p")
    m = g.maxpool(c, (3, 3, 3), 3, stride=2, pad=1)
    w2 = np.array([[1, 2, 3, 0, 0, -1, -2, -3, 1, 1], [0, 0, 1, 0, 0, 1, 0, 0, 1, 0],
                   [3, 0, 0, 0, -3, 1, 1, 1, 1, 1]]).reshape(3, 1, 2, 5)
    r = g.conv2d(x[25:], (1, 5, 5), w2, stride=(2, 1), s=3, cap=9, name="r")
    g.output(p)
    g.output(m, "m")
    g.output(r)
    text = g.to_dnet()
    assert "lines x -> c conv(in=[2, 5, 5], out=3, kernel=3, stride=2, pad=1) [" in text
    assert "lines c -> p avgpool(in=[3, 3, 3], kernel=2, stride=1, pad=0)" in text
    assert "lines x[25:50] -> r conv(in=[1, 5, 5], out=3, kernel=[2, 5], stride=[2, 1]" in text
    x_in = _random(300, 50, 5)
    got = np.asarray(evaluate(g.build(), x_in).last_outputs())
    assert np.array_equal(got, torch_reference(x_in))
    with pytest.raises(GraphError, match="conv2d weight has shape"):
        g.conv2d(x, (2, 5, 5), np.ones((3, 3, 3)))
    with pytest.raises(GraphError, match="the source has 50 elements but in=\\[1, 5, 5\\]"):
        g.conv2d(x, (1, 5, 5), np.ones((1, 1, 3, 3), int))


def test_graph_conv_of_a_sum_names_it_first():
    g = Graph("sums")
    a = g.inputs("a", 4, 0, 2)
    b = g.inputs("b", 4, 0, 2)
    c = g.conv2d([a[i] + b[i] for i in range(4)], (1, 2, 2), np.ones((1, 1, 2, 2), int), [1],
                 s=1, cap=20, name="c")
    g.output(c)
    net = g.build()
    x = _random(40, 8, 6) % 3
    want = x.sum(1, keepdims=True) + 1
    assert np.array_equal(np.asarray(evaluate(net, x).last_outputs()), want)


def test_small_convolutional_map_is_exact_in_the_engine(tmp_path):
    from test_engine_maps import edge_and_random_inputs, run_exact

    net = parse(TEXT.replace("input x[50] : 0..3", "input x[50] : 0..1"))
    run_exact(tmp_path, net, edge_and_random_inputs(net, 5, 3))
