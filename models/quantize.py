"""MNIST training and integer quantisation: from real digits to a validated integer netlist.

Owns the whole model half of docs/mnist.md:

- the **input transform** (`InputTransform`): crop the 28x28 image, mean-pool it in
  blocks, and round each block mean to one of `levels + 1` integer levels 0..levels, with
  exact integer arithmetic, so the same digit always gives the same input vector;
- **training** a float MLP `inputs -> hidden (ReLU) -> 10` with torch (seeded, one thread,
  deterministic), on the 8,000 training digits of models/datasets.py's split;
- the **quantisation scheme** (`integerize`): integer weights of `weight_bits` bits,
  integer biases, one requant divisor `s` and clamp `L` for the hidden relu, identity
  outputs whose argmax is the class; `s` is calibrated on the training digits, and a few
  epochs of quantisation-aware fine-tuning (straight-through rounding) close the gap;
- **engine costs** (`engine_cost`, `check_engine_fit`): dolls, weighted lines and the
  accumulator range of every node, checked against the engine's budgets;
- the integer model reaches the netlist through `interop.torch_import` (an integer
  nn.Sequential -> .dnet text -> parser), the one import path;
- the checked-in small model (`load_mnist_small`) and the full model built on the fly and
  cached by a hash of its hyper-parameters (`build_mnist_model`).

`python -m models.quantize` prints the accuracies (docs/mnist.md, "Reproducing").
"""
from __future__ import annotations

import hashlib
import io
import json
import os
import sys
from dataclasses import asdict, dataclass, replace

import numpy as np

from dsl.diagnostics import VoodooError

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SMALL_PATH = os.path.join(ROOT, "circuits", "mnist_small.dnet")
CACHE_VERSION = 1

# ------------------------------------------------------------------------ engine budgets
# Light levels and plane heights hold -32768..32767. Accumulators are kept within
# +-30000: door floors sit up to DOLL_HEIGHT + headroom beyond a plane value, and
# Ceiling_MoveToValue needs speed * 8192 + |height| * 65536 < 2^31 (mapgen/physics.py),
# which leaves a mover ~2,700 units per tic at 30000 and nothing at 32767.
ACC_LIMIT = 30_000
MAX_LINES = 150_000     # weighted lines: map size and doll travel time grow with them
MAX_DOLLS = 1_200       # one doll per input and per gated neuron
MAX_CLAMP = 15          # a hidden lane has one door per value step
MAX_INPUT_LEVELS = 7    # an input lane has one door per level above the lowest


# ------------------------------------------------------------------------- configuration
@dataclass(frozen=True)
class Config:
    """Every hyper-parameter of one model; its hash keys the trained-weight cache."""

    crop: int = 0            # pixels removed from each side of the 28x28 image
    pool: int = 2            # mean-pooling block size (28 - 2*crop must divide by it)
    levels: int = 3          # input values 0..levels
    hidden: int = 64
    weight_bits: int = 6     # weights within -(2^(b-1) - 1)..2^(b-1) - 1
    clamp: int = 15          # hidden relu max L
    shift: int = 1           # training digits are moved by up to this many pixels, per epoch
    epochs: int = 80         # float training
    qat_epochs: int = 20     # quantisation-aware fine-tuning
    lr: float = 2e-3
    qat_lr: float = 5e-4
    batch: int = 64
    weight_decay: float = 1e-4
    seed: int = 0
    name: str = "mnist"

    @property
    def side(self) -> int:
        return (28 - 2 * self.crop) // self.pool

    @property
    def n_inputs(self) -> int:
        return self.side * self.side

    @property
    def wmax(self) -> int:
        return 2 ** (self.weight_bits - 1) - 1

    def validate(self) -> "Config":
        width = 28 - 2 * self.crop
        problems = []
        if not 0 <= self.crop < 14:
            problems.append(f"crop {self.crop} must be within 0..13")
        elif self.pool < 1 or width % self.pool:
            problems.append(f"pool {self.pool} must divide the cropped width {width}")
        if not 1 <= self.levels <= 255:
            problems.append(f"levels {self.levels} must be within 1..255")
        if self.hidden < 1:
            problems.append(f"hidden {self.hidden} must be >= 1")
        if not 2 <= self.weight_bits <= 16:
            problems.append(f"weight_bits {self.weight_bits} must be within 2..16")
        if not 0 <= self.shift <= 4:
            problems.append(f"shift {self.shift} must be within 0..4")
        if self.clamp < 1:
            problems.append(f"clamp {self.clamp} must be >= 1")
        if problems:
            raise VoodooError("invalid MNIST model configuration: " + "; ".join(problems))
        return self

    def key(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)


# The model build_mnist_model trains: see docs/mnist.md for the sweep behind the choice.
FULL = Config(crop=2, pool=2, levels=3, hidden=128, weight_bits=4, clamp=15, name="mnist")
# The checked-in CI model: 10x10 inputs, 16 hidden units, a few KB of .dnet.
SMALL = Config(crop=4, pool=2, levels=3, hidden=16, weight_bits=5, clamp=15,
               name="mnist_small")


# ------------------------------------------------------------------------ input transform
@dataclass(frozen=True)
class InputTransform:
    """uint8 images (N, 28, 28) or one (28, 28) -> int64 input vectors (N, side*side).

    value = round_half_up(levels * blocksum / (255 * pool^2)) over the cropped image's
    pool x pool blocks, in row-major block order: an exact integer function of the pixels.
    """

    crop: int
    pool: int
    levels: int

    @classmethod
    def of(cls, cfg: Config) -> "InputTransform":
        return cls(cfg.crop, cfg.pool, cfg.levels)

    @property
    def side(self) -> int:
        return (28 - 2 * self.crop) // self.pool

    def __call__(self, images) -> np.ndarray:
        a = np.asarray(images)
        single = a.ndim == 2
        if single:
            a = a[None]
        if a.ndim != 3 or a.shape[1:] != (28, 28):
            raise VoodooError(f"expected 28x28 images, got an array of shape {np.shape(images)}")
        if a.dtype != np.uint8:
            if not np.issubdtype(a.dtype, np.integer) or a.min(initial=0) < 0 or \
                    a.max(initial=0) > 255:
                raise VoodooError(f"expected uint8 pixels 0..255, got {a.dtype}")
        c, p, n = self.crop, self.pool, self.side
        a = a[:, c:28 - c, c:28 - c].astype(np.int64)
        sums = a.reshape(len(a), n, p, n, p).sum(axis=(2, 4)).reshape(len(a), n * n)
        den = 255 * p * p
        out = (2 * self.levels * sums + den) // (2 * den)
        return out[0] if single else out

    def describe(self) -> str:
        width = 28 - 2 * self.crop
        return (f"crop {self.crop} px each side ({width}x{width}), {self.pool}x{self.pool} "
                f"mean pooling ({self.side}x{self.side} inputs), levels 0..{self.levels}")


# ----------------------------------------------------------------------- integer model
@dataclass
class IntMLP:
    """The integer network: acc1 = w1 x + b1; h = clamp(floor(acc1 / s), 0, L);
    out = w2 h + b2 (the class is argmax out)."""

    w1: np.ndarray   # (hidden, inputs) int64
    b1: np.ndarray   # (hidden,)
    s: int
    L: int
    w2: np.ndarray   # (10, hidden)
    b2: np.ndarray   # (10,)
    levels: int

    def forward(self, x: np.ndarray) -> np.ndarray:
        """NumPy int64 forward pass (used to calibrate s; the netlist reference is the
        oracle, and tests check the two are equal)."""
        acc1 = x.astype(np.int64) @ self.w1.T + self.b1
        h = np.clip(acc1 // self.s, 0, self.L)
        return h @ self.w2.T + self.b2

    def torch_model(self):
        """The integer nn.Sequential (float64 weights holding integers) from_torch imports."""
        import torch
        from torch import nn

        hidden, n_in = self.w1.shape
        m = nn.Sequential(nn.Linear(n_in, hidden), nn.ReLU(), nn.Linear(hidden, 10))
        m = m.to(torch.float64)
        with torch.no_grad():
            m[0].weight.copy_(torch.from_numpy(self.w1.astype(np.float64)))
            m[0].bias.copy_(torch.from_numpy(self.b1.astype(np.float64)))
            m[2].weight.copy_(torch.from_numpy(self.w2.astype(np.float64)))
            m[2].bias.copy_(torch.from_numpy(self.b2.astype(np.float64)))
        return m

    def to_netlist(self, name: str):
        """The validated Netlist, imported with interop.from_torch (the one import path)."""
        from interop.torch_import import from_torch

        return from_torch(self.torch_model(), (0, self.levels), [self.s], [self.L], name)

    def to_dnet(self, name: str, comment: str = "") -> str:
        """The same network as .dnet text (what from_torch parses), with a comment header."""
        from interop.torch_import import to_dnet

        return to_dnet(self.torch_model(), (0, self.levels), [self.s], [self.L], name,
                       comment)

    def arrays(self) -> dict[str, np.ndarray]:
        return {"w1": self.w1, "b1": self.b1, "s": np.int64(self.s), "L": np.int64(self.L),
                "w2": self.w2, "b2": self.b2, "levels": np.int64(self.levels)}

    @classmethod
    def from_arrays(cls, z) -> "IntMLP":
        return cls(z["w1"].astype(np.int64), z["b1"].astype(np.int64), int(z["s"]),
                   int(z["L"]), z["w2"].astype(np.int64), z["b2"].astype(np.int64),
                   int(z["levels"]))


def integerize(W1, B1, W2, B2, cfg: Config, s: int) -> IntMLP:
    """The quantisation scheme (docs/mnist.md, "Quantisation"), on float64 parameters.

    The float model sees x / levels, so its weights on the integer inputs are W1 / levels.
      a1 = max|W1 / levels| / wmax           w1 = round(W1 / levels / a1)
      b1 = round(B1 / a1) + floor(s / 2)     (floor(acc / s) then rounds to nearest)
      u  = a1 * s                            (one hidden step in float units)
      a2 = max|W2 * u| / wmax                w2 = round(W2 * u / a2),  b2 = round(B2 / a2)
    so acc1 ~ (W1 x' + B1) / a1, h ~ relu(...) / u, out ~ (W2 h' + B2) / a2.
    """
    W1 = np.asarray(W1, np.float64) / cfg.levels
    B1, W2, B2 = (np.asarray(v, np.float64) for v in (B1, W2, B2))
    a1 = np.abs(W1).max() / cfg.wmax
    w1 = np.rint(W1 / a1).astype(np.int64)
    b1 = np.rint(B1 / a1).astype(np.int64) + s // 2
    A2 = W2 * (a1 * s)
    a2 = np.abs(A2).max() / cfg.wmax
    w2 = np.rint(A2 / a2).astype(np.int64)
    b2 = np.rint(B2 / a2).astype(np.int64)
    return IntMLP(w1, b1, int(s), cfg.clamp, w2, b2, cfg.levels)


def calibrate_s(W1, B1, W2, B2, cfg: Config, x: np.ndarray, y: np.ndarray) -> int:
    """The s (>= 1) with the best integer accuracy on the training digits (ties: smaller s).

    Candidates span from the s that clamps at the largest float activation down to an
    eighth of the one that clamps at its 99th percentile.
    """
    Wq = np.asarray(W1, np.float64) / cfg.levels
    a1 = np.abs(Wq).max() / cfg.wmax
    h = np.maximum(x / cfg.levels @ np.asarray(W1, np.float64).T + np.asarray(B1), 0)
    top = max(float(h.max()), 1e-9) / (a1 * cfg.clamp)
    p99 = max(float(np.percentile(h[h > 0], 99)) if (h > 0).any() else 0.0, 1e-9) / (
        a1 * cfg.clamp)
    lo, hi = max(1, int(p99 / 8)), max(1, int(np.ceil(top)))
    cands = sorted(set(np.unique(np.geomspace(lo, hi, 60).round().astype(int)).tolist()))
    best, best_acc = cands[0], -1.0
    for s in cands:
        acc = float((integerize(W1, B1, W2, B2, cfg, s).forward(x).argmax(1) == y).mean())
        if acc > best_acc:
            best, best_acc = s, acc
    return best


# ------------------------------------------------------------------------------ training
def _torch():
    try:
        import torch
    except ImportError:
        raise VoodooError("training the MNIST model needs PyTorch, which is not installed\n"
                          "    hint: pip install torch==2.13.0 (see requirements.txt)") from None
    return torch


def _ste_round(t):
    return t + (t.round() - t).detach()


def fake_quant_forward(model, x, cfg: Config, s: int):
    """The integer network of `integerize`, simulated in float with straight-through
    rounding; returns float logits out * a2 for the loss."""
    torch = _torch()
    W1, B1 = model[0].weight / cfg.levels, model[0].bias
    W2, B2 = model[2].weight, model[2].bias
    a1 = W1.abs().max().detach() / cfg.wmax
    acc1 = x @ _ste_round(W1 / a1).T + _ste_round(B1 / a1)
    h = torch.clamp(_ste_round(acc1 / s), 0, cfg.clamp)
    A2 = W2 * (a1 * s)
    a2 = A2.abs().max().detach() / cfg.wmax
    return (h @ _ste_round(A2 / a2).T + _ste_round(B2 / a2)) * a2


@dataclass
class Trained:
    cfg: Config
    float_params: dict[str, np.ndarray]   # W1, B1, W2, B2 of the float model (float64)
    qat_params: dict[str, np.ndarray]     # after quantisation-aware fine-tuning
    model: IntMLP


def shift_images(images: np.ndarray, r: int, rng: np.random.Generator) -> np.ndarray:
    """Each image moved by (dy, dx), each uniform in -r..r, zero-filled: the augmentation
    that makes 8,000 digits enough for a 97% MLP (docs/mnist.md)."""
    if r == 0:
        return images
    n = len(images)
    dy = rng.integers(-r, r + 1, n)
    dx = rng.integers(-r, r + 1, n)
    padded = np.pad(images, ((0, 0), (r, r), (r, r)))
    out = np.empty_like(images)
    for a in range(-r, r + 1):
        for b in range(-r, r + 1):
            sel = (dy == a) & (dx == b)
            out[sel] = padded[sel, r - a:r - a + 28, r - b:r - b + 28]
    return out


def _epochs(torch, model, images, y, epochs, lr, cfg, loss_of, bar, label):
    phase = 0 if label == "float" else 1
    gen = torch.Generator().manual_seed(cfg.seed * 2 + phase)
    opt = torch.optim.Adam(model.parameters(), lr=lr, weight_decay=cfg.weight_decay)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, max(epochs, 1))
    transform = InputTransform.of(cfg)
    n = len(images)
    for ep in range(epochs):
        rng = np.random.default_rng([cfg.seed, phase, ep])
        x = torch.from_numpy(transform(shift_images(images, cfg.shift, rng)).astype(np.float32))
        perm = torch.randperm(n, generator=gen)
        total = 0.0
        for i in range(0, n, cfg.batch):
            idx = perm[i:i + cfg.batch]
            loss = torch.nn.functional.cross_entropy(loss_of(x[idx]), y[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += float(loss.detach()) * len(idx)
        sched.step()
        if bar is not None:
            bar.set_postfix_str(f"{label} epoch {ep + 1}/{epochs} loss {total / n:.3f}")
            bar.update(1)


def train(cfg: Config, images: np.ndarray, y_train: np.ndarray, progress: bool = False
          ) -> Trained:
    """Float training, s calibration, QAT fine-tuning, recalibration; seeded and
    single-threaded so the same config always gives the same integers.

    images: the uint8 training digits (N, 28, 28); every epoch sees them shifted afresh.
    s is calibrated on the unshifted digits."""
    cfg.validate()
    torch = _torch()
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # a fixed summation order: bit-identical results anywhere
    try:
        torch.manual_seed(cfg.seed)
        x_train = InputTransform.of(cfg)(images)
        y = torch.from_numpy(y_train.astype(np.int64))
        nn = torch.nn
        model = nn.Sequential(nn.Linear(cfg.n_inputs, cfg.hidden), nn.ReLU(),
                              nn.Linear(cfg.hidden, 10))
        bar = None
        if progress:
            from tqdm import tqdm

            bar = tqdm(total=cfg.epochs + cfg.qat_epochs, desc=f"train {cfg.name}",
                       unit="epoch", file=sys.stderr)
        try:
            _epochs(torch, model, images, y, cfg.epochs, cfg.lr, cfg,
                    lambda xb: model(xb / cfg.levels), bar, "float")
            fp = _params(model)
            s = calibrate_s(*fp.values(), cfg, x_train, y_train)
            if cfg.qat_epochs:
                _epochs(torch, model, images, y, cfg.qat_epochs, cfg.qat_lr, cfg,
                        lambda xb: fake_quant_forward(model, xb, cfg, s), bar, "qat")
        finally:
            if bar is not None:
                bar.close()
        qp = _params(model)
        s = calibrate_s(*qp.values(), cfg, x_train, y_train)
        return Trained(cfg, fp, qp, integerize(*qp.values(), cfg, s))
    finally:
        torch.set_num_threads(threads)


def _params(model) -> dict[str, np.ndarray]:
    return {"W1": model[0].weight.detach().double().numpy().copy(),
            "B1": model[0].bias.detach().double().numpy().copy(),
            "W2": model[2].weight.detach().double().numpy().copy(),
            "B2": model[2].bias.detach().double().numpy().copy()}


def float_predict(params: dict[str, np.ndarray], x: np.ndarray, levels: int) -> np.ndarray:
    h = np.maximum(x / levels @ params["W1"].T + params["B1"], 0)
    return (h @ params["W2"].T + params["B2"]).argmax(1)


# ---------------------------------------------------------------------------- engine cost
@dataclass
class EngineCost:
    dolls: int                 # lanes: inputs and gated neurons with at least one door
    lines: int                 # weighted lines: per door, one per consumer + its value light
    doors: int
    acc_lo: int                # the widest accumulator range over all non-input nodes
    acc_hi: int
    widest: str                # the node that reaches it

    def __str__(self) -> str:
        return (f"{self.dolls} dolls, {self.doors} doors, {self.lines} weighted lines, "
                f"accumulators within {self.acc_lo}..{self.acc_hi} (widest: {self.widest})")


def _doors(gate, lo: int, hi: int) -> int:
    """Door count of a lane, as mapgen/circuit.py's staircase builds it."""
    from dsl.ir import Input, Relu, Step

    if isinstance(gate, Input):
        return hi - lo
    if isinstance(gate, Relu):
        return sum(1 for k in range(1, gate.L + 1) if lo < k * gate.s <= hi)
    if isinstance(gate, Step):
        return int(lo < gate.t <= hi)
    raise VoodooError(f"engine_cost covers input, relu, step and identity nodes, not "
                      f"{gate.kind}")


def engine_cost(net) -> EngineCost:
    """Dolls, doors, weighted lines and accumulator range of a layered netlist.

    Follows the lowering in mapgen/circuit.py: every input and gated node is a lane (a doll)
    with one door per value step in its range; crossing a door adds to the node's value
    light and to each consumer's accumulator light. Identity nodes have no lane.
    """
    from dsl.ir import Identity

    def folded(i: int) -> bool:  # an identity neuron: mapgen folds it into its consumers
        return isinstance(net.nodes[i].gate, Identity) and not net.nodes[i].is_input

    consumers: dict[int, int] = {}
    for n in net.nodes:
        if any(folded(src) for src in n.weights):
            raise VoodooError(f"engine_cost: '{n.name}' reads an identity neuron; only "
                              "layers whose identity neurons are outputs are costed")
        for src in n.weights:
            consumers[src] = consumers.get(src, 0) + 1
    dolls = lines = doors = 0
    for n in net.nodes:
        if folded(n.id):
            continue
        r = net.acc_range[n.id]
        d = _doors(n.gate, r.lo, r.hi)
        if d:
            dolls += 1
            doors += d
            lines += d * (1 + consumers.get(n.id, 0))
    neurons = [n for n in net.nodes if not n.is_input]
    widest = max(neurons, key=lambda n: net.acc_range[n.id].hi - net.acc_range[n.id].lo)
    return EngineCost(dolls, lines, doors, min(net.acc_range[n.id].lo for n in neurons),
                      max(net.acc_range[n.id].hi for n in neurons), widest.name)


def check_engine_fit(net, acc_limit: int = ACC_LIMIT, max_lines: int = MAX_LINES,
                     max_dolls: int = MAX_DOLLS, max_clamp: int = MAX_CLAMP,
                     max_input_levels: int = MAX_INPUT_LEVELS) -> EngineCost:
    """The engine cost, or a VoodooError listing every budget the netlist breaks."""
    from dsl.ir import Relu

    cost = engine_cost(net)
    problems = []
    for n in net.nodes:
        r = net.acc_range[n.id]
        if r.lo < -acc_limit or r.hi > acc_limit:
            problems.append(f"accumulator of '{n.name}' can reach {r.lo}..{r.hi}, outside "
                            f"-{acc_limit}..{acc_limit}")
        if isinstance(n.gate, Relu) and n.gate.L > max_clamp:
            problems.append(f"'{n.name}' clamps at {n.gate.L} > {max_clamp}")
        if n.is_input and n.gate.hi - n.gate.lo > max_input_levels:
            problems.append(f"input '{n.name}' has {n.gate.hi - n.gate.lo + 1} levels > "
                            f"{max_input_levels + 1}")
    if cost.lines > max_lines:
        problems.append(f"{cost.lines} weighted lines > {max_lines}")
    if cost.dolls > max_dolls:
        problems.append(f"{cost.dolls} dolls > {max_dolls}")
    if problems:
        shown = problems[:8] + ([f"... and {len(problems) - 8} more"] if len(problems) > 8
                                else [])
        raise VoodooError(f"{net.name}: does not fit the engine:\n    " + "\n    ".join(shown)
                          + "\n    hint: use fewer weight bits, a smaller clamp L, fewer "
                          "inputs or fewer hidden units")
    return cost


# ------------------------------------------------------------------------------- models
@dataclass
class Built:
    cfg: Config
    net: object                # the validated Netlist
    text: str                  # its .dnet text
    transform: InputTransform
    model: IntMLP
    float_acc: float           # on the 2,000 held-out digits
    int_acc: float             # the netlist's reference on the same digits
    cost: EngineCost
    source: str
    float_test_pred: np.ndarray | None = None  # the float model's answers on the test digits


def _header(cfg: Config, t: InputTransform, m: IntMLP, float_acc: float, int_acc: float,
            source: str) -> str:
    return "\n".join([
        f"{cfg.name}: an integer MLP classifying MNIST digits, made by models/quantize.py",
        f"inputs: {t.describe()} (InputTransform{(t.crop, t.pool, t.levels)})",
        f"hidden: {cfg.hidden} relu(s={m.s}, max={m.L}); outputs o[0..9]: the class is argmax",
        f"weights: {cfg.weight_bits}-bit; trained on the 8,000 training digits of {source}",
        f"held-out accuracy (2,000 digits): float {100 * float_acc:.2f}%, "
        f"integer {100 * int_acc:.2f}%",
        f"config: {cfg.key()}",
    ])


def _cache_path(cfg: Config, source_id: str) -> str:
    from models.datasets import cache_dir

    torch = _torch()
    key = json.dumps({"cfg": cfg.key(), "data": source_id, "torch": torch.__version__,
                      "v": CACHE_VERSION}, sort_keys=True)
    digest = hashlib.sha256(key.encode()).hexdigest()[:16]
    return os.path.join(cache_dir(), f"{cfg.name}-{digest}.npz")


def _source_id(split) -> str:
    h = hashlib.sha256()
    for a in (split.train_images, split.train_labels, split.test_images, split.test_labels):
        h.update(a.tobytes())
    return h.hexdigest()


def build(cfg: Config = FULL, data_dir: str | None = None, progress: bool = True,
          split=None, use_cache: bool = True, check: bool = True) -> Built:
    """Train (or load from the cache) and quantise `cfg`; measure both accuracies.

    check: raise if the model breaks an engine budget (check_engine_fit); else only
    measure its cost."""
    from models.datasets import load_split
    from dsl.reference import evaluate

    cfg.validate()
    split = split if split is not None else load_split(data_dir)
    t = InputTransform.of(cfg)
    x_test = t(split.test_images)
    path = _cache_path(cfg, _source_id(split))
    trained = None
    if use_cache and os.path.exists(path):
        try:
            with np.load(path) as z:
                fp = {k: z["f_" + k] for k in ("W1", "B1", "W2", "B2")}
                qp = {k: z["q_" + k] for k in ("W1", "B1", "W2", "B2")}
                model = IntMLP.from_arrays({k: z["i_" + k] for k in
                                            ("w1", "b1", "s", "L", "w2", "b2", "levels")})
            trained = Trained(cfg, fp, qp, model)
        except (OSError, ValueError, KeyError):
            trained = None  # a damaged cache entry is retrained below
    if trained is None:
        trained = train(cfg, split.train_images, split.train_labels, progress)
        buf = io.BytesIO()
        np.savez(buf, **{"f_" + k: v for k, v in trained.float_params.items()},
                 **{"q_" + k: v for k, v in trained.qat_params.items()},
                 **{"i_" + k: v for k, v in trained.model.arrays().items()})
        from dsl.util import atomic_write

        atomic_write(path, buf.getvalue())
    y = split.test_labels
    float_pred = float_predict(trained.float_params, x_test, cfg.levels)
    float_acc = float((float_pred == y).mean())
    net = trained.model.to_netlist(cfg.name)
    out = evaluate(net, x_test).last_outputs()
    int_acc = float((np.asarray(out, dtype=np.int64).argmax(1) == y).mean())
    text = trained.model.to_dnet(cfg.name, _header(cfg, t, trained.model, float_acc, int_acc,
                                                   split.source))
    cost = check_engine_fit(net) if check else engine_cost(net)
    return Built(cfg, net, text, t, trained.model, float_acc, int_acc, cost, split.source,
                 float_pred)


def build_mnist_model(data_dir: str | None = None, progress: bool = True, config: Config = FULL):
    """(netlist, input transform, float accuracy, integer accuracy) of the full model,
    both accuracies on the 2,000 held-out digits; trained on first use, then cached."""
    b = build(config, data_dir, progress)
    return b.net, b.transform, b.float_acc, b.int_acc


def load_mnist_small():
    """(netlist, input transform) of the checked-in circuits/mnist_small.dnet; no training."""
    from dsl.parser import parse_file

    net = parse_file(SMALL_PATH)
    t = InputTransform.of(SMALL)
    if len(net.inputs) != SMALL.n_inputs or set(net.input_ranges()) != {(0, SMALL.levels)}:
        raise VoodooError(f"{SMALL_PATH}: its inputs do not match the SMALL configuration "
                          f"({SMALL.n_inputs} inputs 0..{SMALL.levels})\n    hint: rebuild it "
                          "with `python -m models.quantize --write-small`")
    return net, t


# ----------------------------------------------------------------------------------- CLI
SWEEP = [
    replace(SMALL, crop=0, pool=4, name="m7x7_h16_w5"),
    replace(SMALL, name="m10x10_h16_w5"),
    replace(FULL, crop=0, hidden=64, weight_bits=6, name="m14x14_h64"),
    replace(FULL, crop=0, hidden=96, weight_bits=6, name="m14x14_h96"),
    replace(FULL, crop=0, weight_bits=6, name="m14x14_h128"),
    replace(FULL, crop=0, weight_bits=8, name="m14x14_h128_w8"),
    replace(FULL, crop=0, name="m14x14_h128_w4"),
    replace(FULL, crop=0, weight_bits=3, name="m14x14_h128_w3"),
    replace(FULL, crop=0, clamp=7, name="m14x14_h128_w4_L7"),
    replace(FULL, crop=0, hidden=96, name="m14x14_h96_w4"),
    replace(FULL, crop=0, hidden=192, name="m14x14_h192_w4"),
    replace(FULL, crop=0, levels=7, name="m14x14_h128_w4_lv7"),
    replace(FULL, crop=0, shift=0, name="m14x14_h128_w4_noshift"),
    replace(FULL, crop=0, qat_epochs=0, name="m14x14_h128_w4_ptq"),
    replace(FULL, name="m12x12_h128_w4"),
    replace(FULL, hidden=96, name="m12x12_h96_w4"),
    replace(FULL, levels=7, name="m12x12_h128_w4_lv7"),
    replace(FULL, qat_epochs=0, name="m12x12_h128_w4_ptq"),
]


def _row(b: Built) -> str:
    c = b.cfg
    return (f"| {c.name} | {c.side}x{c.side} | 0..{c.levels} | {c.hidden} | {c.weight_bits} | "
            f"{b.model.s} | {c.clamp} | {100 * b.float_acc:.2f} | {100 * b.int_acc:.2f} | "
            f"{b.cost.dolls} | {b.cost.lines} | {b.cost.acc_lo}..{b.cost.acc_hi} |")


HEAD = ("| model | inputs | levels | hidden | w bits | s | L | float % | int % | dolls | "
        "lines | acc range |\n|---|---|---|---|---|---|---|---|---|---|---|---|")


def main(argv=None) -> int:
    import argparse

    p = argparse.ArgumentParser(prog="python -m models.quantize",
                                description="train and quantise the MNIST models; print "
                                            "their held-out accuracies and engine costs")
    p.add_argument("--data", metavar="DIR", help="read MNIST IDX files from DIR instead of "
                                                 "the npm package")
    p.add_argument("--small", action="store_true", help="the small CI model only")
    p.add_argument("--sweep", action="store_true", help="every configuration of the sweep")
    p.add_argument("--write-small", action="store_true",
                   help=f"rewrite {os.path.relpath(SMALL_PATH, ROOT)} (trained, or from the cache)")
    p.add_argument("--no-cache", action="store_true", help="retrain even if cached")
    p.add_argument("--no-progress", action="store_true")
    args = p.parse_args(argv)
    try:
        from models.datasets import load_split

        split = load_split(args.data)
        configs = SWEEP if args.sweep else [SMALL] if args.small or args.write_small else \
            [SMALL, FULL]
        print(f"data: {split.source}; held out: {len(split.test_labels)} digits")
        print(HEAD)
        for cfg in configs:
            b = build(cfg, progress=not args.no_progress, split=split,
                      use_cache=not args.no_cache, check=not args.sweep)
            try:
                check_engine_fit(b.net)
                fits = ""
            except VoodooError as e:
                fits = " **does not fit**: " + str(e).splitlines()[1].strip()
            print(_row(b) + fits, flush=True)
            if args.write_small and cfg is SMALL:
                from dsl.util import atomic_write

                atomic_write(SMALL_PATH, b.text.encode())
                print(f"wrote {os.path.relpath(SMALL_PATH)} ({len(b.text)} bytes)")
        return 0
    except VoodooError as e:
        print(str(e), file=sys.stderr)
        return e.exit_code


if __name__ == "__main__":
    sys.exit(main())
