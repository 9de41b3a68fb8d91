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

CIRCUITS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                        "circuits")
CHAT_DNET = os.path.join(CIRCUITS, "chat.dnet")
# The configurations a run can take (models/chat_train.CONFIGS): `chat` is one map with the
# player's room; the larger ones are tiled over several maps (mapgen/tiles.py).
ONE_MAP = "chat"
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


def dnet_path(config: str = ONE_MAP) -> str | None:
    """The checked-in netlist of a configuration (models.chat_train.NETLISTS), or None: the
    micro:bit size's would be megabytes of text, it is made from its weights when wanted."""
    from models.chat_train import NETLISTS

    return NETLISTS.get(config)


def source_path(config: str = ONE_MAP) -> str:
    """The file a configuration's WAD is made from: its netlist, else its weights."""
    from models.chat_train import weights_path

    return dnet_path(config) or weights_path(config)


def load_model(config: str = ONE_MAP):
    from models.chat_train import load

    return load(config)


def load_net(path: str = CHAT_DNET, config: str = ONE_MAP):
    from dsl import load

    if not os.path.exists(path):
        raise VoodooError(f"{path}: the chat netlist is not checked in\n    hint: python -m "
                          f"models.chat_train --config {config} --retrain --write")
    return load(path)


def config_net(model, config: str):
    """The netlist of a configuration: the checked-in one, else made from the model's
    weights (said first: the micro:bit size's takes minutes)."""
    path = dnet_path(config)
    if path:
        return load_net(path, config)
    from models.chat_dnet import netlist

    root = os.path.dirname(CIRCUITS)
    print(f"chat_{config}: making the netlist from {os.path.relpath(source_path(config), root)}",
          flush=True)
    return netlist(model, f"chat_{config}")


def build(net, out: str, room: bool = True):
    """Compile the netlist into one map (with the player's room around the hall: the
    keyboard on the floor, prompt pedals and the letter wall, demos/chat_map.py) and write
    the WAD; returns its loaded form (mapgen.compile.load_wad)."""
    return build_kept(net, out, room)[0]


def build_kept(net, out: str, room: bool = True):
    """`build`, and what the build kept of the compiled map beside the WAD: `lights`, the
    tags of the machine's lights, and `read`, each readable light's (tag, label) in the
    order of the read scripts (a probe of every light, engine/gzdoom.py, reads these)."""
    from mapgen import wadcache
    from mapgen.compile import compile_netlist, load_wad, write_wad

    def make(path: str) -> dict:
        if room:
            from demos.chat_map import build as build_room
            m = build_room(net).compiled
        else:
            m = compile_netlist(net, title="chat")
        write_wad(path, [m], net, None)
        return {"lights": [light.tag for light in m.circuit.lights],
                "read": [[tag, label] for batch in m.schedule.read_batches
                         for tag, label in batch]}

    # the same map for every test that asks (mapgen/wadcache.py: on when tests run)
    kept = wadcache.cached(wadcache.key_of(net, chat_room=room), make, out)
    return load_wad(out), kept


# The greedy runs whose values place the two-sided lanes' pivots (calibrated_pivots), and
# the crossings a step a pivot must save on them to be worth its doll (a crossing costs
# about 30 us of engine CPU, a resting doll 0.3 us a tic: docs/physics.md).
CALIBRATION = ("hi", "what is a door?", "who are you?", "what is a map?")
MIN_SAVED = 2


def calibrated_pivots(net, cfg) -> dict[str, int]:
    """Where a lookup's or prev node's lane turns two-sided (mapgen.circuit.pivot_of): the
    median of the values its doors are set to over the greedy runs of CALIBRATION (the
    integer reference, each to where it ends), where that saves MIN_SAVED crossings a step
    on them. A pivot moves crossings, never a value: a prompt unlike these costs time,
    not exactness. By lowered node name."""
    import numpy as np

    from dsl.ir import Lut
    from dsl.lower import lower_products
    from dsl.sequence import reference_run
    from mapgen.circuit import plane_range, staircase

    low = lower_products(net)
    ids = [n.id for n in low.nodes if n.is_prev or isinstance(n.gate, Lut)]
    seen = []
    for p in CALIBRATION:
        res, steps = reference_run(low, prompt_rows(net, p, None, cfg))
        seen.append(np.stack([(res.value if low.nodes[i].is_prev else res.acc)[0, :steps, i]
                              for i in ids], 1))
    planes = np.concatenate(seen)
    out = {}
    for i, col in zip(ids, planes.T):
        n, p = low.nodes[i], int(np.floor(np.median(col)))
        ths = [t for t, _ in staircase(n.gate, *plane_range(low, n))[1]]
        k = np.searchsorted(ths, col, side="right")
        if (k.sum() - np.abs(k - np.searchsorted(ths, p, side="right")).sum()) \
                >= MIN_SAVED * len(col):
            out[n.name] = p
    return out


def build_tiled(net, out: str, title: str, cfg=None, late: bool = True):
    """A netlist too big for one map over several (mapgen/tiles.py: each map keeps its own
    state; Python hands values between maps by name); returns the loaded WAD. With the
    model's `cfg`, lookups and prev nodes get two-sided lanes at calibrated pivots
    (calibrated_pivots: fewer door crossings a step, a doll more each). `late`: input lanes
    ride as late as their readers allow, so a map starts its step before the values it
    reads last are handed on (compile_tiles' late_inputs; False: every input at the
    start, bench/speed.py's old way)."""
    from mapgen import wadcache
    from mapgen.compile import load_wad, write_wad
    from mapgen.tiles import compile_tiles, plan_tiles

    pivots = calibrated_pivots(net, cfg) if cfg is not None else False

    def make(path: str) -> dict:
        tiles = plan_tiles(net, pivots=pivots)
        print(f"{out}: {len(tiles)} maps, compiling (a few minutes a map on one core)",
              flush=True)
        write_wad(path, compile_tiles(tiles, title, lean=True, pivots=pivots,
                                      late_inputs=late), net, tiles)
        return {}

    # the same maps for every run that asks (mapgen/wadcache.py: tests, bench/speed.py)
    wadcache.cached(wadcache.key_of(net, tiled=title, pivots=pivots, late=late), make, out)
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
    # a tiled run: seconds until the last step's outputs were out of the last map (the
    # comparison with the reference comes after)
    answered: float | None = None

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



def run_chat_tiled(loaded, cfg, prompt: str, seed: int | None = None, runners=None,
                   max_steps: int | None = None) -> ChatRun:
    """One prompt through the maps of a tiled WAD (engine.tiled.run_sequence), every map
    in its own engine keeping its own state: at every step the outputs and every value
    that crosses maps are compared with the reference. `runners`: open runners, one per
    map, reused across prompts."""
    from tqdm import tqdm

    from engine.tiled import run_sequence

    net = loaded.net
    rows = prompt_rows(net, prompt, seed, cfg)[:max_steps]
    tics0 = sum(r.tics for r in runners) if runners else 0
    t0 = time.perf_counter()
    out_at = [t0]

    def progress(t: int) -> None:
        out_at[0] = time.perf_counter()
        bar.update(1)

    with tqdm(total=len(rows), desc=prompt[:20], unit="step", leave=False) as bar:
        res = run_sequence(loaded.path, loaded.infos, loaded.tiles, net, rows,
                           runners=runners, progress=progress)
    secs = time.perf_counter() - t0
    tics = sum(r.tics for r in runners) - tics0 if runners else 0
    iy = [net.nodes[o].name for o in net.outputs].index("y")
    ys = [r.engine[iy] for r in res[len(prompt):]]
    text = decode(ys).split("\n")[0]
    return ChatRun(prompt, text, len(res), sum(r.exact for r in res), secs, tics,
                   [r.first_divergence for r in res if r.first_divergence], out_at[0] - t0)


def main(prompts: list[str], seed: int | None = None, debug: bool = False,
         output: str | None = None, dnet: str | None = None, max_steps: int | None = None,
         config: str = ONE_MAP) -> int:
    """`build.py chat`: build the WAD `output` (the command resolves and checks its path;
    default wads/chat.wad, or wads/chat_<config>.wad for a tiled configuration); run each
    prompt; 0 if every step of every prompt is EXACT, 4 on a mismatch (as `run`)."""
    from mapgen.compile import WADS

    if seed is not None and not 0 <= seed < 2 ** 63:
        raise VoodooError(f"--seed {seed}: give a seed of 0 or more")
    if max_steps is not None and max_steps < 1:
        raise VoodooError(f"--max-steps {max_steps}: give at least 1 step")
    tiled = config != ONE_MAP
    if tiled and debug:
        raise VoodooError(f"--debug reads every light of one map; over tiles (--config "
                          f"{config}) every value that crosses maps is compared already")
    out = output or os.path.join(WADS, "chat.wad" if not tiled else f"chat_{config}.wad")
    model = load_model(config)
    cfg = model.cfg
    for p in prompts:
        check_prompt(p, cfg)
    net = load_net(dnet, config) if dnet else config_net(model, config)
    if tiled:
        return _main_tiled(net, out, cfg, prompts, seed, max_steps, config)
    loaded = build(net, out)
    info = loaded.infos[0]
    print(f"{out}: 1 map, {info['inference_tics']} tics per step")
    if not prompts:
        return 0
    from engine.runner import MapRunner

    bad = 0
    with MapRunner(loaded.path, info) as runner:
        for p in prompts:
            print(f"> {p}", flush=True)
            bad |= _report(run_chat(loaded, cfg, p, seed, debug, runner, max_steps))
    return bad


def _report(r: ChatRun) -> int:
    """Print a run's reply and its `tokens N/N EXACT` line; 4 on a mismatch, else 0."""
    print(r.reply)
    for d in r.divergences[:3]:
        print(f"  first divergence: {d}")
    print(f"{r.tokens}  ({r.tics} tics, {r.seconds:.1f} s)", flush=True)
    return 4 if r.tokens.endswith("MISMATCH") else 0


def _main_tiled(net, out: str, cfg, prompts, seed, max_steps, config: str) -> int:
    from engine.runner import MapRunner
    from engine.tiled import map_name

    loaded = build_tiled(net, out, f"chat {config}", cfg)
    per = [info["inference_tics"] for info in loaded.infos]
    print(f"{out}: {len(per)} maps, {sum(per)} tics per step ({' + '.join(map(str, per))})")
    if not prompts:
        return 0
    runners: list = []
    try:
        for k, info in enumerate(loaded.infos):   # each map loads once, for every prompt
            runners.append(MapRunner(loaded.path, info, map_name(k)))
        bad = 0
        for p in prompts:
            print(f"> {p}", flush=True)
            bad |= _report(run_chat_tiled(loaded, cfg, p, seed, runners, max_steps))
        return bad
    finally:
        for r in runners:
            r.close()
