"""The project's shape: no import cycles between our modules, packages depend only downward
(language -> compiler -> engine -> demos -> commands), and no build output is tracked."""
from __future__ import annotations

import ast
import os
import subprocess

from conftest import ROOT

PACKAGES = ("dsl", "models", "acs", "mapgen", "engine", "demos", "modding", "commands")
# What each package may import from the project (besides itself).
ALLOWED = {
    "dsl": set(),
    "acs": {"dsl"},                        # diagnostics and atomic writes
    "models": {"dsl"},
    "mapgen": {"dsl", "acs"},
    "engine": {"dsl", "mapgen"},
    "demos": {"dsl", "models", "acs", "mapgen", "engine"},
    "modding": {"dsl", "acs", "mapgen", "engine"},   # extract, verify, embed
    "commands": {"dsl", "models", "acs", "mapgen", "engine", "demos", "modding"},
}


def _modules() -> dict[str, str]:
    mods = {}
    for pkg in PACKAGES:
        for folder, dirs, files in os.walk(os.path.join(ROOT, pkg)):  # subpackages too
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            dotted = os.path.relpath(folder, ROOT).replace(os.sep, ".")
            for name in sorted(files):
                if name.endswith(".py"):
                    mod = dotted if name == "__init__.py" else f"{dotted}.{name[:-3]}"
                    mods[mod] = os.path.join(folder, name)
    return mods


def _imports(mod: str, path: str, known: set[str]) -> set[str]:
    """Every project module `mod` imports, at top level or inside functions."""
    pkg = mod if path.endswith("__init__.py") else mod.rsplit(".", 1)[0]
    found = set()
    for node in ast.walk(ast.parse(open(path).read(), path)):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = pkg.split(".")
                base = ".".join(parts[:len(parts) - node.level + 1] + ([base] if base else []))
            # `from pkg import mod` depends on pkg.mod; `from pkg import name` on pkg itself
            subs = [f"{base}.{a.name}" for a in node.names]
            names = [n for n in subs if n in known] or [base]
        else:
            continue
        found |= {n for n in names if n in known and n != mod}
    return found


def _graph() -> dict[str, set[str]]:
    mods = _modules()
    return {m: _imports(m, p, set(mods)) for m, p in mods.items()}


def test_no_import_cycles():
    graph = _graph()
    state: dict[str, int] = {}

    def visit(m, stack):
        state[m] = 1
        for n in sorted(graph[m]):
            if state.get(n) == 1:
                cycle = stack[stack.index(n):] + [n]
                raise AssertionError("import cycle: " + " -> ".join(cycle))
            if not state.get(n):
                visit(n, stack + [n])
        state[m] = 2

    for m in sorted(graph):
        if not state.get(m):
            visit(m, [m])


def test_packages_depend_only_downward():
    bad = [f"{m} imports {n}" for m, deps in _graph().items() for n in deps
           if n.split(".")[0] != m.split(".")[0]
           and n.split(".")[0] not in ALLOWED[m.split(".")[0]]]
    assert not bad, "\n".join(bad)


def test_no_build_outputs_tracked():
    files = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True,
                           text=True).stdout.split()
    if not files:  # not a git checkout (an sdist): nothing to check
        return
    # small model files made by a checked-in, seeded script are test data, not outputs
    stray = [f for f in files if f.lower().endswith((".wad", ".o"))
             or (f.lower().endswith(".onnx") and not f.startswith("tests/data/"))
             or (f.lower().endswith((".png", ".jpg", ".gif")) and not f.startswith("docs/img/"))]
    assert not stray, stray


def test_gitignore_keeps_outputs_out():
    probe = ["x.wad", "sub/y.wad", "shot.png", "wads/museum.wad", "tests/z.png"]
    r = subprocess.run(["git", "check-ignore", *probe], cwd=ROOT, capture_output=True,
                       text=True)
    assert sorted(r.stdout.split()) == sorted(probe)
    r = subprocess.run(["git", "check-ignore", "docs/img/new.png"], cwd=ROOT,
                       capture_output=True, text=True)
    assert r.returncode == 1, "docs/img pictures must stay committable"
