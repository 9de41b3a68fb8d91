"""The chat demo (issue 21, docs/chat.md): the checked-in chat model's recurrent netlist
built into one map, a prompt typed in step by step, the reply chosen, fed back and ended
by the network itself, every step compared with the reference.

Owns the chat run: the rows of a run (`prompt_rows`: the prompt's characters, then the
fed-back character; the seeded Gumbel noise as data on every step), building the WAD
(`build`), running it in the engine (`run_chat`) and the report `tokens N/N EXACT`. The
model is models/chat_lm.py, its netlist models/chat_dnet.py, the map room around it
demos/chat_map.py.

    python build.py chat --prompt "what is a doll?" [--seed N] [--debug]
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass, field

from dsl.diagnostics import VoodooError
from models.chat_corpus import decode, encode

CHAT_DNET = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                         "circuits", "chat.dnet")
FED = None  # dsl.sequence.FED: the input takes its node's value of the step before


def prompt_rows(net, prompt: str, seed: int | None, cfg) -> list[list[int | None]]:
    """One row per step of the run, in the netlist's input order: the character c (the
    prompt's, its newline, then FED: the network's own choice y fed back) and the noise
    (all 0 for greedy; seeded Gumbel noise otherwise, models.chat_lm.noise)."""
    from models.chat_lm import noise

    check_prompt(prompt, cfg)
    ids = encode(prompt + "\n")
    nz = noise(cfg, seed, cfg.context)
    names = [net.nodes[i].name for i in net.inputs]
    rows = []
    for t in range(cfg.context):
        vals = {"c": ids[t] if t < len(ids) else FED,
                **{f"noise[{k}]": int(v) for k, v in enumerate(nz[t])}}
        rows.append([vals[n] for n in names])
    return rows


def check_prompt(prompt: str, cfg) -> None:
    from models.chat_corpus import VOCAB

    PUNCTUATION = "".join(c for c in VOCAB if not c.isalnum() and c not in " \n")
    bad = sorted({ch for ch in prompt if ch not in VOCAB or ch == "\n"})
    if bad:
        raise VoodooError(f"--prompt {prompt!r}: {', '.join(map(repr, bad))} not in the "
                          f"vocabulary (lower-case letters, digits, space and {PUNCTUATION})")
    if len(prompt) + 2 > cfg.context:
        raise VoodooError(f"--prompt of {len(prompt)} characters: at most {cfg.context - 2} "
                          f"fit the context of {cfg.context} with a reply")
    if not prompt:
        raise VoodooError("--prompt '': give a question")


def load_model():
    from models.chat_train import load

    return load("chat")


def load_net(path: str = CHAT_DNET):
    from dsl import load

    if not os.path.exists(path):
        raise VoodooError(f"{path}: the chat netlist is not checked in\n    hint: python -m "
                          "models.chat_train --config chat --retrain --write")
    return load(path)


def build(net, out: str, room: bool = True):
    """Compile the netlist into one map (with the player's room around the hall: prompt
    pedals and the letter wall, demos/chat_map.py) and write the WAD; returns its loaded
    form (mapgen.compile.load_wad)."""
    from mapgen.compile import compile_netlist, load_wad, write_wad

    if room:
        from demos.chat_map import build as build_room
        m = build_room(net).compiled
    else:
        m = compile_netlist(net, title="chat")
    write_wad(out, [m], net, None)
    return load_wad(out)


@dataclass
class ChatRun:
    prompt: str
    reply: str
    steps: int
    exact: int
    seconds: float
    tics: int
    divergences: list = field(default_factory=list)

    @property
    def tokens(self) -> str:
        ok = "EXACT" if self.exact == self.steps and not self.divergences else "MISMATCH"
        return f"tokens {self.exact}/{self.steps} {ok}"


def run_chat(loaded, cfg, prompt: str, seed: int | None = None, debug: bool = False,
             runner=None, max_steps: int | None = None) -> ChatRun:
    """One prompt in the map: every step's outputs (y, done, the one-hot o) compared with
    the reference; with `debug` every light (every state element) too. `runner` (an open
    engine.runner.MapRunner) is reused across prompts; `max_steps` cuts the run short (a
    test's sample of its first steps)."""
    from dsl.lower import lower_products
    from engine.runner import MapRunner, compare_sequence

    net = loaded.net
    rows = prompt_rows(net, prompt, seed, cfg)[:max_steps]
    lowered = lower_products(net)
    t0 = time.perf_counter()
    own = runner is None
    runner = runner or MapRunner(loaded.path, loaded.infos[0])
    try:
        tics0 = runner.tics
        res = compare_sequence(runner, net, lowered, rows, debug=debug)
        tics = runner.tics - tics0
    finally:
        if own:
            runner.close()
    secs = time.perf_counter() - t0
    iy = [net.nodes[o].name for o in net.outputs].index("y")
    n_prompt = len(prompt) + 1
    ys = [r.engine[iy] for r in res[n_prompt - 1:]]
    text = decode(ys).split("\n")[0]
    return ChatRun(prompt, text, len(res), sum(r.exact for r in res), secs, tics,
                   [r.first_divergence for r in res if r.first_divergence])



def main(prompts: list[str], seed: int | None = None, debug: bool = False,
         output: str | None = None, dnet: str = CHAT_DNET, max_steps: int | None = None) -> int:
    """`build.py chat`: build the WAD `output` (the command resolves and checks its path;
    default wads/chat.wad); run each prompt; 0 if every step of every prompt is EXACT, 4 on
    a mismatch (as `run`)."""
    from engine.runner import MapRunner
    from mapgen.compile import WADS

    if seed is not None and not 0 <= seed < 2 ** 63:
        raise VoodooError(f"--seed {seed}: give a seed of 0 or more")
    if max_steps is not None and max_steps < 1:
        raise VoodooError(f"--max-steps {max_steps}: give at least 1 step")
    out = output or os.path.join(WADS, "chat.wad")
    cfg = load_model().cfg
    for p in prompts:
        check_prompt(p, cfg)
    net = load_net(dnet)
    loaded = build(net, out)
    info = loaded.infos[0]
    print(f"{out}: 1 map, {info['inference_tics']} tics per step")
    if not prompts:
        return 0
    bad = 0
    with MapRunner(loaded.path, info) as runner:
        for p in prompts:
            r = run_chat(loaded, cfg, p, seed, debug, runner, max_steps)
            print(f"> {p}\n{r.reply}")
            for d in r.divergences[:3]:
                print(f"  first divergence: {d}")
            print(f"{r.tokens}  ({r.tics} tics, {r.seconds:.1f} s)")
            bad += r.tokens.endswith("MISMATCH")
    return 4 if bad else 0
