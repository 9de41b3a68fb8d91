"""Training the chat models on the corpus, measuring them, and the checked-in results.

Owns the three configurations of issue 21 (docs/chat.md, "The trained models"): `chat`,
the largest that plays well in one map; `large` (d_model 16); `microbit`, the size of the
micro:bit model (d_model 40, 2 layers, 3 experts). Each is trained seeded on the CPU:
float epochs (the closed-form forward, every step at once, routed as the integers route,
with a rounding's noise added wherever the integers round: the float model learns what the
integers keep), the choice's bias calibrated, then any quantisation-aware epochs through
the exact integer forward (straight-through), with the float loss kept so the two forwards
agree (`chat` has none: they moved its integer accuracy by less than a point and cost the
float eight); `chat` then has tuning epochs (`tune`) that weigh small talk more and add
the greedy choice's margins to the loss (`choice_loss`), so that its integers greet.
Measured on the held-out exchanges:
next-character accuracy of the float and the integer forward (every character, and the
reply's), and how often the two choose the same character.

    python -m models.chat_train --config chat            # the checked-in files, no training
    python -m models.chat_train --config chat --retrain  # train again; identical?

writes models/data/chat_<config>.pt (the torch state) and, for `chat`,
circuits/chat.dnet (the netlist, with the figures in its header).
"""
from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass, replace

import numpy as np
import torch

from dsl.diagnostics import VoodooError
from models import chat_corpus
from models.chat_lm import ChatConfig, ChatLM, generate

ROOT = chat_corpus.ROOT
# What won the first one-map model's (d 8) integer accuracy back and what its map held
# (docs/chat.md, "What fits one map"): with its heads 4 and MLP 10, beta 0.12, router_in_max 1, gelu_max 16 and
# choice_max 12 fitted 65,535 sectors; v in -10..10 (s_v 96), kv_div 8 and a head 4 times
# as fine (logit_unit 64) are what the measured budget of 400,000 linedefs still held. Every
# size since keeps these integer settings.
FINE_INTEGERS = dict(s_norm=48, kv_div=8, v_max=10, s_v=96, out_scale=2, beta=0.12,
                     router_in_max=1, gelu_max=16, choice_max=12, logit_unit=64, s_choice=48)
CONFIGS = {
    # the best that fits one map now (issue 36; docs/chat.md, "What fits one map"): d 12
    # in 6 heads of 2. The state's cost grows as d x dh (its doors: `large`'s heads of 4
    # made 934,350 linedefs), the norms' lines as d squared; a coarser state (kv_div 12 or
    # 16) would fit d 16 but costs `large` 11 and 25 of its 104 held-out answers
    "chat": ChatConfig(d_model=12, heads=6, layers=2, experts=2, mlp=32, router_hidden=32,
                       **FINE_INTEGERS),
    # twice as wide: over several maps (docs/chat.md, "Over several maps")
    "large": ChatConfig(d_model=16, heads=4, layers=2, experts=2, mlp=32, router_hidden=32,
                        **FINE_INTEGERS),
    # the micro:bit model's size (d 40, one head of 40, 3 experts, MLP 80), over tiles. Its
    # readout's logs saturate at 2,048: a log lookup's lane climbs to its last key, and
    # at num_max (11,840) it was 55,000 units long, wider than a map; 2,048 changed no
    # held-out answer (1,024 cost 9 of 105; docs/chat.md, "Over several maps")
    "microbit": ChatConfig(d_model=40, heads=1, layers=2, experts=3, mlp=80,
                           router_hidden=32, log_max=2048, **FINE_INTEGERS),
}


@dataclass(frozen=True)
class Schedule:
    float_epochs: int = 40
    qat_epochs: int = 6
    lr: float = 0.03
    qat_lr: float = 0.01
    batch: int = 32
    qat_batch: int = 64
    balance: float = 0.05      # weight of the router's load-balancing loss
    noise: float = 0.0         # the float path's rounding noise (ChatLM.forward)
    reply_weight: float = 1.0  # a reply character's weight in the loss (the question's: 1)
    seed: int = 0
    # then float epochs that weigh each small-talk exchange `small_talk_weight` times a
    # topic question (models/chat_corpus.SMALL_TALK) at a lower rate, and the choice
    # calibrated again (`tune`)
    tune_epochs: int = 0
    tune_lr: float = 0.003
    small_talk_weight: float = 1.0
    choice_weight: float = 0.0  # in those epochs, the weight of `choice_loss` (greedy margins)


# 150 float epochs with a rounding's noise 1.5 wide, a reply's characters weighing 8 times a
# question's, no qat epochs (docs/chat.md, "The trained model": what each choice measured);
# `chat` then 30 tuning epochs at lr 0.003, small talk weighing 16 times a topic question
# and the greedy choice's margins 3 times (`choice_loss`): its integers greet (`hi` ->
# `hi!`, `hello` -> `hello.`, `who are you?` -> `a net.`; before, `ok.`, `hel`, `a `)
SCHEDULES = {name: Schedule(float_epochs=150, qat_epochs=0, noise=1.5, reply_weight=8.0)
             for name in ("chat", "large", "microbit")}
SCHEDULES["chat"] = replace(SCHEDULES["chat"], tune_epochs=30, tune_lr=0.003,
                            small_talk_weight=16.0, choice_weight=3.0)


def weights_path(name: str) -> str:
    return os.path.join(chat_corpus.DATA, f"chat_{name}.pt")


NETLIST_PATH = os.path.join(ROOT, "circuits", "chat.dnet")
# The configurations whose netlist is checked in beside their weights (the micro:bit size's
# would be megabytes of text: it is made from its weights when wanted).
NETLISTS = {"chat": NETLIST_PATH, "large": os.path.join(ROOT, "circuits", "chat_large.dnet")}


# --------------------------------------------------------------------------------- data
def batch_of(texts: list[str]) -> tuple[torch.Tensor, torch.Tensor]:
    """(ids (n, steps + 1), mask (n, steps)): each exchange's characters, padded with
    newlines; the mask marks the steps whose next character is part of the exchange."""
    n = max(len(t) for t in texts)
    x = np.full((len(texts), n), chat_corpus.NEWLINE, dtype=np.int64)
    mask = np.zeros((len(texts), n - 1), dtype=bool)
    for r, t in enumerate(texts):
        ids = chat_corpus.encode(t)
        x[r, :len(ids)] = ids
        mask[r, :len(ids) - 1] = True
    return torch.from_numpy(x), torch.from_numpy(mask)


def reply_mask(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """The steps whose next character belongs to the answer (after the question's newline)."""
    seen = (x[:, :-1] == chat_corpus.NEWLINE).long().cumsum(1) >= 1
    return mask & seen


# ----------------------------------------------------------------------------- training
def small_talk_weights(texts: list[str], weight: float) -> torch.Tensor:
    """(n,) each exchange's weight in the loss: `weight` for small talk, else 1."""
    small = {f"{q}\n{a}\n" for q, a in chat_corpus.SMALL_TALK}
    return torch.tensor([weight if t in small else 1.0 for t in texts])


def reply_counts(x: torch.Tensor, mask: torch.Tensor, vocab: int, cap: int) -> torch.Tensor:
    """(n, steps, vocab) how often each character was written earlier in the reply, as
    the greedy decoding counts them for its repetition penalty (at most `cap`)."""
    y = torch.nn.functional.one_hot(x[:, 1:], vocab) * reply_mask(x, mask)[..., None]
    return (y.cumsum(1) - y).clamp(max=cap)


def choice_loss(model: ChatLM, logits, x, mask, margin: float = 1.0) -> torch.Tensor:
    """(steps,) per reply step (of `mask`'s steps), how far the float logits are from
    making greedy decoding write the reply's character: the choice's score (`choose`:
    (logit + bias) / s_choice less the repetition penalty, clamped to 0..choice_max, ties
    to the first character, the newline) of the character must be at least 1 + margin
    and, clamped at the top, lead every other by `margin` (hinges in score units; 0 on
    a question's steps). Cross entropy alone is blind to the bias, the clamp and the
    penalty: `hello` ended after `hel`, the second l penalised to a tie at 0."""
    cfg = model.cfg
    y = x[:, 1:][mask]
    pen = cfg.penalty_units * reply_counts(x, mask, cfg.vocab, cfg.repeat_max)[mask]
    s = (logits[mask].float() + float(model.choice_bias)) / cfg.s_choice - pen
    sy = s.gather(1, y[:, None])
    rival = torch.relu(s - sy.clamp(max=cfg.choice_max) + margin).scatter(1, y[:, None], 0.0)
    return (torch.relu(1.0 + margin - sy[:, 0]) + rival.sum(1)) * reply_mask(x, mask)[mask]


def _loss(model: ChatLM, x, mask, mode: str, balance: float, noise: float = 0.0,
          reply_weight: float = 1.0, rows: torch.Tensor | None = None, choice: float = 0.0):
    aux: list = []
    logits = model(x[:, :-1], mode=mode, aux=aux, noise=noise)
    each = torch.nn.functional.cross_entropy(logits[mask].float() / model.cfg.logit_unit,
                                             x[:, 1:][mask], reduction="none")
    # the question is there to be read, the reply to be written: weigh the reply's
    # characters more (a question's next character is rarely predictable anyway)
    w = 1.0 + (reply_weight - 1.0) * reply_mask(x, mask)[mask].float()
    if rows is not None:  # each exchange's own weight (small talk, `Schedule.tune_epochs`)
        w = w * rows[:, None].expand_as(mask)[mask]
    ce = (each * w).sum() / w.sum()
    if choice:
        ce = ce + choice * (choice_loss(model, logits, x, mask) * w).sum() / w.sum()
    if not aux:  # the integer forward has no probabilities to balance
        return ce, ce
    prob = torch.stack([a[0] for a in aux]).reshape(-1, model.cfg.experts)
    hard = torch.stack([a[1] for a in aux]).reshape(-1, model.cfg.experts)
    # Switch-transformer balance: experts * sum_e (share of steps routed to e) * (mean p_e)
    lb = model.cfg.experts * (hard.mean(0) * prob.mean(0)).sum()
    return ce, ce + balance * lb


def _epochs(model: ChatLM, x, mask, modes, epochs: int, lr: float, sch: Schedule, seed: int,
            bar=None, rows: torch.Tensor | None = None, choice: float = 0.0) -> None:
    opt = torch.optim.Adam(model.param_groups(lr))
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, max(epochs, 1))
    g = torch.Generator().manual_seed(seed)
    for _ in range(epochs):
        total, n = 0.0, 0
        size = sch.qat_batch if "qat" in modes else sch.batch
        for idx in torch.randperm(len(x), generator=g).split(size):
            loss = 0.0
            for mode in modes:
                ce, full = _loss(model, x[idx], mask[idx], mode, sch.balance, sch.noise,
                                 sch.reply_weight, None if rows is None else rows[idx],
                                 choice)
                loss = loss + full
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1e3)
            opt.step()
            model.keep_in_lights()
            total, n = total + float(ce.detach()) * len(idx), n + len(idx)
        sched.step()
        if bar is not None:
            bar.update(1)
            bar.set_postfix(mode=modes[0], ce=f"{total / n:.3f}")


def calibrate_choice(model: ChatLM, x) -> int:
    """The choice's bias: the 80% quantile of each step's largest integer logit lands at
    the top of the score range. (At the 99.5% quantile, with 12 levels, most steps had
    every score clamped to 0, a tie the newline, symbol 0, won: empty replies.)"""
    cfg = model.cfg
    with torch.no_grad():
        top = model(x[:, :-1], mode="int").max(-1).values.flatten().float()
    q = float(torch.quantile(top, 0.8))
    bias = int(cfg.s_choice * cfg.choice_max - round(q))
    model.choice_bias.fill_(bias)
    return bias


def fit(model: ChatLM, texts: list[str], sch: Schedule, progress: bool = True) -> ChatLM:
    from tqdm import tqdm

    torch.manual_seed(sch.seed)
    x, mask = batch_of(texts)
    with tqdm(total=sch.float_epochs + sch.qat_epochs + sch.tune_epochs,
              disable=not progress, desc="train", file=sys.stderr) as bar:
        _epochs(model, x, mask, ("float",), sch.float_epochs, sch.lr, sch, sch.seed, bar)
        calibrate_choice(model, x)
        _epochs(model, x, mask, ("qat", "float"), sch.qat_epochs, sch.qat_lr, sch,
                sch.seed + 1, bar)
        calibrate_choice(model, x)
        tune(model, texts, sch, bar)
    return model


def tune(model: ChatLM, texts: list[str], sch: Schedule, bar=None) -> ChatLM:
    """`fit`'s last stage, alone: `sch.tune_epochs` float epochs from the model as it is,
    small talk weighing `sch.small_talk_weight` times a topic question, at `sch.tune_lr`;
    the choice calibrated again. Seeded (`sch.seed` + 2): the same model, the same result."""
    if not sch.tune_epochs:
        return model
    torch.manual_seed(sch.seed + 2)
    x, mask = batch_of(texts)
    _epochs(model, x, mask, ("float",), sch.tune_epochs, sch.tune_lr, sch, sch.seed + 2, bar,
            small_talk_weights(texts, sch.small_talk_weight), sch.choice_weight)
    calibrate_choice(model, x)
    return model


def train(name: str, progress: bool = True, schedule: Schedule | None = None) -> ChatLM:
    sch = schedule or SCHEDULES[name]
    torch.manual_seed(sch.seed)
    model = ChatLM(CONFIGS[name], sch.seed)
    return fit(model, chat_corpus.training_texts(), sch, progress)


# ---------------------------------------------------------------------------- measuring
@dataclass
class Report:
    float_acc: float
    int_acc: float
    agreement: float
    float_reply: float
    int_reply: float
    chars: int
    exact: int = 0         # held-out questions whose greedy integer reply is the answer
    questions: int = 0

    def __str__(self) -> str:
        return (f"held-out {self.chars} characters: next-character accuracy float "
                f"{self.float_acc:.2%}, integer {self.int_acc:.2%} (replies only: float "
                f"{self.float_reply:.2%}, integer {self.int_reply:.2%}); float/integer "
                f"agreement {self.agreement:.2%}; greedy integer replies equal to the "
                f"held-out answer {self.exact}/{self.questions}")


def evaluate(model: ChatLM, texts: list[str]) -> Report:
    x, mask = batch_of(texts)
    with torch.no_grad():
        f = model(x[:, :-1], mode="float").argmax(-1)
        i = model(x[:, :-1], mode="int").argmax(-1)
    y, rep = x[:, 1:], reply_mask(x, mask)

    def acc(p, m):
        return float(((p == y) & m).sum()) / max(int(m.sum()), 1)
    pairs = [t.split("\n")[:2] for t in texts]
    exact = sum(generate(model, q).text == a for q, a in pairs)
    return Report(acc(f, mask), acc(i, mask), float(((f == i) & mask).sum()) / int(mask.sum()),
                  acc(f, rep), acc(i, rep), int(mask.sum()), exact, len(pairs))


# --------------------------------------------------------------------------------- files
def load(name: str = "chat") -> ChatLM:
    """The checked-in trained model of a configuration (no training)."""
    path = weights_path(name)
    if not os.path.exists(path):
        raise VoodooError(f"{path}: no trained '{name}' model is checked in\n    hint: "
                          f"python -m models.chat_train --config {name} --retrain")
    return ChatLM.from_state(torch.load(path, weights_only=True))


def _same(a: ChatLM, b: ChatLM) -> bool:
    sa, sb = a.state_dict(), b.state_dict()
    return sa.keys() == sb.keys() and all(torch.equal(sa[k], sb[k]) for k in sa)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m models.chat_train",
                                description=__doc__.splitlines()[0])
    p.add_argument("--config", choices=sorted(CONFIGS), default="chat")
    p.add_argument("--retrain", action="store_true",
                   help="train again and say whether the result equals the checked-in one")
    p.add_argument("--write", action="store_true", help="write the (re)trained files")
    p.add_argument("--no-progress", action="store_true")
    args = p.parse_args(argv)
    torch.set_num_threads(1)  # a small model: threads only contend
    try:
        if args.retrain:
            model = train(args.config, progress=not args.no_progress)
            if os.path.exists(weights_path(args.config)):
                same = _same(model, load(args.config))
                print(f"retrained '{args.config}': "
                      f"{'identical to' if same else 'DIFFERENT from'} the checked-in weights")
        else:
            model = load(args.config)
        report = evaluate(model, chat_corpus.load("heldout"))
        print(report)
        if args.write or (args.retrain and not os.path.exists(weights_path(args.config))):
            _write(args.config, model, report)
        return 0
    except VoodooError as e:
        print(str(e), file=sys.stderr)
        return e.exit_code


def _write(name: str, model: ChatLM, report: Report) -> None:
    import io

    from dsl.util import atomic_write
    from models.chat_dnet import to_dnet

    buf = io.BytesIO()
    torch.save(model.state(), buf)
    atomic_write(weights_path(name), buf.getvalue())
    print(f"wrote {os.path.relpath(weights_path(name), ROOT)}")
    if name in NETLISTS:
        comment = (f"The trained chat model (python -m models.chat_train --config {name}): "
                   f"docs/chat.md.\n{report}")
        atomic_write(NETLISTS[name], to_dnet(model, name, comment).encode())
        print(f"wrote {os.path.relpath(NETLISTS[name], ROOT)}")


if __name__ == "__main__":
    sys.exit(main())
