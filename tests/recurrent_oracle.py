"""An independent oracle for recurrent .dnet netlists (issue 37's differential): a seeded
generator of random recurrent netlists written from docs/dnet.md alone, and a small
interpreter of their text, also written from the doc, that shares no code with the project
(no dsl import: its own reading of the statements, its own semantics of every gate and
operation, step by step with Python ints).

The generator writes what the doc describes: Elman cells (`lines prev(h) -> h dense`),
counters ended by `done`, fed-back generation (`feedback`), operations on prev values and
on loops (max, min, select, switch, compares, equals, logic, argmax, clamp, delay), prev
chains, spiking neurons, fixed `steps T`, `steps open` and no `steps` at all, and inputs at
the edges of their ranges. Every netlist it writes is valid by the doc (loops pass through
a clamp, or run a fixed number of steps), so the project must build every one.

    text, rows = random_netlist(seed)
    steps = interpret(text, rows)            # [{element name: value}] per step, to done
"""
from __future__ import annotations

import random
import re

# Input ranges, edges included: negative, one value, a lone bit.
RANGES = [(0, 1), (0, 3), (-3, 3), (2, 5), (-4, -1), (0, 0), (1, 1), (-2, 2), (0, 7)]


# ----------------------------------------------------------------------------- generator
def _term(w: int, ref: str) -> str:
    """One signed term of a sum: '+ 2*x', '- prev(a)', '+ 3'."""
    body = ref if abs(w) == 1 and ref else f"{abs(w)}*{ref}" if ref else str(abs(w))
    return f"{'-' if w < 0 else '+'} {body}"


class _Gen:
    """One random netlist: statements, and what each name holds (rough bounds, 0/1-ness)."""

    def __init__(self, seed: int):
        self.r = random.Random(seed)
        self.seed = seed
        self.lines: list[str] = []
        self.values: list[tuple[str, int, int]] = []   # scalar refs an operand may read
        self.bits: list[str] = []                      # refs proven 0/1
        self.inputs: list[tuple[str, int | None, int, int]] = []
        self.fed: set[str] = set()
        self.outputs: list[str] = []
        self.n = 0
        mode = self.r.choice(["fixed", "open", "none"])
        self.steps = self.r.randint(2, 14) if mode == "fixed" else None
        self.mode = mode

    def name(self, stem: str) -> str:
        self.n += 1
        return f"{stem}{self.n}"

    def value(self, prev_ok: bool = True) -> tuple[str, int, int]:
        """A scalar operand: a value, or (sometimes) its previous step's."""
        ref, lo, hi = self.r.choice(self.values)
        if prev_ok and self.r.random() < 0.4:
            depth = 1 + (self.r.random() < 0.25)
            return "prev(" * depth + ref + ")" * depth, min(lo, 0), max(hi, 0)
        return ref, lo, hi

    def bit(self) -> str:
        b = self.r.choice(self.bits)
        return f"prev({b})" if self.r.random() < 0.3 else b

    # -- parts --------------------------------------------------------------------------
    def inputs_(self) -> None:
        for _ in range(self.r.randint(1, 3)):
            x = self.name("x")
            lo, hi = self.r.choice(RANGES)
            self.lines.append(f"input {x} : {lo}..{hi}")
            self.inputs.append((x, None, lo, hi))
            self.values.append((x, lo, hi))
            if (lo, hi) == (0, 1) or (lo, hi) in ((0, 0), (1, 1)):
                self.bits.append(x)
        if self.r.random() < 0.5:
            v, n = self.name("v"), self.r.randint(2, 3)
            lo, hi = self.r.choice([(0, 3), (-2, 2), (0, 1)])
            self.lines.append(f"input {v}[{n}] : {lo}..{hi}")
            self.inputs.append((v, n, lo, hi))
            self.values += [(f"{v}[{i}]", lo, hi) for i in range(n)]
        if not self.bits:
            b = self.name("b")
            self.lines.append(f"neuron {b} : step(t=1) = {self.values[0][0]}")
            self.bits.append(b)
            self.values.append((b, 0, 1))

    def elman(self) -> None:
        vecs = [(x, n) for x, n, _, _ in self.inputs if n] or [(self.inputs[0][0], None)]
        x, nx = self.r.choice(vecs)
        h, n = self.name("h"), self.r.randint(2, 3)
        s, top = self.r.choice([1, 2, 4]), self.r.randint(3, 9)
        cols = nx or 1

        def mat(c):
            return "[" + ", ".join("[" + ", ".join(str(self.r.randint(-3, 3)) for _ in range(c))
                                   + "]" for _ in range(n)) + "]"
        self.lines += [f"neuron {h}[{n}] : relu(s={s}, max={top})",
                       f"lines {x} -> {h} dense {mat(cols)}",
                       f"lines prev({h}) -> {h} dense {mat(n)}",
                       f"bias {h} = [{', '.join(str(self.r.randint(-2, 3)) for _ in range(n))}]"]
        if self.r.random() < 0.6:
            self.lines.append(f"init {h} = [{', '.join(str(self.r.randint(0, 4)) for _ in range(n))}]")
        self.values += [(f"{h}[{i}]", 0, top) for i in range(n)]
        self.outputs.append(h)

    def counter(self, done: bool) -> None:
        c, top, k = self.name("c"), self.r.randint(3, 45), self.r.randint(1, 2)
        self.lines.append(f"neuron {c} : relu(s=1, max={top}) = prev({c}) + {k}")
        self.values.append((c, 0, top))
        self.outputs.append(c)
        if done:
            d, at = self.name("d"), self.r.randint(1, top)
            self.lines.append(self.r.choice([f"neuron {d} : step(t={at}) = {c}",
                                             f"neuron {d} : equals({c}, [{at}])",
                                             f"neuron {d} : eq({c}, {at})"]))
            self.lines.append(f"done {d}")
            self.bits.append(d)

    def accumulator(self) -> None:
        a = self.name("a")
        (x, lo, hi), w = self.value(), self.r.choice([1, 2, -1, 3])
        if self.steps and self.steps <= 10 and self.r.random() < 0.4:
            # Unclamped: proven for exactly the fixed steps.
            self.lines.append(f"neuron {a} : identity = prev({a}) {_term(w, x)} "
                              f"{_term(self.r.randint(-2, 2), '')}")
            reach = self.steps * (abs(w) * max(abs(lo), abs(hi)) + 2)
            self.values.append((a, -reach, reach))
        else:
            s, top = self.r.choice([1, 2, 3]), self.r.randint(2, 30)
            back = self.r.choice([1, -1, 2])
            other = self.value()[0]
            extra = f" - {other}" if self.r.random() < 0.3 and other != x else ""
            first = _term(back, f"prev({a})").replace("+ ", "").replace("- ", "-")
            self.lines.append(f"neuron {a} : relu(s={s}, max={top}) = {first} {_term(w, x)}"
                              f"{extra} {_term(self.r.randint(-1, 3), '')}")
            self.values.append((a, 0, top))
        self.outputs.append(a)

    def contraction(self) -> None:
        c = self.name("k")
        x = self.value(prev_ok=False)[0]
        self.lines.append(f"neuron {c} : relu(s=2) = prev({c}) + {x} + {self.r.randint(0, 4)}")
        self.values.append((c, 0, 40))
        self.outputs.append(c)

    def operation(self) -> None:
        o = self.name("o")
        r = self.r
        kind = r.choice(["max", "min", "select", "switch", "switchc", "lt", "le", "eq", "equals",
                         "and", "or", "xor", "not", "argmax", "clamp", "delay", "running"])
        a, b = self.value()[0], self.value()[0]
        if kind == "running":  # on a loop through itself
            op = r.choice(["max", "min"])
            text, bounds = f"{op}({a}, prev({o}))", (-40, 40)
        elif kind in ("max", "min"):
            more = f", {r.randint(-3, 5)}" if r.random() < 0.4 else ""
            text, bounds = f"{kind}({a}, {b}{more})", (-40, 40)
        elif kind == "select":
            text, bounds = f"select({self.bit()}, {a}, {b})", (-40, 40)
        elif kind == "switch":
            text, bounds = f"switch({self.bit()}, {a}, {b})", (-40, 40)
        elif kind == "switchc":
            vals = [r.randint(-5, 9) for _ in range(2)]
            text, bounds = f"switch({self.bit()}, [{vals[0]}, {vals[1]}])", (-5, 9)
        elif kind in ("lt", "le", "eq"):
            text, bounds = f"{kind}({a}, {b})", (0, 1)
        elif kind == "equals":
            text, bounds = f"equals({a}, [{r.randint(-1, 3)}])", (0, 1)
        elif kind in ("and", "or", "xor"):
            text, bounds = f"{kind}({self.bit()}, {self.bit()})", (0, 1)
        elif kind == "not":
            text, bounds = f"not({self.bit()})", (0, 1)
        elif kind == "argmax":
            text, bounds = f"argmax({a}, {b}, {self.value()[0]})", (0, 2)
        elif kind == "clamp":
            lo = r.randint(-2, 2)
            text, bounds = f"clamp({a}, {lo}..{lo + r.randint(0, 6)})", (-2, 8)
        else:
            if self.mode == "none" and not any("prev(" in ln for ln in self.lines):
                text, bounds = f"max({a}, {b})", (-40, 40)
            else:
                x = r.choice(self.inputs)[0]
                x = x if not [n for nm, n, _, _ in self.inputs if nm == x][0] else f"{x}[0]"
                k = r.choice([1, 2, 3, 5]) if not self.steps else r.randint(1, self.steps + 1)
                text, bounds = f"delay({x}, {k})", (-4, 7)
        self.lines.append(f"neuron {o} : {text}")
        self.values.append((o, *bounds))
        if bounds == (0, 1):
            self.bits.append(o)
        self.outputs.append(o)

    def spike(self) -> None:
        s = self.name("s")
        r = self.r
        reset = r.choice(["0", "subtract", "1"])
        self.lines.append(f"neuron {s} : spike(threshold={r.randint(1, 5)}, leak={r.randint(0, 2)}, "
                          f"reset={reset}, init={r.randint(0, 2)}) = {self.value(False)[0]} + "
                          f"{r.randint(0, 2)}")
        self.values.append((s, 0, 1))
        self.bits.append(s)
        self.outputs.append(s)

    def generation(self) -> None:
        """A fed-back input: generation until done (or the steps run out)."""
        f = self.name("f")
        lo, hi = self.r.choice([(0, 9), (-3, 4), (1, 6)])
        self.lines.append(f"input {f} : {lo}..{hi}")
        self.inputs.append((f, None, lo, hi))
        self.fed.add(f)
        g = self.name("g")
        other = self.value()[0]
        form = self.r.choice(["clamp", "relu", "select"])
        if form == "clamp":
            t = self.name("t")
            self.lines += [f"neuron {t} : identity = {f} + {self.r.randint(1, 3)} - {other}",
                           f"neuron {g} : clamp({t}, {lo}..{hi})"]
        elif form == "relu" and lo == 0:
            self.lines.append(f"neuron {g} : relu(s=1, max={hi}) = {f} + {other} + 1")
        else:
            self.lines.append(f"neuron {g} : select({self.bit()}, {f}, {lo})")
        self.lines.append(f"feedback {f} = {g}")
        self.values += [(f, lo, hi), (g, lo, hi)]
        self.outputs.append(g)

    def text(self) -> str:
        self.inputs_()
        parts = [self.elman, self.accumulator, self.operation, self.operation,
                 self.contraction, self.spike, self.operation, self.accumulator]
        if self.r.random() < 0.4:
            self.generation()
        if self.r.random() < 0.5:
            self.counter(done=self.r.random() < 0.6)
        for part in self.r.sample(parts, self.r.randint(2, len(parts))):
            part()
        if self.mode == "none" and not any("prev(" in ln or "feedback" in ln for ln in self.lines):
            self.counter(done=False)  # a recurrence, or it would be one step
        head = [f"network r{self.seed}"]
        if self.steps:
            head.append(f"steps {self.steps}")
        elif self.mode == "open":
            head.append("steps open")
        outs = list(dict.fromkeys(self.outputs)) or [self.values[-1][0]]
        return "\n".join(head + self.lines + [f"output {', '.join(outs)}"]) + "\n"

    def rows(self) -> list[list[int | None]]:
        n = self.steps or self.r.randint(1, 24)
        out = []
        for t in range(n):
            row = []
            for x, size, lo, hi in self.inputs:
                for _ in range(size or 1):
                    v = lo if t == 0 else hi if t == 1 else self.r.randint(lo, hi)
                    row.append(None if x in self.fed and t and self.r.random() < 0.85 else v)
            out.append(row)
        return out


def random_netlist(seed: int) -> tuple[str, list[list[int | None]]]:
    """A random recurrent netlist's text and the input rows of one run (None: fed back)."""
    g = _Gen(seed)
    text = g.text()
    return text, g.rows()


# ---------------------------------------------------------------------------- interpreter
def _split(text: str) -> list[str]:
    """Comma-separated parts at the top level (not inside (), [])."""
    out, depth, cur = [], 0, ""
    for ch in text:
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        out.append(cur.strip())
    return out


def _ints(text: str) -> list[int]:
    return [int(v) for v in re.findall(r"-?\d+", text)]


class Netlist:
    """The statements of a .dnet text, read from the doc's description."""

    def __init__(self, text: str):
        self.steps: int | None = None
        self.open = False
        self.sizes: dict[str, int | None] = {}
        self.inputs: list[tuple[str, int | None, int, int]] = []
        self.gate: dict[str, tuple] = {}            # neuron name -> its gate / operation
        self.sums: dict[str, dict] = {}             # element -> {"terms": [...], "bias": int}
        self.init: dict[str, int] = {}              # element ref -> what prev(ref) starts at
        self.feedback: dict[str, str] = {}
        self.done: str | None = None
        self.order: list[str] = []                  # elements in declaration order
        for line in text.splitlines():
            line = line.split("#")[0].strip()
            if line:
                self.statement(line)

    def elements(self, name: str) -> list[str]:
        n = self.sizes[name]
        return [name] if n is None else [f"{name}[{i}]" for i in range(n)]

    def statement(self, line: str) -> None:
        word, rest = line.split(" ", 1)
        if word == "network":
            return
        if word == "steps":
            self.open = rest == "open"
            self.steps = None if self.open else int(rest)
        elif word in ("input", "neuron"):
            m = re.match(r"(\w+)(?:\[(\d+)\])?\s*:\s*(.*)$", rest)
            name, size, body = m.group(1), m.group(2), m.group(3)
            self.sizes[name] = None if size is None else int(size)
            self.order += self.elements(name)
            if word == "input":
                lo, hi = _ints(body)
                self.inputs.append((name, self.sizes[name], lo, hi))
                self.gate[name] = ("input", lo, hi)
                return
            gate, _, total = body.partition(" = ")
            self.gate[name] = _gate(gate.strip())
            for e in self.elements(name):
                self.sums[e] = {"terms": [], "bias": 0}
            if total:
                self.inline(name, total)
        elif word == "lines":
            src, _, body = rest.partition(" -> ")
            dst, kind, mat = body.split(" ", 2)
            self.lines(self.refs(src), self.refs(dst), kind, mat)
        elif word in ("bias", "init"):
            dst, val = rest.split(" = ")
            refs = self.refs(dst)
            vals = _ints(val) if val.startswith("[") else [int(val)] * len(refs)
            for ref, v in zip(refs, vals):
                if word == "bias":
                    self.sums[ref]["bias"] += v
                else:
                    self.init[ref] = v
        elif word == "feedback":
            x, y = rest.split(" = ")
            self.feedback[x.strip()] = y.strip()
        elif word == "done":
            self.done = rest.strip()
        elif word != "output":
            raise ValueError(line)

    def refs(self, text: str) -> list[str]:
        """The elements a vector reference names: h, h[2], h[0:2], prev(...) of one."""
        text = text.strip()
        if text.startswith("prev("):
            return [f"prev({r})" for r in self.refs(text[5:-1])]
        m = re.match(r"(\w+)(?:\[(\d*)(?::(\d*))?\])?$", text)
        name = m.group(1)
        every = self.elements(name)
        if m.group(2) is None and ":" not in text:
            return every
        if ":" not in text:
            return [f"{name}[{m.group(2)}]"]
        lo = int(m.group(2) or 0)
        hi = int(m.group(3)) if m.group(3) else len(every)
        return every[lo:hi]

    def lines(self, src: list[str], dst: list[str], kind: str, body: str) -> None:
        if kind == "dense":
            rows = re.findall(r"\[([^\[\]]*)\]", body)
            for d, row in zip(dst, rows):
                for s, w in zip(src, _ints(row)):
                    self.sums[d]["terms"].append((w, s, None))
        elif kind == "diag":
            for s, d, w in zip(src, dst, _ints(body)):
                self.sums[d]["terms"].append((w, s, None))
        elif kind == "all":
            w = int(body)
            for d in dst:
                for s in src:
                    self.sums[d]["terms"].append((w, s, None))

    def inline(self, name: str, total: str) -> None:
        """2*x - prev(a) + 3 + prev(a)*x: (weight, ref, second ref of a product) terms."""
        total = total.strip()
        if total[0] not in "+-":
            total = "+ " + total
        for sign, term in re.findall(r"([+-])\s*([^+-]+)", total):
            w = -1 if sign == "-" else 1
            term = term.strip()
            if re.fullmatch(r"\d+", term):
                self.sums[name]["bias"] += w * int(term)
                continue
            m = re.match(r"(\d+)\*(.*)$", term)
            if m:
                w, term = w * int(m.group(1)), m.group(2)
            a, _, b = term.partition("*")
            self.sums[name]["terms"].append((w, a.strip(), b.strip() or None))


def _gate(text: str) -> tuple:
    m = re.match(r"(\w+)(?:\((.*)\))?$", text)
    kind, args = m.group(1), m.group(2) or ""
    if kind in ("identity", "relu", "step", "spike", "lut"):
        named = dict(re.findall(r"(\w+)=(\w+)", args))
        if kind == "lut":
            return ("lut", _ints(args.split("[")[0])[0], _ints("[" + args.split("[", 1)[1]))
        return (kind, named)
    return ("op", kind, _split(args))


class _Run:
    """One run of a Netlist, step by step: every element's value at every step."""

    def __init__(self, net: Netlist, rows, low_end):
        self.net, self.rows, self.low_end = net, rows, low_end
        self.vals: list[dict[str, int]] = []
        self.mem: list[dict[str, int]] = []
        self.col = {}
        k = 0
        for name, size, _, _ in net.inputs:
            for e in net.elements(name):
                self.col[e] = k
                k += 1

    def step(self, t: int) -> dict[str, int]:
        self.vals.append({})
        self.mem.append({})
        for e in self.net.order:
            self.element(e, t)
        return self.vals[t]

    def ref(self, ref: str, t: int) -> int:
        ref = ref.strip()
        if re.fullmatch(r"-?\d+", ref):
            return int(ref)
        if ref.startswith("prev("):
            inner = ref[5:-1]
            return self.net.init.get(inner, 0) if t == 0 else self.ref(inner, t - 1)
        return self.element(ref, t)

    def element(self, e: str, t: int) -> int:
        if e in self.vals[t]:
            return self.vals[t][e]
        name = e.split("[")[0]
        gate = self.net.gate[name]
        if gate[0] == "input":
            v = self.rows[t][self.col[e]]
            y = self.ref(self.net.feedback[e], t - 1) if v is None else v
        elif gate[0] == "op":
            y = self.operation(gate[1], gate[2], t)
        else:
            y = self.neuron(e, gate, t)
        self.vals[t][e] = y
        return y

    def neuron(self, e: str, gate: tuple, t: int) -> int:
        s = self.net.sums[e]
        acc = s["bias"] + sum(w * self.ref(a, t) * (1 if b is None else self.ref(b, t))
                              for w, a, b in s["terms"])
        kind = gate[0]
        if kind == "identity":
            return acc
        if kind == "relu":
            y = max(acc // int(gate[1].get("s", 1)), 0)
            return min(y, int(gate[1]["max"])) if "max" in gate[1] else y
        if kind == "step":
            return int(acc >= int(gate[1].get("t", 0)))
        if kind == "lut":
            lo, table = gate[1], gate[2]
            return table[min(max(acc, lo), lo + len(table) - 1) - lo]
        p = gate[1]  # spike
        v = int(p.get("init", 0)) if t == 0 else self.mem[t - 1][e]
        u = v + acc
        fire = u >= int(p["threshold"])
        if fire:
            u = u - int(p["threshold"]) if p.get("reset") == "subtract" else int(p.get("reset", 0))
        self.mem[t][e] = max(u - int(p.get("leak", 0)), 0)
        return int(fire)

    def spread(self, args: list[str], t: int) -> list[int]:
        out = []
        for a in args:
            refs = [a] if re.fullmatch(r"-?\d+", a) or "[" in a and ":" not in a \
                or a.startswith("prev(") or self.net.sizes.get(a, None) is None else self.net.refs(a)
            out += [self.ref(r, t) for r in refs]
        return out

    def operation(self, kind: str, args: list[str], t: int) -> int:
        if kind == "select":
            c, a, b = args
            return self.ref(a, t) if self.ref(c, t) == 1 else self.ref(b, t)
        if kind == "switch":
            i = self.ref(args[0], t)
            vals = _ints(args[1]) if args[1].startswith("[") else self.spread(args[1:], t)
            return vals[i]
        if kind == "equals":
            return int(self.spread(args[:1], t) == _ints(args[1]))
        if kind in ("lt", "le", "eq"):
            a, b = self.ref(args[0], t), self.ref(args[1], t)
            return int(a < b if kind == "lt" else a <= b if kind == "le" else a == b)
        if kind == "clamp":
            lo, hi = _ints(args[1].replace("..", " "))
            return min(max(self.ref(args[0], t), lo), hi)
        if kind == "delay":
            k = int(args[1])
            return self.ref(args[0], t - k) if t >= k else self.low_end(args[0])
        vals = self.spread(args, t)
        if kind == "max":
            return max(vals)
        if kind == "min":
            return min(vals)
        if kind == "argmax":
            return vals.index(max(vals))
        if kind == "and":
            return int(all(v == 1 for v in vals))
        if kind == "or":
            return int(any(v == 1 for v in vals))
        if kind == "xor":
            return sum(vals) % 2
        if kind == "not":
            return 1 - vals[0]
        raise ValueError(kind)


def interpret(text: str, rows) -> list[dict[str, int]]:
    """Every element's value at every step of one run, up to and including the first step
    at which the done node is 1. Before its first K steps a delay reads the low end of its
    operand's range (docs/dnet.md); the generator delays inputs only, whose range is the
    declared one."""
    net = Netlist(text)
    low = {e: lo for name, _, lo, _ in net.inputs for e in net.elements(name)}
    run = _Run(net, rows, low.__getitem__)
    out = []
    for t in range(len(rows)):
        out.append(run.step(t))
        if net.done is not None and out[-1][net.done] == 1:
            break
    return out
