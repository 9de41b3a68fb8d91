"""`python build.py acs IN.acs -o OUT.o [--acc internal|external]`: compile like acc does.

Owns the command line of the ACS compiler: reading the source, choosing our compiler or an
installed acc, and writing the lump atomically (a temporary file beside OUT, renamed over
it only when compilation succeeded), so a failed compile never leaves a half-written or
stale-looking output.
"""
from __future__ import annotations

import os

from dsl.diagnostics import VoodooError


def add_arguments(parser) -> None:
    parser.add_argument("source", metavar="IN.acs", help="ACS source file")
    parser.add_argument("-o", "--output", metavar="OUT.o",
                        help="where to write the BEHAVIOR lump (default: IN.o)")
    parser.add_argument("--acc", choices=("internal", "external"), default="internal",
                        help="internal: our compiler (default); external: the acc on PATH "
                             "or named by $ACC")
    parser.add_argument("-i", "--include", action="append", default=[], metavar="DIR",
                        help="also look for #include files in DIR (repeatable)")


def write_atomically(path: str, data: bytes) -> None:
    from dsl.util import atomic_output

    with atomic_output(path, ".o") as tmp:
        with open(tmp, "wb") as f:
            f.write(data)


def run(args) -> int:
    from commands.common import guard

    source = args.source
    output = args.output or os.path.splitext(source)[0] + ".o"
    if os.path.abspath(output) == os.path.abspath(source):
        raise VoodooError(f"{output}: the output would overwrite the source; pass -o OUT.o")
    guard([("-o", output)], [source])
    if args.acc == "external":
        from acs.external import compile_file_external
        lump = compile_file_external(source, include_dirs=args.include)
    else:
        from acs import compile_file
        lump = compile_file(source, include_dirs=args.include)
    try:
        write_atomically(output, lump)
    except OSError as e:
        raise VoodooError(f"{output}: cannot write the output: {e.strerror or e}") from None
    print(f"{output}: {len(lump)} bytes")
    return 0
