#!/usr/bin/env python3
"""The limits of one map, found by experiment: what ViZDoom (and GZDoom, with $GZDOOM) loads
and runs as a map grows in one dimension at a time, how long it takes to load, how much
memory the engine holds, and what one idle tic costs.

    python bench/map_limits.py             # every dimension (about 15 minutes)
    python bench/map_limits.py --quick     # the smaller sizes only
    python bench/map_limits.py --only pukes,dolls

Each row is a map made for that dimension alone (mapgen.udmf, our ACS compiler):

- dolls: N voodoo dolls (extra player-1 starts), each on a pad of its own;
- things: N map spots (things that are not players);
- lines: N two-sided lines carrying a light special, 2 units apart, in rows of 1,000,
  each row inside a sector of its own, as the weighted lines of landings are;
- crowd: the same lines, all in one sector (the hall of lights borders every light tile);
- sectors: N closed 32x32 sectors (4 lines each);
- tags: one hall whose sector carries N extra tags (`moreids`), as a light does for
  every weight group it belongs to;
- behavior: a BEHAVIOR lump of N bytes (one script of `Light_ChangeToValue` statements);
- scripts: a SCRIPTS lump (the ACS source kept for modders) of N bytes;
- extent: a map spot at x = N (map units): ACS reads its x back (`GetActorX`);
- pukes: the most script starts (`puke`, 4 arguments, and none) one tic takes: the
  console queues each as a network command for the next tic, and past a buffer of
  about 14,000 bytes the engine crashes (found by bisection, each probe a fresh engine);
- compiled: maps made by the compiler itself with N one-door sub-lanes (N dolls), the
  largest our ACS compiler takes (its source limit is what stops them), with one
  inference run and checked against the reference.

A map "loads" when the engine starts it and its OPEN script reports ready (USER60 = -1),
and the probe thing's position reads back as placed. "engine MB" is the peak resident
memory of the game process (ViZDoom runs the game in a process of its own; VmHWM),
"load s" the wall time from starting the engine to ready, "tic us" the wall time of one
tic with nothing moving (averaged over 200). docs/physics.md ("Limits of one map") has
the figures and what the compiler does with them (mapgen/physics.py, mapgen/checks.py,
mapgen/tiles.py).
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from acs.wad import MapLump, write_wad  # noqa: E402
from engine.doom import Engine, EngineError  # noqa: E402
from mapgen.udmf import MapModel, Sector, Thing  # noqa: E402

PROBE_TID = 5
SIZES = {
    "dolls": [1000, 4000, 8000, 16000, 32000],
    "things": [10000, 50000, 200000],
    "lines": [25_000, 50_000, 100_000, 200_000],
    "crowd": [10_000, 32_763, 32_764],        # + 4 walls of its own: 32,767 and 32,768
    "sectors": [20_000, 65_536, 131_072, 262_144],
    "tags": [1000, 10_000, 65_536],
    "behavior": [1 << 20, 4 << 20, 16 << 20, 64 << 20],
    "scripts": [1 << 20, 16 << 20, 64 << 20],
    "extent": [16_000, 32_000, 32_700, 33_000, 40_000],
    "compiled": [1000, 2000, 4000, 6000],
}
QUICK = {k: v[:2] for k, v in SIZES.items()}
# GZDoom runs in real time and takes 10 to 20 s to start here: it gets the sizes up to these
GZDOOM_SIZES = {"dolls": 16000, "things": 50000, "lines": 100_000, "crowd": 40_000,
                "sectors": 65_536,
                "tags": 65_536, "behavior": 16 << 20, "scripts": 16 << 20, "extent": 40_000}


# ------------------------------------------------------------------------------ the maps
def open_script(extra: str = "", count: str = "0") -> str:
    """Ready, the probe's x in USER1 (map units), and in USER2 the value of `count` (an
    ACS expression that reads back what the map holds: a thing count, a light level)."""
    return ('#include "zcommon.acs"\nglobal int 1:user1;\nglobal int 2:user2;\n'
            f"global int 60:ack;\nscript 1 OPEN\n{{\n    Delay(2);\n"
            f"    user1 = GetActorX({PROBE_TID}) >> 16;\n    user2 = {count};\n"
            "    Log(c:'V', c:'N', c:'L', c:' ', d:user1, c:' ', d:user2);  // for GZDoom\n"
            f"    ack = -1;\n}}\n{extra}")


def base_map(probe_x: float = 64.0) -> MapModel:
    """A hall with the player and the probe spot in it."""
    m = MapModel()
    x0 = min(0.0, probe_x - 64)
    m.rect_sector(x0, -512, max(512.0, probe_x + 64), 0, Sector(0, 128, 160))
    m.things.append(Thing(probe_x, -256, 9001, id=PROBE_TID))
    m.things.append(Thing(32, -480, 1, angle=90))
    return m


SPOT_TID, LAST_TAG = 8, 9


def dolls_map(n: int) -> MapModel:
    """Each doll on a pad of its own; ThingCountName reads back how many were spawned."""
    m = base_map()
    per_row = 256
    for k in range(n):
        r, c = divmod(k, per_row)
        x, y = c * 64.0, 64.0 + r * 64.0
        m.rect_sector(x, y, x + 48, y + 48, Sector(0, 72, 160))
        m.things.insert(0, Thing(x + 24, y + 24, 1))  # before the real player start
    return m


def things_map(n: int) -> MapModel:
    m = base_map()
    m.rect_sector(0, 64, 8192, 64 + 8192, Sector(0, 128, 160))
    side = int(n ** 0.5) + 1
    for k in range(n):
        r, c = divmod(k, side)
        m.things.append(Thing(8 + c * 8192 / side, 72 + r * 8192 / side, 9001, id=SPOT_TID))
    return m


def lines_map(n: int, one_sector: bool = False) -> MapModel:
    """Rows of 1,000 two-sided lines, 2 apart, both sides of each line the same sector:
    each row in a sector of its own (as the landings of lanes are), or every row in one
    hall (`one_sector`: as the tiles of the hall of lights all border the hall)."""
    m = base_map()
    rows = -(-n // 1000)
    hall = m.rect_sector(0, 64, 2064, 64 + 64 * rows + 64, Sector(0, 128, 160)) \
        if one_sector else None
    for r in range(rows):
        y = 64 + 64 * r
        sec = hall if one_sector else m.rect_sector(0, y, 2064, y + 48, Sector(0, 128, 160))
        for c in range(min(1000, n - 1000 * r)):
            x = 32 + 2 * c
            m.portal((x, y + 4), (x, y + 44), sec, sec, tex="-", special=110, args=(1, 1),
                     flags=("playercross", "repeatspecial"))
    return m


def sectors_map(n: int) -> MapModel:
    """The last sector is tagged, with light 99: its level reads back."""
    m = base_map()
    per_row = 512
    for k in range(n):
        r, c = divmod(k, per_row)
        x, y = c * 48.0, 64 + r * 48.0
        last = k == n - 1
        m.rect_sector(x, y, x + 32, y + 32, Sector(0, 72, 99 if last else 160,
                                                   tag=LAST_TAG if last else 0))
    return m


def tags_map(n: int) -> MapModel:
    """One sector with n extra tags: the last one must reach it (the OPEN script lights
    the sector through that tag, and reads it back through the first)."""
    m = base_map()
    m.rect_sector(0, 64, 128, 192, Sector(0, 128, 160, tag=1, more_tags=tuple(range(2, n + 2))))
    return m


def extent_map(x: int) -> MapModel:
    return base_map(float(x))


# dimension -> (ACS expression read into USER2, its expected value for size n)
COUNTS = {
    "dolls": ('ThingCountName("DoomPlayer", 0)', lambda n: n + 1),   # and the player
    "things": (f"ThingCount(0, {SPOT_TID})", lambda n: n),
    "sectors": (f"GetSectorLightLevel({LAST_TAG})", lambda n: 99),
    "tags": ("GetSectorLightLevel(1)", lambda n: 77),
}


def big_behavior(size: int) -> bytes:
    """A BEHAVIOR lump of about `size` bytes: the probe's OPEN script and one more script
    of Light_ChangeToValue statements (its AST repeated, so the parse stays small)."""
    from acs import parser
    from acs.compiler import Compiler

    unit = 200
    src = open_script("script 3 (void)\n{\n" + "    Light_ChangeToValue(1, 0);\n" * unit + "}\n")
    items = parser.parse(src, "big.acs")
    one = len(Compiler(True).compile(items))
    script = [it for it in items if getattr(it, "ident", None) == 3][0]
    per = max(1, (one - 200) // unit)      # bytes a statement costs
    script.body.stmts = script.body.stmts * max(1, size // (per * unit))
    return Compiler(True).compile(items)


def behavior_of(extra: str = "", count: str = "0") -> bytes:
    from acs import compile_source

    return compile_source(open_script(extra, count), "limits.acs")


# ------------------------------------------------------------------------------ measuring
def game_rss_mb(engine: Engine) -> float:
    """Peak resident memory of the game process below the Engine proxy (VmHWM), in MB."""
    pids, todo = [], [engine._proc.pid]
    while todo:
        pid = todo.pop()
        pids.append(pid)
        try:
            for task in os.listdir(f"/proc/{pid}/task"):
                with open(f"/proc/{pid}/task/{task}/children") as f:
                    todo += [int(p) for p in f.read().split()]
        except OSError:
            pass
    best = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/status") as f:
                for line in f:
                    if line.startswith("VmHWM:"):
                        best = max(best, int(line.split()[1]))
        except OSError:
            pass
    return best / 1024


def load_in_vizdoom(wad: str, want: tuple[int, int]) -> dict:
    t = time.perf_counter()
    try:
        with Engine(wad, "MAP01") as e:
            e.advance(4)
            users = e.users()
            load = time.perf_counter() - t
            if users[59] != -1:
                return dict(ok=False, why=f"not ready (USER60 = {users[59]})", load=load)
            if users[0] != want[0]:
                return dict(ok=False, why=f"probe at x = {users[0]}, placed at {want[0]}",
                            load=load)
            if users[1] != want[1]:
                return dict(ok=False, why=f"reads back {users[1]}, not {want[1]}", load=load)
            t = time.perf_counter()
            e.advance(200)
            tic = (time.perf_counter() - t) / 200
            return dict(ok=True, load=load, mb=game_rss_mb(e), tic=tic)
    except EngineError as ex:
        return dict(ok=False, why=str(ex).split(";")[0].split(": ", 1)[-1][:70],
                    load=time.perf_counter() - t)


def load_in_gzdoom(binary: str, wad: str, want: tuple[int, int]) -> dict:
    """GZDoom under xvfb-run: start the map, wait a second, quit; the OPEN script's log
    line must read back what the map holds. Peak memory of GZDoom from /usr/bin/time."""
    from engine.gzdoom import freedoom2

    work = tempfile.mkdtemp(prefix="voodoonet-gzlimits-")
    log = os.path.join(work, "gz.log")
    cmd = ["xvfb-run", "-a", "/usr/bin/time", "-f", "VNMEM %M", binary, "-iwad", freedoom2(), "-file", wad, "-nosound",
           "-nomusic", "-noautoload", "+logfile", log, "+map", "MAP01", "+wait 35; quit"]
    t = time.perf_counter()
    try:
        p = subprocess.run(cmd, cwd=work, capture_output=True, text=True, timeout=600)
        wall = time.perf_counter() - t
        text = open(log, errors="replace").read() if os.path.exists(log) else ""
        mem = [int(x.split()[1]) for x in p.stderr.splitlines() if x.startswith("VNMEM ")]
        got = [line.split()[1:3] for line in text.splitlines() if line.startswith("VNL ")]
        ok = p.returncode == 0 and got == [[str(want[0]), str(want[1])]]
        why = f"reads back {got}, not {list(want)}" if got else \
            (text.strip().splitlines() or [p.stderr.strip() or "no log"])[-1][:70]
        return dict(ok=ok, load=wall, mb=(mem or [0])[0] / 1024, why="" if ok else why)
    except subprocess.TimeoutExpired:
        return dict(ok=False, load=600.0, why="timed out")
    finally:
        shutil.rmtree(work, ignore_errors=True)


def write_map(path: str, m: MapModel, behavior: bytes, scripts: str | None = None) -> int:
    write_wad(path, [MapLump("MAP01", m.textmap(), behavior, scripts, "limits")])
    return os.path.getsize(path)


# ------------------------------------------------------------------------------ dimensions
def synthetic(dim: str, n: int, tmp: str) -> tuple[str, tuple, str]:
    """(WAD path, expected (probe x, USER2), what the map holds) for one row."""
    wad = os.path.join(tmp, f"{dim}-{n}.wad")
    if dim == "behavior":
        beh = big_behavior(n)
        write_map(wad, base_map(), beh)
        return wad, (64, 0), f"BEHAVIOR {len(beh):,} bytes"
    if dim == "scripts":
        write_map(wad, base_map(), behavior_of(), "// " + "x" * (n - 4) + "\n")
        return wad, (64, 0), f"SCRIPTS {n:,} bytes"
    makers = {"dolls": dolls_map, "things": things_map, "lines": lines_map,
              "crowd": lambda n: lines_map(n, one_sector=True),
              "sectors": sectors_map, "tags": tags_map, "extent": extent_map}
    m = makers[dim](n)
    count, want = COUNTS.get(dim, ("0", lambda n: 0))
    extra = f"script 2 OPEN\n{{\n    Light_ChangeToValue({n + 1}, 77);\n}}\n" \
        if dim == "tags" else ""
    write_map(wad, m, behavior_of(extra, count))
    return wad, (n if dim == "extent" else 64, want(n)), (
        f"{len(m.things):,} things, {len(m.sectors):,} sectors, {len(m.lines):,} lines")


def row(dim: str, n: int, what: str, r: dict, engine: str) -> str:
    verdict = "loads" if r["ok"] else f"FAILS ({r.get('why', '')})"
    figures = (f"{r['load']:6.2f} s {r.get('mb', 0):7.0f} MB "
               + (f"{1e6 * r['tic']:8.0f} us" if "tic" in r else " " * 11)) if r["ok"] \
        else f"{r['load']:6.2f} s"
    return f"{engine:<8} {dim:<9} {n:>11,}  {figures}  {verdict}  [{what}]"


def puke_limit(tmp: str, args: int) -> tuple[int, int]:
    """(most script starts one tic takes, fewest that crash): bisection, a fresh engine for
    each probe (a crash takes the engine with it)."""
    wad = os.path.join(tmp, "pukes.wad")
    write_map(wad, base_map(), behavior_of("script 10 (int a, int b, int c, int d)\n{\n"
                                           "    user1 = a;\n}\n"))
    call = (10, *([1_000_000_000] * args))

    def survives(k: int) -> bool:
        try:
            with Engine(wad, "MAP01") as e:
                e.advance(4)
                e.puke_many([call] * k)
                e.advance(2)
                return True
        except EngineError:
            return False

    lo, hi = 1, 16384
    if not survives(lo) or survives(hi):
        raise SystemExit(f"pukes: expected 1 to run and {hi} to crash")
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if survives(mid) else (lo, mid)
    return lo, hi


def compiled_dolls(n: int, tmp: str) -> str:
    """A compiled map of n one-door sub-lanes (input lanes of 0..999 split at budget 1):
    compile time, ACS size, load, one inference, exactness."""
    from dsl.diagnostics import CompileError
    from dsl.parser import parse
    from dsl.reference import evaluate
    from engine.runner import MapRunner
    from mapgen.compile import compile_netlist, write_wad as write_maps

    k = -(-n // 999)
    net = parse(f"input x[{k}] : 0..999\nneuron h : identity\nlines x -> h all 1\noutput h\n",
                f"dolls{n}.dnet")
    t = time.perf_counter()
    try:
        cm = compile_netlist(net, door_budget=1)
    except CompileError as e:
        return (f"vizdoom  compiled  {k * 999:>11,}  refused by the compiler after "
                f"{time.perf_counter() - t:.0f} s: {str(e).splitlines()[0][:90]}")
    took = time.perf_counter() - t
    wad = os.path.join(tmp, f"compiled-{n}.wad")
    write_maps(wad, [cm], net)
    x = [999] * k
    t = time.perf_counter()
    try:
        with MapRunner(wad, cm.manifest) as r:
            load = time.perf_counter() - t
            mb = game_rss_mb(r.engine)
            t = time.perf_counter()
            got = r.infer(x)
            ms = 1000 * (time.perf_counter() - t)
    except EngineError as e:
        return f"vizdoom  compiled  {k * 999:>11,}  FAILS: {str(e)[:90]}"
    exact = "EXACT" if got == evaluate(net, [x]).last_outputs()[0].tolist() else "MISMATCH"
    return (f"vizdoom  compiled  {len(cm.layout.lanes):>11,}  {load:6.2f} s {mb:7.0f} MB  "
            f"compile {took:5.1f} s, ACS {len(cm.acs):,} chars, BEHAVIOR {len(cm.behavior):,} "
            f"bytes, one inference {ms:.0f} ms {exact}")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true")
    p.add_argument("--only", help="comma-separated dimensions (default: all, and pukes)")
    args = p.parse_args(argv)
    sizes = QUICK if args.quick else SIZES
    dims = args.only.split(",") if args.only else [*sizes, "pukes"]
    gz = os.environ.get("GZDOOM")
    gz = gz if gz and shutil.which("xvfb-run") else None
    print(f"{'engine':<8} {'dimension':<9} {'size':>11}  {'load':>8} {'engine':>10} "
          f"{'idle tic':>11}  verdict  [map]")
    with tempfile.TemporaryDirectory() as tmp:
        for dim in dims:
            if dim == "pukes":
                for n_args in (4, 0):
                    ok, bad = puke_limit(tmp, n_args)
                    print(f"vizdoom  pukes     {ok:>11,}  script starts with {n_args} "
                          f"arguments in one tic run; {bad:,} crash the engine", flush=True)
                continue
            for n in sizes[dim]:
                if dim == "compiled":
                    print(compiled_dolls(n, tmp), flush=True)
                    continue
                wad, want, what = synthetic(dim, n, tmp)
                print(row(dim, n, what, load_in_vizdoom(wad, want), "vizdoom"), flush=True)
                if gz and n <= GZDOOM_SIZES.get(dim, 0):
                    print(row(dim, n, what, load_in_gzdoom(gz, wad, want), "gzdoom"),
                          flush=True)
                os.remove(wad)
    return 0


if __name__ == "__main__":
    sys.exit(main())
