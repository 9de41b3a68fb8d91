"""Requantisation as the runtimes compute it, and its staircase of thresholds.

Owns the float32 arithmetic of the two runtimes' integer kernels, replicated in NumPy, and
the exact integer thresholds where their output steps (docs/import.md, "Formulas"):

- onnxruntime (QGemm, QLinearMatMul, QLinearConv; MLAS's requantisation):
  `y = clip(rne(f32(acc) * M), qmin - zy, qmax - zy) + zy` with `M = f32(f32(sa * sb) / sy)`
  (per output channel where the weight scale is), `rne` round half to even, the clip in
  float before the rounding (the same result: the bounds are integers);
- onnxruntime's QuantizeLinear: `y = clip(rne(f32(x / s)) + zy, qmin, qmax)`;
- qonnx's Quant: `y = clip(rne(f32(x / s) + z), lo, hi)` (ROUND; FLOOR, CEIL and
  ROUND_TO_ZERO likewise), its value `s * (y - z)`.

Each is monotone non-decreasing in the accumulator for a positive scale, so over an
accumulator range [lo, hi] it is a staircase: a base value and at most (qmax - qmin)
thresholds, found by a binary search of the formula itself (`thresholds`). tests/
test_quant_import.py compares these formulas with onnxruntime on every accumulator of
wide ranges and on the neighbourhood of every threshold.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

F32 = np.float32


def type_bounds(dtype) -> tuple[int, int]:
    info = np.iinfo(dtype)
    return int(info.min), int(info.max)


def rne(v: np.ndarray) -> np.ndarray:
    return np.rint(v)  # round half to even, as nearbyint and MLAS's magic-number rounding


def ort_scale(sa, sb, sy) -> np.ndarray:
    """M = f32(f32(sa * sb) / sy), per channel when sb is a vector (ComputeOutputScale)."""
    return (F32(sa) * np.asarray(sb, dtype=F32)) / F32(sy)


def ort_requant(acc, M, zy: int, qmin: int, qmax: int) -> np.ndarray:
    """MLAS's requantisation of int32 accumulators by a float32 scale M."""
    v = np.asarray(acc).astype(F32) * F32(M)
    v = np.clip(v, F32(qmin - zy), F32(qmax - zy))
    return rne(v).astype(np.int64) + zy


def ort_quantize(x, s, zy: int, qmin: int, qmax: int) -> np.ndarray:
    """QuantizeLinear on float32 inputs."""
    v = rne(np.asarray(x, dtype=F32) / F32(s))
    return np.clip(v.astype(np.int64) + zy, qmin, qmax)


ROUNDING = {"ROUND": np.rint, "HALF_EVEN": np.rint, "FLOOR": np.floor, "CEIL": np.ceil,
            "DOWN": np.trunc, "ROUND_TO_ZERO": np.trunc,
            "UP": lambda v: np.sign(v) * np.ceil(np.abs(v)),
            "HALF_UP": lambda v: np.sign(v) * np.floor(np.abs(v) + F32(0.5)),
            "HALF_DOWN": lambda v: np.sign(v) * np.ceil(np.abs(v) - F32(0.5))}


def quant_bounds(bits: int, signed: bool, narrow: bool) -> tuple[int, int]:
    """The integer range of a qonnx Quant (its `min_int`, `max_int`)."""
    if signed:
        return -(2 ** (bits - 1)) + int(narrow), 2 ** (bits - 1) - 1
    return 0, 2 ** bits - 1 - int(narrow)


def qonnx_quant_int(x, s, z, lo: int, hi: int, mode: str = "ROUND") -> np.ndarray:
    """The integer of qonnx's Quant (its int_quant): clip(x / s + z, lo, hi), then rounded,
    in float32."""
    v = np.asarray(x, dtype=F32) / F32(s) + F32(z)
    return ROUNDING[mode](np.clip(v, F32(lo), F32(hi))).astype(np.int64)


@dataclass(frozen=True)
class Stairs:
    """A monotone integer function of an accumulator over [lo, hi]: `base` at lo and
    `steps` [(threshold, delta)], each threshold the first accumulator of a new value."""

    lo: int
    hi: int
    base: int
    steps: tuple

    @property
    def top(self) -> int:
        return self.base + sum(d for _, d in self.steps)

    def __call__(self, acc) -> np.ndarray:
        acc = np.asarray(acc, dtype=np.int64)
        out = np.full(acc.shape, self.base, dtype=np.int64)
        for t, d in self.steps:
            out += d * (acc >= t)
        return out


def thresholds(f, lo: int, hi: int) -> Stairs:
    """The staircase of a monotone non-decreasing integer function f over [lo, hi] (f takes
    an int64 array): a binary search for the first accumulator of every value."""
    base, top = int(f(np.array([lo]))[0]), int(f(np.array([hi]))[0])
    if top < base:
        raise ValueError("not monotone")
    levels = np.arange(base + 1, top + 1, dtype=np.int64)
    a = np.full(levels.shape, lo, dtype=np.int64)
    b = np.full(levels.shape, hi, dtype=np.int64)
    while np.any(a < b):
        mid = (a + b) // 2
        ok = f(mid) >= levels
        b = np.where(ok, mid, b)
        a = np.where(ok, a, mid + 1)
    steps: dict[int, int] = {}
    for t in a.tolist():
        steps[t] = steps.get(t, 0) + 1
    return Stairs(lo, hi, base, tuple(sorted(steps.items())))
