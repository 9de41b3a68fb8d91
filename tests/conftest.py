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
# (Chat and CNN tests once took one lock across the workers: reading a chat WAD back took
# 15 GB, in one regular expression over its TEXTMAP, mapgen/wadcheck.py. Now the largest
# test process is extract's, about 4 GB.)


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
