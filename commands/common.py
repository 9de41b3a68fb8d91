"""Shared pieces of the subcommands: options, load, compile, run, print rows, and the
guard of every command's files (`guard`: no output replaces an input of the same command
or another of its outputs, and every output goes where a file can be written)."""
from __future__ import annotations

import os
import sys
from contextlib import contextmanager
from typing import NamedTuple

from mapgen.compile import ROOT, WADS  # noqa: F401  (re-exported for commands)


def default_wad(net_name: str) -> str:
    """wads/<network>.wad. A network name is a .dnet NAME (the JSON loader checks that
    too), so it never leads outside wads/; checked again here because it becomes a path."""
    import re

    from dsl.diagnostics import VoodooError
    from mapgen.compile import default_wad as in_wads

    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]{0,99}", net_name):
        raise VoodooError(f"network name {net_name[:40]!r} cannot name a file; pass -o FILE")
    return in_wads(net_name)


def add_acc_option(p) -> None:
    p.add_argument("--acc", choices=("internal", "external"), default="internal",
                   help="ACS compiler: ours (default) or the real acc on PATH / $ACC")


def allow_negative_vectors(p) -> None:
    """Let `--input -3,0,1` through: argparse takes an argument starting with '-' for an
    option unless it looks like a negative number, and its idea of one has no commas."""
    import re

    p._negative_number_matcher = re.compile(r"^-[0-9][0-9,\s+-]*$|^-\d*\.\d+$")


def add_tiles_option(p) -> None:
    p.add_argument("--tiles", metavar="N|auto",
                   help="split the network over several maps: N maps, or 'auto' for as many "
                        "as its size needs (default: one map)")


def add_door_budget_option(p) -> None:
    p.add_argument("--door-budget", type=int, metavar="N",
                   help="split staircases longer than N doors into parallel sub-lanes: fewer "
                        "tics per inference, more dolls (docs/transformer.md); with --tiles, "
                        "in every tile")


def add_throughput_options(p, workers: bool = True) -> None:
    """--no-pipeline and --ray (docs/throughput.md); with `workers`, --workers too."""
    p.add_argument("--no-pipeline", dest="pipeline", action="store_false",
                   help="one inference at a time (the simple schedule), even for many inputs")
    p.add_argument("--ray", metavar="auto|ADDRESS",
                   help="run the engines as Ray actors: 'auto' (the cluster on this machine, "
                        "started if there is none) or a head's ADDRESS (host:port, "
                        "ray://host:10001)")
    if workers:
        p.add_argument("--workers", type=int, default=2,
                       help="engine processes, or Ray actors with --ray (default 2)")


def check_tiles(tiles: str | None) -> int | str | None:
    """--tiles N|auto, validated before any work: None, 'auto' or a number >= 1."""
    from dsl.diagnostics import VoodooError

    if tiles is None or tiles == "auto":
        return tiles
    if not (tiles.isascii() and tiles.isdigit() and 1 <= int(tiles) <= 4096):
        raise VoodooError(f"--tiles {tiles}: give a number of maps (1, 2, ...) or 'auto'")
    return int(tiles)


def build_maps(path, tiles: str | None, acc: str = "internal", title: str | None = None,
               door_budget: int | None = None):
    """(netlist, compiled maps, tiles or None) for a netlist file (or a loaded netlist).
    `door_budget` splits staircases into parallel sub-lanes, in one map or in every tile
    (the planner counts their dolls). The tiles of a multi-step netlist take their inputs
    late (a streamed run starts each map on the inputs of its first phase); feed-forward
    tiles keep them first, for their pipelined beat."""
    from dsl import load
    from dsl.diagnostics import VoodooError

    from mapgen.compile import compile_netlist
    from mapgen.tiles import compile_tiles, plan_tiles

    n_tiles = check_tiles(tiles)
    net = load(path) if isinstance(path, str) else path
    if door_budget is not None and door_budget < 1:
        raise VoodooError(f"--door-budget {door_budget}: give at least 1 door per sub-lane")
    if n_tiles is None:
        return net, [compile_netlist(net, title=title, acc=acc, door_budget=door_budget)], None
    plan = plan_tiles(net, n_tiles=None if n_tiles == "auto" else n_tiles,
                      door_budget=door_budget)
    return net, compile_tiles(plan, title or net.name, acc=acc, door_budget=door_budget,
                              late_inputs=net.multi_step), plan


class Output(NamedTuple):
    """One file a command writes, as `guard` takes it."""
    option: str                  # how the user names it: "-o", "--acs", "--screenshot"
    path: str | None             # as given; None: not given
    default: str | None = None   # where it goes when not given (None: not written)
    parts: bool = False          # a WAD: maps past 1.5 GB go into stem.1.wad, ... beside it


def guard(outputs, inputs=()) -> list[str | None]:
    """The one guard of a command's files, called before any work: every output (an
    `Output`, or a tuple of its fields) is checked where it goes (`_where`), then against
    every file the command reads (`inputs`: its arguments and the files a model or netlist
    loads; None entries are skipped) and against the command's other outputs, by resolved
    path and by inode (hard links), a WAD's part files included. The first clash is a
    VoodooError naming both files. Returns each output's path (its default when not
    given; None when neither)."""
    from dsl.diagnostics import VoodooError

    outs = [Output(*o) for o in outputs]
    paths = [None if o.path is None and o.default is None
             else _where(o.path, o.default, o.option) for o in outs]
    srcs = [s for s in inputs if s]
    for k, (o, path) in enumerate(zip(outs, paths)):
        if path is None:
            continue
        for src in srcs:
            if _same_file(path, src) or (o.parts and _is_part(path, src)):
                what = "the output" if _same_file(path, src) else "its part files"
                raise VoodooError(f"{o.option} {path}: {what} would overwrite the input "
                                  f"{src}; write the output elsewhere")
        for o2, p2 in zip(outs[:k], paths[:k]):
            if p2 is not None and (_same_file(path, p2) or (o.parts and _is_part(path, p2))
                                   or (o2.parts and _is_part(p2, path))):
                raise VoodooError(f"{o.option} {path}: the same file as {o2.option} {p2} "
                                  "(or one of its parts); give each output its own name")
    return paths


def output_path(path: str | None, default: str | None = None, *, option: str = "-o",
                sources: tuple = ()) -> str:
    """One output checked by `guard` against `sources`, the files the command reads."""
    from dsl.diagnostics import VoodooError

    if path is None and default is None:
        raise VoodooError(f"{option}: give an output file")
    return guard([Output(option, path, default)], sources)[0]


def wad_files(path: str | None) -> list[str]:
    """A WAD a command reads and its part files beside it (mapgen.compile.part_path), as
    inputs for `guard`."""
    from mapgen.compile import part_path

    if path is None:
        return []
    files, k = [path], 1
    while os.path.exists(part_path(path, k)):
        files.append(part_path(path, k))
        k += 1
    return files


def _where(path: str | None, default: str | None, option: str) -> str:
    """Where an output will go, checked: one line naming the path for an empty name, a
    directory, a missing or non-directory parent (never created), a place nothing can be
    written in (permissions, a read-only or pseudo file system such as /proc: found by
    creating and removing a temporary file there, which root's permissions do not tell), an
    existing device node, FIFO or socket (never replaced: dsl/util.atomic_output writes only
    onto regular files or new names). Only the default (wads/<name>) gets its folder
    made."""
    from dsl.diagnostics import VoodooError
    from dsl.util import not_a_file

    if path is None:
        os.makedirs(os.path.dirname(os.path.abspath(default)), exist_ok=True)
        path = default
    if path == "" or path.endswith(os.sep):
        raise VoodooError(f"{option} '{path}': give a file name")
    full = os.path.realpath(path)  # through a symlink: where the file really goes
    parent = os.path.dirname(full)
    if os.path.isdir(full):
        raise VoodooError(f"{option} {path}: is a directory; give a file name")
    if not os.path.exists(parent):
        missing = parent
        while not os.path.exists(os.path.dirname(missing)):
            missing = os.path.dirname(missing)
        raise VoodooError(f"{option} {path}: directory {missing} does not exist; create it "
                          "first or write elsewhere")
    if not os.path.isdir(parent):
        raise VoodooError(f"{option} {path}: {parent} is not a directory")
    what = not_a_file(full)
    if what:
        raise VoodooError(f"{option} {path}: is {what}, not a regular file: it is never "
                          "replaced; give a file name")
    _probe(path, parent, option)
    return path


def _probe(path: str, parent: str, option: str) -> None:
    """Create and remove a temporary file where the output's own will go."""
    import tempfile

    from dsl.diagnostics import VoodooError

    try:
        fd, tmp = tempfile.mkstemp(prefix=".tmp-probe-", dir=parent)
    except OSError as e:
        raise VoodooError(f"{option} {path}: cannot write in {parent} "
                          f"({e.strerror or e})") from None
    os.close(fd)
    os.unlink(tmp)


def _same_file(a: str, b: str) -> bool:
    """The same file: one resolved path, or one inode (a hard link)."""
    if os.path.realpath(a) == os.path.realpath(b):
        return True
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def _is_part(wad: str, other: str) -> bool:
    """`other` is (or would be) a part file of the WAD `wad` (mapgen.compile.part_path)."""
    import re

    stem, ext = os.path.splitext(os.path.realpath(wad))
    pattern = re.escape(stem) + r"\.[1-9][0-9]*" + re.escape(ext or ".wad")
    return re.fullmatch(pattern, os.path.realpath(other)) is not None


@contextmanager
def writing(path: str, what: str = "the output"):
    """Turn an OS error while writing `path` (full disk, immutable or read-only directory,
    /proc) into one line naming it; the atomic writers leave nothing behind."""
    from dsl.diagnostics import VoodooError

    try:
        yield
    except OSError as e:
        raise VoodooError(f"{path}: cannot write {what}: {e.strerror or e}") from None


def progress(iterable, total: int, desc: str):
    """tqdm on a terminal or in CI logs; quiet when asked (VOODOO_QUIET=1)."""
    if os.environ.get("VOODOO_QUIET") or total < 20:  # a few rows print fast enough
        return iterable
    from tqdm import tqdm

    return tqdm(iterable, total=total, desc=desc, file=sys.stderr, leave=False)


def format_row(x, engine, reference) -> str:
    verdict = "EXACT" if list(engine) == list(reference) else "MISMATCH"
    return (f"input {','.join(map(str, x))}  engine {list(map(int, engine))}  "
            f"reference {list(map(int, reference))}  {verdict}")
