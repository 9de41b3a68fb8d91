"""Shared test set-up: the project root on sys.path, and where the shared docs live."""
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

# Compiled WADs shared by the tests of one run (mapgen/wadcache.py), across xdist workers
# (they share the run's id) and never across runs: a fresh directory per run.
if "VOODOO_WAD_CACHE" not in os.environ:
    import tempfile

    _run = os.environ.get("PYTEST_XDIST_TESTRUNUID") or f"solo-{os.getpid()}"
    os.environ["VOODOO_WAD_CACHE"] = os.path.join(tempfile.gettempdir(),
                                                  f"voodoonet-test-wads-{_run}")

# Checked-in circuits too big for one map: built over tiles (the d-16 chat model,
# docs/chat.md); tests that compile one map of every circuit check these are refused with
# the hint instead.
NEEDS_TILES = {"chat_large.dnet"}   # (the CNN fits one map since lanes glide)
# With a control room the lane hall's trenches count every lane's outline again in the
# hall's floor, and the CNN's room needs about 2,192,300 vertices of GZDoom's flat buffer
# (2,000,000): refused, as it crashed GZDoom (docs/gzdoom.md, section 7).
# The d-12 chat model's generic control room (its players' map is the chat room,
# demos/chat_map.py) spans 35,514 units and about 2,172,528 vertices: refused too.
NEEDS_TILES_ROOM = NEEDS_TILES | {"mnist_cnn.dnet", "chat.dnet"}


# Tests that compile or load a chat or CNN map take up to 15 GB (the d-12 chat map's
# compiler): two at once, one per xdist worker, would not fit a 23 GB machine. They take
# one lock in the run's directory, held from a heavy test to the next if it follows on
# the same worker (a module's fixtures keep their map between tests).
_LIGHT = ("test_chat_train.py", "test_chat_keyboard.py", "test_chat_dnet.py",
          "test_chat_model.py", "test_chat_corpus.py", "test_cnn.py", "test_dnet.py")
_held = None


def _heavy(item) -> bool:
    import re

    if item.nodeid.split("::")[0].endswith(_LIGHT):
        return False
    params = getattr(getattr(item, "callspec", None), "params", {})
    text = item.nodeid + " " + " ".join(str(v) for v in params.values())
    return bool(re.search(r"chat|cnn", text, re.I)) or item.name == "test_good_pipelines_pass"


import pytest  # noqa: E402


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    global _held
    import fcntl

    if _heavy(item) and _held is None:
        os.makedirs(os.environ["VOODOO_WAD_CACHE"], exist_ok=True)
        _held = open(os.path.join(os.environ["VOODOO_WAD_CACHE"], "heavy.lock"), "w")
        fcntl.flock(_held, fcntl.LOCK_EX)
    yield
    if _held is not None and (nextitem is None or not _heavy(nextitem)):
        _held.close()   # releases the lock
        _held = None


def pytest_sessionfinish(session):
    """The run's WAD cache goes with the run (the controller's, after every worker)."""
    if not hasattr(session.config, "workerinput"):
        import shutil

        shutil.rmtree(os.environ["VOODOO_WAD_CACHE"], ignore_errors=True)


def pytest_terminal_summary(terminalreporter):
    """Tests that could not run here (the only skips allowed: those needing the real acc or
    GZDoom) are named at the end with their reason, not only counted."""
    reasons: dict[str, int] = {}
    for rep in terminalreporter.stats.get("skipped", []):
        reason = rep.longrepr[2] if isinstance(rep.longrepr, tuple) else str(rep.longrepr)
        reason = reason.removeprefix("Skipped: ")
        reasons[reason] = reasons.get(reason, 0) + 1
    for reason, n in sorted(reasons.items()):
        terminalreporter.write_line(f"SKIPPED {n} test(s): {reason}", yellow=True, bold=True)
