"""GZDoom parity: run a compiled map in a real GZDoom binary, headless, and read it back.

GZDoom has no Python API and its console prints neither ACS globals nor sector levels, so a
map is driven and observed from outside the map itself (docs/gzdoom.md):

- **drive**: one console line given with `+` on the command line, the same `puke` calls a
  `MapRunner` sends to ViZDoom, spaced with GZDoom's `wait N` (tics) and ended by `quit`;
- **observe**: a probe, an ACS library loaded with `-file` (a LOADACS lump and the library
  between A_START/A_END), whose OPEN script logs every tic, with `Log()` into `+logfile`,
  the map's ack and output globals, every light level, the floor and ceiling of every door
  sector (the only planes that move) and the x of every doll. The same probe is loaded into ViZDoom, so both engines are observed
  by the same code at the same moment of the tic.

Console commands land a tic early or late, so nothing is aligned by counting tics: each
inference is found in the log by the tic at which the map's ack variable takes its
sequence number, and windows are compared relative to that tic.

The probe uses no string literals (numbers and `c:` characters only), so it does not depend
on how strings are tagged in a library. A probe made with `on_ack` logs only on the tics
the ack changes (a long game logs once per inference, not once per tic).

`screenshots` runs a map and captures the view at given tics (the render tests: no map may
start black, docs/gzdoom.md); `play` drives a map as a visitor would (warps onto pads,
waits) with the probe loaded and takes screenshots on the way.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field

from engine.doom import EngineError
from engine.runner import batch_calls, input_calls

PROBE_SCRIPT = 32000      # clear of every script number a compiled map uses
PROBE_LUMP = "VNPROBE"
CHUNK = 12                # values per Log() call
MARK = "VNP"
# The console runs some tics ahead of the map's Timer() (about 12 measured on a quiet
# machine, with no screen melt; more under load: at a load average of 8 the MNIST map's
# last inference missed a 30-tic tail): every console line ends with this many tics more,
# so the last inference's acknowledgement is in the log before `quit` (3 s of real time).
TAIL = 105
# GZDoom's game clock, faster than real time (i_timescale): the same tics, sooner. GZDoom runs
# at most 17 tics between two frames (its BACKUPTICS / 2 - 1), so a run is bound by its
# frames: measured under Xvfb, about 220 tics a second on hello and 120 on the chat map,
# against 35 at real time. The cvar only takes once the map runs (set with the start-up
# `+` line it is lost, and every run took real time), so it is set after the first tic.
FAST = 30


@dataclass
class ProbeMap:
    """What the probe reads, in log order."""

    lights: list[int]                       # light tags
    doors: list[tuple[int, int]]            # a point inside each door sector
    tids: list[int]                         # each doll's TID
    n_users: int                            # USER1..n read with the ack
    on_ack: bool = False                    # log only on the tics the ack changes


def probe_map(layout, n_users: int, planes: bool = True, on_ack: bool = False) -> ProbeMap:
    """What to log of a compiled map: every light, and with `planes` every door plane and
    doll too."""
    doors = [(int((s.x0 + s.x1) // 2), int(g.y_mid)) for g in layout.lanes
             for s in g.segments if s.kind == "door"] if planes else []
    return ProbeMap([l.tag for l in layout.circuit.lights], doors,
                    [g.lane.tid for g in layout.lanes] if planes else [], n_users, on_ack)


def _log_calls(kind: str, exprs: list[str]) -> list[str]:
    marker = ", ".join(f"c:'{ch}'" for ch in MARK)
    out = []
    for k in range(0, len(exprs), CHUNK):
        items = "".join(f", c:' ', d:{e}" for e in exprs[k:k + CHUNK])
        out.append(f"Log({marker}, c:' ', d:t, c:' ', c:'{kind}', c:' ', d:{k}{items});")
    return out


def probe_source(pm: ProbeMap) -> str:
    """ACS of the probe library: one OPEN script logging every tic until the map ends."""
    lines = ['#library "vnprobe"', '#include "zcommon.acs"', "",
             "// VoodooNet's GZDoom parity probe: logs the map's state every tic (engine/gzdoom.py).",
             "global int 59:read_ack;", "global int 60:ack;"]
    lines += [f"global int {k}:user{k};" for k in range(1, pm.n_users + 1)]
    lines += ["", f"script {PROBE_SCRIPT} OPEN", "{", "    int t;", "    int last = -2;",
              "    while (TRUE)", "    {", "        t = Timer();"]
    body = _log_calls("A", ["ack", "read_ack"] + [f"user{k}" for k in range(1, pm.n_users + 1)])
    body += _log_calls("L", [f"GetSectorLightLevel({tag})" for tag in pm.lights])
    body += _log_calls("C", [f"GetSectorCeilingZ(0, {x}, {y}) >> 16" for x, y in pm.doors])
    body += _log_calls("F", [f"GetSectorFloorZ(0, {x}, {y}) >> 16" for x, y in pm.doors])
    body += _log_calls("X", [f"GetActorX({tid})" for tid in pm.tids])
    if pm.on_ack:
        lines += ["        if (ack != last)", "        {", "            last = ack;"]
        lines += [f"            {b}" for b in body] + ["        }"]
    else:
        lines += [f"        {b}" for b in body]
    lines += ["        Delay(1);", "    }", "}", ""]
    return "\n".join(lines)


def write_probe(path: str, pm: ProbeMap) -> None:
    """A PWAD with the compiled probe library and the LOADACS lump that loads it."""
    import omg.wadio

    from mapgen.compile import compile_acs

    behavior = compile_acs(probe_source(pm), "vnprobe.acs")
    tmp = path + ".tmp"
    w = omg.wadio.WadIO(tmp)  # creates an empty PWAD
    for name, data in (("LOADACS", f"{PROBE_LUMP}\n".encode()), ("A_START", b""),
                       (PROBE_LUMP, behavior), ("A_END", b"")):
        w.insert(name, data)
    w.save()
    os.replace(tmp, path)


@dataclass
class Trace:
    """Per tic (the map's Timer()): the probe's values, each kind a list."""

    tics: dict[int, dict[str, list[int]]] = field(default_factory=dict)

    def ack_tic(self, seq: int) -> int:
        """The first tic at which the map acknowledged inference `seq`."""
        for t in sorted(self.tics):
            if self.tics[t]["A"][0] == seq:
                return t
        raise EngineError(f"the map never acknowledged inference {seq} in the probe's log")

    def at(self, tic: int) -> dict[str, list[int]]:
        return self.tics[tic]


_LINE = re.compile(rf"^{MARK} (-?\d+) ([ALCFX]) (\d+)((?: -?\d+)*)\s*$")


def parse_log(text: str, pm: ProbeMap) -> Trace:
    sizes = {"A": 2 + pm.n_users, "L": len(pm.lights), "C": len(pm.doors),
             "F": len(pm.doors), "X": len(pm.tids)}
    tr = Trace()
    for raw in text.splitlines():
        m = _LINE.match(raw.strip())
        if not m:
            continue
        t, kind, off = int(m.group(1)), m.group(2), int(m.group(3))
        vals = [int(v) for v in m.group(4).split()]
        row = tr.tics.setdefault(t, {k: [None] * n for k, n in sizes.items()})
        row[kind][off:off + len(vals)] = vals
    for t, row in list(tr.tics.items()):
        if any(v is None for vals in row.values() for v in vals):
            del tr.tics[t]  # the last tic may be cut off by the quit
    return tr


# -- driving -------------------------------------------------------------------------------
def _puke(call: tuple) -> str:
    return " ".join(["puke", *map(str, call)])


def puke_commands(info: dict, x: list[int], seq: int, first: bool,
                  fed: bool = False) -> list[str]:
    """The console commands of one inference (as engine.runner.MapRunner.infer sends; a fed
    step of a netlist with fed-back inputs runs the fed script)."""
    script = info["fed_script"] if fed else info["infer_script"]
    return [_puke(c) for c in input_calls(info, x, first) + [(script, seq)]]


def timeline(info: dict, inputs: list[list[int]], margin: int | None = None,
             sequence: bool = False, fed: list[bool] | None = None) -> str:
    """One console line: wait for the map to be ready, then each inference, each given its
    predicted tics plus `margin` (the log, not this spacing, decides what is compared).
    `fed[k]`: step k of a sequence is a fed step."""
    if margin is None:
        # The console gains on the map as a run goes on (measured on the MNIST map, whose
        # probe logs 6 KB a tic: its first pukes landed 14 map tics late, its `quit` 2
        # early; with 32 tics between inferences the third one never ran, its script 2
        # call presumably landing while the second's still ran): one more inference's time
        # between inferences.
        margin = 12 + info["inference_tics"]
    parts = [f"wait {info['init_tics'] + 2 + margin}"]
    for seq, x in enumerate(inputs, 1):
        parts += puke_commands(info, x, seq, first=sequence and seq == 1,
                               fed=bool(fed and fed[seq - 1]))
        parts.append(f"wait {info['inference_tics'] + 1 + margin}")
    return "; ".join(parts + [f"wait {TAIL}", "quit"])


def batch_timeline(info: dict, inputs: list[list[int]], margin: int = 12) -> str:
    """One console line for one batch of pipelined beats (as MapRunner._batch sends it):
    the queue scripts with each beat's inputs and the batch script (seq 1, n beats) in one
    tic, then its predicted tics plus `margin`."""
    pipe, n = info["pipeline"], len(inputs)
    if not 1 < n <= pipe["batch"]:
        raise EngineError(f"a batch holds 2 to {pipe['batch']} beats, not {n}")
    calls, tics = batch_calls(info, inputs)
    return "; ".join([f"wait {info['init_tics'] + 2 + margin}"]
                     + [_puke(c) for c in calls + [(pipe["batch_script"], 1, n)]]
                     + [f"wait {tics + 1 + margin}", f"wait {TAIL}", "quit"])


def freedoom2() -> str:
    import vizdoom

    return os.path.join(os.path.dirname(vizdoom.__file__), "freedoom2.wad")


def _gzdoom(binary: str, files: list[str], commands: str, work: str, timeout: float,
            size: tuple[int, int] = (320, 200), timescale: float = 1.0
            ) -> tuple[subprocess.CompletedProcess, str]:
    """Run GZDoom headless on MAP01 of `files` (under xvfb-run when there is no display),
    with `commands` as its console line, in `work`; (the process, its log's text).
    `timescale` != 1: the game clock that much faster from the second tic (FAST)."""
    log = os.path.join(work, "gzdoom.log")
    if timescale != 1:
        commands = f"wait 1; i_timescale {timescale:g}; {commands}"
    args = [binary, "-iwad", freedoom2(), "-file", *[os.path.abspath(f) for f in files],
            "-nosound", "-nomusic", "-noautoload", "-config", os.path.join(work, "gzdoom.ini"),
            "-width", str(size[0]), "-height", str(size[1]),
            # No window manager under Xvfb gives focus: never pause for the lack of it. No
            # screen melt at the map's start: the game does not tick during it, the console's
            # waits do (a command timed for tic 30 would land before the ENTER scripts).
            "+vid_fullscreen", "0", "+i_pauseinbackground", "0", "+wipetype", "0",
            "+sv_cheats", "1",
            # No autosave on entering a map (a hub visit changes maps): a run writes nothing.
            "+disableautosave", "2",
            "+logfile", log, "+map", "MAP01", "+" + commands]
    if not os.environ.get("DISPLAY"):
        if not shutil.which("xvfb-run"):
            raise EngineError("GZDoom needs a display: install xvfb (docs/gzdoom.md)")
        args = ["xvfb-run", "-a", "-s", "-screen 0 640x480x24"] + args
    env = {**os.environ, "HOME": work}
    r = _run_group(args, work, env, timeout)
    return r, open(log, errors="replace").read() if os.path.exists(log) else ""


def _run_group(args: list[str], work: str, env: dict, timeout: float
               ) -> subprocess.CompletedProcess:
    """`args` in a process group of its own, its output in files: on a timeout the whole
    group goes (xvfb-run, Xvfb and GZDoom; killing only xvfb-run leaves GZDoom holding
    the output pipes, and waiting for them then never ends)."""
    import signal

    out_path, err_path = os.path.join(work, "stdout.txt"), os.path.join(work, "stderr.txt")
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        p = subprocess.Popen(args, cwd=work, env=env, stdin=subprocess.DEVNULL, stdout=out,
                             stderr=err, start_new_session=True)
        try:
            p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
            raise EngineError(f"GZDoom did not finish in {timeout:g} s (ended); its last "
                              f"output:\n{_tail(err_path)}") from None
        except BaseException:   # interrupted: GZDoom and its display go too
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
            raise
        finally:
            try:
                os.killpg(p.pid, signal.SIGKILL)  # anything it left behind (Xvfb)
            except OSError:
                pass
    return subprocess.CompletedProcess(args, p.returncode, _tail(out_path, 100000),
                                       _tail(err_path, 100000))


def _tail(path: str, n: int = 1500) -> str:
    with open(path, errors="replace") as f:
        return f.read()[-n:]


def run_gzdoom(binary: str, wad: str, probe: str, commands: str, timeout: float = 300,
               timescale: float = FAST) -> str:
    """Run GZDoom headless with the probe and return the log (the console line's waits are
    tics, so a faster clock only makes it sooner)."""
    work = tempfile.mkdtemp(prefix="voodoonet-gz-")
    try:
        r, text = _gzdoom(binary, [wad, probe], commands, work, timeout, timescale=timescale)
        if MARK not in text:
            raise EngineError(f"GZDoom exited {r.returncode} without a probe log:\n"
                              f"{r.stdout[-1500:]}\n{r.stderr[-1500:]}")
        return text
    finally:
        shutil.rmtree(work, ignore_errors=True)


def screenshots(binary: str, files: list[str], tics: list[int], commands: dict | None = None,
                timeout: float = 300, size: tuple[int, int] = (640, 480)) -> list:
    """The view of MAP01 of `files` (a WAD or PK3, and any others) in GZDoom at each of
    `tics` (increasing) after the map starts, as RGB arrays; `commands` maps a tic to
    console commands run then (`{10: "puke 512 1"}`)."""
    import numpy as np
    from PIL import Image

    if list(tics) != sorted(set(tics)):
        raise ValueError(f"screenshot tics must increase: {tics}")
    work = tempfile.mkdtemp(prefix="voodoonet-gzshot-")
    events = sorted([(t, 1, f"screenshot {os.path.join(work, f'shot{k}.png')}")
                     for k, t in enumerate(tics)]
                    + [(t, 0, c) for t, c in (commands or {}).items()])
    try:
        parts, now = [], 0
        for t, _, cmd in events:
            if t > now:
                parts.append(f"wait {t - now}")
                now = t
            parts.append(cmd)
        r, text = _gzdoom(binary, files, "; ".join(parts + ["wait 3", "quit"]), work,
                          timeout, size)
        shots = []
        for k in range(len(tics)):
            path = os.path.join(work, f"shot{k}.png")
            if not os.path.exists(path):
                raise EngineError(f"GZDoom exited {r.returncode} without screenshot {k + 1} "
                                  f"of {len(tics)}:\n{text[-1500:]}\n{r.stderr[-1500:]}")
            shots.append(np.asarray(Image.open(path).convert("RGB")))
        return shots
    finally:
        shutil.rmtree(work, ignore_errors=True)


def play(binary: str, files: list[str], parts: list[str], timeout: float = 600,
         size: tuple[int, int] = (640, 480), timescale: float = 1.0) -> tuple[str, list]:
    """One GZDoom run of MAP01 of `files` (a map and a probe) driven by the console commands
    `parts` (`warp x y`, `puke N`, `wait N`; each `SHOT` takes a screenshot then) and ended
    by `quit`: (the log's text, the screenshots as RGB arrays, in order). `timescale` > 1
    runs the game clock faster than real time (GZDoom's i_timescale: the same tics, sooner,
    as far as the CPU keeps up)."""
    import numpy as np
    from PIL import Image

    work = tempfile.mkdtemp(prefix="voodoonet-gzplay-")
    try:
        paths, cmds = [], []
        for part in parts:
            if part == "SHOT":
                paths.append(os.path.join(work, f"shot{len(paths)}.png"))
                part = f"screenshot {paths[-1]}"
            cmds.append(part)
        r, text = _gzdoom(binary, files, "; ".join(cmds + ["wait 3", "quit"]), work,
                          timeout, size, timescale)
        missing = [p for p in paths if not os.path.exists(p)]
        if missing:
            raise EngineError(f"GZDoom exited {r.returncode} without {len(missing)} of its "
                              f"{len(paths)} screenshots:\n{text[-1500:]}\n{r.stderr[-1500:]}")
        return text, [np.asarray(Image.open(p).convert("RGB")) for p in paths]
    finally:
        shutil.rmtree(work, ignore_errors=True)


def run_vizdoom(wad: str, probe: str, info: dict, inputs: list[list[int]],
                sequence: bool = False, fed: list[bool] | None = None
                ) -> tuple[str, list[list[int]]]:
    """The same inferences in ViZDoom with the same probe loaded; (log, outputs)."""
    from engine.doom import Engine
    from engine.runner import MapRunner

    work = tempfile.mkdtemp(prefix="voodoonet-vz-")
    log = os.path.join(work, "probe.log")
    try:
        engine = Engine(wad, extra_args=(f"-file {os.path.abspath(probe)}", f"+logfile {log}"))
        with MapRunner(wad, info, engine=engine) as runner:
            outs = [runner.infer(x, first=sequence and k == 0, fed=bool(fed and fed[k]))
                    for k, x in enumerate(inputs)]
            runner.engine.advance(2)
        return open(log, errors="replace").read(), outs
    finally:
        shutil.rmtree(work, ignore_errors=True)
