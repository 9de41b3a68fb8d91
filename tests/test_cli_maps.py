"""The map commands end to end, as a user runs them: compile, run (netlists and WADs, one
map or tiles), render, and clear errors for bad input."""
import os
import subprocess
import sys

from conftest import ROOT

MLP3 = os.path.join(ROOT, "circuits", "mlp3.dnet")


def cli(*args):
    return subprocess.run([sys.executable, os.path.join(ROOT, "build.py"), *args],
                          capture_output=True, text=True, env={**os.environ, "VOODOO_QUIET": "1"})


def test_compile_tiled_then_run_the_wad(tmp_path):
    wad = str(tmp_path / "mlp3.wad")
    r = cli("compile", MLP3, "-o", wad, "--tiles", "2")
    assert r.returncode == 0, r.stderr
    assert "into 2 maps" in r.stdout and r.stdout.count("tics per inference") == 2
    r = cli("run", wad, "-i", "3,2,2,1", "--random", "3")
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[-1] == "4/4 EXACT"
    assert "input 3,2,2,1  engine [-2, 19, 11]  reference [-2, 19, 11]  EXACT" in r.stdout


def test_run_netlist_debug_and_render(tmp_path):
    r = cli("run", MLP3, "-o", str(tmp_path / "m.wad"), "-i", "0,3,2,3", "--debug")
    assert r.returncode == 0 and r.stdout.splitlines()[-1] == "1/1 EXACT", r.stderr
    png = tmp_path / "m.png"
    r = cli("render", MLP3, "-o", str(png), "-i", "0,3,2,3", "--size", "600")
    assert r.returncode == 0 and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_bad_inputs_are_clear_errors(tmp_path):
    bad = tmp_path / "bad.wad"
    bad.write_bytes(b"PWAD garbage")
    r = cli("run", str(bad), "-i", "1")
    assert r.returncode == 1 and "bad.wad: corrupt or truncated WAD" in r.stderr
    r = cli("run", MLP3, "-o", str(tmp_path / "m.wad"), "-i", "9,0,0,0")
    assert r.returncode == 1 and "x[0] = 9 is outside its declared range 0..3" in r.stderr
    r = cli("compile", MLP3, "-o", str(tmp_path / "m.wad"), "--tiles", "many")
    assert r.returncode == 1 and "--tiles many: give a number of maps" in r.stderr
    assert "Traceback" not in r.stderr


def test_mnist_command_small_model_ends_with_the_verdict(tmp_path):
    wad = str(tmp_path / "mnist.wad")
    r = cli("mnist", "--small", "--samples", "24", "-o", wad)
    assert r.returncode == 0, r.stderr
    last = r.stdout.strip().splitlines()[-1]
    assert last.startswith("engine==reference 24/24 EXACT; accuracy float - int ")
    assert "engine == reference" in r.stdout and "dolls per tile" in r.stdout
    for picture in ("mnist-confusion.png", "mnist-path.png"):
        assert (tmp_path / picture).read_bytes()[:4] == b"\x89PNG"
    r = cli("mnist", "--small", "--samples", "0", "-o", wad)
    assert r.returncode == 1 and "--samples 0: choose 1..2000" in r.stderr
