"""Positioned diagnostics shared by every pass (the .dnet front end, the ACS compiler, mapgen).

A pass collects every problem it finds as a `Diagnostic` and raises one `CompileError`
holding all of them, so a user sees each mistake at once, each as `file:line:col: message`
with a hint. `build.py` prints them and exits non-zero; nothing here ever prints a traceback.
"""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Pos:
    file: str
    line: int = 0
    col: int = 0

    def __str__(self) -> str:
        if self.line <= 0:
            return self.file
        if self.col <= 0:
            return f"{self.file}:{self.line}"
        return f"{self.file}:{self.line}:{self.col}"


@dataclass(frozen=True)
class Diagnostic:
    pos: Pos
    message: str
    hint: str = ""
    severity: str = "error"
    notes: tuple[str, ...] = ()   # further lines, e.g. "included from a.acs:3:1"

    def __str__(self) -> str:
        text = f"{self.pos}: {self.severity}: {self.message}"
        if self.hint:
            text += f"\n    hint: {self.hint}"
        for note in self.notes:
            text += f"\n    {note}"
        return text


class VoodooError(Exception):
    """Base of every error caused by the user's input (as opposed to a bug of ours)."""

    exit_code = 1


@dataclass
class CompileError(VoodooError):
    diagnostics: list[Diagnostic] = field(default_factory=list)

    def __post_init__(self) -> None:
        super().__init__(str(self))

    def __str__(self) -> str:
        return "\n".join(str(d) for d in self.diagnostics)


class Collector:
    """Accumulates diagnostics; `check()` raises them all together."""

    def __init__(self) -> None:
        self.items: list[Diagnostic] = []
        self._seen: set[Diagnostic] = set()

    def error(self, pos: Pos, message: str, hint: str = "") -> None:
        d = Diagnostic(pos, message, hint)
        # One bad statement can fail the same way for many elements: say it once.
        if d not in self._seen:
            self._seen.add(d)
            self.items.append(d)

    def __bool__(self) -> bool:
        return bool(self.items)

    def check(self) -> None:
        if self.items:
            raise CompileError(list(self.items))


MAX_CANDIDATES = 500


def did_you_mean(name: str, candidates) -> str:
    """A 'did you mean' hint for an unknown name, or '' when nothing is close. Only names
    of about the same length can be close (ratio >= 0.6), and at most MAX_CANDIDATES of
    them are compared, so one hint costs a bounded amount of work."""
    import difflib

    n = len(name)
    near = [c for c in candidates if 0.6 * n / 1.4 <= len(c) <= n * 1.4 / 0.6 + 1]
    close = difflib.get_close_matches(name, near[:MAX_CANDIDATES], n=1, cutoff=0.6)
    return f"did you mean '{close[0]}'?" if close else ""
