#!/usr/bin/env python3
"""Fuzz the command line where issue 37 found classes of failures: outputs onto inputs,
tampered manifests of tiled WADs, and signals. A finding is an internal error (exit 3, a
traceback), a hang, an engine or worker outliving its command, a file replaced, or a
signal answered after more than 2 s; the run prints every case's class and exits 1 when
there is a finding.

    python bench/fuzz_cli.py                       # all three, about 10 minutes
    python bench/fuzz_cli.py --only outputs        # outputs, manifests, signals
    python bench/fuzz_cli.py --manifests 40 --signals 12 --seed 3

outputs: every command that writes is given, as each of its outputs, each file it reads
(the files a model or netlist loads included), named as given, through a symlink, a hard
link and a `dir/../` detour, and two of its outputs onto one file. Every case must be
refused before any work (one in-process driver; a case still running after 60 s did
work instead) and every file must keep its bytes and inode; files the command reads that
belong to the project or the installed ViZDoom are copied first and put back if touched.

manifests: random edits of the VNETINFO lump of tiled WADs (a recurrent net over 3 maps,
an MLP over 2, a net reading the previous step of an input over 2: key by key, lists
swapped between maps, names from the netlist and not, huge and negative numbers, whole
manifests swapped or dropped), each WAD run in the engine (`run --random 3`); expected:
a refusal (exit 1) or EXACT (an edit that changes nothing the run uses).

signals: runs of one map step by step, of 3 maps streamed, and of 2 maps over engine
processes, each sent SIGTERM, SIGINT (to its group, as Ctrl-C does), SIGHUP or SIGKILL
at a random moment, its game process stopped first in some: the command must exit within
2 s of the signal (130, 143 or 129) and leave no process, engine directory or /dev/shm
segment behind.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
PY = sys.executable
C = os.path.join(ROOT, "circuits")


def circuit(name: str) -> str:
    return os.path.join(C, name)


# --------------------------------------------------------------------------- outputs
def command_table(t: str) -> list[tuple[list[str], dict[str, str], list[str]]]:
    """(argv with {OPTION} placeholders, option -> default value, the files it reads)."""
    import vizdoom

    scenario = os.path.join(os.path.dirname(vizdoom.__file__), "scenarios", "my_way_home.wad")
    data = os.path.join(ROOT, "models", "data")
    xor, wad = circuit("xor.dnet"), f"{t}/parts.wad"
    return [
        (["compile", xor, "-o", "{-o}", "--acs", "{--acs}", "--pk3", "{--pk3}"],
         {"-o": f"{t}/o.wad", "--acs": f"{t}/o.acs", "--pk3": f"{t}/o.pk3"}, [xor]),
        (["compile", xor, "-o", "{-o}", "--screenshot", "{--screenshot}"],
         {"-o": f"{t}/s.wad", "--screenshot": f"{t}/s.png"}, [xor]),
        (["run", xor, "-i", "1,0", "-o", "{-o}"], {"-o": f"{t}/r.wad"}, [xor]),
        (["render", xor, "-o", "{-o}"], {"-o": f"{t}/r.png"}, [xor]),
        (["export", xor, "-o", "{-o}"], {"-o": f"{t}/x.json"}, [xor]),
        (["export", xor, "--onnx", "-o", "{-o}"], {"-o": f"{t}/x.onnx"}, [xor]),
        (["extract", wad, "--map", "MAP02", "-o", "{-o}"], {"-o": f"{t}/e.dnet"},
         [wad, f"{t}/parts.1.wad", f"{t}/parts.2.wad"]),
        (["embed", circuit("pedals.dnet"), "--into", "vizdoom:my_way_home", "--wiring",
          circuit("pedals-my_way_home.wiring"), "-o", "{-o}"], {"-o": f"{t}/m.wad"},
         [circuit("pedals.dnet"), circuit("pedals-my_way_home.wiring"), scenario]),
        (["acs", f"{t}/s.acs", "-o", "{-o}"], {"-o": f"{t}/s.o"}, [f"{t}/s.acs"]),
        (["import", f"{t}/xor.onnx", "-o", "{-o}", "--calibrate", f"{t}/c.npy"],
         {"-o": f"{t}/i.dnet"}, [f"{t}/xor.onnx", f"{t}/c.npy"]),
        (["hello", "-o", "{-o}"], {"-o": f"{t}/h.wad"}, [circuit("hello.dnet")]),
        (["chat", "-o", "{-o}"], {"-o": f"{t}/c.wad"},
         [circuit("chat.dnet"), os.path.join(data, "chat_chat.pt")]),
        (["chat", "--config", "large", "-o", "{-o}"], {"-o": f"{t}/cl.wad"},
         [circuit("chat_large.dnet"), os.path.join(data, "chat_large.pt")]),
        (["chat", "--config", "microbit", "-o", "{-o}"], {"-o": f"{t}/cm.wad"},
         [os.path.join(data, "chat_microbit.pt")]),
        (["mnist", "--small", "-o", "{-o}"], {"-o": f"{t}/n.wad"}, [circuit("mnist_small.dnet")]),
        (["mnist", "--model", "cnn", "-o", "{-o}"], {"-o": f"{t}/nc.wad"},
         [circuit("mnist_cnn.dnet")]),
        (["museum", "-o", "{-o}"], {"-o": f"{t}/mu.wad"}, [circuit("museum.dnet")]),
        (["brainlevel", "--policy", "mlp", "-o", "{-o}", "--gif", "{--gif}"],
         {"-o": f"{t}/b.wad", "--gif": f"{t}/b.gif"}, [circuit("brainlevel_mlp.dnet")]),
    ]


def spellings(t: str, path: str, k: int) -> list[str]:
    """The same file named four ways: as is, a symlink, a hard link, a detour."""
    link, hard = f"{t}/link{k}{os.path.splitext(path)[1]}", f"{t}/hard{k}"
    if not os.path.lexists(link):
        os.symlink(path, link)
    if not os.path.exists(hard):
        try:
            os.link(path, hard)
        except OSError:   # another file system
            hard = path
    detour = os.path.join(os.path.dirname(path), "..", os.path.basename(os.path.dirname(path)),
                          os.path.basename(path))
    return [path, link, hard, detour]


def output_cases(t: str) -> list[tuple[list[str], list[str]]]:
    """(argv, the files that must not change) for every output x input and output pair."""
    cases, k = [], 0
    for argv, outs, reads in command_table(t):
        for option in outs:
            for src in reads:
                k += 1
                for name in spellings(t, src, k):
                    cases.append(([a.format(**{**outs, option: name}) if "{" in a else a
                                   for a in argv], reads))
        for a, b in ((a, b) for a in outs for b in outs if a < b):
            same = next((v for v in (outs[a], outs[b]) if v.endswith(".gif")), outs[a])
            cases.append(([x.format(**{**outs, a: same, b: same}) if "{" in x else x
                           for x in argv], reads))
    return cases


DRIVER = """
import contextlib, io, json, os, signal, sys
sys.path.insert(0, {root!r})
os.environ["VOODOO_QUIET"] = "1"
import build

def late(*_):
    raise TimeoutError("still running after 60 s: it did work instead of refusing")

signal.signal(signal.SIGALRM, late)
for argv in json.loads(sys.stdin.read()):
    err = io.StringIO()
    signal.alarm(60)
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            code = build.main(argv)
    except TimeoutError as e:
        code = "late"
        err.write(str(e))
    signal.alarm(0)
    print(json.dumps([code, err.getvalue()]), flush=True)
"""


def stamp(path: str):
    st = os.stat(path)
    with open(path, "rb") as f:
        return st.st_ino, hashlib.sha256(f.read()).hexdigest()


def fuzz_outputs(t: str, log) -> dict:
    _scratch(t)
    cases = output_cases(t)
    files = sorted({f for _, reads in cases for f in reads})
    backup = tempfile.mkdtemp(prefix="fuzz-backup-")
    saved = {}
    for k, f in enumerate(files):   # put back whatever a failing guard would replace
        shutil.copy2(f, os.path.join(backup, str(k)))
        saved[f] = (os.path.join(backup, str(k)), stamp(f))
    before = set(os.listdir(t))
    counts, findings = {}, []
    try:
        p = subprocess.run([PY, "-c", DRIVER.format(root=ROOT)], input=json.dumps(
            [argv for argv, _ in cases]), capture_output=True, text=True, cwd=t,
            timeout=60 * len(cases) + 300)
        results = [json.loads(line) for line in p.stdout.splitlines()]
        if len(results) != len(cases):
            findings.append(f"the driver stopped after {len(results)} of {len(cases)} cases: "
                            f"{p.stderr[-2000:]}")
        for (argv, reads), (code, err) in zip(cases, results):
            kind = ("internal error" if code == 3 or "Traceback" in err else "late"
                    if code == "late" else "refused" if code == 1 else f"exit {code}")
            counts[kind] = counts.get(kind, 0) + 1
            if kind != "refused":
                findings.append(f"{kind}: build.py {' '.join(argv)}: {err.strip()[-300:]}")
            shown = " ".join(argv)
            log(f"  {kind:<8} build.py {shown if len(shown) < 110 else shown[:40] + ' ... ' + shown[-65:]}")
    finally:
        for f, (copy, st) in saved.items():
            if not os.path.exists(f) or stamp(f) != st:
                findings.append(f"REPLACED {f} (put back)")
                shutil.copy2(copy, f)
        shutil.rmtree(backup, ignore_errors=True)
    new = set(os.listdir(t)) - before
    if new:
        findings.append(f"files written in the scratch folder: {sorted(new)}")
    return {"cases": len(cases), "counts": counts, "findings": findings}


def _scratch(t: str) -> None:
    """The files some commands read: an ONNX model, a calibration array, an ACS source,
    a WAD in three files."""
    import numpy as np

    from commands.common import build_maps
    from mapgen.compile import write_wad

    subprocess.run([PY, os.path.join(ROOT, "build.py"), "export", circuit("xor.dnet"), "--onnx",
                    "-o", f"{t}/xor.onnx"], check=True, capture_output=True)
    np.save(f"{t}/c.npy", np.zeros((4, 2), dtype=np.int64))
    with open(f"{t}/s.acs", "w") as f:
        f.write("script 1 OPEN { Delay(1); }\n")
    net, maps, plan = build_maps(circuit("elman.dnet"), "3")
    write_wad(f"{t}/parts.wad", maps, net, plan, part_bytes=len(maps[0].textmap))


# --------------------------------------------------------------------------- manifests
T1 = """network t1
steps open
input x : 0..3
neuron a : relu(s=1, max=3) = x
neuron b : relu(s=1, max=9) = prev(x) + a
output b
"""


def tiled_wads(t: str) -> dict[str, str]:
    from commands.common import build_maps
    from mapgen.compile import write_wad

    with open(f"{t}/t1.dnet", "w") as f:
        f.write(T1)
    out = {}
    for name, path, tiles in (("elman", circuit("elman.dnet"), "3"),
                              ("mlp3", circuit("mlp3.dnet"), "2"), ("t1", f"{t}/t1.dnet", "2")):
        net, maps, plan = build_maps(path, tiles)
        out[name] = f"{t}/{name}.wad"
        write_wad(out[name], maps, net, plan)
    return out


def edit_manifest(infos: dict, names: list[str], rng: random.Random) -> str:
    """One random edit of a tiled WAD's manifest, in place; returns what it did."""
    maps = sorted(infos)
    m = rng.choice(maps)
    info = infos[m]
    how = rng.randrange(8)
    if how == 0 and len(maps) > 1:
        a, b = rng.sample(maps, 2)
        infos[a], infos[b] = infos[b], infos[a]
        return f"swap {a} {b}"
    if how == 1:
        key = rng.choice(["tile_inputs", "tile_outputs", "inputs", "all_outputs", "outputs"])
        pool = names + ["nope", "", "x" * 300]
        v = rng.sample(pool, min(len(pool), rng.randrange(0, 4)))
        keys = [key] + ([{"tile_inputs": "inputs", "tile_outputs": "all_outputs",
                          "inputs": "tile_inputs", "all_outputs": "tile_outputs"}.get(key, key)]
                        if rng.random() < 0.5 else [])
        for k in keys:
            info[k] = v
        return f"{m}.{'+'.join(keys)} = {v}"
    if how == 2:
        key = rng.choice(["inference_tics", "init_tics", "ack_var", "infer_script", "steps",
                          "done", "begin_script"])
        v = rng.choice([0, -1, 1, 10**7, 10**7 + 1, 63_000, 2**31, 2**63, 1.5, "1", None, []])
        info[key] = v
        return f"{m}.{key} = {v!r}"
    if how == 3:
        key = rng.choice(sorted(info))
        del info[key]
        return f"del {m}.{key}"
    if how == 4:
        key = rng.choice(["tile_inputs", "tile_outputs"])
        other = rng.choice(maps)
        info[key] = list(infos[other].get(key, []))
        return f"{m}.{key} = {other}.{key}"
    if how == 5:
        info["input_ranges"] = [[lo - rng.randrange(0, 3), hi + rng.randrange(0, 3)]
                                for lo, hi in info.get("input_ranges", [])]
        return f"{m}.input_ranges widened"
    if how == 6:
        for key in ("tile_inputs", "inputs"):
            info[key] = list(reversed(info.get(key, [])))
        return f"{m}.inputs reversed"
    infos.pop(m)
    return f"drop {m}"


def fuzz_manifests(t: str, n: int, rng: random.Random, log) -> dict:
    from acs.wad import MapLump, read_wad, write_wad
    from mapgen.compile import load_wad

    wads = tiled_wads(t)
    counts, findings = {}, []
    for k in range(n):
        name = rng.choice(sorted(wads))
        c = read_wad(wads[name])
        lumps = dict(c.lumps)
        infos = json.loads(lumps["VNETINFO"])
        names = [x.name for x in load_wad(wads[name]).net.nodes]
        did = edit_manifest(infos, names, rng)
        bad = f"{t}/bad{k}.wad"
        write_wad(bad, [MapLump(m.name, m.textmap, m.behavior, m.scripts, m.title)
                        for m in c.maps], extra_lumps={"VNETINFO": json.dumps(infos).encode(),
                                                       "VNETLIST": lumps["VNETLIST"]})
        kind, detail = _run_tagged(["run", bad, "--random", "3"], t, timeout=120)
        counts[kind] = counts.get(kind, 0) + 1
        if kind not in ("refused", "EXACT"):
            findings.append(f"{kind}: {name} {did}: {detail}")
        log(f"  {kind:<8} {name:<6} {did[:70]}  {detail[:90]}")
        os.remove(bad)
    return {"cases": n, "counts": counts, "findings": findings}


def _run_tagged(args: list[str], cwd: str, timeout: float) -> tuple[str, str]:
    tag = uuid.uuid4().hex
    env = {**os.environ, "VOODOO_QUIET": "1", "VOODOO_ORPHAN_TAG": tag}
    p = subprocess.Popen([PY, os.path.join(ROOT, "build.py"), *args], cwd=cwd, env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         start_new_session=True)
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate()
        _kill(tagged(tag))
        return "hang", f"no answer in {timeout:.0f} s"
    left = _settled(tag)
    if left:
        _kill(left)
        return "orphan", f"left {left}"
    last = (err.strip().splitlines() or [""])[0]
    if p.returncode == 3 or "Traceback" in err:
        return "internal error", err.strip()[-300:]
    if p.returncode == 0:
        return ("EXACT" if out.strip().endswith("EXACT") else "exit 0"), out.strip()[-80:]
    if p.returncode == 4:
        return "MISMATCH", out.strip()[-200:]
    return ("refused" if p.returncode == 1 else f"exit {p.returncode}"), last


# --------------------------------------------------------------------------- signals
def tagged(tag: str) -> list[tuple[int, str]]:
    found = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/environ", "rb") as f:
                env = f.read()
            with open(f"/proc/{d}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
            with open(f"/proc/{d}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        if f"VOODOO_ORPHAN_TAG={tag}".encode() in env and state != "Z":
            found.append((int(d), os.path.basename(argv[0]).decode(errors="replace")))
    return found


def _settled(tag: str, seconds: float = 3.0) -> list:
    end = time.monotonic() + seconds
    while tagged(tag) and time.monotonic() < end:
        time.sleep(0.05)
    return tagged(tag)


def _kill(procs) -> None:
    for pid, _ in procs:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def _instances(tag: str) -> list[str]:
    out = []
    for pid, name in tagged(tag):
        if name == "vizdoom":
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    argv = f.read().split(b"\0")
                out.append(argv[argv.index(b"+viz_instance_id") + 1].decode())
            except (OSError, ValueError, IndexError):
                pass
    return out


def fuzz_signals(t: str, n: int, rng: random.Random, log) -> dict:
    from commands.common import build_maps
    from mapgen.compile import write_wad

    wads = {}
    for name, tiles in (("running_max", None), ("elman", "3"), ("mlp3", "2")):
        net, maps, plan = build_maps(circuit(f"{name}.dnet"), tiles)
        wads[name] = f"{t}/sig-{name}.wad"
        write_wad(wads[name], maps, net, plan)
    counts, findings = {}, []
    for _ in range(n):
        name = rng.choice(sorted(wads))
        how = rng.choice(["SIGTERM", "SIGINT", "SIGHUP", "SIGKILL"])
        stop, delay = rng.random() < 0.5, rng.uniform(0.2, 3.0)
        kind, detail = _signal_case(wads[name], how, stop, delay, t)
        counts[kind] = counts.get(kind, 0) + 1
        if kind != "ok":
            findings.append(f"{kind}: {name} {how} {'stopped game ' if stop else ''}"
                            f"after {delay:.1f} s: {detail}")
        log(f"  {kind:<8} {name:<12} {how:<8} {'stopped' if stop else 'running':<8} "
            f"{delay:.1f} s  {detail[:80]}")
    return {"cases": n, "counts": counts, "findings": findings}


def _signal_case(wad: str, how: str, stop: bool, delay: float, t: str) -> tuple[str, str]:
    tag = uuid.uuid4().hex
    tmp = tempfile.mkdtemp(dir=t)
    env = {**os.environ, "VOODOO_QUIET": "1", "VOODOO_ORPHAN_TAG": tag, "TMPDIR": tmp}
    p = subprocess.Popen([PY, os.path.join(ROOT, "build.py"), "run", wad, "--random", "10000"],
                         cwd=tmp, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, start_new_session=True,
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    end = time.monotonic() + 120
    while not _instances(tag) and p.poll() is None and time.monotonic() < end:
        time.sleep(0.05)
    time.sleep(delay)
    games = _instances(tag)
    if stop:
        for pid, name in tagged(tag):
            if name == "vizdoom":
                os.kill(pid, signal.SIGSTOP)
                break
        time.sleep(0.3)
    t0 = time.monotonic()
    if how == "SIGINT":
        os.killpg(p.pid, signal.SIGINT)
    else:
        p.send_signal(getattr(signal, how))
    try:
        _, err = p.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        _, err = p.communicate()
        _kill(tagged(tag))
        return "hang", "no exit 60 s after the signal"
    took = time.monotonic() - t0
    left = _settled(tag)
    _kill(left)
    shm = [f for f in os.listdir("/dev/shm") if any(f.endswith(i) for i in games)]
    dirs = [f for f in os.listdir(tmp) if f.startswith("voodoonet-")]
    shutil.rmtree(tmp, ignore_errors=True)
    if left:
        return "orphan", f"left {left}"
    if shm:
        return "leak", f"/dev/shm {shm}"
    if "Traceback" in err or p.returncode == 3:
        return "internal error", err.strip()[-300:]
    if how != "SIGKILL":
        want = {"SIGINT": 130, "SIGTERM": 143, "SIGHUP": 129}[how]
        if p.returncode != want:
            return "exit", f"exit {p.returncode}, not {want}: {err.strip()[-200:]}"
        if took > 2.0:
            return "slow", f"exit {took:.2f} s after the signal"
        if dirs:
            return "leak", f"engine directories {dirs}"
    return "ok", f"exit {p.returncode} after {took:.2f} s"


# --------------------------------------------------------------------------- main
def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", default="outputs,manifests,signals")
    ap.add_argument("--manifests", type=int, default=60, help="tampered WADs to run")
    ap.add_argument("--signals", type=int, default=24, help="runs to signal")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("-q", "--quiet", action="store_true", help="only the summary")
    args = ap.parse_args(argv)
    rng = random.Random(args.seed)

    def log(line: str) -> None:
        if not args.quiet:
            print(line, flush=True)

    report = {}
    with tempfile.TemporaryDirectory(prefix="fuzz-cli-") as t:
        for part in args.only.split(","):
            os.makedirs(f"{t}/{part}")
            log(f"{part}:")
            t0 = time.monotonic()
            report[part] = (fuzz_outputs(f"{t}/{part}", log) if part == "outputs" else
                            fuzz_manifests(f"{t}/{part}", args.manifests, rng, log)
                            if part == "manifests" else
                            fuzz_signals(f"{t}/{part}", args.signals, rng, log))
            report[part]["seconds"] = round(time.monotonic() - t0)
    findings = 0
    for part, r in report.items():
        print(f"{part}: {r['cases']} cases in {r['seconds']} s: "
              + ", ".join(f"{v} {k}" for k, v in sorted(r["counts"].items())))
        for f in r["findings"]:
            print(f"  FINDING {f}")
        findings += len(r["findings"])
    print(f"{findings} finding(s)")
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
