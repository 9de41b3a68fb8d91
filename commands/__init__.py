"""The command line: one thin module per `build.py` subcommand.

Each module provides `add_arguments(parser)` and `run(args) -> int`, validates its
arguments, and calls into the pipeline (dsl, mapgen, engine), the importers (models) or the
demos. No logic of the compiler lives here. `commands/common.py` holds the options and
helpers several commands share.
"""
