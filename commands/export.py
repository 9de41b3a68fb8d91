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

    if args.output is not None:
        from commands.common import output_path

        output_path(args.output, sources=(args.file,))
    text = dumps(load(args.file)) + "\n"
    if args.output is not None:
        from commands.common import writing
        from dsl.util import atomic_write

        with writing(args.output, "the JSON"):
            atomic_write(args.output, text.encode())
    else:
        print(text, end="")
    return 0
