#!/usr/bin/env python3
"""How large a chat model one map holds (issue 36): each model's player map (the chat room
around its netlist, demos/chat.py), what the compiler counts and whether its budgets take
it, and what loading it costs ViZDoom and GZDoom.

    python bench/one_map.py                       # the checked-in one-map model (chat)
    python bench/one_map.py chat large            # configurations, or .dnet paths
    python bench/one_map.py large --over-budget   # a refused map built anyway, to measure it
    python bench/one_map.py chat --no-gzdoom

Per model: the compiler's verdict (`fits`, or the budget it breaks: linedefs, sectors,
extent, ACS ...), linedefs, sectors, things, the map's extent, the tics of one step and
the compiler's peak memory; then the engines. ViZDoom: the engine CPU (the game process and the proxy above it,
from schedstat) and wall time from starting the engine to the map's ready signal, and the
game process's peak resident memory (VmHWM). GZDoom ($GZDOOM, under xvfb-run): the CPU
(user + system) and peak resident memory (`/usr/bin/time`) of starting the map, running
35 tics and quitting, beside the same for a tiny map (hello) as the baseline.

`--over-budget` raises the compiler's budgets of linedefs and sectors (mapgen.checks, for
this run only) so that a map refused for them is still written and loaded: what the
engines make of it says whether the budget or the engine is the limit.
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from dsl.diagnostics import VoodooError  # noqa: E402


def netlist_path(name: str) -> str:
    """A configuration's checked-in netlist (models.chat_train.NETLISTS) or a .dnet path."""
    from models.chat_train import NETLISTS

    if name in NETLISTS:
        return NETLISTS[name]
    if name.endswith(".dnet") and os.path.exists(name):
        return name
    raise VoodooError(f"{name}: give a configuration with a checked-in netlist "
                      f"({', '.join(sorted(NETLISTS))}) or a .dnet file")


def build(path: str, out: str, over_budget: bool) -> dict:
    """Compile the netlist with the chat room into `out`; the counts, or the refusal."""
    from demos.chat import build as build_chat
    from dsl import load
    from mapgen import checks

    saved = checks.MAX_LINES, checks.MAX_SECTORS
    if over_budget:
        checks.MAX_LINES, checks.MAX_SECTORS = 10 ** 7, 10 ** 7
    t0 = time.perf_counter()
    try:
        loaded = build_chat(load(path), out)
    except VoodooError as e:
        return dict(fits=False, why=str(e).splitlines()[0], compile=time.perf_counter() - t0)
    finally:
        checks.MAX_LINES, checks.MAX_SECTORS = saved
    info = loaded.infos[0]
    r = counts(out)
    fits = r["linedefs"] <= saved[0] and r["sectors"] <= saved[1]
    return dict(r, fits=fits, why="" if fits else "over the budgets (--over-budget)",
                compile=time.perf_counter() - t0, tics=info["inference_tics"], info=info,
                wad_mb=os.path.getsize(out) / 1e6)


def counts(wad: str) -> dict:
    """Linedefs, sectors and things of MAP01's TEXTMAP, and its vertices' extent in units."""
    import re

    from acs.wad import read_wad

    text = read_wad(wad).maps[0].textmap
    n = {k: len(re.findall(rf"^{k}\b", text, re.M)) for k in ("linedef", "sector", "thing")}
    xy = re.findall(r"^vertex \{ x = (-?[\d.]+); y = (-?[\d.]+);", text, re.M)
    xs, ys = [float(x) for x, _ in xy], [float(y) for _, y in xy]
    return dict(linedefs=n["linedef"], sectors=n["sector"], things=n["thing"],
                extent=(max(xs) - min(xs), max(ys) - min(ys)))


def _descendants(pid: int) -> list[int]:
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        try:
            for task in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{task}/children") as f:
                    kids = [int(k) for k in f.read().split()]
                out += kids
                todo += kids
        except OSError:
            continue
    return out


def _cpu(pids: list[int]) -> float:
    """CPU seconds of these processes' threads (schedstat: nanoseconds)."""
    total = 0.0
    for p in pids:
        try:
            for task in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{task}/schedstat") as f:
                    total += int(f.read().split()[0]) / 1e9
        except OSError:
            continue
    return total


def _hwm_mb(pids: list[int]) -> float:
    best = 0
    for p in pids:
        try:
            with open(f"/proc/{p}/status") as f:
                best = max([best] + [int(line.split()[1]) for line in f
                                     if line.startswith("VmHWM:")])
        except OSError:
            continue
    return best / 1024


def vizdoom_load(wad: str, info: dict) -> dict:
    """Start the map in ViZDoom until its ready signal: wall, engine CPU, peak memory."""
    from engine.runner import MapRunner

    t0 = time.perf_counter()
    with MapRunner(wad, info):
        wall = time.perf_counter() - t0
        pids = _descendants(os.getpid())
        return dict(ok=True, wall=wall, cpu=_cpu(pids), mb=_hwm_mb(pids))


def gzdoom_load(binary: str, wad: str, tics: int = 35) -> dict:
    """GZDoom under xvfb-run: start MAP01, run `tics` tics, quit; its CPU and peak memory."""
    from engine.gzdoom import freedoom2

    work = tempfile.mkdtemp(prefix="voodoonet-onemap-")
    cmd = ["xvfb-run", "-a", "/usr/bin/time", "-f", "VNCPU %U %S %M", binary, "-iwad",
           freedoom2(), "-file", os.path.abspath(wad), "-nosound", "-nomusic",
           "-noautoload", "-config", os.path.join(work, "gz.ini"), "+logfile",
           os.path.join(work, "gz.log"), "+map", "MAP01", f"+wait {tics}; quit"]
    t0 = time.perf_counter()
    try:
        p = subprocess.run(cmd, cwd=work, capture_output=True, text=True, timeout=1200,
                           env={**os.environ, "HOME": work})
        wall = time.perf_counter() - t0
        got = [x.split()[1:] for x in p.stderr.splitlines() if x.startswith("VNCPU ")]
        if p.returncode != 0 or not got:
            tail = (p.stderr.strip().splitlines() or ["no output"])[-1][:80]
            return dict(ok=False, why=f"exit {p.returncode}: {tail}", wall=wall)
        u, s, kb = got[0]
        return dict(ok=True, wall=wall, cpu=float(u) + float(s), mb=int(kb) / 1024)
    except subprocess.TimeoutExpired:
        return dict(ok=False, why="timed out (1,200 s)", wall=1200.0)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("models", nargs="*", default=["chat"],
                   help="configurations with a checked-in netlist, or .dnet files")
    p.add_argument("--over-budget", action="store_true",
                   help="write and load maps the compiler's budgets refuse (measurement)")
    p.add_argument("--no-gzdoom", action="store_true")
    args = p.parse_args(argv)
    gz = None if args.no_gzdoom else os.environ.get("GZDOOM")
    if gz and not shutil.which("xvfb-run"):
        print("GZDoom: xvfb-run is missing; GZDoom NOT measured", file=sys.stderr)
        gz = None
    if not args.no_gzdoom and not gz:
        print("GZDoom NOT measured: set GZDOOM to a gzdoom binary (docs/gzdoom.md)")
    try:
        paths = [netlist_path(m) for m in args.models]
        with tempfile.TemporaryDirectory(prefix="voodoonet-onemap-") as tmp:
            base = gzdoom_base(gz, tmp) if gz else None
            for name, path in zip(args.models, paths):
                report(name, path, tmp, args.over_budget, gz, base)
        return 0
    except VoodooError as e:
        print(str(e), file=sys.stderr)
        return e.exit_code


def gzdoom_base(gz: str, tmp: str) -> dict:
    """GZDoom on a tiny compiled map (hello): what starting the engine costs by itself."""
    from dsl import load
    from mapgen.compile import compile_netlist, write_wad

    out = os.path.join(tmp, "hello.wad")
    net = load(os.path.join(ROOT, "circuits", "hello.dnet"))
    write_wad(out, [compile_netlist(net, title="hello")], net, None)
    r = gzdoom_load(gz, out)
    print(f"GZDoom baseline (hello, a tiny map): {_engine(r)}", flush=True)
    return r


def _engine(r: dict, base: dict | None = None) -> str:
    if not r["ok"]:
        return f"did NOT load: {r['why']} (after {r['wall']:.1f} s)"
    extra = (f" ({r['cpu'] - base['cpu']:.1f} s, {r['mb'] - base['mb']:,.0f} MB over the "
             f"baseline)" if base and base.get("ok") else "")
    return f"CPU {r['cpu']:.1f} s, wall {r['wall']:.1f} s, peak RSS {r['mb']:,.0f} MB{extra}"


def _peak_mb() -> float:
    """This process's peak resident memory (the compiler runs in it), in MB."""
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def report(name: str, path: str, tmp: str, over: bool, gz: str | None, base) -> None:
    out = os.path.join(tmp, f"{name.replace('/', '_')}.wad")
    print(f"{name} ({os.path.relpath(path, ROOT)}): compiling with the chat room ...",
          flush=True)
    b = build(path, out, over)
    if "linedefs" not in b:
        print(f"  REFUSED after {b['compile']:.0f} s: {b['why']}", flush=True)
        return
    ex = b["extent"]
    verdict = "fits one map" if b["fits"] else f"REFUSED: {b['why']}"
    print(f"  {verdict}: {b['linedefs']:,} linedefs, {b['sectors']:,} sectors, "
          f"{b['things']:,} things, extent {ex[0]:,.0f} x {ex[1]:,.0f} units, "
          f"{b['tics']:,} tics per step, WAD {b['wad_mb']:.0f} MB (compiled in "
          f"{b['compile']:.0f} s; this process's peak RSS so far {_peak_mb():,.0f} MB)",
          flush=True)
    try:
        r = vizdoom_load(out, b["info"])
    except VoodooError as e:
        r = dict(ok=False, why=str(e).splitlines()[0][:80], wall=0.0)
    print(f"  ViZDoom: {_engine(r)}", flush=True)
    if gz:
        print(f"  GZDoom:  {_engine(gzdoom_load(gz, out), base)}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
