"""Small shared helpers: atomic file writes (never a half-written output)."""
from __future__ import annotations

import os
import tempfile


def atomic_write(path: str, data: bytes) -> None:
    """Write to a temp file in the same directory, then rename over the target."""
    directory = os.path.dirname(os.path.abspath(path)) or "."
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=directory)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
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
