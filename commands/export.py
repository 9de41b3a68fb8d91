"""`build.py export FILE --json`: print a netlist in its JSON IR form (docs/dnet.md)."""
from __future__ import annotations


def add_arguments(p) -> None:
    p.add_argument("file")
    p.add_argument("--json", action="store_true", default=True,
                   help="JSON IR (the only export format, and the default)")
    p.add_argument("-o", "--output", help="write to this file instead of standard output")


def run(args) -> int:
    from dsl import load
    from dsl.jsonio import dumps

    text = dumps(load(args.file)) + "\n"
    if args.output:
        from dsl.util import atomic_write

        atomic_write(args.output, text.encode())
    else:
        print(text, end="")
    return 0
