"""Issue 25 item 15: every command that writes a file checks each output path the same way
(commands/common.output_path) before doing any work, and the atomic writers
(dsl/util.atomic_output) rename only onto regular files or new names.

Each command is walked through the same bad outputs: a directory, a missing parent, a
device node, a FIFO, a place nothing can be written in (/proc; the tests run as root, so
file permissions would not stop them): one clean line, exit 1, nothing replaced or
created. The targets are made in a temporary directory (mknod of a null device, mkfifo),
never the system's own /dev files."""
from __future__ import annotations

import json
import os
import stat
import subprocess
import sys

import pytest

from conftest import ROOT

XOR = os.path.join(ROOT, "circuits", "xor.dnet")
PEDALS = os.path.join(ROOT, "circuits", "pedals.dnet")
WIRING = os.path.join(ROOT, "circuits", "pedals-my_way_home.wiring")

# command line per command; {out} is the output under test, {tmp} a scratch folder.
COMMANDS = {
    "compile": ["compile", XOR, "-o", "{out}"],
    "compile --acs": ["compile", XOR, "-o", "{tmp}/x.wad", "--acs", "{out}"],
    "run": ["run", XOR, "-i", "1,0", "-o", "{out}"],
    "render": ["render", XOR, "-o", "{out}"],
    "export --json": ["export", XOR, "-o", "{out}"],
    "export --onnx": ["export", XOR, "--onnx", "-o", "{out}"],
    "export --torch": ["export", XOR, "--torch", "-o", "{out}"],
    "extract": ["extract", "{tmp}/xor.wad", "-o", "{out}"],
    "embed": ["embed", PEDALS, "--into", "vizdoom:my_way_home", "--wiring", WIRING,
              "-o", "{out}"],
    "acs": ["acs", "{tmp}/s.acs", "-o", "{out}"],
    "hello": ["hello", "-o", "{out}"],
    "museum": ["museum", "-o", "{out}"],
    "mnist": ["mnist", "--small", "-o", "{out}"],
    "tictactoe": ["tictactoe", "-o", "{out}"],
    "tictactoe --screenshot": ["tictactoe", "--screenshot", "-o", "{out}"],
    "museum --screenshot": ["museum", "--screenshot", "-o", "{out}"],
    "brainlevel": ["brainlevel", "--policy", "mlp", "-o", "{out}"],
    "chat": ["chat", "-o", "{out}"],
    "chat --config microbit": ["chat", "--config", "microbit", "-o", "{out}"],
    "brainlevel --gif": ["brainlevel", "--policy", "mlp", "-o", "{tmp}/b.wad",
                         "--gif", "{out}"],
}
# Named .gif, which --gif needs; other commands take any name.
TARGETS = ["dir.gif", "missing/x.gif", "null.gif", "fifo.gif", "/proc/voodoonet-test.gif"]

# Runs build.main once per target in one interpreter (a FIFO opened for writing would
# block: the whole walk has a timeout), and reports exit statuses and stderr as JSON.
DRIVER = """
import contextlib, io, json, sys
sys.path.insert(0, {root!r})
import build
out = []
for argv in json.loads(sys.argv[1]):
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = build.main(argv)
    out.append([code, err.getvalue()])
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def scratch(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("outputs")
    subprocess.run([sys.executable, "build.py", "compile", XOR, "-o", str(tmp / "xor.wad")],
                   cwd=ROOT, check=True, capture_output=True)
    (tmp / "s.acs").write_text("script 1 OPEN { Delay(1); }\n")
    return tmp


def _targets(base) -> dict[str, str]:
    """The bad outputs, fresh: a directory, a missing parent, a null device, a FIFO."""
    (base / "dir.gif").mkdir()
    os.mknod(base / "null.gif", 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    os.mkfifo(base / "fifo.gif")
    return {t: (t if t.startswith("/") else str(base / t)) for t in TARGETS}


def _unchanged(base) -> None:
    assert sorted(os.listdir(base)) == ["dir.gif", "fifo.gif", "null.gif"], os.listdir(base)
    assert os.listdir(base / "dir.gif") == []
    assert stat.S_ISCHR(os.stat(base / "null.gif").st_mode)
    assert os.stat(base / "null.gif").st_rdev == os.makedev(1, 3)
    assert stat.S_ISFIFO(os.stat(base / "fifo.gif").st_mode)
    assert not os.path.exists("/proc/voodoonet-test.gif")


@pytest.mark.parametrize("command", list(COMMANDS))
def test_every_output_is_checked_the_same_way(scratch, tmp_path, command):
    base = tmp_path / "t"
    base.mkdir()
    targets = _targets(base)
    argvs = [[a.format(out=targets[t], tmp=scratch) for a in COMMANDS[command]]
             for t in TARGETS]
    p = subprocess.run([sys.executable, "-c", DRIVER.format(root=ROOT), json.dumps(argvs)],
                       cwd=tmp_path, capture_output=True, text=True, timeout=600,
                       env={**os.environ, "VOODOO_QUIET": "1"})
    assert p.returncode == 0, p.stderr
    for t, (code, err) in zip(TARGETS, json.loads(p.stdout)):
        lines = err.strip().splitlines()
        assert code == 1 and len(lines) == 1, (command, t, code, err)
        assert targets[t] in lines[0], (command, t, lines[0])
        assert "internal error" not in err and "Traceback" not in err
    _unchanged(base)


def test_atomic_writers_never_replace_a_device_node_or_fifo(tmp_path):
    """The last line, below the commands' checks: dsl/util.atomic_write refuses."""
    from dsl.util import atomic_write

    base = tmp_path / "t"
    base.mkdir()
    targets = _targets(base)
    for t in ("null.gif", "fifo.gif", "dir.gif"):
        with pytest.raises(OSError, match="only regular files are replaced"):
            atomic_write(targets[t], b"x")
    with pytest.raises(FileNotFoundError):   # a missing folder is not created
        atomic_write(targets["missing/x.gif"], b"x")
    _unchanged(base)


def test_atomic_writes_go_through_a_symlink_to_its_file(tmp_path):
    from dsl.util import atomic_write

    (tmp_path / "real.txt").write_text("old")
    os.symlink(tmp_path / "real.txt", tmp_path / "link.txt")
    atomic_write(str(tmp_path / "link.txt"), b"new")
    assert os.path.islink(tmp_path / "link.txt")
    assert (tmp_path / "real.txt").read_text() == "new"
    assert sorted(os.listdir(tmp_path)) == ["link.txt", "real.txt"]


@pytest.mark.parametrize("command, picture", [("tictactoe", "x-board.png"),
                                              ("museum", "x-lanes.png")])
def test_screenshots_beside_the_wad_are_checked_first(tmp_path, command, picture):
    os.mkfifo(tmp_path / picture)
    p = subprocess.run([sys.executable, "build.py", command, "--screenshot", "-o",
                        str(tmp_path / "x.wad")], cwd=ROOT, capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 1 and p.stderr == (
        f"--screenshot {tmp_path / picture}: is a FIFO, not a regular file: it is never "
        "replaced; give a file name\n"), p.stderr
    assert os.listdir(tmp_path) == [picture]
    assert stat.S_ISFIFO(os.stat(tmp_path / picture).st_mode)


@pytest.mark.parametrize("config,source", [("chat", "circuits/chat.dnet"),
                                           ("large", "circuits/chat_large.dnet"),
                                           ("microbit", "models/data/chat_microbit.pt")])
def test_chat_never_writes_onto_its_own_model(tmp_path, config, source):
    """The micro:bit size has no checked-in netlist: its weights are what -o must not
    replace."""
    path = os.path.join(ROOT, source)
    before = os.stat(path)
    p = subprocess.run([sys.executable, "build.py", "chat", "--config", config, "-o", path],
                       cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert p.returncode == 1 and "Traceback" not in p.stderr, p.stderr
    assert path in p.stderr or source in p.stderr, p.stderr
    after = os.stat(path)
    assert (after.st_size, after.st_mtime_ns) == (before.st_size, before.st_mtime_ns)
