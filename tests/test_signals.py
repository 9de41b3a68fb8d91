"""Issue 37 item 7: a signal ends a run within 2 s and leaves no engine behind, whatever
state the engine is in (engine/doom.py: the child leads a process group with its game;
Engine.close kills the group when a call is in flight or an exception unwinds; the child
answers its parent's death at once, its calls running in another thread).

The state that used to leave a game behind is an engine busy in a long call (a chat step
of 1,376 tics): here the game process is stopped (SIGSTOP) mid-run, so the engine waits
in ViZDoom's C code for as long as the test likes, and a signal then reaches the command.
One map run step by step (`run` of a `steps open` netlist: MapRunner and
compare_sequence, the path `chat` takes), the same over 3 maps (engine/tiled.
stream_sequence, a thread per map) and a tiled run of independent inferences (engine
processes, engine/tiled.LocalEngines)."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid

import pytest

from conftest import ROOT


@pytest.fixture(scope="module")
def wads(tmp_path_factory):
    from commands.common import build_maps
    from mapgen.compile import write_wad

    tmp = tmp_path_factory.mktemp("signals")
    out = {}
    for name, tiles in (("running_max", None), ("elman", "3"), ("mlp3", "2")):
        net, maps, plan = build_maps(os.path.join(ROOT, "circuits", f"{name}.dnet"), tiles)
        out[name] = str(tmp / f"{name}.wad")
        write_wad(out[name], maps, net, plan)
    return out


def processes(tag: str) -> list[tuple[int, str, list[bytes]]]:
    """(pid, program, argv) of every live process the command carrying `tag` started."""
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
            found.append((int(d), os.path.basename(argv[0]).decode(), argv))
    return found


def games(tag: str) -> list[tuple[int, str]]:
    """(pid, ViZDoom instance id) of the command's game processes."""
    return [(pid, argv[argv.index(b"+viz_instance_id") + 1].decode())
            for pid, name, argv in processes(tag) if name == "vizdoom"]


# (WAD, signal, the game stopped?, seconds after the game appears). A signal while the
# engine starts (bench/fuzz_cli.py found its /dev/shm left behind) is the last two.
CASES = [("running_max", "SIGTERM", True, 1.0), ("running_max", "SIGINT", True, 1.0),
         ("running_max", "SIGKILL", True, 1.0), ("elman", "SIGTERM", True, 1.0),
         ("elman", "SIGKILL", True, 1.0), ("mlp3", "SIGINT", True, 1.0),
         ("mlp3", "SIGHUP", True, 1.0), ("running_max", "SIGHUP", False, 0.0),
         ("elman", "SIGTERM", False, 0.0)]


@pytest.mark.parametrize("wad, how, stop, delay", CASES)
def test_a_signal_to_a_run_whose_engine_is_stuck(wads, tmp_path, wad, how, stop, delay):
    tag = uuid.uuid4().hex
    env = {**os.environ, "VOODOO_QUIET": "1", "VOODOO_ORPHAN_TAG": tag,
           "TMPDIR": str(tmp_path)}
    p = subprocess.Popen([sys.executable, os.path.join(ROOT, "build.py"), "run", wads[wad],
                          "--random", "10000"], cwd=tmp_path, env=env, text=True,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         start_new_session=True,   # its own group, as in a terminal
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        end = time.monotonic() + 120
        while not games(tag) and p.poll() is None and time.monotonic() < end:
            time.sleep(0.05)
        time.sleep(delay)   # mid-run, or while the engine starts
        stuck = games(tag)
        assert stuck and p.poll() is None, p.communicate()
        if stop:
            os.kill(stuck[0][0], signal.SIGSTOP)   # the engine now waits inside ViZDoom
            time.sleep(0.5)
        t = time.monotonic()
        if how == "SIGINT":
            os.killpg(p.pid, signal.SIGINT)    # Ctrl-C in a terminal: the whole group
        else:
            p.send_signal(getattr(signal, how))
        out, err = p.communicate(timeout=60)
        took = time.monotonic() - t
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.communicate()
    end = time.monotonic() + 3   # a killed command's engines see their parent go
    while processes(tag) and time.monotonic() < end:
        time.sleep(0.05)
    left = processes(tag)
    for pid, _, _ in left:
        os.kill(pid, signal.SIGKILL)
    assert [(pid, name) for pid, name, _ in left] == [], "outlived the command"
    shm = [f for f in os.listdir("/dev/shm") if any(f.endswith(i) for _, i in stuck)]
    assert shm == [], "a killed game's shared memory was left behind"
    if how != "SIGKILL":
        code = {"SIGINT": 130, "SIGTERM": 143, "SIGHUP": 129}[how]
        assert p.returncode == code and err.strip().splitlines()[-1].startswith(
            "interrupted") and "Traceback" not in err, err
        assert took < 2.0, f"answered the signal after {took:.1f} s"
        assert [f for f in os.listdir(tmp_path) if f.startswith("voodoonet-")] == []
