"""Seeded random netlists, written as .dnet text: test fodder, the `hello` MLP, benchmarks.

Generating text (not IR) means every random network also exercises the parser. Layers are
dense with signed weights (some zero), biases, and a mix of gates: requantised relu with
several s and L, step, lut, identity.
"""
from __future__ import annotations

import random


def mlp_text(seed: int, sizes: list[int], in_range=(0, 3), weight=3, bias=4,
             gates: tuple[str, ...] = ("relu",), name: str | None = None,
             zero_fraction: float = 0.2, out_gate: str = "identity",
             hidden_gate: str | None = None, wide: bool = False) -> str:
    """`wide` draws requantisation divisors up to 60 and lookup tables with long flat runs:
    door thresholds far apart, which the map must climb to with ramps."""
    """A dense MLP: sizes[0] inputs, hidden layers sizes[1:-1], sizes[-1] outputs."""
    rng = random.Random(seed)
    lo, hi = in_range
    out = [f"# random MLP, seed {seed}, sizes {sizes}", f"network {name or f'mlp_{seed}'}", "",
           f"input x[{sizes[0]}] : {lo}..{hi}", ""]
    prev, prev_hi = "x", max(abs(lo), abs(hi))
    for k, n in enumerate(sizes[1:]):
        last = k == len(sizes) - 2
        lname = "o" if last else f"h{k + 1}"
        gate_kind = out_gate if last else rng.choice(gates)
        fan_in = sizes[k]
        reach = max(1, fan_in * weight * prev_hi // 3)
        if hidden_gate is not None and not last:
            gate, value_hi = hidden_gate, 7
        elif gate_kind == "relu":
            s = rng.choice([13, 16, 25, 40, 60] if wide else [1, 2, 3, 4, 5, 8])
            L = rng.randint(1, 7)
            gate, value_hi = f"relu(s={s}, max={L})", L
        elif gate_kind == "step":
            gate, value_hi = f"step(t={rng.randint(-2, max(1, reach // 2))})", 1
        elif gate_kind == "lut":
            dlo = rng.randint(-reach, 0)
            width = rng.randint(2, 9) if not wide else rng.randint(20, 90)
            table = [rng.randint(-3, 5) for _ in range(width)]
            if wide:  # a few values held over long runs
                table = [table[(k // rng.randint(7, 15)) % width] for k in range(width)]
            gate, value_hi = f"lut({dlo}..{dlo + width - 1}, [{', '.join(map(str, table))}])", 5
        else:
            gate, value_hi = "identity", reach
        out.append(f"neuron {lname}[{n}] : {gate}")
        rows = []
        for _ in range(n):
            row = [0 if rng.random() < zero_fraction else rng.randint(-weight, weight)
                   for _ in range(fan_in)]
            rows.append("  [" + ", ".join(f"{w:2d}" for w in row) + "],")
        out.append(f"lines {prev} -> {lname} dense [")
        out.extend(rows)
        out.append("]")
        out.append(f"bias {lname} = [" + ", ".join(str(rng.randint(-bias, bias))
                                                   for _ in range(n)) + "]")
        out.append("")
        prev, prev_hi = lname, value_hi
    out.append("output o")
    return "\n".join(out) + "\n"


def mlp(seed: int, sizes: list[int], **kw):
    from .parser import parse

    return parse(mlp_text(seed, sizes, **kw), f"<random mlp {seed}>")


def spiking_text(seed: int, n_in: int = 2, n_out: int = 3, steps: int = 4, in_range=(0, 3),
                 weight: int = 3, leak: int = 6, reset: int = 7, init: int = 5,
                 threshold: int = 6, name: str | None = None) -> str:
    """One layer of spiking neurons over `steps` time steps, each with its own threshold,
    leak, reset (a value, or 'subtract') and initial membrane drawn up to the given maxima:
    wide leaks and resets above the threshold are where membranes leave the range of their
    inputs."""
    rng = random.Random(seed)
    lo, hi = in_range
    out = [f"# random spiking layer, seed {seed}", f"network {name or f'spk_{seed}'}",
           f"steps {steps}", f"input x[{n_in}] : {lo}..{hi}", ""]
    for k in range(n_out):
        r = "subtract" if rng.random() < 0.25 else rng.randint(0, reset)
        out.append(f"neuron s{k} : spike(threshold={rng.randint(1, threshold)}, "
                   f"leak={rng.randint(0, leak)}, reset={r}, init={rng.randint(0, init)})")
        row = [rng.randint(-weight, weight) for _ in range(n_in)]
        out.append(f"lines x -> s{k} dense [[{', '.join(map(str, row))}]]")
        if rng.random() < 0.5:
            out.append(f"bias s{k} = {rng.randint(-2, 2)}")
    out.append("output " + ", ".join(f"s{k}" for k in range(n_out)))
    return "\n".join(out) + "\n"


def spiking(seed: int, **kw):
    from .parser import parse

    return parse(spiking_text(seed, **kw), f"<random spiking {seed}>")



def _sum(rng: random.Random, sources: list[str], weight: int, bias: int = 3) -> str:
    terms = [f"{rng.choice([-1, 1]) * rng.randint(1, weight)}*{s}" for s in sources
             if rng.random() < 0.7]
    terms.append(str(rng.randint(-bias, bias)))
    return " + ".join(terms).replace("+ -", "- ")


def recurrent_text(seed: int, n_in: int = 2, n_hidden: int = 3, in_range=(0, 3),
                   weight: int = 3, feedback: bool = False, done: bool = False,
                   name: str | None = None) -> str:
    """A random recurrent cell, open-ended: h = gate(W x + U prev(h) + b) with relu (with a
    max), step and lut gates mixed, random inits, an identity readout o = V h + c, and
    optionally an input fed back from h0 and a done node (a step over h1)."""
    rng = random.Random(seed)
    lo, hi = in_range
    out = [f"# random recurrent cell, seed {seed}", f"network {name or f'rnn_{seed}'}",
           "steps open", f"input x[{n_in}] : {lo}..{hi}"]
    gates, tops = [], []
    for _ in range(n_hidden):
        kind = rng.choice(["relu", "relu", "step", "lut"])
        if kind == "relu":
            tops.append(rng.randint(1, 7))
            gates.append(f"relu(s={rng.choice([1, 2, 3, 4])}, max={tops[-1]})")
        elif kind == "step":
            tops.append(1)
            gates.append(f"step(t={rng.randint(-2, 6)})")
        else:
            dlo, width = rng.randint(-6, 0), rng.randint(3, 9)
            table = [rng.randint(0, 5) for _ in range(width)]
            tops.append(max(table))
            gates.append(f"lut({dlo}..{dlo + width - 1}, [{', '.join(map(str, table))}])")
    sources = [f"x[{i}]" for i in range(n_in)] + [f"prev(h{j})" for j in range(n_hidden)]
    if feedback:
        out += [f"input f : 0..{tops[0]}", "feedback f = h0"]
        sources.append("f")
    sums = [_sum(rng, sources, weight) for _ in gates]
    for k, (gate, text) in enumerate(zip(gates, sums)):
        out.append(f"neuron h{k} : {gate} = {text}")
    for k, top in enumerate(tops):
        init = rng.randint(0, top)
        if init and any(f"prev(h{k})" in t for t in sums):
            out.append(f"init h{k} = {init}")
    out.append(f"neuron o : identity = {_sum(rng, [f'h{k}' for k in range(n_hidden)], weight)}")
    outs = ["o"] + [f"h{k}" for k in range(n_hidden)]
    if done:
        out.append(f"neuron stop : step(t={rng.randint(1, max(1, tops[1 % n_hidden]))}) = "
                   f"h{1 % n_hidden}")
        out.append("done stop")
    out.append("output " + ", ".join(outs))
    return "\n".join(out) + "\n"


def recurrent(seed: int, **kw):
    from .parser import parse

    return parse(recurrent_text(seed, **kw), f"<random rnn {seed}>")
