"""The convolutional MNIST model: training, quantisation-aware fine-tuning, checked-in integers.

Owns docs/mnist.md's "The convolutional model":

- the **layer spec** (`CNNConfig.layers`, e.g. `c16k3s2p1` = Conv2d to 16 channels,
  kernel 3, stride 2, pad 1, then ReLU; `f64` = Linear to 64, then ReLU; `max2` = a 2x2
  max pool; the last layer has no ReLU: its outputs are the logits);
- **augmentation** (`affine_images`): each epoch every training digit is rotated, scaled
  and shifted by a seeded random amount (bilinear resampling, rounded back to bytes);
- **training**: a float teacher (a larger CNN, float only) and the student, trained with
  the teacher's softened answers as well as the labels (knowledge distillation), then the
  divisors calibrated and the student fine-tuned through the integer arithmetic with
  straight-through rounding (models/seq_quant.py: the one quantisation path), and the
  divisors calibrated again; seeded and single-threaded, so one configuration gives the
  same integers on one machine and torch build;
- the checked-in model `circuits/mnist_cnn.dnet` (`load_mnist_cnn`; CI never trains) and
  `python -m models.cnn --retrain`, which reproduces it.

The integer model reaches its netlist through interop/torch_import.py, like the MLP's.
"""
from __future__ import annotations

import hashlib
import io
import json
import os
import re
import sys
from contextlib import contextmanager
from dataclasses import asdict, dataclass

import numpy as np

from dsl.diagnostics import VoodooError
from models.quantize import InputTransform

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CNN_PATH = os.path.join(ROOT, "circuits", "mnist_cnn.dnet")
CACHE_VERSION = 1
_LAYER = re.compile(r"c(\d+)k(\d+)s(\d+)p(\d+)|f(\d+)|(max|avg)(\d+)")


@dataclass(frozen=True)
class CNNConfig:
    """Every hyper-parameter of the CNN; its hash keys the trained-weight cache."""

    name: str = "mnist_cnn"
    crop: int = 2                 # the input transform of models/quantize.py
    pool: int = 2
    levels: int = 3
    layers: tuple = ("c16k3s2p1", "c32k3s2p1", "f64", "f10")
    weight_bits: int = 4
    clamp: int = 15
    epochs: int = 40
    qat_epochs: int = 15
    lr: float = 3e-3              # one-cycle peak
    qat_lr: float = 3e-4
    batch: int = 64
    weight_decay: float = 1e-4
    rotate: float = 10.0          # degrees, uniform in +-rotate
    scale: float = 0.1            # uniform in 1 +- scale
    shift: float = 2.0            # pixels of the 28x28 image, uniform in +-shift
    teacher: tuple = ("c32k3s1p1", "max2", "c64k3s1p1", "max2", "f128", "f10")
    teacher_epochs: int = 40
    kd_alpha: float = 0.9         # weight of the teacher's answers in the loss
    kd_temp: float = 4.0
    seed: int = 0
    # Fine-tuned once more after the QAT above, through wider integers: (weight bits,
    # clamp, epochs), from the model of the same config without it (cached or trained).
    widen: tuple = ()

    @property
    def bits_clamp(self) -> tuple[int, int]:
        """The weight bits and activation clamp of the finished integer model."""
        return (self.widen[0], self.widen[1]) if self.widen else (self.weight_bits, self.clamp)

    @property
    def side(self) -> int:
        return (28 - 2 * self.crop) // self.pool

    def key(self) -> str:
        d = asdict(self)
        if not self.widen:   # the keys (and headers) of configs made before the field
            del d["widen"]
        return json.dumps(d, sort_keys=True)

    def transform(self) -> InputTransform:
        return InputTransform(self.crop, self.pool, self.levels)


# The checked-in model (docs/mnist.md, "The convolutional model"): the default layers,
# 80 epochs with the teacher, 15 of fine-tuning.
MNIST_CNN = CNNConfig(epochs=80, widen=(5, 31, 5))


def _torch():
    from models.quantize import _torch as get

    return get()


def make_model(spec: tuple, side: int):
    """A float nn.Sequential from a layer spec, for (1, side, side) inputs."""
    nn = _torch().nn
    layers, ch, flat, shape = [], 1, False, side
    for k, item in enumerate(spec):
        m = _LAYER.fullmatch(item)
        if not m:
            raise VoodooError(f"layer spec {item!r}: write c16k3s2p1, f64, max2 or avg2")
        last = k == len(spec) - 1
        if m.group(1):
            o, kk, s, p = (int(m.group(i)) for i in range(1, 5))
            layers.append(nn.Conv2d(ch, o, kk, s, p))
            ch, shape = o, (shape + 2 * p - kk) // s + 1
        elif m.group(5):
            if not flat:
                layers.append(nn.Flatten())
                flat, ch = True, ch * shape * shape
            layers.append(nn.Linear(ch, int(m.group(5))))
            ch = int(m.group(5))
        else:
            n = int(m.group(7))
            layers.append(nn.MaxPool2d(n) if m.group(6) == "max" else nn.AvgPool2d(n))
            shape //= n
            continue
        if not last:
            layers.append(nn.ReLU())
    return nn.Sequential(*layers)


def affine_images(images: np.ndarray, rng: np.random.Generator, rotate: float, scale: float,
                  shift: float) -> np.ndarray:
    """Each uint8 28x28 image rotated, scaled and moved by seeded uniform amounts."""
    torch = _torch()
    F = torch.nn.functional
    n = len(images)
    ang = np.deg2rad(rng.uniform(-rotate, rotate, n))
    s = rng.uniform(1 - scale, 1 + scale, n)
    tx, ty = (rng.uniform(-shift, shift, n) / 14 for _ in range(2))
    theta = np.zeros((n, 2, 3))
    theta[:, 0, 0], theta[:, 0, 1] = np.cos(ang) / s, -np.sin(ang) / s
    theta[:, 1, 0], theta[:, 1, 1] = np.sin(ang) / s, np.cos(ang) / s
    theta[:, 0, 2], theta[:, 1, 2] = tx, ty
    x = torch.from_numpy(images.astype(np.float32)).unsqueeze(1)
    grid = F.affine_grid(torch.from_numpy(theta).float(), list(x.shape), align_corners=False)
    out = F.grid_sample(x, grid, align_corners=False)
    return out.squeeze(1).round().clamp(0, 255).numpy().astype(np.uint8)


def _batches(cfg: CNNConfig, images, phase: int, epochs: int):
    """Per epoch: (augmented inputs as integers (N, 1, side, side) float32, a batch order)."""
    torch = _torch()
    t = cfg.transform()
    gen = torch.Generator().manual_seed(cfg.seed * 10 + phase)
    for ep in range(epochs):
        rng = np.random.default_rng([cfg.seed, phase, ep])
        x = t(affine_images(images, rng, cfg.rotate, cfg.scale, cfg.shift))
        x = torch.from_numpy(x.astype(np.float32)).reshape(-1, 1, cfg.side, cfg.side)
        yield ep, x, torch.randperm(len(x), generator=gen)


def _fit(cfg: CNNConfig, model, logits, images, labels, epochs, lr, phase, teacher, bar):
    """Adam with a one-cycle schedule; the loss mixes the labels and, with a teacher, its
    softened answers. logits(x_int) -> float logits."""
    torch = _torch()
    F = torch.nn.functional
    if epochs == 0:
        return
    y = torch.from_numpy(labels.astype(np.int64))
    steps = -(-len(labels) // cfg.batch)
    opt = torch.optim.Adam(model.parameters(), lr=lr, weight_decay=cfg.weight_decay)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, lr, total_steps=epochs * steps)
    T = cfg.kd_temp
    for ep, x, perm in _batches(cfg, images, phase, epochs):
        soft = None
        if teacher is not None:
            with torch.no_grad():
                soft = F.softmax(teacher(x / cfg.levels) / T, 1)
        total = 0.0
        for i in range(0, len(x), cfg.batch):
            idx = perm[i:i + cfg.batch]
            out = logits(x[idx])
            loss = F.cross_entropy(out, y[idx])
            if soft is not None:
                kd = F.kl_div(F.log_softmax(out / T, 1), soft[idx], reduction="batchmean")
                loss = (1 - cfg.kd_alpha) * loss + cfg.kd_alpha * T * T * kd
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            total += float(loss.detach()) * len(idx)
        if bar is not None:
            bar.set_postfix_str(f"phase {phase} epoch {ep + 1}/{epochs} loss "
                                f"{total / len(x):.3f}")
            bar.update(1)


@dataclass
class TrainedCNN:
    cfg: CNNConfig
    stack: object                # models.seq_quant.QuantStack (the fine-tuned float model)
    s: list[int]                 # its divisors
    float_acc: float             # the float student before fine-tuning, held-out digits
    float_pred: np.ndarray       # its answers on the held-out digits
    float_logits: np.ndarray | None = None   # and its logits (None in older cache entries)


def train(cfg: CNNConfig, split, progress: bool = True) -> TrainedCNN:
    """Teacher, student, calibration, fine-tuning, calibration (see the module docstring)."""
    from models.seq_quant import QuantStack

    torch = _torch()
    with _training(f"train {cfg.name}", cfg.teacher_epochs + cfg.epochs + cfg.qat_epochs,
                   progress) as bar:
        imgs, labels = split.train_images, split.train_labels
        teacher = _teacher(cfg, split, bar) if cfg.teacher_epochs else None
        torch.manual_seed(cfg.seed)
        student = make_model(cfg.layers, cfg.side)
        _fit(cfg, student, lambda x: student(x / cfg.levels), imgs, labels, cfg.epochs,
             cfg.lr, 1, teacher, bar)
        x_test = cfg.transform()(split.test_images)
        logits = QuantStack(student, (1, cfg.side, cfg.side), 1 / cfg.levels, cfg.weight_bits,
                            cfg.clamp).float_logits(torch.as_tensor(x_test)).numpy()
        float_pred = logits.argmax(1)
        float_acc = float((float_pred == split.test_labels).mean())
        q, s = _quantise(cfg, student, cfg.weight_bits, cfg.clamp, cfg.qat_epochs, 2, teacher,
                         split, bar)
        return TrainedCNN(cfg, q, s, float_acc, float_pred, logits)


@contextmanager
def _training(desc: str, epochs: int, progress: bool):
    """Torch on one thread (a fixed summation order: the same integers every time) and a
    progress bar of `epochs` (None without `progress`); both undone on the way out."""
    torch = _torch()
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=epochs, desc=desc, unit="epoch", file=sys.stderr)
    try:
        yield bar
    finally:
        if bar is not None:
            bar.close()
        torch.set_num_threads(threads)


def _quantise(cfg: CNNConfig, student, bits: int, clamp: int, epochs: int, phase: int,
              teacher, split, bar):
    """(QuantStack, divisors) of `student` at `bits`/`clamp`: divisors calibrated on the
    training digits, `epochs` of fine-tuning through the integer arithmetic (straight-
    through rounding), calibrated again."""
    from models.seq_quant import QuantStack, calibrate

    q = QuantStack(student, (1, cfg.side, cfg.side), 1 / cfg.levels, bits, clamp)
    x_cal, y_cal = cfg.transform()(split.train_images), split.train_labels

    def score(out):
        return float((out.argmax(1) == y_cal).mean())

    s = calibrate(q, x_cal, score)
    if epochs:
        def fake_quant(x):
            out, a = q.forward(x, s, ste=True)
            return out * a

        _fit(cfg, student, fake_quant, split.train_images, split.train_labels, epochs,
             cfg.qat_lr, phase, teacher, bar)
        s = calibrate(q, x_cal, score)
    return q, s


def widen(cfg: CNNConfig, split, progress: bool = True) -> TrainedCNN:
    """The model of `cfg` without `widen` (cached, or trained), fine-tuned again through
    the wider integers of `cfg.widen` (seeded, single-threaded like `train`)."""
    import copy
    from dataclasses import replace

    torch = _torch()
    base = member(replace(cfg, widen=()), split, progress)
    bits, clamp, epochs = cfg.widen
    with _training(f"widen {cfg.name}", epochs, progress) as bar:
        torch.manual_seed(cfg.seed + 2000)
        teacher = _teacher(cfg, split, None) if cfg.teacher_epochs else None
        q, s = _quantise(cfg, copy.deepcopy(base.stack.model), bits, clamp, epochs, 3,
                         teacher, split, bar)
        return TrainedCNN(cfg, q, s, base.float_acc, base.float_pred, base.float_logits)


def _teacher(cfg: CNNConfig, split, bar):
    """The float teacher, trained once per teacher configuration and cached (students of
    different shapes share it)."""
    from dataclasses import replace

    from dsl.util import atomic_write

    torch = _torch()
    tcfg = replace(cfg, name="mnist_cnn_teacher", layers=cfg.teacher, epochs=cfg.teacher_epochs,
                   qat_epochs=0, weight_bits=0, clamp=0, teacher=(), teacher_epochs=0,
                   kd_alpha=0.0, kd_temp=0.0, qat_lr=0.0)
    path = _cache_path(tcfg, split)
    teacher = make_model(cfg.teacher, cfg.side)
    if os.path.exists(path):
        try:
            teacher.load_state_dict(torch.load(path, weights_only=True))
            if bar is not None:
                bar.update(cfg.teacher_epochs)
            return teacher.eval()
        except (OSError, RuntimeError, ValueError):
            pass  # retrained below
    torch.manual_seed(cfg.seed + 1000)
    teacher = make_model(cfg.teacher, cfg.side)
    _fit(cfg, teacher, lambda x: teacher(x / cfg.levels), split.train_images,
         split.train_labels, cfg.teacher_epochs, cfg.lr, 0, None, bar)
    buf = io.BytesIO()
    torch.save(teacher.state_dict(), buf)
    atomic_write(path, buf.getvalue())
    return teacher.eval()


# ------------------------------------------------------------------- the netlist and its file
def _header(members: list[TrainedCNN], float_acc: float, int_acc: float, split,
            float_pred: np.ndarray, weights: list[int]) -> str:
    cfg = members[0].cfg
    t = cfg.transform()
    lines = [f"{cfg.name}: a convolutional integer network classifying MNIST digits, made "
             "by models/cnn.py",
             f"inputs: {t.describe()} (InputTransform{(t.crop, t.pool, t.levels)}), read as "
             f"a 1x{cfg.side}x{cfg.side} image"]
    if len(members) > 1:
        lines.append(f"an ensemble of {len(members)} CNNs on the same inputs: o = "
                     + " + ".join(f"{w}*m{k + 1}_o" for k, w in enumerate(weights)))
    for k, m in enumerate(members):
        c = m.cfg
        bits, clamp = c.bits_clamp
        more = (f" ({c.weight_bits}-bit, clamp {c.clamp}) + {c.widen[2]} widened"
                if c.widen else "")
        lines.append(f"{f'm{k + 1}: ' if len(members) > 1 else ''}layers {' '.join(c.layers)}; "
                     f"relu divisors {m.s}, clamp {clamp}; {bits}-bit weights; "
                     f"{c.epochs} + {c.qat_epochs}{more} epochs, "
                     + (f"teacher {' '.join(c.teacher)}" if c.teacher_epochs else "no teacher"))
    lines += [
        f"outputs o[0..9]: the class is argmax; trained on the 8,000 training digits of "
        f"{split.source}",
        f"held-out accuracy (2,000 digits): float {100 * float_acc:.2f}%, "
        f"integer {100 * int_acc:.2f}%",
        "config: " + (members[0].cfg.key() if len(members) == 1 else
                      "[" + ", ".join(m.cfg.key() for m in members) + "]"),
        f"float answers on the held-out digits {test_digits_id(split)}: "
        + "".join(str(int(v)) for v in float_pred),
    ]
    return "\n".join(lines)


def test_digits_id(split) -> str:
    """A short hash of the held-out digits: recorded answers are only theirs."""
    return hashlib.sha256(split.test_images.tobytes()).hexdigest()[:16]


def netlist_text(members: list[TrainedCNN], split, name: str | None = None
                 ) -> tuple[str, object, float]:
    """(.dnet text with its header, the Netlist, integer held-out accuracy) of one trained
    CNN, or of several on the same inputs whose logits are added (an ensemble: member k's
    outputs weighted by its output scale, rounded to an integer multiple of the smallest)."""
    from dsl.parser import parse
    from dsl.reference import evaluate
    from interop.torch_import import to_dnet

    cfg = members[0].cfg
    name = name or cfg.name
    x = cfg.transform()(split.test_images)
    want = _members_outputs(members, x)
    body, weights = _members_text(members, name)
    net = parse(body, f"<{name}>")
    out = np.asarray(evaluate(net, x).last_outputs(), dtype=np.int64)
    if not np.array_equal(out, want):
        raise AssertionError("the netlist differs from the integer model it was made from")
    int_acc = float((out.argmax(1) == split.test_labels).mean())
    logits = [m.float_logits for m in members]
    if any(v is None for v in logits):  # older cache entries: the fine-tuned float models
        logits = [m.stack.float_logits(_torch().as_tensor(x)).numpy() for m in members]
    float_pred = np.sum(logits, axis=0).argmax(1) if len(members) > 1 else \
        members[0].float_pred
    float_acc = float((float_pred == split.test_labels).mean())
    head = _header(members, float_acc, int_acc, split, float_pred, weights)
    text = "".join(f"# {line}\n" for line in head.splitlines()) + body
    return text, net, int_acc


def _output_weights(members: list[TrainedCNN]) -> list[int]:
    """Each member's logit scale (a of its last layer) as a multiple of the smallest."""
    torch = _torch()
    scales = []
    for m in members:
        shape = m.stack.input_shape
        _, a = m.stack.forward(torch.zeros((1, *shape), dtype=torch.float64), m.s)
        scales.append(float(a))
    return [max(1, round(v / min(scales))) for v in scales]


def _members_outputs(members: list[TrainedCNN], x) -> np.ndarray:
    if len(members) == 1:
        return members[0].stack.integer_outputs(x, members[0].s)
    return sum(w * m.stack.integer_outputs(x, m.s)
               for w, m in zip(_output_weights(members), members))


def _members_text(members: list[TrainedCNN], name: str) -> tuple[str, list[int]]:
    from interop.torch_import import to_dnet

    cfg = members[0].cfg
    parts = []
    for k, m in enumerate(members):
        st = m.stack.integer_model(m.s, (0, cfg.levels))
        parts.append(to_dnet(st.model, (0, cfg.levels), st.scales, st.clamps, name,
                             input_shape=st.input_shape, prefix="" if len(members) == 1
                             else f"m{k + 1}_", layers_only=len(members) > 1))
    if len(members) == 1:
        return parts[0], [1]
    weights = _output_weights(members)
    out = [f"network {name}", "", f"input x[{cfg.side ** 2}] : 0..{cfg.levels}", ""]
    out += parts + ["neuron o[10] : identity"]
    out += [f"lines m{k + 1}_o -> o diag [{', '.join([str(w)] * 10)}]"
            for k, w in enumerate(weights)]
    return "\n".join(out) + "\noutput o\n", weights


def recorded(text: str) -> dict:
    """The accuracies, configuration and the float model's answers on the held-out digits
    that a checked-in model's header records."""
    acc = re.search(r"^# held-out accuracy \(2,000 digits\): float ([\d.]+)%, integer "
                    r"([\d.]+)%$", text, re.M)
    cfg = re.search(r"^# config: ([\[{].*[\]}])$", text, re.M)
    answers = re.search(r"^# float answers on the held-out digits ([0-9a-f]{16}): ([0-9]+)$",
                        text, re.M)
    if not acc or not cfg or not answers:
        raise VoodooError(f"{CNN_PATH}: its header lost the recorded accuracies or the "
                          "configuration\n    hint: rebuild it with `python -m models.cnn "
                          "--retrain`")
    docs = json.loads(cfg.group(1))
    configs = []
    for c in docs if isinstance(docs, list) else [docs]:
        c["layers"], c["teacher"] = tuple(c["layers"]), tuple(c["teacher"])
        c["widen"] = tuple(c.get("widen", ()))
        configs.append(CNNConfig(**c))
    return {"float_acc": float(acc.group(1)) / 100, "int_acc": float(acc.group(2)) / 100,
            "config": configs[0], "configs": configs, "test_sha": answers.group(1),
            "float_pred": np.array([int(ch) for ch in answers.group(2)], dtype=np.int64)}


def load_mnist_cnn(path: str = CNN_PATH):
    """(netlist, input transform, recorded header) of the checked-in CNN; no training."""
    from dsl.parser import parse, read_text

    text = read_text(path)
    info = recorded(text)
    net = parse(text, path)
    cfg = info["config"]
    if len(net.inputs) != cfg.side ** 2 or set(net.input_ranges()) != {(0, cfg.levels)}:
        raise VoodooError(f"{path}: its inputs do not match its configuration\n    hint: "
                          "rebuild it with `python -m models.cnn --retrain`")
    return net, cfg.transform(), info


def _cache_path(cfg: CNNConfig, split) -> str:
    from dataclasses import replace

    from models.datasets import cache_dir
    from models.quantize import _source_id

    # The name only labels the file: members of an ensemble keep their trained weights
    # when they are renamed.
    key = json.dumps({"cfg": replace(cfg, name="").key(), "data": _source_id(split),
                      "torch": _torch().__version__, "v": CACHE_VERSION}, sort_keys=True)
    return os.path.join(cache_dir(), f"{cfg.name}-{hashlib.sha256(key.encode()).hexdigest()[:16]}.pt")


def member(cfg: CNNConfig, split, progress: bool = True, use_cache: bool = True
           ) -> TrainedCNN:
    """One trained CNN: from the cache (its float weights and divisors), else trained."""
    from models.seq_quant import QuantStack

    torch = _torch()
    path = _cache_path(cfg, split)
    if use_cache and os.path.exists(path):
        try:
            saved = torch.load(path, weights_only=False)
            student = make_model(cfg.layers, cfg.side)
            student.load_state_dict(saved["state"])
            q = QuantStack(student, (1, cfg.side, cfg.side), 1 / cfg.levels, *cfg.bits_clamp)
            return TrainedCNN(cfg, q, saved["s"], saved["float_acc"], saved["float_pred"],
                              saved.get("float_logits"))
        except (OSError, KeyError, RuntimeError, ValueError):
            pass  # a damaged cache entry is retrained
    trained = widen(cfg, split, progress) if cfg.widen else train(cfg, split, progress)
    buf = io.BytesIO()
    torch.save({"state": trained.stack.model.state_dict(), "s": trained.s,
                "float_acc": trained.float_acc, "float_pred": trained.float_pred,
                "float_logits": trained.float_logits}, buf)
    from dsl.util import atomic_write

    atomic_write(path, buf.getvalue())
    return trained


def build(cfg=None, split=None, progress: bool = True, use_cache: bool = True):
    """Train (or load from the cache) one CNN, or each of a tuple of them (an ensemble),
    and make the netlist: (text, netlist, [TrainedCNN], integer accuracy)."""
    from models.datasets import load_split

    cfgs = MNIST_CNN if cfg is None else cfg
    cfgs = list(cfgs) if isinstance(cfgs, (tuple, list)) else [cfgs]
    split = split if split is not None else load_split()
    members = [member(c, split, progress, use_cache) for c in cfgs]
    text, net, int_acc = netlist_text(members, split, cfgs[0].name)
    return text, net, members, int_acc


def main(argv=None) -> int:
    import argparse

    p = argparse.ArgumentParser(prog="python -m models.cnn",
                                description="train the MNIST CNN (teacher, student, "
                                            "quantisation-aware fine-tuning) and print its "
                                            "held-out accuracies")
    p.add_argument("--retrain", action="store_true",
                   help=f"train (or take from the cache) and rewrite "
                        f"{os.path.relpath(CNN_PATH, ROOT)}")
    p.add_argument("--no-cache", action="store_true", help="train even if cached")
    p.add_argument("--layers", help="a layer spec to try instead, e.g. c16k3s2p1,c32k3s2p1,f64,f10")
    p.add_argument("--epochs", type=int, help="student epochs to try instead")
    p.add_argument("--no-progress", action="store_true")
    args = p.parse_args(argv)
    try:
        from dataclasses import replace

        from models.datasets import load_split
        from models.quantize import engine_cost

        cfg = MNIST_CNN
        if args.layers or args.epochs:
            one = MNIST_CNN[0] if isinstance(MNIST_CNN, tuple) else MNIST_CNN
            cfg = replace(one, name="mnist_cnn_try", epochs=args.epochs or one.epochs,
                          layers=tuple(args.layers.split(",")) if args.layers else one.layers)
        split = load_split()
        text, net, members, int_acc = build(cfg, split, not args.no_progress,
                                            use_cache=not args.no_cache)
        acc = recorded(text)
        for k, m in enumerate(members):
            print(f"member {k + 1}: {' '.join(m.cfg.layers)}, float "
                  f"{100 * m.float_acc:.2f}%, divisors {m.s}")
        print(f"{net.name}: float {100 * acc['float_acc']:.2f}%, integer {100 * int_acc:.2f}% "
              f"on {len(split.test_labels)} held-out digits")
        print(f"engine cost: {engine_cost(net)}")
        if args.retrain and cfg is MNIST_CNN:
            from dsl.util import atomic_write

            atomic_write(CNN_PATH, text.encode())
            print(f"wrote {os.path.relpath(CNN_PATH)} ({len(text)} bytes)")
        return 0
    except VoodooError as e:
        print(str(e), file=sys.stderr)
        return e.exit_code


if __name__ == "__main__":
    sys.exit(main())
