"""The chat corpus: short questions and answers about the map, written by this module.

Owns the text the chat model (models/chat_lm.py, docs/chat.md) learns from and is measured
on: the character vocabulary (`VOCAB`, 45 symbols with space and newline), the exchanges
(a question line and an answer line, each ending in a newline, at most `CONTEXT` = 48
characters together), and their fixed split into training and held-out exchanges. Nothing
is fetched: every exchange is made here from templates and facts about the dolls, doors,
lanes, lights and Doom, in a fixed order, so the checked-in files are reproducible:

    python -m models.chat_corpus          # rewrite models/data/chat_train.txt, chat_heldout.txt

The answer to a question depends only on its topic, never on chance, so a model can learn
it; held-out exchanges are (template, topic) pairs that the training text never asks.
"""
from __future__ import annotations

import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(ROOT, "models", "data")
TRAIN_PATH = os.path.join(DATA, "chat_train.txt")
HELDOUT_PATH = os.path.join(DATA, "chat_heldout.txt")

# Sorted by code point: newline is 0, space 1. Every character of the corpus is one of these.
VOCAB = "\n !',-.0123456789:?abcdefghijklmnopqrstuvwxyz"
NEWLINE = VOCAB.index("\n")
CONTEXT = 48  # characters of a whole exchange (question, answer, both newlines)

# topic: its answer. The answer depends on the topic only, whatever the question asks of
# it; it is one word, and no two start alike; every question ends with its topic word. A
# model of d 8 (about as good as a bigram table at the next character) answers from the
# last few characters it saw: the topic's end before "?\n" picks the answer's first letter,
# the word then writes itself. (The earlier corpus answered by topic *and* kind of question,
# in sentences whose words many topics shared: not one held-out reply came out right; the
# same design with 45 topics: 21%; docs/chat.md, "The corpus".)
TOPICS = {
    "doll": "toy.", "door": "gate.", "lane": "road.", "line": "weight.", "light": "sum.",
    "map": "world.", "net": "brain.", "neuron": "unit.", "relu": "stair.", "lut": "table.",
    "bus": "acs.", "clock": "tics.", "state": "memory.", "step": "char.", "layer": "block.",
    "expert": "specialist.", "router": "picker.", "gate": "decay.", "sector": "room.",
    "floor": "ground.",
}

# {s} is the topic, {a} its article; every question ends with it (and "?" or ".")
TEMPLATES = ["what is {a} {s}?", "what is the {s}?", "what's {a} {s}?", "define {s}.", "{a} {s}?",
             "{s}?", "explain the {s}.", "describe {a} {s}.", "tell me about the {s}.",
             "the {s}?", "and the {s}?", "what about the {s}?", "i mean the {s}.",
             "so, the {s}?", "hey, {a} {s}?", "what does one call {a} {s}?", "who knows the {s}?",
             "is there {a} {s}?", "where is the {s}?", "show me the {s}.", "one more {s}?",
             "tell me of the {s}.", "what of the {s}?", "name the {s}.", "ever seen {a} {s}?",
             "do you know the {s}?", "a word for {s}?", "give me {a} {s}.", "what is this {s}?",
             "about the {s}?", "explain {a} {s}.", "talk {s}.", "why the {s}?",
             "how about {a} {s}?", "what's the {s}?", "quick: {s}?", "the word {s}?",
             "now the {s}?", "and {a} {s}?", "what, {a} {s}?", "then the {s}?",
             "what do you call {a} {s}?", "think of {a} {s}.", "what is it, {a} {s}?",
             "more on the {s}."]

# (question, answer): small talk and facts, every answer its own; nothing else predicts
# them, so training sees each `SMALL_TALK_REPEAT` times (models/chat_train.py)
SMALL_TALK = [
    ("hi", "hi!"), ("hello", "hello."), ("hey", "hey."), ("who are you?", "a net."),
    ("what are you?", "a model."), ("are you alive?", "no."), ("thanks", "welcome."),
    ("bye", "bye bye."), ("how are you?", "fine."), ("help", "ask me."), ("ok", "ok."),
    ("yes", "good."), ("why?", "because."), ("who made you?", "voodoonet."),
    ("sing", "la la la."), ("is doom fun?", "very."), ("how many tics a second?", "35."),
    ("when was doom made?", "1993."), ("count to 5.", "1 2 3 4 5."),
]
SMALL_TALK_REPEAT = 3


def _topic_exchanges() -> list[tuple[int, int, str, str]]:
    """(template index, topic index, question, answer) of every topic question."""
    return [(i, j, t.format(s=s, a="an" if s[0] in "aeiou" else "a"), answer)
            for j, (s, answer) in enumerate(TOPICS.items()) for i, t in enumerate(TEMPLATES)]


def held_out(template: int, topic: int) -> bool:
    """Whether a (template, topic) pair is only in the held-out text: one pair in 8, spread
    so that every template and every topic is also asked in training."""
    return (template + 3 * topic) % 8 == 5


def exchanges() -> list[tuple[str, str]]:
    """Every (question, answer) of the corpus, in a fixed order (no newlines inside)."""
    return [(q, a) for _, _, q, a in _topic_exchanges()] + SMALL_TALK


def split() -> tuple[list[str], list[str]]:
    """(training, held-out) exchange texts "question\\nanswer\\n": the held-out text asks
    topics in templates that training never pairs them with (`held_out`); small talk,
    whose answers nothing else predicts, is all in training."""
    train, held = [], []
    for i, j, q, a in _topic_exchanges():
        (held if held_out(i, j) else train).append(f"{q}\n{a}\n")
    train += [f"{q}\n{a}\n" for q, a in SMALL_TALK]
    for t in train + held:
        bad = sorted(set(t) - set(VOCAB))
        if bad:
            raise ValueError(f"corpus text {t!r} uses characters outside the vocabulary: {bad}")
        if len(t) > CONTEXT:
            raise ValueError(f"corpus text {t!r} is longer than the context of {CONTEXT}")
    return train, held


def training_texts() -> list[str]:
    """What training reads: the checked-in training exchanges, small talk repeated."""
    small = {f"{q}\n{a}\n" for q, a in SMALL_TALK}
    texts = load("train")
    return texts + [t for t in texts if t in small] * (SMALL_TALK_REPEAT - 1)


def encode(text: str) -> list[int]:
    """Characters -> vocabulary indices (a clear error for a character it lacks)."""
    try:
        return [VOCAB.index(ch) for ch in text]
    except ValueError:
        bad = sorted(set(text) - set(VOCAB))
        raise ValueError(f"{text!r}: characters outside the vocabulary: {bad!r}; the model "
                         f"knows {VOCAB!r}") from None


def decode(ids) -> str:
    return "".join(VOCAB[int(i)] for i in ids)


def load(which: str = "train") -> list[str]:
    """The checked-in exchanges ("train" or "heldout"), each "question\\nanswer\\n"."""
    path = {"train": TRAIN_PATH, "heldout": HELDOUT_PATH}[which]
    with open(path, encoding="utf-8") as f:
        text = f.read()
    lines = text.split("\n")[:-1]
    return [f"{q}\n{a}\n" for q, a in zip(lines[0::2], lines[1::2])]


def main(argv=None) -> int:
    from dsl.util import atomic_write

    train, held = split()
    for path, texts in ((TRAIN_PATH, train), (HELDOUT_PATH, held)):
        data = "".join(texts).encode()
        atomic_write(path, data)
        print(f"wrote {os.path.relpath(path, ROOT)}: {len(texts)} exchanges, "
              f"{len(data)} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
