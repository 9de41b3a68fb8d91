"""Benchmark: compile a generated 10,000-line ACS file (target: under 3 s).

The file looks like what the map generator writes: many scripts that copy accumulator
lights into door ceilings through line specials, globals for readback, loops with
Delay(1), a few functions and map arrays. Prints the compile time, and as a baseline
measured in the same run the time Python takes to `compile()` Python source of the same
line count (so the figure can be read on a slower or faster machine).

    python bench/acs_compile.py [--lines 10000] [--repeat 3]
"""
from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))


def generate_acs(lines: int) -> str:
    out = ['#include "zcommon.acs"', "", "// accumulators and doors of a generated network",
           "#define DOOR_SPEED 8000", ""]
    for g in range(1, 61):
        out.append(f"global int {g}:user{g};")
    out += ["int weights[64] = {" + ", ".join(str((i * 37) % 201 - 100) for i in range(64)) + "};",
            "int layer;", "",
            "function int clamp(int v, int lo, int hi)", "{",
            "    if (v < lo) return lo;", "    if (v > hi) return hi;", "    return v;", "}", ""]
    script = 1
    while len(out) < lines - 30:
        tag = 100 + script
        out += [f"// neuron h{script}: copy accumulator light to door ceiling",
                f"script {script} (int gain, int bias)", "{",
                f"    int v = GetSectorLightLevel({tag});",
                "    int i;",
                "    v = clamp(v * gain + bias, -32768, 32767);",
                f"    Ceiling_MoveToValue({tag + 1000}, DOOR_SPEED, v, 0);",
                f"    Light_ChangeToValue({tag}, 0);",
                "    for (i = 0; i < 8; i++)", "    {",
                f"        Light_RaiseByValue({tag + 2000}, weights[(i + {script}) % 64]);",
                "        if (i % 4 == 3) Delay(1);", "    }",
                f"    user{1 + script % 60} = GetSectorCeilingZ({tag + 1000}, 0, 0) >> 16;",
                "    layer++;", "}", ""]
        script += 1
    out += ["script 32000 OPEN", "{", "    layer = 0;", "    Delay(1);", "    user1 = layer;",
            "}"]
    while len(out) < lines:
        out.append("// padding")
    return "\n".join(out[:lines]) + "\n"


def generate_python(lines: int) -> str:
    out = []
    i = 0
    while len(out) < lines:
        out += [f"def neuron_{i}(gain, bias, lights, doors):",
                f"    v = lights[{i}] * gain + bias",
                "    if v < -32768:", "        v = -32768",
                f"    doors[{i}] = v",
                "    for k in range(8):", f"        lights[{i} + 2000] += k",
                ""]
        i += 1
    return "\n".join(out[:lines]) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lines", type=int, default=10000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()

    import acs
    from acs import parser

    source = generate_acs(args.lines)
    pysrc = generate_python(args.lines)
    t0 = time.perf_counter()
    parser._parser()   # grammar load, once per process
    load = time.perf_counter() - t0

    best = base = float("inf")
    size = 0
    for _ in range(args.repeat):
        t = time.perf_counter()
        lump = acs.compile_source(source, "bench.acs")
        best = min(best, time.perf_counter() - t)
        size = len(lump)
        t = time.perf_counter()
        compile(pysrc, "bench.py", "exec")
        base = min(base, time.perf_counter() - t)
    print(f"source: {args.lines} lines, {len(source):,} bytes; BEHAVIOR: {size:,} bytes")
    print(f"grammar load (once per process): {load:.3f} s")
    print(f"compile: {best:.3f} s (best of {args.repeat}; target < 3 s)")
    print(f"baseline, Python compile() of {args.lines} lines: {base:.3f} s; "
          f"ratio {best / base:.1f}x")
    return 0 if best < 3.0 else 1


if __name__ == "__main__":
    sys.exit(main())
