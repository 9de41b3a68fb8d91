"""Small shared helpers: atomic file writes (never a half-written output, modes as the
umask says, only onto regular files or new names), a file's digest read in blocks, and
integers printed safely at any size. commands/common.output_path checks an output path before a command does any work;
these writers are the last line."""
from __future__ import annotations

import os
import tempfile
from contextlib import contextmanager


def new_file_mode(path: str) -> int:
    """The mode a file written at `path` should get: the mode of the file it replaces, or
    what the umask leaves of 0666 for a new one (mkstemp's temporaries are always 0600)."""
    try:
        import stat

        return stat.S_IMODE(os.stat(path).st_mode)
    except OSError:
        mask = os.umask(0)
        os.umask(mask)
        return 0o666 & ~mask


def not_a_file(path: str) -> str | None:
    """What `path` (through symlinks) is when it exists and is not a regular file: 'a
    directory', 'a FIFO', 'a device node', 'a socket'; None for a regular file or a new
    name."""
    import stat

    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return None
    if stat.S_ISREG(mode):
        return None
    return ("a directory" if stat.S_ISDIR(mode) else "a FIFO" if stat.S_ISFIFO(mode)
            else "a device node" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
            else "a socket" if stat.S_ISSOCK(mode) else "not a regular file")


def replaceable(path: str) -> str:
    """Where an atomic write of `path` renames its temporary file: the file itself, or the
    regular file a symlink names (so the link is kept). Refused, with an OSError naming
    it, for anything but a regular file or a new name: a rename never replaces a
    directory, a device node (`/dev/full`) or a FIFO."""
    import errno

    target = os.path.realpath(path)
    what = not_a_file(target)
    if what:
        raise OSError(errno.EEXIST, f"{path} is {what}; only regular files are replaced")
    return target


@contextmanager
def atomic_output(path: str, suffix: str = ""):
    """Yield a temporary file name beside `path`; it replaces `path` (a regular file or a
    new name: `replaceable`) only if the block finishes, and is removed otherwise, so
    readers never see a half-written file. The directory must exist: a missing one is an
    error, never created here."""
    target = replaceable(path)
    mode = new_file_mode(target)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=suffix, dir=os.path.dirname(target))
    os.close(fd)
    try:
        yield tmp
        os.chmod(tmp, mode)  # mkstemp makes 0600: the umask (or the replaced file) decides
        replaceable(path)    # still a regular file or a new name, just before the rename
        os.replace(tmp, target)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise


def atomic_write(path: str, data: bytes) -> None:
    """Write `data` to `path` atomically (atomic_output)."""
    with atomic_output(path) as tmp:
        with open(tmp, "wb") as f:
            f.write(data)


def file_digest(path: str, algorithm: str = "sha256") -> str:
    """The hex digest of a file's bytes, read in blocks (WAD parts are 1.5 GB)."""
    import hashlib

    h = hashlib.new(algorithm)
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 24), b""):
            h.update(block)
    return h.hexdigest()


def short_int(value: int) -> str:
    """An integer as text, never failing: Python refuses str() of ints over 4300 digits,
    and a range of a thousand digits helps nobody. Huge values print as a power of ten."""
    if value.bit_length() <= 200:
        return str(value)
    import math

    exponent = int((value.bit_length() - 1) * math.log10(2))
    return f"{'-' if value < 0 else ''}~10^{exponent}"


def short_name(name: str, limit: int = 60) -> str:
    """A node's name as a message shows it: at most about `limit` characters (a name can
    be as long as a file allows), the start and the end kept."""
    if len(name) <= limit:
        return name
    keep = (limit - 5) // 2
    return f"{name[:keep]}...{name[-keep:]}"
