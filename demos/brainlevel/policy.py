"""The marine's policy: trained in torch, quantised, imported with `from_torch`, and given
an argmax head made of step neurons so that the circuit itself picks the action.

Owns:

- `POLICY`, the one switch between policy families: "transformer" (`_transformer_policy`,
  the default) or "mlp" (`_mlp_policy`);
- behaviour cloning of `spec.expert` (a scripted expert defined on the integer observation)
  on observations sampled over the whole observation space, seeded and single-threaded;
- quantisation (models/quantize.py's scheme: integer weights, one relu divisor and clamp)
  and import through `interop.from_torch`;
- the **argmax head** appended to the imported network: compare neurons
  `c[i,j] = step(l_i - l_j >= 0)` for i < j and one-hot neurons
  `win[i] = step(sum_{j>i} c[i,j] + sum_{j<i} (1 - c[j,i]) >= n - 1)`, exactly one of which
  is 1: the first maximal logit. The map reads `win` as a one-hot; it never compares logits;
- `decide(net, obs)`: the integer reference decision (dsl.reference on the netlist).
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass

import numpy as np

from . import spec

# Which policy family the map computes by default (`build.py brainlevel --policy` picks
# the other): the policy transformer (62 tics per decision measured, docs/brainlevel.md).
POLICY = "transformer"
# Staircases longer than this are split into parallel one-door sub-lanes when the map is
# compiled (mapgen.circuit.split_lanes, issue 10): more dolls, fewer tics. None: whole lanes.
# The transformer at 1: 2,062 dolls, every phase 7 tics (at 2: 1,198 dolls, 8-9 tics a phase).
DOOR_BUDGET = {"mlp": None, "transformer": 1}
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CHECKED_IN = {k: os.path.join(ROOT, "circuits", f"brainlevel_{k}.dnet")
              for k in ("mlp", "transformer")}

HIDDEN = 24
WEIGHT_BITS = 4
CLAMP = 3
TRAIN_STATES = 40_000
EPOCHS = 60
QAT_EPOCHS = 20
SEED = 0
HELD_OUT = 5_000


@dataclass
class Policy:
    net: object                 # the validated Netlist: obs -> win one-hot
    kind: str                   # "mlp" or "transformer"
    float_agreement: float      # float model vs expert on held-out sampled states
    int_agreement: float        # integer netlist vs expert on the same states
    float_int_agreement: float  # float vs integer decisions on those states
    float_model: object = None  # the float parameters (after training only)
    text: str = ""              # the .dnet text (after training only)


def argmax_head(dnet: str, logits: str, n: int) -> str:
    """.dnet text of a network whose output vector `logits` (n identity neurons) is replaced
    by its first-argmax one-hot `win` (module docstring)."""
    pairs = [(i, j) for i in range(n) for j in range(i + 1, n)]
    lines = [ln for ln in dnet.rstrip().splitlines() if not ln.startswith("output ")]
    lines += ["", "# argmax head: c[p] = (l_i >= l_j) for the pairs i < j", f"neuron c[{len(pairs)}] : step(t=0)",
              f"lines {logits} -> c dense ["]
    for i, j in pairs:
        row = [0] * n
        row[i], row[j] = 1, -1
        lines.append("  [" + ", ".join(map(str, row)) + "],")
    lines += ["]", "", "# win[i] = 1 iff logit i beats every later one and is not beaten by "
              "an earlier one", f"neuron win[{n}] : step(t={n - 1})", "lines c -> win dense ["]
    for i in range(n):
        row = [1 if a == i else -1 if b == i else 0 for a, b in pairs]
        lines.append("  [" + ", ".join(map(str, row)) + "],")
    lines += ["]", "bias win = [" + ", ".join(str(i) for i in range(n)) + "]", "", "output win"]
    return "\n".join(lines) + "\n"


def decide(net, obs) -> int:
    """The integer reference decision: the index of the 1 in the net's one-hot output."""
    from dsl.reference import evaluate

    out = evaluate(net, [list(map(int, obs))]).last_outputs()[0].tolist()
    if sorted(out) != [0] * (len(out) - 1) + [1]:
        raise AssertionError(f"the argmax head gave {out}, not a one-hot")
    return out.index(1)


def decide_many(net, obs: np.ndarray) -> np.ndarray:
    from dsl.reference import evaluate

    out = evaluate(net, np.asarray(obs, dtype=np.int64)).last_outputs()
    assert (out.sum(1) == 1).all()
    return out.argmax(1)


def load(kind: str | None = None) -> Policy:
    """The checked-in trained policy (no training); its header holds the agreements."""
    from dsl.diagnostics import VoodooError
    from dsl.parser import parse_file

    kind = kind or POLICY
    path = CHECKED_IN.get(kind)
    if path is None or not os.path.exists(path):
        raise VoodooError(f"no checked-in brainlevel policy {kind!r}\n    hint: train it "
                          "with `python build.py brainlevel --retrain`")
    net = parse_file(path)
    nums = {}
    for line in open(path, encoding="utf-8"):
        m = re.match(r"# agreement (\w+) ([0-9.]+)", line)
        if m:
            nums[m.group(1)] = float(m.group(2))
    return Policy(net, kind, nums.get("float", 0.0), nums.get("int", 0.0),
                  nums.get("float_int", 0.0))


def to_text(p: Policy) -> str:
    """The policy as .dnet text with the header `load` reads back."""
    head = [f"# brainlevel policy ({p.kind}): behaviour cloning of demos/brainlevel/spec.py's "
            "expert, quantised,",
            "# imported with interop.from_torch, with an argmax head of step neurons "
            "(demos/brainlevel/policy.py)",
            f"# held-out: {HELD_OUT} observations sampled with seed {SEED + 1}",
            f"# agreement float {p.float_agreement:.4f}",
            f"# agreement int {p.int_agreement:.4f}",
            f"# agreement float_int {p.float_int_agreement:.4f}"]
    return "\n".join(head) + "\n" + p.text


def build(kind: str | None = None, progress: bool = False) -> Policy:
    """Train the policy afresh (seeded, single-threaded: the same integers every time)."""
    kind = kind or POLICY
    if kind == "mlp":
        return _mlp_policy(progress)
    if kind == "transformer":
        return _transformer_policy(progress)
    from dsl.diagnostics import VoodooError

    raise VoodooError(f"brainlevel policy {kind!r}: choose 'mlp' or 'transformer'")


def _data(n: int, seed: int):
    rng = np.random.default_rng(seed)
    x = spec.random_obs(rng, n)
    y = np.array([spec.expert(o) for o in x], dtype=np.int64)
    return x, y


def _mlp_policy(progress: bool) -> Policy:
    """Behaviour cloning of the expert with the MLP stand-in: obs (25) -> 16 relu -> 5."""
    import torch

    from interop import from_torch
    from models.quantize import Config, calibrate_s, fake_quant_forward, integerize

    cfg = Config(levels=spec.OBS_HI, hidden=HIDDEN, weight_bits=WEIGHT_BITS, clamp=CLAMP,
                 seed=SEED, name="brain")
    x, y = _data(TRAIN_STATES, SEED)
    xv, yv = _data(HELD_OUT, SEED + 1)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # a fixed summation order: the same integers every build
    try:
        torch.manual_seed(SEED)
        nn = torch.nn
        model = nn.Sequential(nn.Linear(spec.OBS_SIZE, HIDDEN), nn.ReLU(),
                              nn.Linear(HIDDEN, spec.N_ACTIONS))
        xt, yt = torch.from_numpy(x.astype(np.float32)), torch.from_numpy(y)
        _fit(torch, model, xt, yt, EPOCHS, 3e-3, lambda b: model(b / spec.OBS_HI), progress,
             "float")
        fparams = _params(model)
        s = calibrate_s(*fparams.values(), cfg, x, y)
        _fit(torch, model, xt, yt, QAT_EPOCHS, 5e-4,
             lambda b: fake_quant_forward(model, b, cfg, s), progress, "qat")
        qparams = _params(model)
        s = calibrate_s(*qparams.values(), cfg, x, y)
        im = integerize(*qparams.values(), cfg, s)
    finally:
        torch.set_num_threads(threads)
    imodel = _int_sequential(torch, im)
    from interop.torch_import import to_dnet

    text = to_dnet(imodel, (0, spec.OBS_HI), [im.s], [im.L], "brain",
                   "the marine's policy: behaviour cloning of spec.expert, quantised")
    from dsl.parser import parse

    text = argmax_head(text, "o", spec.N_ACTIONS)
    net = parse(text, "<brainlevel policy>")
    # the plain import path as well, so a broken from_torch cannot hide behind to_dnet
    from_torch(imodel, (0, spec.OBS_HI), [im.s], [im.L], "brain_logits")
    fpred = _float_predict(fparams, xv)
    ipred = decide_many(net, xv)
    return Policy(net, "mlp", float((fpred == yv).mean()), float((ipred == yv).mean()),
                  float((fpred == ipred).mean()), fparams, text)


# The policy transformer's size: tokens are the 5 observation tokens (the marine's last:
# the head reads the last token, which attends to every demon), 5 features each, d_model
# 8 in 4 heads (one head cannot carry four slots' threats through its 7-level softmax:
# 64% integer agreement; four heads 94%). A parallel block (parallel=True): the MLP and
# its RMSNorm (norm_at="mlp") read the block's input, so in the map they run beside the
# attention instead of after it: 8 dependency levels in all (input, q/k/v, q.k, exp, log,
# the weighted values, the two levels of the argmax head) instead of 12.
TRANSFORMER = dict(tokens=spec.TOKENS, features=spec.FEATURES, in_lo=0, in_hi=spec.OBS_HI,
                   d_model=8, heads=4, layers=1, mlp=8, classes=spec.N_ACTIONS, norm="rms",
                   norm_at="mlp", parallel=True)
# After fitting: quantisation-aware epochs with an L1 penalty on the head's weights: the
# logits' proven range shrinks, and with it the compare neurons' door planes, which ACS
# then moves in 1 tic instead of 9 (a plane's speed is bounded by its heights,
# mapgen/physics.plane_speed).
T_SHRINK_EPOCHS, T_SHRINK_L1 = 6, 0.01
T_TRAIN_STATES, T_EPOCHS, T_QAT_EPOCHS = 20_000, 16, 30


def _transformer_policy(progress: bool) -> Policy:
    """A small transformer over the five tokens (attention with softmax, one RMSNorm, a
    ReLU MLP, an action head), trained by behaviour cloning like the MLP, through
    models/transformer.py (issue 10): `models.seqtask.fit` (float epochs, score caps
    calibrated, quantisation-aware epochs keeping the float loss), imported with
    from_torch (which proves every range fits a map), then the argmax head on `logits`."""
    from dsl.diagnostics import VoodooError

    try:
        from models.seqtask import fit
        from models.transformer import Transformer, TransformerConfig, to_dnet
    except ImportError:
        raise VoodooError("brainlevel policy 'transformer' needs models/transformer.py "
                          "(issue 10), which this checkout does not have\n    hint: set "
                          "POLICY = \"mlp\" in demos/brainlevel/policy.py") from None
    import torch

    from dsl.parser import parse
    from interop import from_torch

    x, y = _data(T_TRAIN_STATES, SEED)
    xv, yv = _data(HELD_OUT, SEED + 1)
    shape = (-1, spec.TOKENS, spec.FEATURES)   # token by token: the netlist's input order
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        model = Transformer(TransformerConfig(**TRANSFORMER), SEED)
        fit(model, x.reshape(shape), y, T_EPOCHS, T_QAT_EPOCHS, SEED, progress)
        _shrink_head(torch, model, x.reshape(shape), y, progress)
        with torch.no_grad():
            fpred = model(torch.as_tensor(xv.reshape(shape)), mode="float").argmax(1).numpy()
    finally:
        torch.set_num_threads(threads)
    from_torch(model)
    text = argmax_head(to_dnet(model, "brain"), "logits", spec.N_ACTIONS)
    net = parse(text, "<brainlevel transformer policy>")
    ipred = decide_many(net, xv)
    return Policy(net, "transformer", float((fpred == yv).mean()),
                  float((ipred == yv).mean()), float((fpred == ipred).mean()), None, text)


def _shrink_head(torch, model, x, y, progress) -> None:
    """T_SHRINK_EPOCHS epochs of models.seqtask's fine-tuning (integer and float losses)
    plus T_SHRINK_L1 times the head weights' L1 norm (see T_SHRINK_EPOCHS)."""
    X, Y = torch.as_tensor(x), torch.as_tensor(y)
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_SHRINK_EPOCHS)
    gen = torch.Generator().manual_seed(SEED + 2)
    it = range(T_SHRINK_EPOCHS)
    if progress:
        from tqdm import tqdm

        it = tqdm(it, desc="train brain (shrink head)", unit="epoch")
    for _ in it:
        for idx in torch.randperm(len(X), generator=gen).split(128):
            loss = sum(torch.nn.functional.cross_entropy(model(X[idx], mode=m) / 16, Y[idx])
                       for m in ("qat", "float"))
            loss = loss + T_SHRINK_L1 * model.head["W"].abs().sum()
            opt.zero_grad()
            loss.backward()
            opt.step()
        sched.step()


def _fit(torch, model, x, y, epochs, lr, forward, progress, label) -> None:
    """Adam with a cosine schedule, cross-entropy of `forward(batch)`, batches of 256."""
    gen = torch.Generator().manual_seed(SEED + (label == "qat"))
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, max(epochs, 1))
    it = range(epochs)
    if progress:
        from tqdm import tqdm

        it = tqdm(it, desc=f"train brain ({label})", unit="epoch")
    for _ in it:
        perm = torch.randperm(len(x), generator=gen)
        for i in range(0, len(x), 256):
            idx = perm[i:i + 256]
            loss = torch.nn.functional.cross_entropy(forward(x[idx]), y[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
        sched.step()


def _params(model) -> dict[str, np.ndarray]:
    return {"W1": model[0].weight.detach().double().numpy().copy(),
            "B1": model[0].bias.detach().double().numpy().copy(),
            "W2": model[2].weight.detach().double().numpy().copy(),
            "B2": model[2].bias.detach().double().numpy().copy()}


def _float_predict(p, x) -> np.ndarray:
    h = np.maximum(x / spec.OBS_HI @ p["W1"].T + p["B1"], 0)
    return (h @ p["W2"].T + p["B2"]).argmax(1)


def _int_sequential(torch, im):
    nn = torch.nn
    m = nn.Sequential(nn.Linear(im.w1.shape[1], im.w1.shape[0]), nn.ReLU(),
                      nn.Linear(im.w2.shape[1], im.w2.shape[0])).to(torch.float64)
    with torch.no_grad():
        for k, (w, b) in ((0, (im.w1, im.b1)), (2, (im.w2, im.b2))):
            m[k].weight.copy_(torch.from_numpy(w.astype(np.float64)))
            m[k].bias.copy_(torch.from_numpy(b.astype(np.float64)))
    return m
