"""Issue 15 items 18 and 19: crafted or mismatched WADs are clear errors before (or, for a
crash, instead of) anything worse; engines never outlive the command that started them,
whatever signal ends it, and leave no files behind (vizdoom-crash.log, config dirs)."""
import json
import os
import signal
import struct
import subprocess
import sys
import time
import uuid

import pytest

from conftest import ROOT
from acs.wad import MapLump, read_wad, write_wad

XOR = os.path.join(ROOT, "circuits", "xor.dnet")
MLP3 = os.path.join(ROOT, "circuits", "mlp3.dnet")


def start(*args, cwd, tmpdir, tag=None):
    env = {**os.environ, "VOODOO_QUIET": "1", "TMPDIR": str(tmpdir),
           "VOODOO_ORPHAN_TAG": tag or "none"}
    # Ctrl-C as in a terminal: a test worker that ran ViZDoom in-process may have left SIGINT
    # ignored, and a child inherits that (the command then never saw the signals below).
    return subprocess.Popen([sys.executable, os.path.join(ROOT, "build.py"), *args], cwd=cwd,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


def cli(*args, cwd, tmpdir):
    p = start(*args, cwd=cwd, tmpdir=tmpdir)
    out, err = p.communicate(timeout=600)
    return p.returncode, out, err


def tagged(tag: str) -> list[int]:
    """Every live process started (directly or not) by the command carrying `tag`."""
    pids = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/environ", "rb") as f:
                    env = f.read()
                with open(f"/proc/{d}/stat") as f:
                    state = f.read().rsplit(")", 1)[1].split()[0]
            except OSError:
                continue
            if f"VOODOO_ORPHAN_TAG={tag}".encode() in env and state != "Z":
                pids.append(int(d))
    return pids


@pytest.fixture
def xor_wad(tmp_path):
    wad = tmp_path / "xor.wad"
    code, _, err = cli("compile", XOR, "-o", str(wad), cwd=tmp_path, tmpdir=tmp_path)
    assert code == 0, err
    return wad


def rewrite(src, dst, textmap=None, behavior=None, info=None):
    c = read_wad(str(src))
    m = c.maps[0]
    extra = {k: v for k, v in c.lumps if k in ("VNETINFO", "VNETLIST")}
    if info is not None:
        extra["VNETINFO"] = info.encode()
    m = MapLump(m.name, m.textmap if textmap is None else textmap,
                m.behavior if behavior is None else behavior, m.scripts, m.title)
    write_wad(str(dst), [m], extra_lumps=extra)


INFOS = ["[]", "{}", '"x"', '{"MAP01": {}}', '{"MAP01": []}', '{"MAP07": {}}']


@pytest.mark.parametrize("info", INFOS)
def test_damaged_manifest_lump_is_a_clear_error(tmp_path, xor_wad, info):
    bad = tmp_path / "bad.wad"
    rewrite(xor_wad, bad, info=info)
    code, out, err = cli("run", str(bad), "-i", "1,0", cwd=tmp_path, tmpdir=tmp_path)
    assert code == 1 and "the VNETINFO lump is damaged" in err and "internal" not in err, err


def test_manifest_of_another_netlist_is_refused(tmp_path, xor_wad):
    info = json.loads(dict(read_wad(str(xor_wad)).lumps)["VNETINFO"])
    info["MAP01"]["inputs"] = ["p", "q"]
    bad = tmp_path / "bad.wad"
    rewrite(xor_wad, bad, info=json.dumps(info))
    code, _, err = cli("run", str(bad), "-i", "1,0", cwd=tmp_path, tmpdir=tmp_path)
    assert code == 1 and "built for other inputs or outputs" in err, err


def test_map_that_does_not_answer_is_a_user_error(tmp_path, xor_wad):
    info = json.loads(dict(read_wad(str(xor_wad)).lumps)["VNETINFO"])
    info["MAP01"]["inference_tics"] = 0
    # hand_on must stay within the (now empty) step, or the manifest check refuses it first
    info["MAP01"]["hand_on"] = [0] * len(info["MAP01"]["hand_on"])
    bad = tmp_path / "bad.wad"
    rewrite(xor_wad, bad, info=json.dumps(info))
    code, _, err = cli("run", str(bad), "-i", "1,0", cwd=tmp_path, tmpdir=tmp_path)
    assert code == 1 and "did not finish in its predicted 0 tics" in err, err
    assert "internal error" not in err


def test_garbage_map_lumps_are_refused_before_the_engine(tmp_path, xor_wad):
    for kw, message in [(dict(textmap="garbage { x = ; }"), "TEXTMAP: "),
                        (dict(behavior=b"ACS\0" + os.urandom(64)), "BEHAVIOR: "),
                        (dict(behavior=b"ACSX" + b"\x00" * 60), "BEHAVIOR: not a compiled ACS")]:
        bad = tmp_path / "bad.wad"
        rewrite(xor_wad, bad, **kw)
        code, _, err = cli("run", str(bad), "-i", "1,0", cwd=tmp_path, tmpdir=tmp_path)
        assert code == 1 and f"map MAP01 is damaged: {message}" in err, err


def test_engine_crash_is_an_error_and_leaves_nothing(tmp_path, xor_wad):
    """A BEHAVIOR that passes the header check but crashes the engine (SIGSEGV): the command
    survives, says so, and leaves no vizdoom-crash.log, _vizdoom/ or temporary directory."""
    import random
    rng = random.Random(1)
    work, tmp = tmp_path / "cwd", tmp_path / "tmp"
    work.mkdir()
    tmp.mkdir()
    bad = work / "crash.wad"
    rewrite(xor_wad, bad, behavior=b"ACS\0" + struct.pack("<i", 8)
            + bytes(rng.randrange(256) for _ in range(3000)))
    code, _, err = cli("run", str(bad), "-i", "1,0", cwd=work, tmpdir=tmp)
    assert code == 1 and "the engine was killed by SIGSEGV" in err, err
    assert os.listdir(work) == ["crash.wad"] and os.listdir(tmp) == []


def test_a_dead_game_the_engine_never_reports_ends_the_call(tmp_path, xor_wad, monkeypatch):
    """The game process killed while its engine child cannot answer (stopped here, as
    ViZDoom's own watcher once never told it under load): the call ends with an
    EngineError GAME_GRACE seconds later instead of waiting forever, and the child is
    gone. Without the game's death, a stopped child is only slow: the call waits."""
    import engine.doom as D

    monkeypatch.setattr(D, "GAME_GRACE", 2.0)
    eng = D.Engine(str(xor_wad))
    try:
        child, game = eng._proc.pid, eng._game
        assert game is not None and D._running(game)
        os.kill(child, signal.SIGSTOP)
        t0 = time.monotonic()
        os.kill(game, signal.SIGKILL)
        with pytest.raises(D.EngineError, match="game process died"):
            eng.advance(1)
        assert 2.0 <= time.monotonic() - t0 < 30
        assert eng._proc.poll() is not None and not D._running(game)
    finally:
        eng.close()


def test_a_slow_engine_with_a_live_game_is_waited_for(tmp_path, xor_wad, monkeypatch):
    import threading

    import engine.doom as D

    monkeypatch.setattr(D, "GAME_GRACE", 1.0)
    with D.Engine(str(xor_wad)) as eng:
        child = eng._proc.pid
        os.kill(child, signal.SIGSTOP)
        threading.Timer(4.0, os.kill, (child, signal.SIGCONT)).start()
        t0 = time.monotonic()
        eng.advance(1)                       # answered once the child runs again
        assert time.monotonic() - t0 >= 3.5
        assert eng.tic() >= 1

def test_failed_engine_start_leaves_no_directories(tmp_path, monkeypatch):
    from engine.doom import Engine, EngineError
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    import tempfile
    monkeypatch.setattr(tempfile, "tempdir", None)
    with pytest.raises(EngineError, match="could not start"):
        Engine(str(tmp_path / "missing.wad"))
    assert os.listdir(tmp_path) == []


def _interrupted_start(monkeypatch, tmp_path):
    """Make every DoomGame start and then see an interrupt (Ctrl-C, or SIGTERM made one by
    build.py) before its constructor returns: where 4 of 5 interrupted brainlevel runs were
    stopped (issue 25 item 16). Temporary directories go to tmp_path."""
    import tempfile

    import vizdoom

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    real = vizdoom.DoomGame.init

    def init(self):
        real(self)
        raise KeyboardInterrupt("SIGTERM")
    monkeypatch.setattr(vizdoom.DoomGame, "init", init)


def test_an_interrupted_in_process_engine_start_leaves_nothing(tmp_path, xor_wad, monkeypatch):
    """The in-process engine (brainlevel's) removes its config directory (voodoonet-vzd-*)
    however its start ends."""
    from engine.doom import LocalEngine

    tmp = tmp_path / "tmp"
    tmp.mkdir()
    _interrupted_start(monkeypatch, tmp)
    with pytest.raises(KeyboardInterrupt):
        LocalEngine(str(xor_wad))
    assert os.listdir(tmp) == []


def test_an_interrupted_scenario_start_leaves_nothing(tmp_path, monkeypatch):
    import vizdoom

    from engine.scenario import Scenario

    tmp = tmp_path / "tmp"
    tmp.mkdir()
    _interrupted_start(monkeypatch, tmp)
    with pytest.raises(KeyboardInterrupt):
        Scenario(os.path.join(os.path.dirname(vizdoom.__file__), "scenarios", "basic.cfg"))
    assert os.listdir(tmp) == []


def _ended(p, timeout=60):
    """The command's output once it has exited; if it has not within `timeout` seconds,
    a failure showing where it waits (build.py prints its stacks on SIGUSR1)."""
    try:
        return p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        try:
            with open(f"/proc/{p.pid}/status") as f:
                masks = [ln.strip() for ln in f if ln.startswith(("SigIgn", "SigCgt"))]
        except OSError:
            masks = []
        p.send_signal(signal.SIGUSR1)
        time.sleep(3)
        os.killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate()
        pytest.fail(f"the command did not exit {timeout} s after the signal ({masks}); its "
                    f"stacks:\n{err[-6000:]}")


def _wait_for_engines(p, tag, n=1, timeout=120):
    end = time.time() + timeout
    while time.time() < end:
        if len([q for q in tagged(tag) if q != p.pid]) >= n:
            return
        if p.poll() is not None:
            pytest.fail(f"the command ended early: {p.communicate()}")
        time.sleep(0.1)
    pytest.fail("no engine started")


@pytest.mark.parametrize("how", ["SIGTERM", "SIGINT-group", "SIGKILL"])
def test_no_orphans_after_a_signal(tmp_path, xor_wad, how):
    tag = uuid.uuid4().hex
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    p = start("run", str(xor_wad), "--random", "100000", cwd=tmp_path, tmpdir=tmp, tag=tag)
    _wait_for_engines(p, tag, 1)
    time.sleep(1.0)  # mid-run
    if how == "SIGTERM":
        p.send_signal(signal.SIGTERM)
    elif how == "SIGKILL":
        p.kill()
    else:
        os.killpg(p.pid, signal.SIGINT)  # Ctrl-C in a terminal reaches the whole group
    out, err = _ended(p)
    end = time.time() + 10
    while tagged(tag) and time.time() < end:
        time.sleep(0.1)
    assert tagged(tag) == []
    if how != "SIGKILL":
        assert p.returncode in (130, 143) and "Traceback" not in err, err
        assert os.listdir(tmp) == []


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_no_orphans_after_a_signal_to_a_tiled_run(tmp_path, sig):
    tag = uuid.uuid4().hex
    wad, tmp = tmp_path / "mlp3.wad", tmp_path / "tmp"
    tmp.mkdir()
    code, _, err = cli("compile", MLP3, "--tiles", "2", "-o", str(wad), cwd=tmp_path,
                       tmpdir=tmp)
    assert code == 0, err
    # Enough inputs that the run cannot end before the signal, however loaded the machine.
    p = start("run", str(wad), "--random", "100000", cwd=tmp_path, tmpdir=tmp, tag=tag)
    _wait_for_engines(p, tag, 3)  # two workers and at least one engine
    time.sleep(2.0)
    if sig == signal.SIGINT:
        os.killpg(p.pid, sig)
    else:
        p.send_signal(sig)
    out, err = _ended(p)
    end = time.time() + 15
    while tagged(tag) and time.time() < end:
        time.sleep(0.1)
    assert tagged(tag) == [], "engine or worker processes outlived the command"
    assert "Traceback" not in err and "BrokenPipeError" not in err, err
    assert p.returncode in (130, 143)
    leftovers = [f for f in os.listdir(tmp) if f.startswith("voodoonet-engine-")]
    assert leftovers == []


def test_a_gzdoom_run_that_hangs_is_ended_with_its_whole_group(tmp_path):
    """engine/gzdoom._run_group: a command whose children keep its output open (xvfb-run's
    GZDoom did) is ended at its timeout, children too, with a clear error."""
    from engine.doom import EngineError
    from engine.gzdoom import _run_group

    tag = uuid.uuid4().hex
    env = {**os.environ, "VOODOO_ORPHAN_TAG": tag}
    t = time.monotonic()
    with pytest.raises(EngineError, match="did not finish in 2 s"):
        _run_group(["sh", "-c", "sleep 300 & sleep 300 & echo started >&2; wait"],
                   str(tmp_path), env, 2)
    assert time.monotonic() - t < 30
    end = time.time() + 10
    while tagged(tag) and time.time() < end:
        time.sleep(0.1)
    assert tagged(tag) == []
