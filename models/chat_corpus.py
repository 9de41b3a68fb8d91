"""The chat corpus: short questions and answers about the map, written by this module.

Owns the text the chat model (models/chat_lm.py, docs/chat.md) learns from and is measured
on: the character vocabulary (`VOCAB`, 44 symbols with space and newline), the exchanges
(a question line and an answer line, each ending in a newline, at most `CONTEXT` = 48
characters together), and their fixed split into training and held-out exchanges. Nothing
is fetched: every exchange is made here from templates and facts about the dolls, doors,
lanes, lights and Doom, in a fixed order, so the checked-in files are reproducible:

    python -m models.chat_corpus          # rewrite models/data/chat_train.txt, chat_heldout.txt

The answer to a question depends only on its topic and on the kind of question (what a
thing *is*, or what it *does*), never on chance, so a model can learn it; held-out
exchanges are (template, topic) pairs that the training text never asks.
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

# topic: (plural, what it is, what it does): short, so that a question and its answer fit
# the context of 48 characters
TOPICS = {
    "doll": ("dolls", "a voodoo doll.", "rides a lane."),
    "door": ("doors", "a neuron gate.", "stops low dolls."),
    "lane": ("lanes", "a road of doors.", "carries a doll."),
    "line": ("lines", "a weight.", "adds to a light."),
    "light": ("lights", "a sum in a sector.", "holds a sum."),
    "map": ("maps", "the whole net.", "thinks with dolls."),
    "net": ("nets", "dolls and doors.", "maps in to out."),
    "neuron": ("neurons", "a lane of doors.", "gates a sum."),
    "weight": ("weights", "a line on a floor.", "adds to a light."),
    "relu": ("relus", "a stair of doors.", "clamps at zero."),
    "lut": ("luts", "a table of doors.", "looks a value up."),
    "bus": ("buses", "acs that copies.", "writes inputs in."),
    "clock": ("clocks", "acs that counts.", "starts each step."),
    "state": ("states", "a kept value.", "stays in the map."),
    "step": ("steps", "one char in and out.", "reads a char."),
    "layer": ("layers", "a block of the net.", "mixes and adds."),
    "expert": ("experts", "a set of weights.", "runs when picked."),
    "router": ("routers", "a tiny net.", "picks an expert."),
    "gate": ("gates", "a sigmoid decay.", "forgets the state."),
    "sector": ("sectors", "a room of the map.", "has a light."),
    "floor": ("floors", "a sector bottom.", "holds dolls up."),
    "ceiling": ("ceilings", "a sector top.", "moves as a door."),
    "conveyor": ("conveyors", "a moving floor.", "pushes dolls."),
    "pedal": ("pedals", "a floor switch.", "picks a prompt."),
    "wall": ("walls", "a textured line.", "shows the reply."),
    "player": ("players", "you, in the map.", "walks and reads."),
    "imp": ("imps", "a brown demon.", "throws fire."),
    "shotgun": ("shotguns", "a doom gun.", "is not the net."),
    "doom": ("dooms", "a game of 1993.", "runs the net."),
    "zdoom": ("zdooms", "a doom port.", "runs udmf maps."),
    "vizdoom": ("vizdooms", "doom for research.", "checks values."),
    "wad": ("wads", "a file of maps.", "holds the net."),
    "tic": ("tics", "a 35th of a second.", "moves the dolls."),
    "key": ("keys", "a door card.", "opens doors."),
    "exit": ("exits", "a level end.", "ends the map."),
    "reply": ("replies", "chars i write.", "ends at a newline."),
    "prompt": ("prompts", "your text.", "starts a reply."),
    "char": ("chars", "one of 45 symbols.", "is fed back in."),
    "quake": ("quakes", "another game.", "has no dolls."),
    "jump": ("jumps", "a move.", "is not in doom."),
    "sum": ("sums", "lines added up.", "sits in a light."),
    "input": ("inputs", "a value given.", "enters by the bus."),
    "output": ("outputs", "a value read.", "leaves by the bus."),
    "monster": ("monsters", "a doom enemy.", "is not a doll."),
    "level": ("levels", "a doom map.", "has an exit."),
}

# {a} is the article of the topic ("a" or "an")
WHAT_IS = ["what is {a} {s}?", "what is the {s}?", "what's {a} {s}?", "define {s}.", "{a} {s}?",
           "{s}?", "explain the {s}.", "describe {a} {s}.", "what are {p}?", "tell me about {p}.",
           "{p}?", "what is {s}?", "the {s}?", "explain {p}.", "i mean the {s}."]
WHAT_DOES = ["what does {a} {s} do?", "what do {p} do?", "how does {a} {s} work?",
             "why {a} {s}?", "what is {a} {s} for?", "and the {s}?", "use of {a} {s}?",
             "what for, {a} {s}?", "job of the {s}?"]

SMALL_TALK = [
    ("hi", "hello! ask me about the map."),
    ("hi!", "hi! ask me about dolls."),
    ("hello", "hi. i live in the map."),
    ("hey", "hello. i am made of dolls."),
    ("who are you?", "i am a net of voodoo dolls."),
    ("what are you?", "a language model in a map."),
    ("are you alive?", "no. i am dolls and doors."),
    ("thanks", "you are welcome."),
    ("thank you", "you are welcome."),
    ("bye", "bye. see you in map01."),
    ("good night", "good night. the dolls rest."),
    ("how are you?", "fine. the dolls are riding."),
    ("where are you?", "in the lane hall of the map."),
    ("what map is this?", "this is map01."),
    ("can you think?", "the dolls think for me."),
    ("are you fast?", "no. one char takes many tics."),
    ("do you dream?", "i dream of voodoo dolls."),
    ("help", "ask me about dolls or doors."),
    ("what can i ask?", "ask about dolls, doors, lanes."),
    ("ok", "ok. ask me more."),
    ("yes", "good. ask me about lanes."),
    ("no", "ok. ask me about doors."),
    ("why?", "because the dolls say so."),
    ("who made you?", "voodoonet built me."),
    ("what is your name?", "i am the voodoo chat."),
    ("say something", "dolls ride, doors gate."),
    ("tell me a joke", "an imp walks into a lane."),
    ("is doom fun?", "yes. doom is fun."),
    ("do you like imps?", "no. imps throw fire."),
    ("what do you know?", "dolls, doors, lanes and doom."),
    ("sing", "la la la, the dolls ride."),
]

FACTS = [
    ("how many doors in a lane?", "at most 1000 doors."),
    ("how high can a light go?", "a light goes to 32767."),
    ("how low can a light go?", "a light goes to -32768."),
    ("how many tics a second?", "35 tics a second."),
    ("when was doom made?", "doom came out in 1993."),
    ("how big is a doll?", "a doll is 32 wide, 56 tall."),
    ("how many chars do you know?", "45 chars."),
    ("how long is the context?", "48 chars."),
    ("how fast do dolls ride?", "112 units a tic."),
    ("how far can a doll step?", "24 units up."),
    ("how wide is a lane?", "a lane is 48 wide."),
    ("how many experts?", "a few experts."),
    ("how many layers?", "2 layers."),
    ("what year is doom?", "1993."),
    ("how many maps in doom?", "27 maps in doom 1."),
]


def _numbers() -> list[tuple[str, str]]:
    """Small sums and counts, so every digit appears in questions and answers."""
    out = [(f"what is {a} plus {b}?", f"{a} plus {b} is {a + b}.")
           for a in range(1, 10) for b in range(1, 10) if a + b <= 12]
    out += [(f"count to {n}.", " ".join(str(k) for k in range(1, n + 1)) + ".")
            for n in range(2, 10)]
    out += [(f"what comes after {n}?", f"{n + 1} comes after {n}.") for n in range(0, 9)]
    return out


def exchanges() -> list[tuple[str, str]]:
    """Every (question, answer) of the corpus, in a fixed order (no newlines inside)."""
    out = []
    for s, (p, is_, does) in TOPICS.items():
        a = "an" if s[0] in "aeiou" else "a"
        sub = {"s": s, "p": p, "a": a}
        out += [(t.format(**sub), f"{p}: {is_}" if "{p}" in t else f"{a} {s} is {is_}")
                for t in WHAT_IS]
        out += [(t.format(**sub), f"{a} {s} {does}") for t in WHAT_DOES]
    out += SMALL_TALK + FACTS + _numbers()
    return [(q, a) for q, a in out if len(q) + len(a) + 2 <= CONTEXT]


def split() -> tuple[list[str], list[str]]:
    """(training, held-out) exchange texts "question\\nanswer\\n": every 8th exchange of
    the fixed order is held out (so each template and topic is seen in training, but
    some of their pairs only in the held-out text)."""
    texts = [f"{q}\n{a}\n" for q, a in exchanges()]
    for t in texts:
        bad = sorted(set(t) - set(VOCAB))
        if bad:
            raise ValueError(f"corpus text {t!r} uses characters outside the vocabulary: {bad}")
    return ([t for i, t in enumerate(texts) if i % 8 != 5],
            [t for i, t in enumerate(texts) if i % 8 == 5])


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
