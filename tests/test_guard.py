"""Issue 37 items 1-4: no command replaces one of its own inputs (the files a model or
netlist loads included, by resolved path or inode) or writes two of its outputs onto one
file; commands/common.guard refuses before any work, with one line naming both files.

Every case runs in one interpreter (build.main, in-process): each is refused in well under
a second, before any model is built; the inputs' bytes and times are compared before and
after, and the scratch folder must hold nothing new."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from conftest import ROOT

XOR = os.path.join(ROOT, "circuits", "xor.dnet")


def rel(path: str) -> str:
    return os.path.join(ROOT, path)


# (command line, the file that must not change, what the one line must name). {t} is a
# scratch folder holding xor.onnx (export --onnx of xor.dnet) and c.npy (calibration).
CASES = [
    # 1: the chat model's weights are an input as much as its netlist
    (["chat", "--config", "large", "--prompt", "hi", "-o", rel("models/data/chat_large.pt")],
     rel("models/data/chat_large.pt"), "would overwrite the input"),
    (["chat", "-o", rel("models/data/chat_chat.pt")], rel("models/data/chat_chat.pt"),
     "would overwrite the input"),
    # 2: the model mnist loads, and the pictures it writes beside the WAD
    (["mnist", "--model", "cnn", "--samples", "1", "-o", rel("circuits/mnist_cnn.dnet")],
     rel("circuits/mnist_cnn.dnet"), "would overwrite the input"),
    (["mnist", "--small", "--samples", "1", "-o", rel("circuits/mnist_small.dnet")],
     rel("circuits/mnist_small.dnet"), "would overwrite the input"),
    (["mnist", "--small", "--data", "{t}", "-o", "{t}/train-images-idx3-ubyte"],
     "{t}/train-images-idx3-ubyte", "would overwrite the input"),
    # the netlists other demos load
    (["museum", "-o", rel("circuits/museum.dnet")], rel("circuits/museum.dnet"),
     "would overwrite the input"),
    (["brainlevel", "--policy", "mlp", "-o", rel("circuits/brainlevel_mlp.dnet")],
     rel("circuits/brainlevel_mlp.dnet"), "would overwrite the input"),
    # 3: the calibration file is an input of import
    (["import", "{t}/xor.onnx", "-o", "{t}/c.npy", "--calibrate", "{t}/c.npy"], "{t}/c.npy",
     "would overwrite the input {t}/c.npy"),
    # 4: two outputs of one command onto one file
    (["compile", XOR, "-o", "{t}/g.wad", "--acs", "{t}/g.pk3", "--pk3"], None,
     "--pk3 {t}/g.pk3: the same file as --acs {t}/g.pk3"),
    (["compile", XOR, "-o", "{t}/g.wad", "--acs", "{t}/o.png", "--screenshot", "{t}/o.png"],
     None, "--screenshot {t}/o.png: the same file as --acs {t}/o.png"),
    (["compile", XOR, "-o", "{t}/g.wad", "--pk3", "{t}/o.png", "--screenshot", "{t}/o.png"],
     None, "--screenshot {t}/o.png: the same file as --pk3 {t}/o.png"),
    (["compile", XOR, "--acs", "{t}/g.wad", "-o", "{t}/g.wad"], None,
     "--acs {t}/g.wad: the same file as -o {t}/g.wad"),
    # a part file of a WAD too big for one file (mapgen.compile.part_path) is an output too
    (["compile", XOR, "--tiles", "2", "-o", "{t}/big.wad", "--acs", "{t}/big.1.wad"], None,
     "--acs {t}/big.1.wad: the same file as -o {t}/big.wad (or one of its parts)"),
]

DRIVER = """
import contextlib, io, json, os, sys
sys.path.insert(0, {root!r})
os.environ["VOODOO_QUIET"] = "1"
import build
out = []
for argv in json.loads(sys.argv[1]):
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = build.main(argv)
    out.append([code, err.getvalue()])
print(json.dumps(out))
"""


def stamp(path: str):
    st = os.stat(path)
    with open(path, "rb") as f:
        return st.st_size, st.st_mtime_ns, st.st_ino, f.read()


@pytest.fixture(scope="module")
def scratch(tmp_path_factory):
    import numpy as np

    t = tmp_path_factory.mktemp("guard")
    subprocess.run([sys.executable, "build.py", "export", XOR, "--onnx", "-o",
                    str(t / "xor.onnx")], cwd=ROOT, check=True, capture_output=True)
    np.save(t / "c.npy", np.zeros((4, 2), dtype=np.int64))
    (t / "train-images-idx3-ubyte").write_bytes(b"\0\0\x08\x03" + b"\0" * 12)
    (t / "train-labels-idx1-ubyte").write_bytes(b"\0\0\x08\x01\0\0\0\0")
    return t


def test_no_output_replaces_an_input_or_another_output(scratch):
    t = str(scratch)
    argvs = [[a.format(t=t) for a in argv] for argv, _, _ in CASES]
    kept = {f.format(t=t): stamp(f.format(t=t)) for _, f, _ in CASES if f}
    before = sorted(os.listdir(t))
    p = subprocess.run([sys.executable, "-c", DRIVER.format(root=ROOT), json.dumps(argvs)],
                       cwd=t, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    for (argv, _, said), (code, err) in zip(CASES, json.loads(p.stdout)):
        lines = err.strip().splitlines()
        assert code == 1 and len(lines) == 1, (argv, code, err)
        assert said.format(t=t) in lines[0], (argv, lines[0])
    for f, st in kept.items():
        assert stamp(f) == st, f"{f} was replaced"
    assert sorted(os.listdir(t)) == before


def test_guard_units(tmp_path):
    """The guard itself: resolved paths (a symlink), inodes (a hard link), part files of a
    WAD read (wad_files) or written, and distinct outputs let through in order."""
    from commands.common import Output, guard, wad_files
    from dsl.diagnostics import VoodooError

    src = tmp_path / "in.dnet"
    src.write_text("network x\n")
    os.symlink(src, tmp_path / "link.dnet")
    os.link(src, tmp_path / "hard.dnet")
    for out in ("link.dnet", "hard.dnet", "./in.dnet"):
        with pytest.raises(VoodooError, match="would overwrite the input"):
            guard([("-o", str(tmp_path / out))], [str(src)])
    (tmp_path / "w.wad").write_bytes(b"PWAD")
    (tmp_path / "w.1.wad").write_bytes(b"PWAD")
    assert wad_files(str(tmp_path / "w.wad")) == [str(tmp_path / "w.wad"),
                                                 str(tmp_path / "w.1.wad")]
    with pytest.raises(VoodooError, match="would overwrite the input .*w.1.wad"):
        guard([("-o", str(tmp_path / "w.1.wad"))], wad_files(str(tmp_path / "w.wad")))
    with pytest.raises(VoodooError, match="its part files would overwrite the input"):
        guard([Output("-o", str(tmp_path / "n.wad"), parts=True)], [str(tmp_path / "n.3.wad")])
    assert guard([("-o", str(tmp_path / "a.wad")), ("--acs", None),
                  ("--pk3", None, str(tmp_path / "a.pk3"))], [str(src)]) == [
        str(tmp_path / "a.wad"), None, str(tmp_path / "a.pk3")]
