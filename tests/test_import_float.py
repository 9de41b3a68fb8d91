"""The float exports a torch user makes (interop/onnx_float.py, models/seq_quant.py,
docs/import.md "Float graphs"): BatchNorm after a Conv or Linear, identity shortcuts,
global average pools (GlobalAveragePool and ReduceMean), ZeroPad2d before a Conv or a
pool, Clip / ReLU6, LeakyRelu, Sigmoid, Tanh and GELU as lookups, a Softmax at the output.

Each construct is a small seeded torch model exported to ONNX here, imported, and
checked three ways: the rebuilt float model equals torch's; the netlist's reference `==`
a direct integer computation of the quantised layers (written here, in numpy, from their
integer weights, divisors and tables), and each lookup's table is the activation torch
computes; the netlist's argmax agrees with the float model's on most calibration inputs.
One model holding most constructs runs in the engine, every light read back. What stays
refused says why, naming the node."""
from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

from conftest import ROOT
from dsl.diagnostics import VoodooError
from dsl.parser import parse
from dsl.reference import evaluate

import onnx  # noqa: E402  pinned requirements: a missing one fails
import torch  # noqa: E402
from torch import nn  # noqa: E402

from interop.onnx_float import float_stack  # noqa: E402
from interop.onnx_import import load_model, onnx_to_dnet, quantise_float  # noqa: E402

RANGE, STEP = (0, 3), 1 / 3     # four input levels, the float model sees x / 3


@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    """Tiny tensors: one thread is several times faster than two fighting for 2 cores."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


def _export(model, shape, **kw) -> bytes:
    f = io.BytesIO()
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        kw.setdefault("dynamo", False)   # the TorchScript exporter: seconds faster
        torch.onnx.export(model.eval(), (torch.zeros(1, *shape),), f, **kw)
    return f.getvalue()


def _seeded(model, seed=0):
    """Random weights and BatchNorm statistics (not the identity a fresh one has)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn(p.shape, generator=g) * 0.6)
        for m in model.modules():
            if isinstance(m, (nn.BatchNorm1d, nn.BatchNorm2d)):
                m.running_mean.copy_(torch.rand(m.running_mean.shape, generator=g) - 0.5)
                m.running_var.copy_(torch.rand(m.running_var.shape, generator=g) + 0.5)
    return model.eval()


def _direct(q, s, x) -> np.ndarray:
    """The quantised layers' integers computed directly: integer weights and biases (with
    shortcut weights), floor division by each ReLU's divisor and clamp, each lookup's
    table at its accumulator, window sums, maxima."""
    params, L = q._integer_params(s), q.clamp
    h = np.asarray(x, np.int64)
    if isinstance(q.input_shape, tuple):
        h = h.reshape(len(h), *q.input_shape)
    outs, k_div = {-1: h}, 0
    for k, st in enumerate(q.steps):
        if st.kind in ("conv", "linear"):
            w, b, r = (None if v is None else v.numpy().astype(np.int64) for v in params[k])
            acc = _conv(h, w, st.module) if st.kind == "conv" else h @ w.T
            acc = acc + (b[:, None, None] if acc.ndim == 4 else b)
            if r is not None:
                acc = acc + (r[:, None, None] if acc.ndim == 4 else r) * outs[st.skip]
            h = acc
        elif st.kind == "avgpool":
            h = _windows(h, st.module).sum((-1, -2))
        elif st.kind == "maxpool":
            h = _windows(h, st.module, fill=np.iinfo(np.int64).min).max((-1, -2))
        elif h.ndim == 4:
            h = h.reshape(len(h), -1)
        if st.relu:
            h, k_div = np.clip(h // s[k_div], 0, L), k_div + 1
        elif st.act is not None:
            lo, T = q.tables[k]
            h, k_div = T[np.clip(h - lo, 0, len(T) - 1)], k_div + 1
        outs[k] = h
    return h


def _pair(v):
    return tuple(v) if isinstance(v, (tuple, list)) else (v, v)


def _windows(h, m, fill=0):
    """(N, C, OH, OW, KH, KW) windows of h padded with `fill`."""
    (kh, kw), (sh, sw), (ph, pw) = _pair(m.kernel_size), _pair(m.stride or m.kernel_size), \
        _pair(m.padding)
    p = np.pad(h, ((0, 0), (0, 0), (ph, ph), (pw, pw)), constant_values=fill)
    oh, ow = (p.shape[2] - kh) // sh + 1, (p.shape[3] - kw) // sw + 1
    return np.stack([np.stack([p[:, :, i * sh:i * sh + kh, j * sw:j * sw + kw]
                               for j in range(ow)], 2) for i in range(oh)], 2)


def _conv(h, w, m):
    win = _windows(h, m)                       # N, C, OH, OW, KH, KW
    return np.einsum("ncyxij,ocij->noyx", win, w)


def _import(data, weight_bits=6):
    """(netlist, QuantStack, divisors, calibration inputs, agreement) of a float export."""
    net = parse(onnx_to_dnet(data, RANGE, STEP, weight_bits=weight_bits))
    m = load_model(data)
    model, shape = float_stack(m, m.graph.input[0], "<t>")
    q, s, x, agree = quantise_float(model, shape, RANGE, STEP, None, weight_bits, 15, "<t>")
    return net, q, s, x, agree


def _check(torch_model, shape, ops=(), agree_min=0.9, **export):
    """Export, check the ONNX holds `ops`, rebuild (== torch's float model), import: the
    netlist's reference == the direct integers on the calibration inputs and the edges;
    returns the netlist and its agreement with the float model."""
    data = _export(torch_model, shape, **export)
    m = load_model(data)
    assert set(ops) <= {n.op_type for n in m.graph.node}, [n.op_type for n in m.graph.node]
    rebuilt, _ = float_stack(m, m.graph.input[0], "<t>")
    xf = torch.rand(30, *shape, dtype=torch.float64) * 3
    with torch.no_grad():
        want = torch_model.double()(xf)
        if isinstance(torch_model[-1] if isinstance(torch_model, nn.Sequential) else None,
                      nn.Softmax):
            want = torch.log(want)
            got = torch.log_softmax(rebuilt(xf), 1)
        else:
            got = rebuilt(xf)
    torch_model.float()
    assert float((want - got).abs().max()) < 1e-5
    net, q, s, x, agree = _import(data)
    x = np.concatenate([x, np.full((1, x.shape[1]), RANGE[0]), np.full((1, x.shape[1]),
                                                                       RANGE[1])])
    got = np.asarray(evaluate(net, x.tolist()).last_outputs(), dtype=np.int64)
    assert np.array_equal(got, _direct(q, s, x))
    assert np.array_equal(got, q.integer_outputs(x, s))
    assert agree >= agree_min, agree
    return net, q, s, agree


# ----------------------------------------------------------------- activations as lookups
ACTIVATIONS = {  # torch module, the ONNX operators torch writes for it, export options
    "sigmoid": (nn.Sigmoid, ("Sigmoid",), {}),
    "tanh": (nn.Tanh, ("Tanh",), {}),
    "leaky_relu": (lambda: nn.LeakyReLU(0.1), ("LeakyRelu",), {}),
    "relu6": (nn.ReLU6, ("Clip",), {}),
    "gelu": (nn.GELU, ("Gelu",), {}),
    "gelu_erf": (nn.GELU, ("Erf", "Div", "Mul"), {"opset_version": 17}),   # before opset 20
    "gelu_tanh": (lambda: nn.GELU("tanh"), ("Tanh", "Mul"), {"opset_version": 17}),
}


@pytest.mark.parametrize("name", ACTIVATIONS)
def test_an_activation_is_a_lookup_of_the_accumulator(name):
    make, ops, export = ACTIVATIONS[name]
    model = _seeded(nn.Sequential(nn.Linear(8, 6), make(), nn.Linear(6, 3)), 1)
    net, q, s, agree = _check(model, (8,), ops, **export)
    (k, (lo, T)), = q.tables.items()
    # the table is the activation torch computes, rounded: f(acc a) / (a s), clamped
    a, div = q.lookup_scales[k]
    acc = np.arange(lo, lo + len(T))
    with torch.no_grad():
        f = make()(torch.from_numpy(acc * a)).numpy() / (a * div)
    inside = np.abs(f) < q.clamp
    assert np.all(np.abs(T[inside] - f[inside]) <= 0.5 + 1e-5)
    assert np.all(T[~inside] == np.sign(f[~inside]) * q.clamp)
    assert sum(g.gate.kind == "lut" for g in net.nodes) == 6
    assert len(set(T.tolist())) > 2   # levels, not a constant or a step


def test_an_activation_after_a_convolution_and_its_batchnorm():
    model = _seeded(nn.Sequential(nn.Conv2d(1, 3, 3), nn.BatchNorm2d(3), nn.Tanh(),
                                  nn.Flatten(), nn.Linear(48, 3)), 2)
    _check(model, (1, 6, 6), ("BatchNormalization", "Tanh"), do_constant_folding=False)


# ----------------------------------------------------------------- shortcuts
class _Block(nn.Module):
    """y = relu(f(x) + x), f two layers (a ResNet basic block) or one."""

    def __init__(self, f):
        super().__init__()
        self.f = f

    def forward(self, x):
        return torch.relu(self.f(x) + x)


def test_identity_shortcuts_of_linear_layers():
    """Over one layer (its own input: folded into its weights' diagonal) and over two
    (lines of their own from the earlier vector)."""
    model = _seeded(nn.Sequential(nn.Linear(8, 6), nn.ReLU(),
                                  _Block(nn.Linear(6, 6)),
                                  _Block(nn.Sequential(nn.Linear(6, 6), nn.ReLU(),
                                                       nn.Linear(6, 6))),
                                  nn.Linear(6, 3)), 3)
    net, q, s, agree = _check(model, (8,), ("Add",))
    assert [st.skip for st in q.steps if st.skip is not None] == [0, 1]
    text = onnx_to_dnet(_export(model, (8,)), RANGE, STEP)
    assert text.count(" diag [") == 1     # the one over two layers; the other is folded


@pytest.mark.parametrize("block, shape", [
    (nn.Sequential(nn.Linear(6, 6), nn.Tanh(), nn.Linear(6, 6)), (6,)),
    (nn.Sequential(nn.Conv2d(2, 2, 3, padding=1), nn.ReLU(), nn.Conv2d(2, 2, 3, padding=1)),
     (2, 4, 4))])
def test_a_shortcut_from_the_networks_input(block, shape):
    head = [nn.Flatten(), nn.Linear(32, 3)] if len(shape) == 3 else [nn.Linear(6, 3)]
    _, q, _, _ = _check(_seeded(nn.Sequential(_Block(block), *head), 11), shape, ("Add",))
    assert [st.skip for st in q.steps if st.skip is not None] == [-1]


def test_a_residual_block_of_convolutions_with_batchnorm():
    model = _seeded(nn.Sequential(nn.Conv2d(1, 3, 3, padding=1), nn.ReLU(),
                                  _Block(nn.Sequential(nn.Conv2d(3, 3, 3, padding=1),
                                                       nn.BatchNorm2d(3))),
                                  nn.Flatten(), nn.Linear(48, 3)), 4)
    _check(model, (1, 4, 4), ("Add", "BatchNormalization"), do_constant_folding=False)


# ----------------------------------------------------------------- pools and padding
class _Mean(nn.Module):
    def forward(self, x):
        return x.mean((2, 3))


@pytest.mark.parametrize("gap, op", [(nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten()),
                                      "GlobalAveragePool"), (_Mean(), "ReduceMean")])
def test_global_average_pools(gap, op):
    model = _seeded(nn.Sequential(nn.Conv2d(1, 4, 3), nn.ReLU(), gap, nn.Linear(4, 3)), 5)
    _check(model, (1, 6, 6), (op,))


def test_torchs_default_exporter():
    """torch.onnx.export's default (dynamo=True, opset 20) writes a global average pool as
    ReduceMean and Reshape, folds the BatchNorm into its Conv itself, and GELU as Gelu."""
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.c0, self.c1 = nn.Conv2d(1, 3, 3, padding=1), nn.Conv2d(3, 3, 3, padding=1)
            self.bn, self.fc = nn.BatchNorm2d(3), nn.Linear(3, 3)

        def forward(self, x):
            h = nn.functional.gelu(self.c0(x))
            h = torch.relu(self.bn(self.c1(h)) + h)
            return self.fc(nn.functional.adaptive_avg_pool2d(h, 1).flatten(1))

    _check(_seeded(Net(), 10), (1, 4, 4), ("ReduceMean", "Gelu", "Add"), dynamo=True)


def test_zero_padding_before_a_convolution_and_before_pools():
    model = _seeded(nn.Sequential(nn.ZeroPad2d(1), nn.Conv2d(1, 2, 3), nn.ReLU(),
                                  nn.ZeroPad2d(1), nn.MaxPool2d(2),
                                  nn.Conv2d(2, 2, 2), nn.Sigmoid(),
                                  nn.ZeroPad2d(1), nn.AvgPool2d(2),
                                  nn.Flatten(), nn.Linear(8, 3)), 6)
    _check(model, (1, 6, 6), ("Pad", "MaxPool", "AveragePool"))


# ----------------------------------------------------------------- refusals
class _Projection(nn.Module):
    def __init__(self):
        super().__init__()
        self.f, self.p = nn.Linear(6, 6), nn.Linear(6, 6)

    def forward(self, x):
        return torch.relu(self.f(x) + self.p(x))


class _AfterRelu(nn.Module):
    def __init__(self):
        super().__init__()
        self.f = nn.Linear(6, 6)

    def forward(self, x):
        return torch.relu(self.f(x)) + x


class _PerChannel(nn.Module):
    def forward(self, x):
        return x * torch.arange(1.0, 7.0)


@pytest.mark.parametrize("model, shape, match", [
    (nn.Sequential(nn.Linear(6, 6), nn.ReLU(), _Projection(), nn.Linear(6, 2)), (6,),
     r"node '/2/p/Gemm' \(Gemm\): does not read the chain's tensor '/2/f/Gemm_output_0'\n"
     r"    hint: the importer takes one chain of layers, joined only by identity shortcuts "
     r"\(y = f\(x\) \+ x\); a branch with layers of its own \(a projection shortcut\)"),
    (nn.Sequential(nn.Linear(6, 6), nn.ReLU(), _AfterRelu(), nn.Linear(6, 2)), (6,),
     r"residual addition\) does not follow a Conv2d or Linear\n    hint: add the shortcut to "
     r"a layer's output before its activation"),
    (nn.Sequential(nn.Linear(6, 4), nn.Sigmoid()), (6,),
     r"<onnx>: the model must end with a Conv2d or Linear layer without an activation: its "
     r"outputs are the logits \(it ends in Elementwise \(ONNX node '/1/Sigmoid'\)\)\n    "
     r"hint: leave the last activation out"),
    (nn.Sequential(nn.Conv2d(1, 2, 3), nn.MaxPool2d(2), nn.Tanh(), nn.Flatten(),
                   nn.Linear(2, 2)), (1, 4, 4),
     r"layer 2 \(ONNX node '/2/Tanh'\) \(Elementwise\) does not follow a Conv2d or Linear\n"
     r"    hint: an activation other than ReLU is a lookup"),
    (nn.Sequential(nn.Linear(6, 6), _PerChannel(), nn.Linear(6, 2)), (6,),
     r"\(Mul\): an elementwise operator with a constant of more than one value"),
    (nn.Sequential(nn.Conv2d(1, 2, 3), nn.Tanh(), nn.ZeroPad2d(1), nn.MaxPool2d(2),
                   nn.Flatten(), nn.Linear(18, 2)), (1, 6, 6),
     r"\(Pad\): a zero padding before a MaxPool of values that may be negative"),
    (nn.Sequential(nn.Conv2d(1, 2, 3), nn.ZeroPad2d(1), nn.Tanh(), nn.Conv2d(2, 2, 3),
                   nn.Flatten(), nn.Linear(32, 2)), (1, 6, 6),
     r"\(Pad\): a zero padding followed by Tanh"),
    (nn.Sequential(nn.Linear(6, 6), nn.ReLU(), nn.BatchNorm1d(6), nn.Linear(6, 2)), (6,),
     r"a BatchNorm that does not follow a Conv or a Linear layer"),
])
def test_what_stays_refused_says_why(model, shape, match):
    with pytest.raises(VoodooError, match=match):
        onnx_to_dnet(_export(_seeded(model, 7), shape), RANGE, STEP)


def test_a_log_softmax_at_the_output_is_dropped_too():
    """nn.LogSoftmax (with NLLLoss, torch's classifier recipe): the logits' argmax."""
    model = _seeded(nn.Sequential(nn.Linear(8, 6), nn.ReLU(), nn.Linear(6, 3),
                                  nn.LogSoftmax(1)), 12)
    data = _export(model, (8,))
    m = load_model(data)
    assert m.graph.node[-1].op_type == "LogSoftmax"
    rebuilt, _ = float_stack(m, m.graph.input[0], "<t>")
    x = torch.rand(20, 8, dtype=torch.float64)
    with torch.no_grad():
        assert torch.allclose(torch.log_softmax(rebuilt(x), 1), model.double()(x))
    assert len(parse(onnx_to_dnet(data, RANGE, STEP)).outputs) == 3


def test_an_operator_not_read_is_named_with_what_is():
    class Sin(nn.Module):
        def forward(self, x):
            return torch.sin(x)

    with pytest.raises(VoodooError, match=r"unsupported ONNX operator in this float graph: "
                                          r"Sin \(node '/1/Sin'\)\n    hint: a float graph "
                                          r"may use Conv, .*Softmax, and, as activations .*"
                                          r"Sigmoid, Softplus"):
        onnx_to_dnet(_export(nn.Sequential(nn.Linear(4, 4), Sin(), nn.Linear(4, 2)), (4,)))


# ----------------------------------------------------------------- in the engine
def test_a_model_of_most_constructs_runs_exactly_in_the_engine(tmp_path):
    """ZeroPad2d before a Conv and a MaxPool, BatchNorm after Convs and a Linear, a
    convolutional identity block (its shortcut folded into the centre taps), Tanh and GELU
    lookups, a shortcut over two Linear layers (lines of its own), a Softmax at the output:
    engine == reference on every output and every light read back."""
    from test_engine_maps import edge_and_random_inputs, run_exact

    model = _seeded(nn.Sequential(
        nn.ZeroPad2d(1), nn.Conv2d(1, 2, 3), nn.BatchNorm2d(2), nn.ReLU(),
        _Block(nn.Sequential(nn.Conv2d(2, 2, 3, padding=1), nn.BatchNorm2d(2))),
        nn.ZeroPad2d(1), nn.MaxPool2d(2), nn.Flatten(),
        nn.Linear(18, 6), nn.BatchNorm1d(6), nn.Tanh(),
        _Block(nn.Sequential(nn.Linear(6, 6), nn.GELU(), nn.Linear(6, 6))),
        nn.Linear(6, 3), nn.Softmax(1)), 8)
    net, q, s, agree = _check(model, (1, 4, 4), ("Pad", "BatchNormalization", "Tanh", "Gelu",
                                                 "Add", "Softmax"), agree_min=0.75,
                              do_constant_folding=False)   # 4-bit activations, 6 in a row
    assert {n.gate.kind for n in net.nodes} >= {"lut", "relu", "identity"}
    run_exact(tmp_path, net, edge_and_random_inputs(net, 3, 0))


def test_the_command_imports_a_float_export(tmp_path):
    """`build.py import` on a torch export with a BatchNorm, a shortcut and a Sigmoid:
    written, the header saying how often it agrees with the float model."""
    model = _seeded(nn.Sequential(nn.Linear(8, 6), nn.BatchNorm1d(6), nn.Sigmoid(),
                                  _Block(nn.Linear(6, 6)), nn.Linear(6, 3)), 9)
    (tmp_path / "m.onnx").write_bytes(_export(model, (8,), do_constant_folding=False))
    r = subprocess.run([sys.executable, os.path.join(ROOT, "build.py"), "import", "m.onnx",
                        "-o", "m.dnet", "--input-range", "0..3", "--input-step", "0.25"],
                       capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("wrote m.dnet: network 'main_graph', 8 inputs -> 3 outputs")
    head = (tmp_path / "m.dnet").read_text()
    assert "(1 of them lookups)" in head and "agrees with the float model on " in head


def test_an_activation_undefined_where_its_layer_reaches_is_refused_naming_it():
    class Log(nn.Module):
        def forward(self, x):
            return torch.log(x)

    with pytest.raises(VoodooError, match=r"<onnx>: the activation Elementwise \(ONNX node "
                                          r"'/1/Log'\) is not finite at -?[0-9.e+-]+, a value "
                                          r"its input takes\n    hint: "):
        onnx_to_dnet(_export(_seeded(nn.Sequential(nn.Linear(4, 4), Log(), nn.Linear(4, 2))),
                             (4,)), RANGE, STEP)
