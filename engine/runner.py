"""The engine runner: drive a compiled map in ViZDoom and compare it with the reference.

A `MapRunner` starts the map, waits for it to say it is ready, then per inference sends
the inputs (`puke` of the input scripts), starts the inference script, advances exactly
the predicted number of tics and requires the map's acknowledgement: an inference that
does not finish in its predicted time is an error, not something to wait out. Outputs come
back through USER globals; in debug mode every node's accumulator and value are read back
as well, and the first node (in dependency order) that differs from the reference is named.
`infer_many` runs many independent inferences through the map's pipelined beat (one enters
every beat; docs/throughput.md), each beat acknowledged the same way.
"""
from __future__ import annotations

from dataclasses import dataclass

from dsl.diagnostics import VoodooError
from dsl.ir import Identity, Netlist, Spike

from engine.doom import Engine, EngineError


class MismatchError(VoodooError):
    pass


def input_slots(info: dict, n: int) -> list[list[int]]:
    """The input index of each argument of each input script, for a map of `n` inputs:
    four a script in declaration order, or as the manifest's input_slots say (a map whose
    inputs ride late)."""
    if "input_slots" in info:
        return info["input_slots"]
    return [list(range(4 * k, min(4 * k + 4, n))) for k in range(len(info["input_scripts"]))]


def begin_calls(info: dict, first: bool) -> list[tuple]:
    """The membrane reset's call, when `first` begins a sequence of a map that has one."""
    return [(info["begin_script"],)] if first and info.get("begin_script") else []


def input_calls(info: dict, x: list[int], first: bool = False) -> list[tuple]:
    """The script calls that hand one inference's inputs to the map (four per input
    script), after the membrane reset when `first` begins a sequence. Started in the tic
    of the inference or beat script they feed (also how engine/gzdoom.py drives GZDoom;
    a map whose inputs ride late takes them this early too)."""
    return begin_calls(info, first) + [
        (s, *(x[i] for i in slots))
        for s, slots in zip(info["input_scripts"], input_slots(info, len(x)))]


def batch_calls(info: dict, entering: list[list[int]]) -> tuple[list[tuple], int]:
    """A batch of beats: the queue scripts' calls that store each beat's inputs (started
    in the batch script's tic), and the tics the batch runs after that tic (beat j starts
    batch_period * j tics after beat 0, the last one takes beat_tics)."""
    pipe, groups = info["pipeline"], len(info["input_scripts"])
    calls = [(pipe["queue_base"] + j * groups + g, *x[4 * g:4 * g + 4])
             for j, x in enumerate(entering) for g in range(groups)]
    period = pipe.get("batch_period", pipe["beat_tics"] + 1)  # WADs built before overlap
    return calls, (len(entering) - 1) * period + pipe["beat_tics"]


class _Due:
    """One step's input scripts, by the tic they must start in (need, script, slots), their
    inputs asked for (`get`) only when due. `failed`: an ask raised (the caller finishes
    the step on the inputs' lowest values, `rest`)."""

    def __init__(self, inputs: list[tuple], get, lows: list[int]):
        from collections import deque

        self.inputs, self.get, self.lows = deque(inputs), get, lows
        self.failed = False

    def next(self) -> list[int]:
        return [self.inputs[0][0]] if self.inputs else []

    def by(self, tic: int) -> list[tuple]:
        """The calls of every script due by `tic`, or none if any of their inputs fails."""
        due = [e for e in self.inputs if e[0] <= tic]
        try:
            calls = [(script, *(self.get(i) for i in slots)) for _, script, slots in due]
        except BaseException:
            self.failed = True
            raise
        for _ in due:
            self.inputs.popleft()
        return calls

    def rest(self) -> list[tuple]:
        calls = [(s, *(self.lows[i] for i in slots)) for _, s, slots in self.inputs]
        self.inputs.clear()
        return calls


class MapRunner:
    def __init__(self, wad: str, info: dict, map_name: str = "MAP01", engine: Engine | None = None):
        self.wad = wad
        self.info = info
        if engine is None:
            from mapgen.compile import map_file

            engine = Engine(map_file(wad, info), map_name)   # a map of a WAD's part file
        self.engine = engine
        self.seq = 0
        self.token = 0
        self.tics = 0
        self.engine.advance(info["init_tics"] + 2)
        ack = self.engine.user(info["ack_var"])
        if ack != -1:
            raise EngineError(f"{wad} {map_name}: the map did not report ready after "
                              f"{info['init_tics'] + 2} tics (USER{info['ack_var']} = {ack})")

    def close(self) -> None:
        self.engine.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _counted(self, x) -> list:
        """x as a list, one value per input of the map."""
        info, x = self.info, list(x)
        if len(x) != len(info["inputs"]):
            raise VoodooError(f"{len(x)} inputs given; the map takes {len(info['inputs'])} "
                              f"({', '.join(info['inputs'])})")
        return x

    def _checked(self, x) -> list[int]:
        return [self._checked_one(i, v) for i, v in enumerate(self._counted(x))]

    def _checked_one(self, i: int, v) -> int:
        """Input i's value as an int, within its range."""
        name, (lo, hi) = self.info["inputs"][i], self.info["input_ranges"][i]
        v = int(v)
        if not lo <= v <= hi:
            raise VoodooError(f"input {name} = {v} is outside its range {lo}..{hi}")
        return v

    def _step(self, x: list[int], script: int, tics: int, first: bool = False) -> list[int]:
        """Start `script` (seq) with the input scripts in one tic, run its predicted tics and
        require its acknowledgement; returns USER1..60 after it (one engine round trip)."""
        return self._acknowledged(input_calls(self.info, x, first), script, (), tics,
                                  f"script {script}")

    def _acknowledged(self, calls: list[tuple], script: int, args: tuple, tics: int,
                      what: str) -> list[int]:
        """`calls`, then `script` (seq, *args), in one tic; `tics` more tics; the script must
        have acknowledged seq by then. USER1..60 after it, one engine round trip."""
        self.seq += 1
        vals = self.engine.step(calls + [(script, self.seq, *args)], tics + 1)
        self._acked(vals, tics, what)
        return vals

    def _acked(self, vals: list[int], tics: int, what: str) -> None:
        """Count a step's tics + 1; USER1..60 after them must hold its acknowledgement."""
        self.tics += tics + 1
        ack = vals[self.info["ack_var"] - 1]
        if ack != self.seq:
            raise EngineError(f"{self.wad}: step {self.seq} ({what}) did not finish in "
                              f"its predicted {tics} tics (ack {ack})")

    def can_pipeline(self) -> bool:
        return bool(self.info.get("pipeline")) and bool(self.info["outputs"])

    def infer_many(self, xs, pipeline: bool = True, batch: int | None = None) -> list[list[int]]:
        """Several independent inferences; with `pipeline` (and a map that has the pipelined
        beat, program.plan_pipeline) one enters every beat while earlier ones are still in
        their later phases, and up to `batch` beats (default: the map's batch script's)
        run per round trip to the engine. Outputs in input order, the same as one `infer`
        each."""
        xs = [self._checked(x) for x in xs]
        if not (pipeline and len(xs) > 1 and self.can_pipeline()):
            return [self.infer(x) for x in xs]
        pipe = self.info["pipeline"]
        lags = pipe["lags"]
        most = pipe.get("batch", 1)  # WADs built before batches had one beat per step
        k = min(batch or most, most)
        out: list[list[int | None]] = [[None] * len(lags) for _ in xs]
        # After the last real inference the pipeline drains: its last inputs enter again,
        # and what those compute is never read.
        beats = len(xs) + max(lags)
        for b0 in range(0, beats, k):
            n = min(k, beats - b0)
            entering = [xs[min(b, len(xs) - 1)] for b in range(b0, b0 + n)]
            vals = self._batch(entering) if k > 1 else \
                self._step(entering[0], pipe["script"], pipe["beat_tics"])
            for j in range(n):
                for o, lag in enumerate(lags):
                    if 0 <= b0 + j - lag < len(xs):
                        out[b0 + j - lag][o] = vals[j * len(lags) + o]
        return out

    def _batch(self, entering: list[list[int]]) -> list[int]:
        """n beats in one round trip: the queue scripts store each beat's inputs, the batch
        script runs the beats overlapped, batch_period tics apart (single beats are
        beat_tics + 1 apart), and leaves beat j's outputs in USER n_out*j+1...; requires its
        acknowledgement."""
        calls, tics = batch_calls(self.info, entering)
        n = len(entering)
        return self._acknowledged(calls, self.info["pipeline"]["batch_script"], (n,), tics,
                                  f"a batch of {n} beats")

    def infer(self, x, first: bool = False, fed: bool = False, hand=None) -> list[int]:
        """One inference (one time step); returns the output values in declared order.
        `first` begins a new sequence: spiking membranes go back to their initial level,
        prev lanes to their init. `fed`: the fed-back inputs take their nodes' values of the
        step before, in the map (their entries in x are not used). `hand({name: value})`
        is called with each batch of outputs as soon as the map has them final, while it
        still rides (maps built with hand_on in their manifest; others call it once, at the
        end): a tiled run starts the maps that take them then. `x` may also be a function
        of an input's index that returns its value once it is there: with `hand`, a map
        whose inputs ride late (input_need) asks for each when its input script must
        start, so it starts before all of them are there; otherwise all are asked first."""
        info = self.info
        fb = set(info.get("feedback") or [])
        if fed and not fb:
            raise VoodooError(f"{self.wad}: the map has no fed-back inputs")
        if not callable(x):
            x = self._counted(x).__getitem__

        def get(i: int) -> int:
            if fed and info["inputs"][i] in fb:
                return info["input_ranges"][i][0]
            return self._checked_one(i, x(i))

        script = info["fed_script"] if fed else info["infer_script"]
        if hand is not None and (info.get("hand_on") or info.get("input_need")):
            return self._handing(get, script, first, hand)
        vals = self._step([get(i) for i in range(len(info["inputs"]))], script,
                          info["inference_tics"], first)
        out = vals[:len(info["outputs"])] if info["outputs"] else self.read_outputs()
        if hand is not None:
            hand(dict(zip(info["all_outputs"], out)))
        return out

    def _handing(self, get, script: int, first: bool, hand) -> list[int]:
        """`infer` on the step's own timeline: each input script started as late as the map
        wants it (input_need; its inputs asked for only then), each output batch read once
        its hand_on tic has passed (the inference goes on meanwhile), then the rest of the
        step and its ack. Where script 2 copies the outputs to USER slots in its last tic, a
        batch final only then is taken from that copy: a read script in the same tic would
        race it for the slots. Should asking for an input fail (the run ended), the step is
        still run to its end, on the inputs' lowest values, before that error is raised:
        the map stays between steps."""
        info = self.info
        wanted = {f"value:{name}": name for name in info["all_outputs"]}
        end = info["inference_tics"] + 1          # tics until the ack is there
        need = info.get("input_need") or [0] * len(info["input_scripts"])
        inputs = sorted(zip(need, info["input_scripts"],
                            input_slots(info, len(info["inputs"]))))
        reads = [(tic, batch) for batch, tic in zip(info["read_batches"], info["hand_on"])]
        self.seq += 1
        at, got = 0, {}
        due = _Due(inputs, get, [r[0] for r in info["input_ranges"]])
        self.engine.puke_many(begin_calls(info, first) + due.by(0) + [(script, self.seq)])
        try:
            while True:
                if reads and info["outputs"] and max(at, reads[0][0]) + 1 >= end:
                    reads = []
                t = min([r[0] for r in reads[:1]] + due.next(), default=end)
                if t >= end and not reads:
                    break
                self.engine.advance(max(at, t) - at)
                at = max(at, t)
                calls = due.by(at)
                if not (reads and reads[0][0] <= at):
                    self.engine.puke_many(calls)
                    continue
                batch = reads.pop(0)[1]
                mine = {wanted[lab]: v for lab, v in self._read_batch(batch, calls).items()
                        if lab in wanted}
                at += 1
                got.update(mine)
                hand(mine)
        except BaseException:
            if due.failed:   # the map finishes its step on placeholders, then the error
                self.engine.step(due.rest(), max(0, end - at))
                self.tics += info["inference_tics"] + 1
            raise
        vals = self.engine.step(due.by(end), end - at) if end > at else self.engine.users()
        self._acked(vals, info["inference_tics"], f"script {script}")
        if info["outputs"]:
            last = {name: v for name, v in zip(info["outputs"], vals) if name not in got}
            got.update(last)
            if last:
                hand(last)
        return [got[name] for name in info["all_outputs"]]

    def _read_batch(self, batch: dict, calls: list[tuple] = ()) -> dict[str, int]:
        """One read script's lights by label (one tic, one round trip), started with
        `calls`."""
        self.token += 1
        vals = self.engine.step([*calls, (batch["script"], self.token)], 1)
        if vals[self.info["read_ack_var"] - 1] != self.token:
            raise EngineError(f"{self.wad}: read script {batch['script']} did not run")
        return dict(zip(batch["labels"], vals))

    def read_outputs(self) -> list[int]:
        """The outputs after an inference, in declared order: the read batches that hold
        them (the first ones, in maps with hand_on; every batch in older maps)."""
        info = self.info
        if "hand_on" in info:
            got: dict[str, int] = {}
            for batch in info["read_batches"][:len(info["hand_on"])]:
                got.update(self._read_batch(batch))
        else:
            got = self.read_all()
        return [got[f"value:{name}"] for name in info["all_outputs"]]

    def read_all(self) -> dict[str, int]:
        """Every light of the map, by label ('acc:h[3]', 'value:h[3]'), one batch per tic."""
        out: dict[str, int] = {}
        for batch in self.info["read_batches"]:
            out.update(self._read_batch(batch))
        return out


@dataclass
class Comparison:
    inputs: list[int]
    engine: list[int]
    reference: list[int]
    first_divergence: str | None = None

    @property
    def exact(self) -> bool:
        return self.engine == self.reference and self.first_divergence is None


def reference_labels(net: Netlist, lowered: Netlist, x, step: int = -1) -> dict[str, int]:
    """The reference value of every readable light label, from the lowered netlist. For a
    sequence, `x` holds every step's inputs and `step` picks the step."""
    from dsl.reference import evaluate

    return result_labels(lowered, evaluate(lowered, [x]), step)


def result_labels(lowered: Netlist, res, step: int = -1) -> dict[str, int]:
    """Every readable light label's value at `step` of a reference Result (sample 0)."""
    out = {}
    for n in lowered.nodes:
        out[f"value:{n.name}"] = int(res.value[0, step, n.id])
        # An identity neuron's accumulator is its value: one light, one label.
        if isinstance(n.gate, Spike):
            out[f"membrane:{n.name}"] = int(res.state[0, step, n.id])
        elif not (n.is_input or n.is_prev or isinstance(n.gate, Identity)):
            out[f"acc:{n.name}"] = int(res.acc[0, step, n.id])
    return out


def compare_sequence(runner: MapRunner, net: Netlist, lowered: Netlist, xs,
                     debug: bool = False) -> list[Comparison]:
    """A multi-step netlist: one run of the steps planned by dsl/sequence.plan_steps (a
    row per step; None for a fed-back input), compared step by step. The run ends when the
    map's own done output says 1 (or at the last row): the reference must agree on when."""
    from dsl.reference import evaluate
    from dsl.sequence import reference_run

    res, _ = reference_run(net, xs)
    low = evaluate(lowered, [xs]) if debug else None
    done = runner.info.get("done")
    out = []
    for t, x in enumerate(xs):
        fed = any(v is None for v in x)
        taken = [int(res.value[0, t, i]) for i in net.inputs]
        eng = runner.infer(taken if not fed else [0 if v is None else v for v in x],
                           first=(t == 0), fed=fed)
        cmp = Comparison(taken, eng, [int(res.value[0, t, o]) for o in net.outputs])
        if debug:
            got = runner.read_all()
            cmp.first_divergence = _first_divergence(lowered, got, result_labels(lowered, low, t))
            if cmp.first_divergence:
                cmp.first_divergence = f"step {t}: {cmp.first_divergence}"
        out.append(cmp)
        if done is not None and eng[done] == 1:
            break  # the network ended its run
    return out


def _first_divergence(lowered: Netlist, got: dict, want: dict) -> str | None:
    for n in lowered.nodes:  # dependency order: the first difference is the cause
        for role in ("acc", "membrane", "value"):
            label = f"{role}:{n.name}"
            if label in got and got[label] != want[label]:
                return f"{label} engine {got[label]} reference {want[label]}"
    return None


def compare(runner: MapRunner, net: Netlist, lowered: Netlist, x, debug: bool = False) -> Comparison:
    from dsl.reference import evaluate

    eng = runner.infer(x)
    ref = [int(v) for v in evaluate(net, [x]).last_outputs()[0]]
    cmp = Comparison(list(x), eng, ref)
    if debug:
        cmp.first_divergence = _first_divergence(lowered, runner.read_all(),
                                                 reference_labels(net, lowered, x))
    return cmp
