"""Runs in time: the inputs of every step of a multi-step netlist, and where a run stops.

A multi-step netlist (`steps T` or `steps open`) runs one sequence: a row of inputs per
step. Rows may be fewer than the steps asked for when every input is fed back (`feedback
x = y`): from the first step without a row, each fed-back input takes its node's value
of the step before (None in a row). A run ends after its last step, or after the first
step at which the `done` node is 1. `eval`, `run` and the engine runner all plan their
steps here, so the reference and the engine always run the same sequence.
"""
from __future__ import annotations

from .diagnostics import VoodooError
from .ir import Netlist

FED = None  # a fed-back input's entry in a row


def plan_steps(net: Netlist, rows: list[list[int]], steps: int | None = None,
               what: str = "--input") -> list[list[int | None]]:
    """The input row of every step of one run of `net`: the given rows, then (up to
    `steps`) rows whose fed-back inputs are FED. Refuses what cannot run, naming why."""
    limit = net.steps
    n = steps if steps is not None else (len(rows) if net.open else net.steps)
    if n is not None and not 1 <= n <= limit:
        raise VoodooError(f"--steps {n}: {net.source} runs at most {limit} steps"
                          if net.open or steps is not None else
                          f"{net.source}: give at least one step")
    if len(rows) > n:
        raise VoodooError(f"{len(rows)} {what} rows for {n} steps: give one row per step "
                          "(or more --steps)")
    if not rows and net.inputs:
        raise VoodooError(f"{net.source}: give the first step's inputs ({what})")
    fed = [nid in net.feedback for nid in net.inputs]
    if len(rows) < n and not all(fed):
        names = ", ".join(net.nodes[i].name for i, f in zip(net.inputs, fed) if not f)
        raise VoodooError(f"{net.source} runs {n} steps but {what} gives {len(rows)}, and "
                          f"{names} {'is' if names.count(',') == 0 else 'are'} not fed back"
                          f"\n    hint: give {what} once per step (or --random N)")
    return [list(r) for r in rows] + [[FED] * len(net.inputs) for _ in range(n - len(rows))]


def random_sequence(net: Netlist, n: int, seed: int) -> list[list[int | None]]:
    """n steps of seeded random inputs, range edges first; fed-back inputs are drawn only
    at the first step and fed back after it."""
    import numpy as np

    rng = np.random.default_rng(seed)
    ranges = net.input_ranges()
    rows = []
    for t in range(n):
        row = [lo if t == 0 else hi if t == 1 else int(rng.integers(lo, hi + 1))
               for lo, hi in ranges]
        if t:
            row = [FED if nid in net.feedback else v for nid, v in zip(net.inputs, row)]
        rows.append(row)
    return rows


def reference_run(net: Netlist, seq: list[list[int | None]]):
    """The reference over one planned sequence, cut where the run stops: (Result,
    steps taken)."""
    from .reference import evaluate, stop_step

    res = evaluate(net, [seq])
    return res, stop_step(net, res)


def resolved_inputs(net: Netlist, res, steps: int) -> list[list[int]]:
    """The inputs each step actually took (fed-back ones filled in)."""
    return [[int(res.value[0, t, i]) for i in net.inputs] for t in range(steps)]
