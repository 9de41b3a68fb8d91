#!/usr/bin/env python3
"""The chat model in figures (issue 21, docs/chat.md): accuracy, replies, speed, resources.

    python bench/chat.py                 # every figure; the 20 prompts' replies in the engine
    python bench/chat.py --engine 2      # only the first 2 prompts in the engine (slow: a
                                         # step is ~1,300 tics of ViZDoom)
    python bench/chat.py --workers 2     # engines at once (default 2, one per core here)
    python bench/chat.py --sizes         # the configurations' maps: dolls, doors, tiles
    python bench/chat.py --config large --engine 3   # the d-16 model over its maps

Prints, for the checked-in model (models/data/chat_chat.pt, circuits/chat.dnet):
next-character accuracy of the float and the integer forward on the held-out exchanges and
their agreement; the replies to 20 held-out questions, one per topic (greedy, the
repetition penalty), from the integer forward, with how many are made only of corpus words
and how many are the corpus's answer; the same 20 prompts
through the torch float forward, the torch integer forward and the NumPy reference of the
netlist (dsl.reference), each in ms per character and as a ratio to the torch float
forward measured in this run; then the engine's runs (every step compared, `==`), tics
per character and characters per second (wall, this machine) and the map's dolls, lines,
lights, maps beside the micro:bit model's 108 KB. With `--config large`, the same for the
d-16 model (circuits/chat_large.dnet), its prompts run over its maps one after the other.
"""
from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import torch  # noqa: E402

from models import chat_corpus  # noqa: E402
from models.chat_lm import generate  # noqa: E402

MICROBIT_BYTES = 108 * 1024   # the micro:bit chat model's budget (issue 21)


def prompts(n: int = 20) -> list[str]:
    """n held-out questions spread over the topics: the first of each topic (by the order
    of its answer), then the second of each, ..."""
    by_answer: dict[str, list[str]] = {}
    for ex in chat_corpus.load("heldout"):
        q, a = ex.split("\n")[:2]
        if len(q) <= 30:
            by_answer.setdefault(a, []).append(q)
    rounds = max(map(len, by_answer.values()), default=0)
    spread = [qs[k] for k in range(rounds) for qs in by_answer.values() if k < len(qs)]
    return spread[:n]


def corpus_words() -> set[str]:
    text = " ".join(chat_corpus.load("train"))
    return set(re.findall(r"[a-z0-9']+", text))


def only_words(reply: str, words: set[str]) -> bool:
    got = re.findall(r"[a-z0-9']+", reply)
    return bool(got) and all(w in words for w in got)


def timed(fn, items) -> tuple[list, float]:
    t0 = time.perf_counter()
    out = [fn(p) for p in items]
    return out, time.perf_counter() - t0


def reference_reply(net, model, prompt: str) -> list[int]:
    """The netlist's NumPy reference, run step by step as the map runs (dsl.sequence)."""
    from dsl.sequence import reference_run
    from demos.chat import prompt_rows

    res, steps = reference_run(net, prompt_rows(net, prompt, None, model.cfg))
    iy = [net.nodes[o].name for o in net.outputs].index("y")
    return [int(res.value[0, t, net.outputs[iy]]) for t in range(steps)]


def resources(net) -> list[tuple[str, str]]:
    weights = sum(len(n.weights) + 1 for n in net.nodes if not n.is_input)
    tables = sum(len(getattr(n.gate, "table", ())) for n in net.nodes)
    uniq_tables = len({getattr(n.gate, "table", None) for n in net.nodes} - {None})
    state = sum(1 for n in net.nodes if n.is_prev)
    return [("weights + biases (connections)", f"{weights:,}"),
            ("table entries (all lookups)", f"{tables:,} ({uniq_tables} distinct tables)"),
            ("state kept between steps (prev nodes)", f"{state}"),
            ("micro:bit model", f"{MICROBIT_BYTES:,} bytes")]


def sizes() -> None:
    """Every configuration of models/chat_train.py (the trained weights where checked in,
    else seeded random ones kept within lights): the map's census and how many maps
    (tiles, mapgen/tiles.plan_tiles) the recurrent netlist takes."""
    from dataclasses import replace

    from mapgen.tiles import plan_tiles
    from demos.chat_census import census
    from models.chat_dnet import netlist
    from models.chat_lm import ChatLM
    from models.chat_train import CONFIGS, load, weights_path

    print("config     d  heads experts  trained   dolls   doors   lines(census)  levels  maps")
    rows = []
    for name, cfg in CONFIGS.items():
        trained = os.path.exists(weights_path(name)) and load(name).cfg == cfg
        if trained:
            model = load(name)
        else:
            model = ChatLM(replace(cfg), 0)
            model.keep_in_lights()
        t0 = time.perf_counter()
        c = census(netlist(model, name, recurrent=False))["total"]
        net = netlist(model, name)
        tiles = plan_tiles(net)
        print(f"{name:9} {cfg.d_model:3} {cfg.heads:5} {cfg.experts:7}  {str(trained):7} "
              f"{c['dolls']:7,} {c['doors']:7,} {c['lines']:13,}  {c['levels']:6}  "
              f"{len(tiles):4}   ({time.perf_counter() - t0:.0f} s)", flush=True)
        rows.append((name, model, dict(resources(net))))
    print(f"\nbeside the micro:bit model ({MICROBIT_BYTES:,} bytes: int8 weights, d 40, 3 "
          f"experts):")
    print(f"{'config':9} {'parameters':>10} {'weight bytes':>12}  {'weights+biases':>14}  "
          f"{'table entries':>24}  {'kept values':>11}")
    for name, model, r in rows:
        n = sum(p.numel() for p in model.parameters())
        print(f"{name:9} {n:10,} {weight_bytes(model):12,}  "
              f"{r['weights + biases (connections)']:>14}  "
              f"{r['table entries (all lookups)']:>24}  "
              f"{r['state kept between steps (prev nodes)']:>11}")


def weight_bytes(model) -> int:
    """The bytes of the model's integer weights, each in the fewest whole bytes that hold
    its tensor's range (int8 where it fits, as the micro:bit model keeps its weights)."""
    total = 0
    for p in model.parameters():
        m = int(p.detach().abs().round().max()) if p.numel() else 0
        total += p.numel() * (1 if m < 128 else 2 if m < 32768 else 4)
    return total


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--config", choices=("chat", "large"), default="chat",
                   help="chat: the one-map model (default); large: d 16 over several maps")
    p.add_argument("--engine", type=int, default=20, help="prompts to run in the engine")
    p.add_argument("--prompts", type=int, default=20)
    p.add_argument("--workers", type=int, default=2, help="engines at once (default 2)")
    p.add_argument("--sizes", action="store_true", help="only the configurations' sizes")
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    if args.sizes:
        sizes()
        return 0
    from demos.chat import dnet_path, load_model, load_net

    model = load_model(args.config)
    net = load_net(dnet_path(args.config), args.config)
    qs, words, base = model_figures(model, net, args.prompts)
    with tempfile.TemporaryDirectory() as tmp:
        if args.config == "chat":
            loaded = map_figures(model, net, tmp)
            if args.engine:
                engine_runs(loaded.path, qs[:args.engine], args.workers, base, words)
        else:
            loaded = tiled_figures(net, model.cfg, tmp, args.config)
            if args.engine:
                tiled_runs(loaded, model.cfg, qs[:args.engine], base, words)
    return 0


def model_figures(model, net, n: int) -> tuple[list[str], set[str], float]:
    """Held-out accuracy; the prompts' replies from the torch float and integer forwards and
    the netlist's NumPy reference, timed per character. Returns the prompts, the corpus's
    words and the float forward's seconds per character (the baseline of every ratio)."""
    from models.chat_train import evaluate

    rep = evaluate(model, chat_corpus.load("heldout"))
    print(f"held-out next-character accuracy: float {rep.float_acc:.2%}, integer "
          f"{rep.int_acc:.2%}; float/integer agreement {rep.agreement:.2%} "
          f"({rep.chars} characters)")
    qs = prompts(n)
    words = corpus_words()
    with torch.no_grad():
        floats, t_float = timed(lambda q: generate(model, q, mode="float"), qs)
        ints, t_int = timed(lambda q: generate(model, q), qs)
    refs, t_ref = timed(lambda q: reference_reply(net, model, q), qs)
    steps = sum(r.steps for r in ints)
    agree = sum(chat_corpus.decode(ys[len(q):]).split("\n")[0] == r.text
                for q, ys, r in zip(qs, refs, ints))
    answers = dict(ex.split("\n")[:2] for ex in chat_corpus.load("heldout"))
    print(f"\n{len(qs)} prompts, greedy: netlist reference == integer forward on {agree}/"
          f"{len(qs)}; replies of corpus words only: "
          f"{sum(only_words(r.text, words) for r in ints)}/{len(qs)}; the held-out answer "
          f"itself: {sum(r.text == answers.get(q) for q, r in zip(qs, ints))}/{len(qs)}")
    for q, r, f in zip(qs, ints, floats):
        print(f"  {q!r:34} -> {r.text!r:30} (float: {f.text!r}; corpus: {answers.get(q)!r})")
    base = t_float / steps
    print(f"\nper character ({steps} steps): torch float {1e3 * base:.2f} ms (1.00), torch "
          f"integer {1e3 * t_int / steps:.2f} ms ({t_int / t_float:.2f}x), NumPy reference "
          f"of the netlist {1e3 * t_ref / steps:.2f} ms ({t_ref / t_float:.2f}x)")
    return qs, words, base


def map_figures(model, net, tmp: str):
    """The one map: built, its census per part and its resources beside the micro:bit's."""
    from demos.chat import build
    from demos.chat_census import census
    from models.chat_dnet import netlist

    c = census(netlist(model, "chat", recurrent=False))
    t0 = time.perf_counter()
    loaded = build(net, os.path.join(tmp, "chat.wad"))
    t_build = time.perf_counter() - t0
    info = loaded.infos[0]
    print(f"\nthe map: 1 map, {info['inference_tics']} tics per step, built in "
          f"{t_build:.0f} s; dolls {c['total']['dolls']:,}, doors {c['total']['doors']:,}, "
          f"weighted lines (census) {c['total']['lines']:,}, levels {c['total']['levels']}")
    for k, v in c.items():
        if k != "total":
            print(f"  {k:40} dolls {v['dolls']:5}  doors {v['doors']:6}  lines "
                  f"{v['lines']:7}")
    for k, v in resources(net):
        print(f"  {k:40} {v}")
    return loaded


def tiled_figures(net, cfg, tmp: str, config: str):
    """The maps of a tiled configuration: built, their tics per step and resources."""
    from demos.chat import build_tiled

    t0 = time.perf_counter()
    loaded = build_tiled(net, os.path.join(tmp, f"chat_{config}.wad"), f"chat {config}", cfg)
    per = [info["inference_tics"] for info in loaded.infos]
    print(f"\nthe maps: {len(per)}, {sum(per):,} tics per step ({' + '.join(map(str, per))}),"
          f" built in {time.perf_counter() - t0:.0f} s")
    for k, v in resources(net):
        print(f"  {k:40} {v}")
    return loaded


def tiled_runs(loaded, cfg, qs: list[str], base: float, words: set[str]) -> None:
    """The prompts over the maps of a tiled WAD, one after the other (each map in its own
    engine, the maps streaming within a step), every step compared with the reference."""
    from demos.chat import run_chat_tiled
    from engine.runner import MapRunner
    from engine.tiled import map_name

    exact = chars = tics = worded = 0
    secs = 0.0
    runners = []
    try:
        for k, info in enumerate(loaded.infos):
            runners.append(MapRunner(loaded.path, info, map_name(k)))
        for q in qs:
            r = run_chat_tiled(loaded, cfg, q, None, runners)
            exact += r.tokens.endswith("EXACT")
            worded += only_words(r.reply, words)
            chars, tics, secs = chars + r.steps, tics + r.tics, secs + r.seconds
            print(f"  engine {r.prompt!r}: {r.reply!r}  {r.tokens}  ({r.seconds:.0f} s)",
                  flush=True)
    finally:
        for r in runners:
            r.close()
    print(f"\nengine: {exact}/{len(qs)} prompts EXACT over {len(loaded.infos)} maps, "
          f"{worded}/{len(qs)} replies of corpus words only; {tics / chars:.0f} tics per "
          f"character (every map's), {chars / secs:.3f} characters per second "
          f"({1e3 * secs / chars:.0f} ms, {secs / chars / base:.0f}x the torch float forward)")


def _engine_worker(path: str, qs: list[str], out) -> None:
    """One engine (a ViZDoom process on the map) running its share of the prompts."""
    from demos.chat import load_model, run_chat
    from engine.runner import MapRunner
    from mapgen.compile import load_wad

    torch.set_num_threads(1)
    try:
        loaded = load_wad(path)
        cfg = load_model().cfg
        with MapRunner(loaded.path, loaded.infos[0]) as runner:
            for q in qs:
                out.put(run_chat(loaded, cfg, q, None, False, runner))
    except Exception as e:  # noqa: BLE001 -- the parent waits on the queue: tell it
        out.put(RuntimeError(f"engine worker ({qs}): {type(e).__name__}: {e}"))


def engine_runs(path: str, qs: list[str], workers: int, base: float, words: set[str]) -> None:
    """The prompts in the engine, over `workers` engines at once (each prompt's every step
    compared with the reference, `==`); characters per second are per engine (each
    prompt's own wall time), the total wall time beside them."""
    import multiprocessing as mp

    exact = chars = tics = worded = 0
    secs = 0.0
    t0 = time.perf_counter()
    ctx = mp.get_context("fork")
    out = ctx.Queue()
    n = max(1, min(workers, len(qs)))
    procs = [ctx.Process(target=_engine_worker, args=(path, qs[k::n], out)) for k in range(n)]
    for p in procs:
        p.start()
    try:
        for _ in qs:
            r = out.get()
            if isinstance(r, Exception):
                raise r
            exact += r.tokens.endswith("EXACT")
            worded += only_words(r.reply, words)
            chars, tics, secs = chars + r.steps, tics + r.tics, secs + r.seconds
            print(f"  engine {r.prompt!r}: {r.reply!r}  {r.tokens}  ({r.seconds:.0f} s)",
                  flush=True)
    finally:
        for p in procs:
            p.join(timeout=5)
            if p.is_alive():
                p.terminate()
    wall = time.perf_counter() - t0
    print(f"\nengine: {exact}/{len(qs)} prompts EXACT, {worded}/{len(qs)} replies of corpus "
          f"words only; {tics / chars:.0f} tics per character, {chars / secs:.3f} characters "
          f"per second per engine ({1e3 * secs / chars:.0f} ms, {secs / chars / base:.0f}x "
          f"the torch float forward); {wall:.0f} s wall over {n} engines")


if __name__ == "__main__":
    sys.exit(main())
