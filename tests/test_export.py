"""ONNX and torch export (`build.py export --onnx / --torch`, models/export_*.py): the exported
graph and the generated torch module compute exactly the reference's integers, `==` on every
output, for every circuit and for random networks, on range edges and random inputs."""
from __future__ import annotations

import glob
import os
import subprocess
import sys
import types

import numpy as np
import pytest

from conftest import ROOT
from dsl import load
from dsl.diagnostics import VoodooError
from dsl.parser import parse
from dsl.random_net import mlp
from dsl.reference import evaluate

# Pinned in requirements.txt: a missing one is a failure, never a skip.
import onnx  # noqa: E402
import onnxruntime as ort  # noqa: E402
import torch  # noqa: E402

from interop.export_onnx import onnx_bytes  # noqa: E402
from interop.export_torch import torch_source  # noqa: E402

CIRCUITS = sorted(glob.glob(os.path.join(ROOT, "circuits", "*.dnet")))

SPIKES = """network spikes
steps 7
input x[2] : -2..3
neuron s[3] : spike(threshold=4, leak=1, reset=subtract, init=2)
lines x -> s dense [[1, 2], [2, -1], [3, 0]]
neuron t : spike(threshold=2, leak=3, reset=5) = 2*x[0] - x[1] + 1
neuron r : relu(s=3, max=4) = s[0] + 2*s[1] + t + x[1]
output s, t, r
"""

NEGATIVE = """network floors
input x[2] : -9..9
neuron q : lut(-7..3, [5, -1, 0, 2, 2, 7, -3, 1, 0, 4, 9]) = x[0] - x[1]
neuron h[2] : relu(s=4, max=3)
lines x -> h dense [[3, -2], [-1, -4]]
bias h = [-3, 2]
neuron e : step(t=-2) = x[0] + q
neuron p : product(q, h[1])
neuron o : identity = 2*p - e + h[0]
output o, q, e
"""


def _inputs(net, n_random: int, seed: int = 0) -> np.ndarray:
    """Range edges (all low, all high, each input alone at either edge), then random."""
    rng = np.random.default_rng(seed)
    lo = np.array([r[0] for r in net.input_ranges()], dtype=np.int64)
    hi = np.array([r[1] for r in net.input_ranges()], dtype=np.int64)
    rows = [lo, hi]
    for k in range(len(lo)):
        for edge in (lo, hi):
            row = rng.integers(lo, hi + 1)
            row[k] = edge[k]
            rows.append(row)
    rows += list(rng.integers(lo, hi + 1, size=(n_random, len(lo))))
    x = np.array(rows, dtype=np.int64)
    if net.multi_step:  # each sample a sequence of rows (a run of some steps, if open)
        x = x[rng.integers(0, len(x), size=(len(x), OPEN_STEPS if net.open else net.steps))]
    return x


OPEN_STEPS = 12


def _steps(net):
    return OPEN_STEPS if net.open else None


def _expected(net, x) -> np.ndarray:
    r = evaluate(net, x.tolist())
    return np.asarray(r.outputs if net.multi_step else r.last_outputs(), dtype=np.int64)


def _onnx_run(net, x) -> np.ndarray:
    sess = ort.InferenceSession(onnx_bytes(net, _steps(net)), providers=["CPUExecutionProvider"])
    feed = {"x": x}
    if any(i.name == "fed" for i in sess.get_inputs()):  # feedback declared, no step fed
        feed["fed"] = np.zeros(x.shape[:2], dtype=np.int64)
    y = sess.run(None, feed)[0]
    assert y.dtype == np.int64
    return y


def _torch_run(net, x) -> np.ndarray:
    module = types.ModuleType("exported")
    exec(compile(torch_source(net, _steps(net)), "exported.py", "exec"), module.__dict__)
    with torch.no_grad():
        y = module.Net()(torch.from_numpy(x))
    assert y.dtype == torch.int64
    return y.numpy()


def _nets():
    nets = [(os.path.basename(p), load(p)) for p in CIRCUITS]
    nets += [("spikes", parse(SPIKES, "spikes.dnet")), ("floors", parse(NEGATIVE, "f.dnet"))]
    gates = ("relu", "step", "lut", "identity")
    for seed in range(12):
        sizes = [3 + seed % 4, 4 + seed % 3, 3, 2 + seed % 3]
        nets.append((f"mlp{seed}", mlp(seed, sizes, in_range=(-3, 4) if seed % 2 else (0, 5),
                                       gates=gates, wide=seed % 3 == 0)))
    return nets


NETS = _nets()


@pytest.mark.parametrize("name,net", NETS, ids=[n for n, _ in NETS])
def test_onnx_equals_reference(name, net):
    x = _inputs(net, 300)
    y, want = _onnx_run(net, x), _expected(net, x)
    assert y.shape == want.shape
    assert (y == want).all(), name


@pytest.mark.parametrize("name,net", NETS, ids=[n for n, _ in NETS])
def test_torch_equals_reference(name, net):
    x = _inputs(net, 300, seed=1)
    y, want = _torch_run(net, x), _expected(net, x)
    assert y.shape == want.shape
    assert (y == want).all(), name


def test_relu_requantisation_and_lut_edges():
    """Every accumulator of a relu(s=4, max=3) and a lut from below its domain to above its
    clamp, against the formulas of docs/dnet.md written out here (not the reference)."""
    table = [5, -1, 0, 2, 7]
    net = parse("network edges\ninput x : -9..18\nneuron h : relu(s=4, max=3) = x\n"
                f"neuron d : lut(-2..2, {table}) = x\noutput h, d\n", "edges.dnet")
    x = np.arange(-9, 19, dtype=np.int64)[:, None]
    want = np.array([[min(max(a // 4, 0), 3), table[min(max(a, -2), 2) + 2]] for a in x[:, 0]])
    assert (_onnx_run(net, x) == want).all()
    assert (_torch_run(net, x) == want).all()


def cli(*args, cwd=None):
    return subprocess.run([sys.executable, os.path.join(ROOT, "build.py"), *args],
                          capture_output=True, text=True, cwd=cwd)


def test_cli_onnx_and_torch_files(tmp_path):
    out = tmp_path / "xor.onnx"
    r = cli("export", os.path.join(ROOT, "circuits", "xor.dnet"), "--onnx", "-o", str(out))
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith(f"wrote {out}: ONNX opset")
    model = onnx.load(str(out))
    onnx.checker.check_model(model)
    sess = ort.InferenceSession(str(out), providers=["CPUExecutionProvider"])
    x = np.array([[0, 0], [0, 1], [1, 0], [1, 1]], dtype=np.int64)
    assert sess.run(None, {"x": x})[0][:, 0].tolist() == [0, 1, 1, 0]
    first = out.read_bytes()
    assert cli("export", os.path.join(ROOT, "circuits", "xor.dnet"), "--onnx", "-o",
               str(out)).returncode == 0
    assert out.read_bytes() == first  # deterministic
    py = tmp_path / "xor_net.py"
    r = cli("export", os.path.join(ROOT, "circuits", "xor.dnet"), "--torch", "-o", str(py))
    assert r.returncode == 0, r.stderr
    src = py.read_text()
    imports = [line for line in src.splitlines() if line.startswith(("import", "from"))]
    assert imports == ["import torch"]
    code = ("import sys, torch; sys.path.insert(0, sys.argv[1]); import xor_net; "
            "print(xor_net.Net()(torch.tensor([[0,0],[0,1],[1,0],[1,1]]))[:, 0].tolist())")
    r = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True,
                       text=True, cwd=tmp_path)
    assert r.stdout.strip() == "[0, 1, 1, 0]", r.stderr


def _refused(tmp_path, text: str, *flags: str) -> str:
    src = tmp_path / "bad.dnet"
    src.write_text(text)
    out = tmp_path / "out.bin"
    out.write_bytes(b"keep me")
    r = cli("export", str(src), *flags, "-o", str(out))
    assert r.returncode != 0 and "Traceback" not in r.stderr, r.stderr
    assert out.read_bytes() == b"keep me"  # nothing clobbered
    assert sorted(os.listdir(tmp_path)) == ["bad.dnet", "out.bin"]  # no temp file left
    return r.stderr


@pytest.mark.parametrize("flag", ["--onnx", "--torch"])
def test_refusals_are_clear_and_write_nothing(tmp_path, flag):
    long_run = "network forever\nsteps 5000\ninput x : 0..1\n" \
               "neuron s : spike(threshold=2) = x\noutput s\n"
    err = _refused(tmp_path, long_run, flag)
    assert "5000 steps x 1 levels is too many to unroll" in err and "hint:" in err
    huge = ("network huge\ninput x[2] : 0..2147483647\nneuron p : product(x[0], x[1])\n"
            "neuron q : product(p, p)\noutput q\n")
    err = _refused(tmp_path, huge, flag)
    assert "node q may reach values beyond 64-bit integers" in err
    err = _refused(tmp_path, "network broken\ninput x : 0..1\noutput y\n", flag)
    assert "bad.dnet:3" in err


def test_refusal_by_api_is_a_voodoo_error():
    net = parse("network forever\nsteps 5000\ninput x : 0..1\n"
                "neuron s : spike(threshold=2) = x\noutput s\n", "f.dnet")
    with pytest.raises(VoodooError, match="f.dnet: 5000 steps"):
        onnx_bytes(net)
    with pytest.raises(VoodooError, match="f.dnet: 5000 steps"):
        torch_source(net)


def test_cli_argument_errors(tmp_path):
    xor = os.path.join(ROOT, "circuits", "xor.dnet")
    r = cli("export", xor, "--onnx")
    assert r.returncode != 0 and "name it with -o OUT.onnx" in r.stderr
    r = cli("export", xor, "--onnx", "--torch", "-o", str(tmp_path / "x"))
    assert r.returncode != 0 and "not both" in r.stderr
    copy = tmp_path / "xor.dnet"
    copy.write_text(open(xor).read())
    r = cli("export", str(copy), "--torch", "-o", str(copy))
    assert r.returncode != 0 and "the output would overwrite the input" in r.stderr
    assert copy.read_text() == open(xor).read()
