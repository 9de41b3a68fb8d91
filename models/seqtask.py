"""A synthetic sequence task that needs attention, and the training of a transformer on it.

The task (`argmax`): a sequence of `tokens` distinct integers drawn from 0..V-1; the answer
is the position of the largest one. No single token can answer it: the last token has to
look at every other one and compare (causal self-attention).

    python -m models.seqtask -o circuits/transformer.dnet      # train, report, write

trains in float, fine-tunes with the integer forward (straight-through rounding), reports
float accuracy, integer accuracy and their agreement on held-out sequences, and writes the
netlist with those numbers in its header (CI never trains: it reads the checked-in file).
"""
from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass

import numpy as np
import torch

from models.transformer import Transformer, TransformerConfig, to_dnet

DEMO = TransformerConfig(tokens=8, features=1, in_lo=0, in_hi=7, d_model=8, heads=2,
                         layers=1, mlp=0, classes=8, norm="none", s_qkv=32, qk=5)


def argmax_task(n: int, tokens: int = 8, vocab: int = 16, seed: int = 0):
    """(x, y): x (n, tokens, 1) distinct integers in 0..vocab-1, y the position of the max."""
    rng = np.random.default_rng(seed)
    x = np.stack([rng.permutation(vocab)[:tokens] for _ in range(n)])
    return x[:, :, None].astype(np.int64), x.argmax(axis=1).astype(np.int64)


def held_out(n: int, cfg: TransformerConfig = DEMO, n_train: int = 6000, seed: int = 0):
    """n sequences of the task that are not in the training set of `train(cfg, n_train,
    seed=seed)` (drawn with another seed, training sequences removed)."""
    seen = {tuple(r) for r in argmax_task(n_train, cfg.tokens, cfg.in_hi + 1, seed)[0][:, :, 0]}
    x, y = argmax_task(4 * n, cfg.tokens, cfg.in_hi + 1, seed + 12345)
    keep = np.array([tuple(r) not in seen for r in x[:, :, 0]])
    return x[keep][:n], y[keep][:n]


@dataclass
class Report:
    float_acc: float
    int_acc: float
    agreement: float
    n: int

    def __str__(self) -> str:
        return (f"held-out {self.n}: float accuracy {self.float_acc:.2%}, integer accuracy "
                f"{self.int_acc:.2%}, float/integer agreement {self.agreement:.2%}")


def evaluate(model: Transformer, x, y) -> Report:
    with torch.no_grad():
        f = model(torch.as_tensor(x), mode="float").argmax(1).numpy()
        i = model(torch.as_tensor(x), mode="int").argmax(1).numpy()
    return Report(float((f == y).mean()), float((i == y).mean()), float((f == i).mean()), len(y))


def _epochs(model, x, y, mode: str, epochs: int, lr: float, seed: int, bar=None) -> None:
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, epochs)
    g = torch.Generator().manual_seed(seed)
    X, Y = torch.as_tensor(x), torch.as_tensor(y)
    for _ in range(epochs):
        for idx in torch.randperm(len(X), generator=g).split(128):
            # Fine-tuning keeps the float forward right as well: the two then agree.
            loss = sum(torch.nn.functional.cross_entropy(model(X[idx], mode=m) / 16, Y[idx])
                       for m in dict.fromkeys((mode, "float")))
            opt.zero_grad()
            loss.backward()
            opt.step()
        sched.step()
        if bar is not None:
            bar.update(1)
            bar.set_postfix(mode=mode, loss=f"{loss.item():.3f}")


def fit(model: Transformer, x, y, float_epochs: int = 10, qat_epochs: int = 12,
        seed: int = 0, progress: bool = True) -> Transformer:
    """Train any Transformer on integer sequences x (n, tokens, features) and classes y:
    float epochs; each layer's score cap calibrated on x; then quantisation-aware epochs
    through the integer forward (with the float loss kept, so that the two agree)."""
    from tqdm import tqdm

    torch.manual_seed(seed)
    with tqdm(total=float_epochs + qat_epochs, disable=not progress, desc="train") as bar:
        _epochs(model, x, y, "float", float_epochs, 0.03, seed, bar)
        model.calibrate(torch.as_tensor(x[:2000]))
        _epochs(model, x, y, "qat", qat_epochs, 0.03, seed + 1, bar)
    return model


def train(cfg: TransformerConfig = DEMO, n_train: int = 6000, float_epochs: int = 10,
          qat_epochs: int = 12, seed: int = 0, progress: bool = True) -> Transformer:
    """The demo: a fresh model fitted to `n_train` sequences of the argmax task."""
    torch.manual_seed(seed)
    x, y = argmax_task(n_train, cfg.tokens, cfg.in_hi + 1, seed)
    return fit(Transformer(cfg, seed), x, y, float_epochs, qat_epochs, seed, progress)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("-o", "--output", default="circuits/transformer.dnet")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--float-epochs", type=int, default=10)
    p.add_argument("--qat-epochs", type=int, default=12)
    p.add_argument("--weights", help="also save the torch state here (Transformer.from_state)")
    p.add_argument("--from-weights", help="skip training: write the netlist of this state")
    args = p.parse_args(argv)
    torch.set_num_threads(1)  # a tiny model: threads only contend
    if args.from_weights:
        model = Transformer.from_state(torch.load(args.from_weights))
    else:
        model = train(DEMO, seed=args.seed, float_epochs=args.float_epochs,
                      qat_epochs=args.qat_epochs)
    x, y = held_out(2000)
    report = evaluate(model, x, y)
    print(report)
    from dsl.util import atomic_write

    comment = (f"A trained transformer (python -m models.seqtask): the position of the largest "
               f"of {DEMO.tokens} distinct tokens 0..{DEMO.in_hi}.\n{report}")
    atomic_write(args.output, to_dnet(model, "transformer", comment).encode())
    if args.weights:
        torch.save(model.state(), args.weights)
    print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
