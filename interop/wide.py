"""Accumulators a light cannot hold, computed exactly with lights that can
(docs/import.md, "Wide accumulators").

A light holds -32768..32767; an int8 layer's accumulator reaches millions. A wide layer
`y = Stairs(acc)`, `acc = sum_i W_i v_i + b`, is built from ordinary gates:

1. **digits**: each source value is split into base-16 digits `v = lo + 16 d1 + d0`
   (two relu lanes of 15 doors per source element, shared by every consumer), so a term
   is at most |W| * 15;
2. **partials**: each digit plane's weights are cut into chunks so every partial sum
   `P_g` spans at most `PART` (proven per neuron; a lane's floor rises with its
   thresholds, so short spans keep lanes short); each is split into `P_g - lo_g =
   R h_g + l_g` by two lanes, `h_g = relu(s=R)` and `l_g = relu(s=1, max=R-1)`, with
   R = 256 / c_g for the plane's coefficient c_g (1 or 16), so `c_g P_g` is `256 h_g +
   c_g l_g` and every partial carries at most 255 (l_g's light holds P_g - lo_g - R h_g,
   within a light because P_g's span is);
3. **carries**, in a tree of at most `BATCH` terms each: `acc = 256 V + U` exactly, U in
   0..255 (the low terms `c_g l_g` and C0 mod 256, less 256 per carry) and `V = sum h_g +
   every carry + floor(C0 / 256)` (C0 the bias plus every c_g lo_g): sums of lanes, so no
   light ever holds more than its parts;
4. **staircase**: `G = lut(V)`, the value at 256 V; the next thresholds `x_{G+j} = 256 N_j +
   n_j` are luts of G; `m_j = [V - N_j(G) >= 0]` and `e_j = [256 m_j + U - n_j(G) >= 256]`
   say whether threshold G + j lies at or below 256 V + U (it lies above 256 V, so it does
   iff N_j == V and U >= n_j); `y = G + sum_j e_j`, j up to the most thresholds in one
   block of 256.

Every gate is relu, step or lut and every light is proven within 16 bits by
dsl/ranges.py (`build.py check`); a layer whose V (its accumulator / 256) or carries would
still not fit is refused naming the layer and its proven range.
"""
from __future__ import annotations

import numpy as np

from dsl.diagnostics import VoodooError

LIGHT = 32_767
# A partial sum's span. Its lanes' floors rise with their thresholds (a lane is about
# 4.7 map units long per accumulator step it spans, mapgen/layout.py), so a partial of
# 4,000 keeps its lane under 19,000 units of the map's 65,536.
PART = 2_000
RADIX = 256


def acc_bounds(layer, bias, src) -> tuple[int, int]:
    """The proven range of the layer's accumulators as the netlist forms them: the
    source's values times the weights, plus the folded bias."""
    from interop import ort_pairs

    W = layer.W.reshape(layer.W.shape[0], -1)
    b = np.asarray(bias).reshape(len(W), -1)
    lo = np.minimum(W * src.lo, W * src.hi).sum(1)[:, None] + b
    hi = np.maximum(W * src.lo, W * src.hi).sum(1)[:, None] + b
    if ort_pairs.emulated(layer):  # onnxruntime's saturated pairs, subtracted or added
        down, up = ort_pairs.bounds(layer, src)
        lo, hi = lo - down.reshape(lo.shape), hi + up.reshape(hi.shape)
    return int(lo.min()), int(hi.max())


def fits(layer, bias, src) -> bool:
    from interop.quant_emit import LUT_WINDOW

    lo, hi = acc_bounds(layer, bias, src)
    windows = [st.steps[-1][0] - st.steps[0][0] for st in layer.stairs if st and st.steps]
    return -LIGHT <= lo and hi <= LIGHT and max(windows, default=0) < LUT_WINDOW


def _refuse(e, layer, bias, why: str):
    lo, hi = acc_bounds(layer, bias, e.layers[layer.src])
    raise VoodooError(f"{e.where}: layer {layer.name!r}: its accumulators reach {lo}..{hi}, "
                      f"beyond a light's -32768..32767, and {why}\n    hint: fewer inputs "
                      "per neuron, fewer bits, or a smaller input range")


def _ints(v) -> str:
    return ", ".join(str(int(a)) for a in np.asarray(v).reshape(-1))


def _wire(src: str, dst: str, pairs, w: int = 1) -> str:
    """lines from src[i] to dst[j] for each (i, j), all of weight w."""
    body = ", ".join(f"{i} -> {j} : {w}" for i, j in pairs)
    return f"lines {src} -> {dst} sparse {{ {body} }}"


def digits(e, k: int) -> list[tuple[str, int, int]]:
    """The digit planes of layer k's values: (vector, coefficient, largest digit);
    value = layer.lo + sum coefficient * digit. Made once per source layer."""
    cache = e.__dict__.setdefault("digit_planes", {})
    if k in cache:
        return cache[k]
    layer, name = e.layers[k], e.vec(k)
    n, span = int(np.prod(layer.shape)), layer.hi - layer.lo
    if span <= 15:
        e.out += [f"neuron D{k}[{n}] : relu(s=1, max={span})",
                  f"lines {name} -> D{k} diag [{_ints(np.ones(n))}]",
                  f"bias D{k} = {-layer.lo}"]
        planes = [(f"D{k}", 1, span)]
    elif span <= 255:
        e.out += [f"neuron D{k}h[{n}] : relu(s=16, max={span // 16})",
                  f"lines {name} -> D{k}h diag [{_ints(np.ones(n))}]",
                  f"bias D{k}h = {-layer.lo}",
                  f"neuron D{k}l[{n}] : relu(s=1, max=15)",
                  f"lines {name} -> D{k}l diag [{_ints(np.ones(n))}]",
                  f"lines D{k}h -> D{k}l diag [{_ints(np.full(n, -16))}]",
                  f"bias D{k}l = {-layer.lo}"]
        planes = [(f"D{k}h", 16, span // 16), (f"D{k}l", 1, 15)]
    else:
        raise VoodooError(f"{e.where}: layer {layer.name!r} gives values {layer.lo}..{layer.hi}"
                          "; a wide layer reads at most 8-bit sources")
    cache[k] = planes
    return planes


def _partials(W: np.ndarray, planes) -> list[tuple[int, int, int]]:
    """(plane, first weight, end) chunks of each row's weights in order (a convolution's
    flattened (channel, ky, kx)), each partial spanning at most PART for every output,
    greedily."""
    Wa = np.abs(W.reshape(W.shape[0], -1))
    out = []
    for p, (_, _, dmax) in enumerate(planes):
        a = 0
        while a < Wa.shape[1]:
            b, span = a, np.zeros(W.shape[0], np.int64)
            while b < Wa.shape[1] and (span + Wa[:, b] * dmax).max() <= PART:
                span += Wa[:, b] * dmax
                b += 1
            if b == a:  # one term wider than PART (uint8 weights less their zero point
                b = a + 1  # reach 255): a partial of its own, its lanes a little longer
            out.append((p, a, b))
            a = b
    return out


def _present(layer, W: np.ndarray) -> np.ndarray:
    """Per output element, the sum of the weights of the terms present (a convolution's
    border has fewer)."""
    if layer.kind == "dense":
        return W.sum(1)
    import torch

    c = layer.conv
    ones = torch.ones((1, *c["in"]), dtype=torch.float64)
    got = torch.nn.functional.conv2d(ones, torch.as_tensor(W, dtype=torch.float64),
                                     stride=c["stride"], padding=c["pad"])[0]
    return got.numpy().round().astype(np.int64).reshape(-1)


def _partial_lines(layer, plane, a, b) -> tuple[list[str], np.ndarray]:
    """Lines from a chunk of a digit plane (weights a..b of each row) into a partial's
    vector ({dst}), and the chunk's weights per output (the rest zero: no line)."""
    flat = layer.W.reshape(layer.W.shape[0], -1)
    if layer.kind == "dense":
        Wg = flat[:, a:b]
        rows = ",\n".join(f"  [{_ints(r)}]" for r in Wg)
        return [f"lines {plane}[{a}:{b}] -> {{dst}} dense [\n{rows}]"], Wg
    c = layer.conv
    per_in, hw = int(np.prod(c["kernel"])), c["in"][1] * c["in"][2]
    c0, c1 = a // per_in, (b - 1) // per_in + 1
    Wg = np.zeros_like(flat)
    Wg[:, a:b] = flat[:, a:b]
    Wg = Wg[:, c0 * per_in:c1 * per_in]
    rows = ",\n".join(f"  [{_ints(r)}]" for r in Wg)
    return [f"lines {plane}[{c0 * hw}:{c1 * hw}] -> {{dst}} conv(in=[{c1 - c0}, "
            f"{c['in'][1]}, {c['in'][2]}], out={c['out']}, kernel=[{_ints(c['kernel'])}], "
            f"stride=[{_ints(c['stride'])}], pad=[{_ints(c['pad'])}]) [\n{rows}]"], Wg


def wide_layer(e, k, layer, bias) -> str:
    """The vectors of a wide dense or convolution layer (the module docstring); returns
    the name of its output vector."""
    src = e.layers[layer.src]
    planes = digits(e, layer.src)
    W = layer.W.astype(np.int64)
    per = int(np.prod(layer.shape[1:])) if layer.kind == "conv" else 1
    n = W.shape[0] * per
    parts = _partials(W, planes)
    C0 = np.asarray(bias, np.int64).reshape(-1) + src.lo * _present(layer, W)
    coefs, v_span = [], np.zeros(n, np.int64)
    for g, (p, a, b) in enumerate(parts):
        plane, c, dmax = planes[p]
        lines, Wg = _partial_lines(layer, plane, a, b)
        lo_g = np.repeat(np.minimum(Wg, 0).sum(1) * dmax, per)
        tops_g = np.abs(Wg).sum(1) * dmax
        top = int(tops_g.max())
        C0 = C0 + c * lo_g
        coefs.append(c)
        R = RADIX // c  # c * (R h + l) = 256 h + c l, with c l at most 256 - c
        v_span += np.repeat(tops_g // R, per)
        # every relu has its max written (issue 37 item 16: a vector's elements' own
        # maxima are not all kept by export --json); floor(P / R) never passes top // R
        e.out += [f"neuron H{k}_{g}[{n}] : relu(s={R}, max={top // R})"]
        e.out += [t.replace("{dst}", f"H{k}_{g}") for t in lines]
        e.out += [f"bias H{k}_{g} = [{_ints(-lo_g)}]",
                  f"neuron U{k}_{g}[{n}] : relu(s=1, max={R - 1})"]
        e.out += [t.replace("{dst}", f"U{k}_{g}") for t in lines]
        e.out += [f"lines H{k}_{g} -> U{k}_{g} diag [{_ints(np.full(n, -R))}]",
                  f"bias U{k}_{g} = [{_ints(-lo_g)}]"]
    terms = [{f"U{k}_{g}": c} for g, c in enumerate(coefs)]
    extra_v, v_more = [], (0, 0)
    from interop import ort_pairs

    if ort_pairs.emulated(layer):  # onnxruntime's saturated pairs: into V and U
        extra_v, more, const, v_more = ort_pairs.wide_parts(e, k, layer)
        terms += more
        C0 = C0 + const
    low, high = C0 % RADIX, C0 // RADIX
    v_range = _check_v(e, layer, bias, high, v_span + 2 * len(terms) + 2, v_more)  # + carries
    carries, u, u_const = _carries(e, k, n, terms, low)
    ctx = {"k": k, "n": n, "coefs": coefs, "low": u_const, "high": high, "per": per,
           "carries": carries, "u": u, "extra_v": extra_v, "v_range": v_range}
    return _staircases(e, layer, bias, ctx)


def _check_v(e, layer, bias, high, span, more=(0, 0)):
    """V (the accumulator / 256) must fit a light, element by element: from floor(C0 /
    256) up by every h_g's and carry's largest (`span`), and as far as onnxruntime's
    saturated pairs move it (`more`, down and up); refused otherwise, naming the layer and
    its proven range. Returns V's range per element (the m_j lights are checked with
    their thresholds, `_group`)."""
    v_lo, v_hi = high - more[0], high + span + more[1]
    if v_lo.min() < -LIGHT - 1 or v_hi.max() > LIGHT:
        _refuse(e, layer, bias, f"even its accumulator / 256 reaches {int(v_lo.min())}.."
                f"{int(v_hi.max())}")
    return v_lo, v_hi


BATCH = 7   # terms of at most 255 per carry: its lane's doors span at most 2,048


def _carries(e, k: int, n: int, terms: list[dict], low):
    """Carries in a tree: each carry takes up to BATCH terms in 0..255 (linear in lanes),
    and leaves the term `sum - 256 carry` in 0..255 for the next level, until one term is
    left: U. Returns the carries (each adds 1 to V), U as {vector: weight} and U's
    constant (C0 mod 256, in the first carry's bias, or 0 when a lane holds it), which
    the callers add.

    A term left by a batch of batches is a lane of its own (`R`, relu 0..255) when another
    level follows: as a sum of lanes, its proven range (every term's, less 256 times every
    carry's) would grow with each level past what the lights reading it hold."""
    carries, level = [], 0
    consts = [low] + [None] * (len(terms) - 1)   # the constant rides with the first term
    while True:
        new, new_consts = [], []
        last = len(terms) <= BATCH
        for b in range(0, len(terms), BATCH):
            batch, const = terms[b:b + BATCH], consts[b]
            name = f"C{k}_{level}_{b // BATCH}"
            total: dict = {}
            for t in batch:
                for v, w in t.items():
                    total[v] = total.get(v, 0) + w
            top = (len(batch) + int(const is not None)) * (RADIX - 1) // RADIX
            e.out.append(f"neuron {name}[{n}] : relu(s={RADIX}, max={top})")
            e.out += [f"lines {v} -> {name} diag [{_ints(np.full(n, w))}]"
                      for v, w in total.items()]
            if const is not None:
                e.out.append(f"bias {name} = [{_ints(const)}]")
            total[name] = total.get(name, 0) - RADIX
            carries.append(name)
            if level >= 1 and not last:
                total, const = _lane(e, f"R{k}_{level}_{b // BATCH}", n, total, const)
            new.append(total)
            new_consts.append(const)
        if len(new) == 1:
            return carries, new[0], np.zeros(n, np.int64) if new_consts[0] is None \
                else new_consts[0]
        terms, consts, level = new, new_consts, level + 1


def _lane(e, name: str, n: int, total: dict, const) -> tuple[dict, None]:
    """A term (a sum of lanes in 0..255, its constant included) as a relu lane of its own."""
    e.out.append(f"neuron {name}[{n}] : relu(s=1, max={RADIX - 1})")
    e.out += [f"lines {v} -> {name} diag [{_ints(np.full(n, w))}]" for v, w in total.items()]
    if const is not None:
        e.out.append(f"bias {name} = [{_ints(const)}]")
    return {name: 1}, None


def _sums(e, ctx) -> None:
    """V = sum h_g + every carry (+ the saturated pairs' part), and U = sum c_g l_g - 256 *
    carries, as identity vectors VS and US: free in a map (their readers take their lines)
    and written once for all their readers. Their constants are the readers' biases."""
    k, n = ctx["k"], ctx["n"]

    def diag(src, dst, w=1):
        return f"lines {src} -> {dst} diag [{_ints(np.full(n, w))}]"
    e.out.append(f"neuron VS{k}[{n}] : identity")
    e.out += [diag(f"H{k}_{g}", f"VS{k}") for g in range(len(ctx["coefs"]))]
    e.out += [diag(c, f"VS{k}") for c in ctx["carries"] + ctx["extra_v"]]
    e.out.append(f"neuron US{k}[{n}] : identity")
    e.out += [diag(v, f"US{k}", w) for v, w in ctx["u"].items()]


def _v_lines(dst: str, chans, ctx) -> list[str]:
    """V = sum h_g + every carry + floor(C0 / 256), into dst (its element j is element
    chans[j] of the layer); the constant is the caller's bias."""
    return [_wire(f"VS{ctx['k']}", dst, [(ch, j) for j, ch in enumerate(chans)])]


def _u_lines(dst: str, chans, ctx) -> list[str]:
    """U = sum c_g l_g + C0 mod 256 - 256 * carries, in 0..255 (the constant is the
    caller's bias)."""
    return [_wire(f"US{ctx['k']}", dst, [(ch, j) for j, ch in enumerate(chans)])]


def _staircases(e, layer, bias, ctx) -> str:
    """Per group of channels with one staircase: G, the next thresholds, the refinements;
    then the output vector y = G + sum e_j in channel order."""
    k, n = ctx["k"], ctx["n"]
    groups: dict = {}
    per = ctx["per"]
    for ch, st in enumerate(layer.stairs):  # a group's elements, in channel order
        groups.setdefault(st, []).extend(range(ch * per, (ch + 1) * per))
    y = f"Y{k}"
    out_lines = []
    _sums(e, ctx)
    for q, (st, chans) in enumerate(groups.items()):
        if st is None:
            _refuse(e, layer, bias, "an unquantised wide output is not read")
        names = _group(e, layer, bias, st, chans, f"{k}_{q}", ctx)
        pairs = [(j, ch) for j, ch in enumerate(chans)]
        out_lines += [_wire(nm, y, pairs) for nm in names]
    e.out.append(f"neuron {y}[{n}] : identity")
    e.out += out_lines
    return y


def _group(e, layer, bias, st, chans, tag: str, ctx) -> list[str]:
    """G, N_j, n_j, m_j, e_j for one staircase; returns the vectors y sums."""
    xs = np.repeat([t for t, _ in st.steps], [d for _, d in st.steps]).astype(np.int64)
    m = len(chans)
    high = ctx["high"][chans]
    if not xs.size:
        e.out.append(f"neuron G{tag}[{m}] : lut(0..0, [{st.base}])")
        return [f"G{tag}"]
    blocks = np.floor_divide(xs - 1, RADIX)
    J = int(np.unique(blocks, return_counts=True)[1].max())
    # G(V) = st(256 V): a lut over the V window of the thresholds
    v_lo, v_hi = int(np.floor_divide(xs[0] - 1, RADIX)), int(np.floor_divide(xs[-1] - 1, RADIX)) + 1
    if v_hi - v_lo > 16_384:
        _refuse(e, layer, bias, f"its thresholds span {v_hi - v_lo} blocks of 256")
    vs = np.arange(v_lo, v_hi + 1)
    e.out.append(f"neuron G{tag}[{m}] : lut({v_lo}..{v_hi}, [{_ints(st(RADIX * vs))}])")
    e.out += _v_lines(f"G{tag}", chans, ctx)
    e.out.append(f"bias G{tag} = [{_ints(high)}]")
    gs = np.arange(st.base, st.top + 1)
    names = [f"G{tag}"]
    for j in range(1, J + 1):
        idx = gs - st.base + j - 1                     # 0-based index of threshold G + j
        x = xs[np.minimum(idx, len(xs) - 1)]
        # past the last threshold: n = 256, which U (at most 255) never reaches
        N = np.where(idx < len(xs), np.floor_divide(x, RADIX), v_lo)
        nu = np.where(idx < len(xs), np.mod(x, RADIX), RADIX)
        t = f"{tag}_{j}"
        low_v, high_v = (r[chans] for r in ctx["v_range"])   # V's own range, per element
        if (low_v - N.max()).min() < -LIGHT - 1 or (high_v - N.min()).max() > LIGHT:
            _refuse(e, layer, bias, f"its accumulator / 256 ({int(low_v.min())}.."
                    f"{int(high_v.max())}) less a threshold's block ({int(N.min())}.."
                    f"{int(N.max())}) would pass a light")
        e.out += [f"neuron N{t}[{m}] : lut({st.base}..{st.top}, [{_ints(N)}])",
                  f"lines G{tag} -> N{t} diag [{_ints(np.ones(m))}]",
                  f"neuron n{t}[{m}] : lut({st.base}..{st.top}, [{_ints(nu)}])",
                  f"lines G{tag} -> n{t} diag [{_ints(np.ones(m))}]",
                  f"neuron M{t}[{m}] : step(t=0)"]
        e.out += _v_lines(f"M{t}", chans, ctx)
        e.out += [f"lines N{t} -> M{t} diag [{_ints(np.full(m, -1))}]",
                  f"bias M{t} = [{_ints(high)}]",
                  f"neuron E{t}[{m}] : step(t={RADIX})",
                  f"lines M{t} -> E{t} diag [{_ints(np.full(m, RADIX))}]",
                  f"lines n{t} -> E{t} diag [{_ints(np.full(m, -1))}]"]
        e.out += _u_lines(f"E{t}", chans, ctx)
        e.out.append(f"bias E{t} = [{_ints(ctx['low'][chans])}]")
        names.append(f"E{t}")
    return names
