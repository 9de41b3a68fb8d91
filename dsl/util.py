"""Small shared helpers: atomic file writes (never a half-written output, modes as the
umask says) and integers printed safely at any size."""
from __future__ import annotations

import os
import tempfile


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


def atomic_write(path: str, data: bytes) -> None:
    """Write to a temp file in the same directory, then rename over the target."""
    directory = os.path.dirname(os.path.abspath(path)) or "."
    os.makedirs(directory, exist_ok=True)
    mode = new_file_mode(path)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=directory)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def short_int(value: int) -> str:
    """An integer as text, never failing: Python refuses str() of ints over 4300 digits,
    and a range of a thousand digits helps nobody. Huge values print as a power of ten."""
    if value.bit_length() <= 200:
        return str(value)
    import math

    exponent = int((value.bit_length() - 1) * math.log10(2))
    return f"{'-' if value < 0 else ''}~10^{exponent}"
