"""Issue 15 items 10, 12, 13, 14, 20: the command line refuses bad paths and arguments with
one line naming them, before any work, never writes half a file or clobbers an input, and
reports runs as JSON with distinct exit statuses."""
import json
import os
import stat
import subprocess
import sys

import pytest

from conftest import ROOT

XOR = os.path.join(ROOT, "circuits", "xor.dnet")
SPK = os.path.join(ROOT, "circuits", "spike_counter.dnet")


def cli(*args, cwd=None, umask=None):
    pre = (lambda: os.umask(umask)) if umask is not None else None
    return subprocess.run([sys.executable, os.path.join(ROOT, "build.py"), *args], cwd=cwd,
                          capture_output=True, text=True, preexec_fn=pre,
                          env={**os.environ, "VOODOO_QUIET": "1"})


def one_line_error(r, *needles):
    assert r.returncode == 1, (r.stdout, r.stderr)
    assert "Traceback" not in r.stderr and "internal error" not in r.stderr, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    for n in needles:
        assert n in lines[0], lines[0]


BAD_OUTPUTS = [
    ("{d}", "is a directory"),
    ("{d}/missing/x.wad", "directory {d}/missing does not exist"),
    ("{d}/file.txt/x.wad", "{d}/file.txt is not a directory"),
    ("", "give a file name"),
    ("/proc/x.out", "/proc/x.out"),
]


@pytest.mark.parametrize("command", ["compile", "export", "render", "run"])
@pytest.mark.parametrize("target,message", BAD_OUTPUTS)
def test_bad_output_paths_are_one_line_and_write_nothing(tmp_path, command, target, message):
    d = str(tmp_path)
    (tmp_path / "file.txt").write_text("keep")
    args = {"compile": ["compile", XOR], "export": ["export", XOR], "render": ["render", XOR],
            "run": ["run", XOR, "-i", "1,0"]}[command]
    r = cli(*args, "-o", target.format(d=d))
    one_line_error(r, message.format(d=d))
    assert sorted(os.listdir(d)) == ["file.txt"] and (tmp_path / "file.txt").read_text() == "keep"


def test_output_equal_to_the_source_is_refused(tmp_path):
    src = tmp_path / "xor.dnet"
    src.write_text(open(XOR).read())
    before = src.read_bytes()
    for args in (["compile", str(src), "-o", str(src)], ["export", str(src), "-o", str(src)],
                 ["run", str(src), "-i", "1,0", "-o", str(src)],
                 ["compile", str(src), "--acs", str(src), "-o", str(tmp_path / "x.wad")]):
        one_line_error(cli(*args), "would overwrite the input")
        assert src.read_bytes() == before and sorted(os.listdir(tmp_path)) == ["xor.dnet"]


def test_acs_directory_is_refused_before_the_wad_is_written(tmp_path):
    r = cli("compile", XOR, "-o", str(tmp_path / "x.wad"), "--acs", str(tmp_path))
    one_line_error(r, "--acs", "is a directory")
    assert os.listdir(tmp_path) == []


def test_atomic_writes_honour_the_umask_and_keep_a_replaced_files_mode(tmp_path):
    wad, js = tmp_path / "x.wad", tmp_path / "x.json"
    assert cli("compile", XOR, "-o", str(wad), umask=0o027).returncode == 0
    assert cli("export", XOR, "-o", str(js), umask=0o022).returncode == 0
    assert stat.S_IMODE(wad.stat().st_mode) == 0o640
    assert stat.S_IMODE(js.stat().st_mode) == 0o644
    os.chmod(wad, 0o664)
    assert cli("compile", XOR, "-o", str(wad), umask=0o077).returncode == 0
    assert stat.S_IMODE(wad.stat().st_mode) == 0o664


def test_write_errors_after_checks_are_one_line(tmp_path, monkeypatch):
    """An OS error during the write itself (full disk, immutable directory) names the path."""
    sys.path.insert(0, ROOT)
    import build
    import dsl.util

    def fail(path, data):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(dsl.util, "atomic_write", fail)
    out = str(tmp_path / "x.json")
    assert build.main(["export", XOR, "-o", out]) == 1
    assert not os.path.exists(out)


def test_run_checks_every_argument_before_writing(tmp_path):
    wad = tmp_path / "x.wad"
    for args, message in [(["-i", "7,0"], "a = 7 is outside its declared range 0..1"),
                          (["-i", "1,0", "--seed", "-1"], "--seed -1"),
                          (["--random", "-2"], "--random -2"),
                          (["-i", "1"], "1 values, but"),
                          (["-i", "1,0", "--tiles", "0"], "--tiles 0")]:
        one_line_error(cli("run", XOR, "-o", str(wad), *args), message)
        assert not wad.exists()
    wad.write_bytes(b"old")
    one_line_error(cli("run", XOR, "-o", str(wad), "-i", "1,5"), "b = 5")
    assert wad.read_bytes() == b"old"


def test_mnist_checks_workers_before_writing(tmp_path):
    wad = tmp_path / "m.wad"
    one_line_error(cli("mnist", "--small", "--workers", "0", "-o", str(wad)), "--workers 0")
    one_line_error(cli("mnist", "--small", "--tiles", "0", "-o", str(wad)), "--tiles 0")
    one_line_error(cli("mnist", "--small", "-o", str(tmp_path)), "is a directory")
    assert os.listdir(tmp_path) == []


def test_run_on_a_wad_refuses_tiles_and_output(tmp_path):
    wad = str(tmp_path / "x.wad")
    assert cli("compile", XOR, "-o", wad).returncode == 0
    one_line_error(cli("run", wad, "-i", "1,0", "--tiles", "2"), "--tiles", "already compiled")
    one_line_error(cli("run", wad, "-i", "1,0", "-o", str(tmp_path / "y.wad")), "-o")
    assert sorted(os.listdir(tmp_path)) == ["x.wad"]


def test_input_vectors_strict_and_negative(tmp_path):
    src = tmp_path / "neg.dnet"
    src.write_text("input x[3] : -4..4\nneuron y : identity = x[0] - 2*x[1] + x[2]\noutput y\n")
    r = cli("eval", str(src), "--input", "-3,0,1")
    assert r.returncode == 0 and r.stdout.strip() == "input -3,0,1: y=-2", r.stderr
    r = cli("eval", str(src), "-i", "-3, 0, 1", "-i", "+1,-1,0")
    assert r.returncode == 0 and r.stdout.splitlines()[1] == "input 1,-1,0: y=3", r.stderr
    for bad in ("0_1,0,0", "\u0661,0,0", "1,,0", "1,0,", "1;0;0", "1e3,0,0", "--", "1 0 0"):
        one_line_error(cli("eval", str(src), f"--input={bad}"), "expected comma-separated")


def test_render_refuses_bad_size_and_inputs(tmp_path):
    png = str(tmp_path / "x.png")
    one_line_error(cli("render", XOR, "-o", png, "--size", "0"), "--size 0")
    one_line_error(cli("render", XOR, "-o", png, "-i", "5,0"), "a = 5 is outside")
    one_line_error(cli("render", XOR, "-o", png, "-i", "1"), "1 values, but")
    assert os.listdir(tmp_path) == []


def test_run_json_and_exit_statuses(tmp_path):
    """--json carries inputs, engine and reference values, verdict and tics; a refused
    network exits 1, a MISMATCH 4 (documented in --help)."""
    r = cli("run", XOR, "-o", str(tmp_path / "x.wad"), "-i", "1,0", "-i", "1,1", "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["verdict"] == "EXACT" and doc["exact"] == doc["total"] == 2
    assert [(x["inputs"], x["engine"], x["reference"], x["verdict"]) for x in doc["results"]] \
        == [([1, 0], [1], [1], "EXACT"), ([1, 1], [0], [0], "EXACT")]
    assert all(x["tics"] > 0 for x in doc["results"]) and doc["outputs"] == ["y"]
    kerr = tmp_path / "k.dnet"
    kerr.write_text("input a : 0..2000\nneuron h : relu(s=1, max=2000) = a\noutput h\n")
    assert cli("run", str(kerr), "-i", "1", "-o", str(tmp_path / "k.wad")).returncode == 1
    help_text = " ".join(cli("run", "--help").stdout.split())
    assert "1 refused" in help_text and "4 MISMATCH" in help_text


def test_run_exits_4_on_a_mismatch(tmp_path, monkeypatch, capsys):
    """The engine's answer is replaced by a wrong one: the verdict and the status say so."""
    sys.path.insert(0, ROOT)
    from commands import run as run_cmd
    from engine import runner

    real = runner.MapRunner.infer
    monkeypatch.setattr(runner.MapRunner, "infer",
                        lambda self, x, first=False: [v + 1 for v in real(self, x, first)])
    assert run_cmd.run_netlist(XOR, inputs=["1,0"], output=str(tmp_path / "x.wad"),
                               as_json=True) == run_cmd.EXIT_MISMATCH
    doc = json.loads(capsys.readouterr().out)
    assert doc["verdict"] == "MISMATCH" and doc["results"][0]["engine"] == [2]


def test_eval_json_and_steps(tmp_path):
    r = cli("eval", XOR, "-i", "0,1", "--json")
    doc = json.loads(r.stdout)
    assert doc["names"] == ["y"] and doc["results"] == [{"inputs": [0, 1], "reference": [1]}]
    r = cli("eval", SPK, *sum((["-i", v] for v in "1 1 1 0 1 1 1 0 0".split()), []), "--json")
    doc = json.loads(r.stdout)
    assert r.returncode == 0 and doc["steps"] == 9
    assert [row[0] for row in doc["results"][0]["reference"]] == [0, 0, 1, 0, 0, 0, 1, 0, 0]


def test_netlist_files_that_are_not_regular_bom_and_eof_positions(tmp_path):
    fifo = tmp_path / "f.dnet"
    os.mkfifo(fifo)
    for path in ("/dev/zero", str(fifo)):
        r = subprocess.run([sys.executable, os.path.join(ROOT, "build.py"), "check", path],
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 1 and f"{path}: error: not a regular file" in r.stderr
    bom = tmp_path / "bom.dnet"
    bom.write_bytes(b"\xef\xbb\xbfinput a : 0..1\noutput a\n")
    assert cli("check", str(bom)).returncode == 0
    eof = tmp_path / "eof.dnet"
    eof.write_bytes(b"input a : 0..\x0c\x0c\x0c")
    assert f"{eof}:1:14: error: unexpected end of file" in cli("check", str(eof)).stderr
    eof.write_bytes(b"input a : 0..1\noutput\n\n\n")
    assert f"{eof}:2:7: error: unexpected end of file" in cli("check", str(eof)).stderr


def test_acs_write_failure_leaves_no_wad(tmp_path):
    """--acs in /proc is refused before anything is written (output_path creates and
    removes a file where each output goes: /proc passes every other check), so the WAD is
    not written either."""
    r = cli("compile", XOR, "-o", str(tmp_path / "x.wad"), "--acs", "/proc/x.acs")
    one_line_error(r, "--acs /proc/x.acs: cannot write in /proc")
    assert os.listdir(tmp_path) == []
