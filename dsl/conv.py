"""Convolutions and pooling as lines: the geometry, the expansion and the shape checks.

Owns what `lines SRC -> DST conv(...)`, `lines SRC -> DST avgpool(...)` and
`neuron DST[N] : maxpool(SRC, ...)` mean (docs/dnet.md, "Convolutions and pooling"), for
every front end (the .dnet parser, the JSON loader, the graph API, the torch importer):

- a **Shape** reads a flat vector as an image of `(channels, height, width)`, channel
  after channel, row after row: element `(c, y, x)` is `c*H*W + y*W + x`, the order of
  `torch.flatten` on a `(C, H, W)` tensor;
- a **Conv** (kind `conv`) is a 2-D convolution: destination element `(o, i, j)` gets a
  line from source element `(c, i*sh + ky - ph, j*sw + kx - pw)` with weight
  `W[o][c][ky][kx]` for every kernel position inside the image (outside it is zero
  padding: no line). `W` is written one row per output channel, `C*kh*kw` weights each,
  the layout of `torch.nn.Conv2d.weight.reshape(out, -1)`;
- an **avgpool** is the same with one channel in, one out, per channel and weight 1: each
  destination gets the *sum* of its window (divide in the destination's gate, or let an
  identity carry the sum into the next layer's lines, where it costs nothing);
- a **maxpool** is the window's maximum, built with the `max` operation (dsl/macros.py).

`lines_of` expands a convolution into ordinary (source index, destination index, weight)
lines; the netlist keeps a `ConvLines` record of each one so the JSON form can write the
convolution instead of its thousands of lines (dsl/jsonio.py).
"""
from __future__ import annotations

from dataclasses import dataclass

KINDS = ("conv", "avgpool")
POOLS = ("avgpool", "maxpool")
# What each form takes: (parameters, required ones).
PARAMS = {
    "conv": (("in", "out", "kernel", "stride", "pad"), ("in", "out", "kernel")),
    "avgpool": (("in", "kernel", "stride", "pad"), ("in", "kernel")),
    "maxpool": (("in", "kernel", "stride", "pad"), ("in", "kernel")),
}
USAGE = {
    "conv": "conv(in=[C, H, W], out=O, kernel=K, stride=S, pad=P) [[w, ...], ...] "
            "(one row of C*K*K weights per output channel)",
    "avgpool": "avgpool(in=[C, H, W], kernel=K, stride=S, pad=P)",
    "maxpool": "maxpool(SRC, in=[C, H, W], kernel=K, stride=S, pad=P)",
}
MAX_SIDE = 4096


class ShapeError(Exception):
    """A geometry that cannot be: the message and a hint (front ends position them)."""

    def __init__(self, message: str, hint: str, key: str | None = None):
        super().__init__(message)
        self.message, self.hint, self.key = message, hint, key  # key: the parameter at fault


@dataclass(frozen=True)
class Shape:
    channels: int
    height: int
    width: int

    @property
    def size(self) -> int:
        return self.channels * self.height * self.width

    def index(self, c: int, y: int, x: int) -> int:
        return (c * self.height + y) * self.width + x

    def __str__(self) -> str:
        return f"[{self.channels}, {self.height}, {self.width}]"


@dataclass(frozen=True)
class Conv:
    """One convolution or pool: geometry and (for conv) the weights, flat in torch's
    (out, in, ky, kx) order."""

    kind: str                    # conv, avgpool or maxpool
    shape: Shape                 # the source, read as an image
    out_channels: int
    kernel: tuple[int, int]
    stride: tuple[int, int]
    pad: tuple[int, int]
    weights: tuple[int, ...] = ()

    @property
    def out_shape(self) -> Shape:
        (kh, kw), (sh, sw), (ph, pw) = self.kernel, self.stride, self.pad
        return Shape(self.out_channels, (self.shape.height + 2 * ph - kh) // sh + 1,
                     (self.shape.width + 2 * pw - kw) // sw + 1)

    def params(self) -> dict:
        """The parameters as written (.dnet and JSON), pairs collapsed when square."""
        def one(p):
            return p[0] if p[0] == p[1] else list(p)

        out = {"in": [self.shape.channels, self.shape.height, self.shape.width]}
        if self.kind == "conv":
            out["out"] = self.out_channels
        out.update(kernel=one(self.kernel), stride=one(self.stride), pad=one(self.pad))
        return out

    def rows(self) -> list[list[int]]:
        """The weights one row per output channel (conv only)."""
        n = len(self.weights) // max(self.out_channels, 1)
        return [list(self.weights[o * n:(o + 1) * n]) for o in range(self.out_channels)]

    def text(self) -> str:
        """The .dnet form's head: conv(in=[1, 12, 12], out=8, kernel=4, stride=2, pad=1)."""
        def val(v):
            return "[" + ", ".join(map(str, v)) + "]" if isinstance(v, list) else str(v)

        return f"{self.kind}(" + ", ".join(f"{k}={val(v)}" for k, v in self.params().items()) + ")"


def make(kind: str, params: dict, weights: list[list[int]] | None = None) -> Conv:
    """A checked Conv from written parameters: {name: int or list of ints}. Raises
    ShapeError naming the first problem."""
    allowed, required = PARAMS[kind]
    for key in params:
        if key not in allowed:
            from .diagnostics import did_you_mean

            raise ShapeError(f"{kind} has no parameter '{key}'",
                             did_you_mean(key, allowed) or f"write {USAGE[kind]}", key)
    for key in required:
        if key not in params:
            raise ShapeError(f"{kind} needs the parameter '{key}'", f"write {USAGE[kind]}")
    dims = params["in"]
    if not (isinstance(dims, list) and len(dims) == 3 and all(_is_int(d) for d in dims)):
        raise ShapeError(f"{kind}: 'in' must be [channels, height, width]",
                         "write in=[1, 12, 12] for a 12x12 image of one channel", "in")
    if not all(1 <= d <= MAX_SIDE for d in dims):
        raise ShapeError(f"{kind}: in={list(dims)} needs sizes within 1..{MAX_SIDE}",
                         "give the source image's channels, height and width", "in")
    shape = Shape(*dims)
    kernel = _pair(kind, "kernel", params["kernel"], 1)
    stride = _pair(kind, "stride", params.get("stride", 1 if kind == "conv" else list(kernel)), 1)
    pad = _pair(kind, "pad", params.get("pad", 0), 0)
    if kind == "conv":
        out = params["out"]
        if not _is_int(out) or not 1 <= out <= 65536:
            raise ShapeError(f"conv: out={out!r} must be a number of output channels "
                             "within 1..65536", "write out=8", "out")
    else:
        out = shape.channels
        if any(p > k // 2 for p, k in zip(pad, kernel)):
            raise ShapeError(f"{kind}: pad={_text(pad)} is more than half the kernel "
                             f"{_text(kernel)}", "a pool's padding is at most kernel // 2, so "
                                                 "every window holds an element", "pad")
    for (k, p, n, what) in ((kernel[0], pad[0], shape.height, "height"),
                            (kernel[1], pad[1], shape.width, "width")):
        if k > n + 2 * p:
            raise ShapeError(f"{kind}: the kernel {_text(kernel)} is larger than the padded "
                             f"image's {what} {n + 2 * p}", "use a smaller kernel or more pad",
                             "kernel")
    flat: tuple[int, ...] = ()
    if kind == "conv":
        flat = _weights(shape, out, kernel, weights)
    elif weights is not None:
        raise ShapeError(f"{kind} takes no weights", f"write {USAGE[kind]}")
    return Conv(kind, shape, out, kernel, stride, pad, flat)


def _weights(shape: Shape, out: int, kernel, weights) -> tuple[int, ...]:
    n = shape.channels * kernel[0] * kernel[1]
    if weights is None:
        raise ShapeError("conv needs its weights after the parameters",
                         f"write one row of {n} weights per output channel: [[w, ...], ...]")
    if len(weights) != out:
        raise ShapeError(f"conv weights have {len(weights)} rows but out={out}",
                         f"write one row per output channel, each of {n} weights "
                         f"(in channels x kernel height x kernel width)")
    for o, row in enumerate(weights):
        if len(row) != n:
            chans = f"{shape.channels} channel{'s' if shape.channels != 1 else ''}"
            raise ShapeError(f"conv weights row {o} has {len(row)} weights; it needs {n}",
                             f"{chans} x {kernel[0]} x {kernel[1]} kernel positions, in that "
                             "order")
    return tuple(w for row in weights for w in row)


def _pair(kind: str, key: str, value, least: int) -> tuple[int, int]:
    if _is_int(value):
        value = [value, value]
    if not (isinstance(value, list) and len(value) == 2 and all(_is_int(v) for v in value)):
        raise ShapeError(f"{kind}: '{key}' must be a number or [height, width]",
                         f"write {key}=2 or {key}=[2, 1]", key)
    if not all(least <= v <= MAX_SIDE for v in value):
        raise ShapeError(f"{kind}: {key}={_text(tuple(value))} is out of range",
                         f"use {key} within {least}..{MAX_SIDE}", key)
    return value[0], value[1]


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _text(pair) -> str:
    return str(pair[0]) if pair[0] == pair[1] else f"[{pair[0]}, {pair[1]}]"


def check_sizes(conv: Conv, n_src: int, n_dst: int | None) -> None:
    """The source vector must be the image; the destination (if given) its result."""
    if n_src != conv.shape.size:
        s = conv.shape
        raise ShapeError(f"{conv.kind}: the source has {n_src} elements but in={s} holds "
                         f"{s.size}", "in=[channels, height, width] must describe the source "
                                      "vector exactly")
    out = conv.out_shape
    if out.height < 1 or out.width < 1:
        raise ShapeError(f"{conv.kind}: the output would be {out.height}x{out.width}",
                         "use a smaller kernel or stride, or more padding")
    if n_dst is not None and n_dst != out.size:
        raise ShapeError(f"{conv.kind}: the destination has {n_dst} elements but the "
                         f"result is {out} = {out.size}",
                         f"declare the destination with {out.size} elements")


def windows(conv: Conv):
    """For every destination element in order: [(source index, kernel position)], the
    window's elements inside the image; a kernel position is (c, ky, kx)."""
    s, out = conv.shape, conv.out_shape
    (kh, kw), (sh, sw), (ph, pw) = conv.kernel, conv.stride, conv.pad
    chans = range(s.channels)
    for o in range(out.channels):
        cs = chans if conv.kind == "conv" else (o,)
        for i in range(out.height):
            for j in range(out.width):
                win = []
                for c in cs:
                    for ky in range(kh):
                        y = i * sh + ky - ph
                        if not 0 <= y < s.height:
                            continue
                        for kx in range(kw):
                            x = j * sw + kx - pw
                            if 0 <= x < s.width:
                                win.append((s.index(c, y, x), (c, ky, kx)))
                yield win


def lines_of(conv: Conv) -> list[tuple[int, int, int]]:
    """(source index, destination index, weight) of every nonzero line, in destination
    order; a pool's weights are 1."""
    kh, kw = conv.kernel
    per = conv.shape.channels * kh * kw
    out = []
    for d, win in enumerate(windows(conv)):
        o = d // (conv.out_shape.height * conv.out_shape.width)
        for src, (c, ky, kx) in win:
            w = conv.weights[o * per + (c * kh + ky) * kw + kx] if conv.kind == "conv" else 1
            if w:
                out.append((src, d, w))
    return out


@dataclass(frozen=True)
class ConvLines:
    """A convolution written between two vectors: where its lines are in a netlist.
    `src`/`dst` are vector names and `src_start`/`dst_start` the first element used
    (a slice), so the record survives renumbering of node ids."""

    conv: Conv
    src: str
    src_start: int
    dst: str
    dst_start: int

    def pairs(self, groups: dict[str, list[int]]) -> dict[tuple[int, int], int] | None:
        """{(source id, destination id): weight} in a netlist with these groups, or None
        if the vectors are no longer there (a pass rebuilt the netlist)."""
        s, d = groups.get(self.src), groups.get(self.dst)
        if s is None or d is None or len(s) < self.src_start + self.conv.shape.size \
                or len(d) < self.dst_start + self.conv.out_shape.size:
            return None
        return {(s[self.src_start + i], d[self.dst_start + j]): w
                for i, j, w in lines_of(self.conv)}

    def ref(self, side: str, groups: dict[str, list[int]]) -> str:
        """The source or destination as a reference: NAME, or NAME[a:b] for a slice."""
        name, start = (self.src, self.src_start) if side == "src" else (self.dst, self.dst_start)
        n = self.conv.shape.size if side == "src" else self.conv.out_shape.size
        if start == 0 and len(groups.get(name, ())) == n:
            return name
        return f"{name}[{start}:{start + n}]"


def covered(net) -> tuple[list[ConvLines], set[tuple[int, int]]]:
    """The convolution records of `net` whose lines are exactly in the netlist, and the
    (source, destination) pairs they cover: what a writer may leave out of its lines."""
    good, pairs = [], set()
    for rec in getattr(net, "convs", ()):
        got = rec.pairs(net.groups)
        if got is None or any(net.nodes[d].weights.get(s) != w for (s, d), w in got.items()):
            continue
        if any(p in pairs for p in got):
            continue
        good.append(rec)
        pairs.update(got)
    return good, pairs
