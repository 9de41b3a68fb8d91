"""Issue 37's differential, kept: random recurrent netlists written from docs/dnet.md
(tests/recurrent_oracle.py: Elman cells, counters ended by done, fed-back generation,
operations on prev values and loops, prev chains, spikes, fixed `steps T`, `steps open`,
edge ranges) must all build, and every written node's value at every step of a run must
equal an interpreter of their text that shares no code with the project; the proven
ranges must hold every value. A few of them also run in the engine with
`build.py run --debug --json`, where every light at every step is compared with the
reference and every output with the interpreter."""
import json
import os

import pytest

import build
from dsl.parser import parse
from dsl.reference import evaluate, stop_step
from recurrent_oracle import interpret, random_netlist

SEEDS = range(300)


def project_run(text: str, rows, seed: int):
    """The project's netlist and reference values of one run, cut where done stops it."""
    net = parse(text, f"r{seed}.dnet")
    res = evaluate(net, [rows])
    return net, res, stop_step(net, res)


@pytest.mark.parametrize("chunk", range(6))
def test_random_recurrent_nets_equal_an_independent_interpreter(chunk):
    for seed in SEEDS[chunk::6]:
        text, rows = random_netlist(seed)
        net, res, steps = project_run(text, rows, seed)
        want = interpret(text, rows)
        assert steps == len(want), (seed, text)
        ids = {n.name: n.id for n in net.nodes}
        for t, vals in enumerate(want):
            got = {e: int(res.value[0, t, ids[e]]) for e in vals}
            assert got == vals, (seed, t, {e: (got[e], v) for e, v in vals.items()
                                           if got[e] != v}, text)
        for n in net.nodes:  # every value of the run within its proven range
            col = res.value[0, :steps, n.id]
            r = net.value_range[n.id]
            assert r.lo <= int(col.min()) and int(col.max()) <= r.hi, (seed, n.name, r, text)


def test_the_generator_writes_what_the_doc_describes():
    """The differential covers what it claims to, over its seeds."""
    texts = [random_netlist(s)[0] for s in SEEDS]
    for needle in ("lines prev(", "done ", "feedback ", "steps open", "spike(", "delay(",
                   "prev(prev(", "max(", "select(", "switch(", "equals(", "argmax(", "xor(",
                   "clamp(", "relu(s=2) = prev(", ": -4..-1", ": 0..0", "init "):
        assert sum(needle in t for t in texts) >= 10, needle
    assert sum(t.split("\n")[1].startswith("steps ") and not t.split("\n")[1].endswith("open")
               for t in texts) >= 50
    assert sum(not t.split("\n")[1].startswith("steps") for t in texts) >= 50


MUTANT_LINES = ["init x1 = 5", "bias o5 = 1", "done x1", "feedback x1 = x1", "steps 65",
                "init h9 = 2", "lines x1 -> o4 all 1", "neuron q : delay(x1, 9999)"]


def mutant(text: str, r) -> str:
    """The text with one line dropped, doubled, its prev nested deeper, a number swapped
    for an edge value, or a statement that may clash inserted."""
    import re

    lines = text.split("\n")
    k = r.randrange(1, len(lines) - 1)
    op = r.randrange(5)
    if op == 0:
        del lines[k]
    elif op == 1:
        lines.insert(r.randrange(1, len(lines)), lines[k])
    elif op == 2:
        lines[k] = lines[k].replace("prev(", "prev(prev(", 1).replace(")", "))", 1)
    elif op == 3 and re.search(r"\d+", lines[k]):
        m = r.choice(list(re.finditer(r"\d+", lines[k])))
        edge = str(r.choice([0, 1, 64, 65, 9999, 10**6]))
        lines[k] = lines[k][:m.start()] + edge + lines[k][m.end():]
    else:
        lines.insert(k, r.choice(MUTANT_LINES))
    return "\n".join(lines)


def test_mutated_netlists_build_or_are_refused_never_crash():
    """One to three mutations of each of 200 random netlists: a netlist (whose JSON form
    loads again, the same) or positioned errors, never an internal error."""
    import random

    from dsl.diagnostics import VoodooError
    from dsl.jsonio import dumps, loads

    built = 0
    for seed in range(200):
        r = random.Random(seed)
        text = random_netlist(seed)[0]
        for _ in range(1 + seed % 3):
            text = mutant(text, r)
        try:
            net = parse(text, "m.dnet")
        except VoodooError as e:
            assert "m.dnet" in str(e)
            continue
        assert dumps(loads(dumps(net))) == dumps(net)
        built += 1
    assert built >= 20


# Small nets for the engine (8-21 nodes), between them: fed-back generation, counters ended
# by done, Elman cells, delays, spikes, prev chains, select / max / equals on prev values,
# fixed steps and open runs.
ENGINE_SEEDS = [246, 144, 186, 166, 270, 1, 170, 121, 224, 276, 140, 256]


def test_the_engine_nets_cover_the_forms():
    texts = [random_netlist(s)[0] for s in ENGINE_SEEDS]
    for needle in ("feedback ", "done ", "lines prev(", "delay(", "spike(", "prev(prev(",
                   "select(", "max(", "equals(", "steps open"):
        assert any(needle in t for t in texts), needle


@pytest.mark.parametrize("seed", ENGINE_SEEDS)
def test_random_recurrent_nets_in_the_engine_every_light_at_every_step(seed, tmp_path, capsys):
    """`run --random N --debug --json`: every light at every step equal to the reference
    (first_divergence None), every output equal to the independent interpreter's."""
    from recurrent_oracle import Netlist

    text, rows = random_netlist(seed)
    path = os.path.join(str(tmp_path), f"r{seed}.dnet")
    with open(path, "w") as f:
        f.write(text)
    code = build.main(["run", path, "-o", os.path.join(str(tmp_path), "r.wad"), "--random",
                       str(len(rows)), "--seed", str(seed), "--debug", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["verdict"] == "EXACT", out
    assert [r["first_divergence"] for r in out["results"]] == [None] * len(out["results"])
    # --random draws a fed-back input at the first step only (docs/dnet.md): after it the
    # map feeds it back, and so does the interpreter.
    net = Netlist(text)
    cols = [e for name, _, _, _ in net.inputs for e in net.elements(name)]
    given = [[None if t and c in net.feedback else v for c, v in zip(cols, r["inputs"])]
             for t, r in enumerate(out["results"])]
    want = interpret(text, given)
    assert len(want) == len(out["results"])
    for t, r in enumerate(out["results"]):
        assert r["engine"] == [want[t][o] for o in out["outputs"]], (seed, t, text)
