"""The netlist front end: the .dnet language, the typed IR, ranges and the exact reference.

    from dsl import load
    net = load("circuits/xor.dnet")          # .dnet or .json; validated, ranges computed
    from dsl.reference import evaluate
    evaluate(net, [[0, 1]]).last_outputs()
"""
from __future__ import annotations


def load(path: str):
    """Read a netlist from a .dnet or .json file (chosen by extension, else by content)."""
    if path.endswith(".json"):
        from .jsonio import load_file

        return load_file(path)
    if path.endswith(".dnet"):
        from .parser import parse_file

        return parse_file(path)
    from .parser import read_text

    text = read_text(path)
    if text.lstrip().startswith("{"):
        from .jsonio import loads

        return loads(text, path)
    from .parser import parse

    return parse(text, path)

