#!/usr/bin/env python3
"""VoodooNet command line: compile neural networks into Doom maps that compute.

Each subcommand lives in its own module and is imported only when it runs, so `--help` is
instant and never loads the engine. A subcommand module provides `add_arguments(parser)`
and `run(args) -> int`. Errors in the user's input are printed as positioned messages with
a non-zero exit; a traceback means a bug of ours (set VOODOO_DEBUG=1 to see it).
"""
from __future__ import annotations

import argparse
import importlib
import os
import sys

# name -> (module, one-line help). Order is the order shown by --help.
COMMANDS: dict[str, tuple[str, str]] = {
    "check": ("commands.check", "validate .dnet / .json netlists and print a summary"),
    "eval": ("commands.eval", "evaluate a netlist with the exact integer reference"),
    "export": ("commands.export", "write a netlist as JSON IR, an ONNX graph or a torch module"),
    "import": ("commands.import_", "read an ONNX model (integer: exactly; float: quantised) "
               "as a .dnet netlist"),
    "acs": ("commands.acs", "compile an ACS source file to a BEHAVIOR lump"),
    "compile": ("commands.compile", "compile a netlist into a WAD"),
    "run": ("commands.run", "run a netlist in the engine and compare with the reference"),
    "render": ("commands.render", "draw a top-down PNG of a compiled map"),
    "hello": ("commands.hello", "build and run the 12-16-6 demo MLP (prints N/N EXACT)"),
    "museum": ("commands.museum", "build the walk-through digit museum map"),
    "mnist": ("commands.mnist", "train, quantise, tile and run MNIST in the engine"),
    "chat": ("commands.chat", "a chat model writes its reply in the map (tokens N/N EXACT)"),
    "tictactoe": ("commands.tictactoe", "play X against dolls that play perfect O (a built program)"),
    "extract": ("commands.extract", "read the netlist a map computes back from its geometry"),
    "verify": ("commands.verify", "an edited WAD: diff, static checks and an engine run"),
    "embed": ("commands.embed", "drop a circuit into your own map, wired to its switches"),
    "brainlevel": ("commands.brainlevel", "an arena whose marine is steered by a policy the "
                   "dolls compute"),
}


def _top_help() -> str:
    width = max(len(n) for n in COMMANDS)
    lines = ["usage: python build.py COMMAND [options]   (python build.py COMMAND --help)", "",
             "commands:"]
    lines += [f"  {name:<{width}}  {text}" for name, (_, text) in COMMANDS.items()]
    return "\n".join(lines)


def _exit_on_signals() -> dict:
    """SIGTERM and SIGHUP end the command like Ctrl-C does: by unwinding, so every `with`
    block closes its engines and removes its temporary files on the way out. Returns the
    handlers it replaced (main() puts them back: tests call it in-process)."""
    import signal

    def stop(signum, _frame):
        raise KeyboardInterrupt(signal.Signals(signum).name)

    previous = {}
    if hasattr(signal, "SIGUSR1"):  # `kill -USR1 PID` prints where a stuck command waits
        import faulthandler

        try:
            faulthandler.register(signal.SIGUSR1, file=sys.__stderr__, all_threads=True)
        except (AttributeError, ValueError, OSError):  # no real stderr (run in-process)
            pass
    for sig in (signal.SIGTERM, signal.SIGHUP):
        try:
            previous[sig] = signal.signal(sig, stop)
        except (ValueError, OSError):  # not the main thread
            pass
    return previous


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(_top_help())
        return 0 if argv else 2
    name, rest = argv[0], argv[1:]
    if name not in COMMANDS:
        print(f"build.py: unknown command '{name}'\n\n{_top_help()}", file=sys.stderr)
        return 2
    module_name, text = COMMANDS[name]
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    module = importlib.import_module(module_name)
    parser = argparse.ArgumentParser(prog=f"build.py {name}", description=text)
    module.add_arguments(parser)
    args = parser.parse_args(rest)
    previous = _exit_on_signals()
    try:
        return _run(name, module, args)
    finally:
        import signal

        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _run(name: str, module, args) -> int:
    from dsl.diagnostics import VoodooError

    try:
        return int(module.run(args) or 0)
    except VoodooError as e:
        print(str(e), file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt as e:  # Ctrl-C, or SIGTERM / SIGHUP (see _exit_on_signals)
        by = str(e)
        print("interrupted" + (f" ({by})" if by else ""), file=sys.stderr)
        return {"SIGTERM": 143, "SIGHUP": 129}.get(by, 130)
    except BrokenPipeError:  # output piped into `head` and closed early: not an error of ours
        sys.stdout = open(os.devnull, "w")
        return 0
    except Exception as e:  # a bug of ours, not the user's input
        if os.environ.get("VOODOO_DEBUG"):
            raise
        print(f"build.py {name}: internal error: {type(e).__name__}: {e}\n"
              "    this is a bug in VoodooNet; run with VOODOO_DEBUG=1 for the traceback",
              file=sys.stderr)
        return 3


if __name__ == "__main__":
    sys.exit(main())
