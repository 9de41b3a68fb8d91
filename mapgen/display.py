"""Displays computed by the network itself: neurons that turn a value into lit segments.

Owns the pass that appends display neurons to a netlist, and reading a display back:

- a **number** (`Digits`): sign and decimal digits in seven segments. Each segment is a
  neuron whose light is the segment (lit `ON`, dark `OFF`), so a control room's display
  is accumulators like any other, and ACS still computes nothing on values. For a value
  `v` with `K` digits:
  - quotients `q_k = floor(|v| / 10^k)`, one cascade level per digit: `qp_k` from the
    positive side (`relu(s=10)` of `qp_{k-1}`, or of `v` for k = 1) and `qn_k` from the
    negative side (of `-v`); each is a sum of chunks of at most `CHUNK_DOORS` doors, so
    no lane is long (the chunks ride in parallel);
  - digit k's segments are luts over `a_k = (qp_k - qn_k) - 10 (qp_{k+1} - qn_{k+1})`
    (with `qp_0 - qn_0 = v`), which is `+d_k` for v >= 0 and `-d_k` for v < 0: the table
    maps `a` to the segments of `|a|`. Leading zeros are dark: the top digit's table maps
    0 to dark, and a middle digit adds `20 (1 - [|v| >= 10^k])` (two `step` neurons) so
    that a blank digit reads 20, dark;
  - the minus sign: a lut of `-v`, lit iff v < 0.
  Segments that compute the same function share one lut: the others are identity neurons
  of it (their lights follow its lane at no extra doll); a constant segment is an identity
  neuron with a bias and no lines.
- an **image** (`Image`): one identity neuron per element of a vector, whose light is
  `base + step * (x - lo)`: the input lane's own doors add to it, no doll of its own.

`add_displays` goes through the JSON form of the IR (dsl/jsonio.py), so the new netlist is
built and range-analysed by the same builder as any other; the original nodes keep their
ids, names, outputs and order, and the display nodes come after them. `shown_value`
reads a number back from its segments' light levels (None if they show no number).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

from dsl.ir import Netlist

ON, OFF = 255, 40                 # a segment's light: lit, dark
SEGMENTS = "abcdefg"
DIGITS = {0: "abcdef", 1: "bc", 2: "abdeg", 3: "abcdg", 4: "bcfg", 5: "acdfg", 6: "acdefg",
          7: "abc", 8: "abcdefg", 9: "abcdfg"}
PATTERN = {frozenset(s): d for d, s in DIGITS.items()}
MAX_DIGITS = 5                    # light levels hold -32768..32767
CHUNK_DOORS = 16                  # doors per lane of a quotient: about 10 tics of ride
BLANK = 20                        # what a blank middle digit's luts read (dark)
PIXEL_BASE, PIXEL_TOP = 32, 255   # an image's darkest and brightest light


@dataclass
class Digits:
    """A number in seven-segment digits: the node shown and the nodes of its segments."""
    shows: str                    # the node whose value is shown
    lo: int                       # its proven range
    hi: int
    digits: list[list[str]]       # least significant first: the nodes of segments a..g
    minus: str | None             # the minus sign's node (None: never negative)


@dataclass
class Image:
    """A vector shown as tiles, one per element, whose brightness is its value."""
    shows: list[str]              # the elements shown
    pixels: list[str]             # the node whose light is each element's tile
    lo: int
    hi: int
    base: int                     # light = base + step * (value - lo)
    step: int


@dataclass
class Displays:
    numbers: list[Digits]
    images: list[Image]

    def to_json(self) -> dict:
        return {"numbers": [asdict(d) for d in self.numbers],
                "images": [asdict(i) for i in self.images]}

    @staticmethod
    def from_json(doc: dict) -> "Displays":
        return Displays([Digits(**d) for d in doc["numbers"]], [Image(**i) for i in doc["images"]])

    def nodes(self) -> list[str]:
        """Every node whose light a display shows."""
        out = []
        for d in self.numbers:
            out += [n for digit in d.digits for n in digit] + ([d.minus] if d.minus else [])
        for i in self.images:
            out += i.pixels
        return out


def digit_count(lo: int, hi: int) -> int:
    return len(str(max(abs(lo), abs(hi))))


def segment_on(digit: int | None) -> set[str]:
    return set(DIGITS[digit]) if digit is not None else set()


def shown_value(d: Digits, level) -> int | None:
    """The number a display shows, from `level(node) -> light level`: every segment must be
    ON or OFF, every digit a digit or blank (blanks only in front), and the minus sign
    only before a number. None if the segments show no number."""
    def lit(node: str) -> bool | None:
        v = level(node)
        return True if v == ON else False if v == OFF else None

    value, seen = 0, False
    for k in reversed(range(len(d.digits))):
        states = [lit(n) for n in d.digits[k]]
        if None in states:
            return None
        on = frozenset(s for s, x in zip(SEGMENTS, states) if x)
        if not on:
            if seen or k == 0:
                return None   # a dark digit after a shown one, or a dark units digit
            continue
        if on not in PATTERN:
            return None
        seen = True
        value = 10 * value + PATTERN[on]
    sign = lit(d.minus) if d.minus else False
    if sign is None or (sign and value == 0):
        return None
    return -value if sign else value


# -- the pass ---------------------------------------------------------------------------
def add_displays(net: Netlist, numbers: list[int] = (), images: list[list[int]] = ()
                 ) -> tuple[Netlist, Displays]:
    """`net` with display neurons appended: a number for each node id in `numbers`, an
    image for each list of node ids in `images`. Returns the new netlist (built and
    analysed like any other) and what each display's lights are."""
    from dsl.jsonio import from_json, to_json

    doc = to_json(net)
    b = _Doc(doc)
    out = Displays([], [])
    for j, nid in enumerate(numbers):
        node = net.nodes[nid]
        r = net.value_range[nid]
        b.shown = node.pos
        out.numbers.append(_number(b, f"disp.n{j}", node.name, r.lo, r.hi))
    for j, ids in enumerate(images):
        b.shown = net.nodes[ids[0]].pos
        out.images.append(_image(b, f"disp.img{j}", [net.nodes[i].name for i in ids],
                                 net.value_range[ids[0]].lo, net.value_range[ids[0]].hi))
    new = from_json(doc, net.source)
    assert [n.name for n in new.nodes[:len(net.nodes)]] == [n.name for n in net.nodes], \
        "the JSON round trip reordered the netlist's nodes"
    # Every problem a later pass finds names the file and place the user wrote: the
    # netlist's own nodes keep their positions, a display's nodes take the shown node's.
    for n in new.nodes:
        old = net.nodes[n.id] if n.id < len(net.nodes) else None
        n.pos = old.pos if old else b.pos[n.name]
        n.line_pos = dict(old.line_pos) if old else {s: n.pos for s in n.weights}
    new.source = net.source
    return new, out


class _Doc:
    """Appends scalar neurons and their lines to a netlist's JSON form."""

    def __init__(self, doc: dict):
        self.doc = doc
        self.shown = None                  # the position of the node being shown
        self.pos: dict = {}                # display node -> that position

    def neuron(self, name: str, gate: dict, terms: dict[str, int], bias: int = 0) -> str:
        self.pos[name] = self.shown
        self.doc["vectors"].append({"name": name, "size": None, "gate": gate})
        for src, w in terms.items():
            if w:
                self.doc["lines"].append([src, name, w])
        if bias:
            self.doc["bias"][name] = bias
        return name


def _add(*terms: dict[str, int]) -> dict[str, int]:
    out: dict[str, int] = {}
    for t in terms:
        for k, w in t.items():
            out[k] = out.get(k, 0) + w
    return out


def _scale(t: dict[str, int], c: int) -> dict[str, int]:
    return {k: c * w for k, w in t.items()}


def _quotient(b: _Doc, name: str, source: dict[str, int], count: int) -> dict[str, int]:
    """floor(s / 10) of a sum s in 0..10*count+9, as chunks of relu(s=10) of at most
    CHUNK_DOORS doors each: their sum (as terms of weight 1)."""
    terms = {}
    for j in range(-(-count // CHUNK_DOORS)):
        doors = min(CHUNK_DOORS, count - j * CHUNK_DOORS)
        terms[b.neuron(f"{name}_{j}", {"kind": "relu", "s": 10, "max": doors}, source,
                       -10 * CHUNK_DOORS * j)] = 1
    return terms


def _number(b: _Doc, prefix: str, shows: str, lo: int, hi: int) -> Digits:
    from dsl.diagnostics import VoodooError

    K = digit_count(lo, hi)
    if K > MAX_DIGITS:
        raise VoodooError(f"{shows} reaches {lo}..{hi}: a display shows at most "
                          f"{MAX_DIGITS} digits")
    v = {shows: 1}
    # side[s][k]: terms whose sum is floor(max(s*v, 0) / 10^k), s = +1 / -1.
    side = {}
    for s, top in ((1, max(hi, 0)), (-1, max(-lo, 0))):
        q = [_scale(v, s)]
        for k in range(1, K):
            count = top // 10 ** k
            q.append(_quotient(b, f"{prefix}.{'qp' if s > 0 else 'qn'}{k}", q[-1], count)
                     if count else {})
        side[s] = q + [{}]

    def signed(k):  # qp_k - qn_k: v itself for k = 0
        return v if k == 0 else _add(side[1][k], _scale(side[-1][k], -1))

    digits = []
    for k in range(K):
        acc = _add(signed(k), _scale(signed(k + 1), -10))
        bias, middle = 0, 0 < k < K - 1
        if middle:  # blank unless |v| >= 10^k
            flags = {}
            for s, lim in ((1, hi), (-1, -lo)):
                if lim >= 10 ** k:
                    flags[b.neuron(f"{prefix}.{'np' if s > 0 else 'nn'}{k}",
                                   {"kind": "step", "t": 10 ** k}, _scale(v, s))] = -BLANK
            acc, bias = _add(acc, flags), BLANK
        reach = sorted({_digit_acc(x, k, middle) for x in range(lo, hi + 1)})
        digits.append(_segments(b, f"{prefix}.d{k}", acc, bias, reach,
                                blank_zero=0 < k == K - 1))
    minus = None
    if lo < 0:
        minus = b.neuron(f"{prefix}.minus", {"kind": "lut", "lo": 0, "table": [OFF, ON]},
                         _scale(v, -1))
    return Digits(shows, lo, hi, digits, minus)


def _digit_acc(x: int, k: int, middle: bool) -> int:
    """What digit k's segment luts read for the value x (the formula of the module
    docstring, evaluated directly)."""
    d = abs(x) // 10 ** k % 10
    a = d if x >= 0 else -d
    if middle and abs(x) < 10 ** k:
        a += BLANK
    return a


def _segments(b: _Doc, prefix: str, acc: dict[str, int], bias: int, reach: list[int],
              blank_zero: bool) -> list[str]:
    """The seven segment neurons of one digit: luts over the digit's accumulator `acc`
    (+ bias), whose reachable values are `reach`. Entries no value reaches repeat their
    reachable neighbour's, so they add no doors; equal tables share one lut."""
    lo, hi = reach[0], reach[-1]

    def lit(a: int, seg: str) -> int:
        d = abs(a)
        shown = None if d > 9 or (blank_zero and d == 0) else d
        return ON if seg in segment_on(shown) else OFF

    made: dict[tuple, str] = {}
    names = []
    for seg in SEGMENTS:
        table, last = [], None
        for a in range(lo, hi + 1):
            if a in reach:
                last = lit(a, seg)
            table.append(last)
        table = tuple(table)
        name = f"{prefix}_{seg}"
        if len(set(table)) == 1:   # always lit or always dark: a constant, no lane
            names.append(b.neuron(name, {"kind": "identity"}, {}, table[0]))
            continue
        if table in made:   # the same function as an earlier segment: follow its light
            names.append(b.neuron(name, {"kind": "identity"}, {made[table]: 1}))
            continue
        made[table] = b.neuron(name, {"kind": "lut", "lo": lo, "table": list(table)}, acc, bias)
        names.append(made[table])
    return names


def _image(b: _Doc, prefix: str, shows: list[str], lo: int, hi: int) -> Image:
    step = (PIXEL_TOP - PIXEL_BASE) // max(1, hi - lo)
    pixels = [b.neuron(f"{prefix}_{k}", {"kind": "identity"}, {name: step},
                       PIXEL_BASE - step * lo) for k, name in enumerate(shows)]
    return Image(shows, pixels, lo, hi, PIXEL_BASE, step)
