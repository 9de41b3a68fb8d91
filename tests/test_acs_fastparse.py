"""acs/fastparse.py: generated ACS parsed one shape of line at a time makes exactly the
BEHAVIOR the full parser makes, and anything else goes to the full parser."""
import os

import pytest

from acs import compile_source
from acs.fastparse import NotGenerated, compile_generated, parse
from conftest import ROOT
from dsl import load
from dsl.diagnostics import CompileError
from dsl.random_net import mlp, spiking
from mapgen.compile import compile_netlist


@pytest.mark.parametrize("name, budget", [("hello", None), ("mnist_small", None),
                                          ("transformer", 1), ("spike_counter", None),
                                          ("softmax", None), ("tictactoe", None)])
def test_compiled_maps_get_the_same_behavior(name, budget):
    acs = compile_netlist(load(os.path.join(ROOT, "circuits", f"{name}.dnet")),
                          door_budget=budget).acs
    parse(acs)   # every line of a compiled map is taken: no fallback hides a difference
    assert compile_generated(acs, "m.acs") == compile_source(acs, "m.acs")


@pytest.mark.parametrize("seed", range(4))
def test_random_networks_get_the_same_behavior(seed):
    net = mlp(seed, [5, 7, 3], in_range=(-2, 3), gates=("relu", "step", "lut"),
              out_gate="relu") if seed % 2 else spiking(seed)
    acs = compile_netlist(net).acs
    parse(acs)
    assert compile_generated(acs, "m.acs") == compile_source(acs, "m.acs")


FOREIGN = [
    'script 1 OPEN\n{\n    Print(s:"hello");\n}\n',                 # a string
    "script 1 OPEN\n{\n    int i;\n    for (i = 0; i < 3; i++)\n    {\n        Delay(1);\n"
    "    }\n}\n",                                                  # a block after a for
    "script 1 OPEN\n{\n    if (1) Delay(1);\n    else Delay(2);\n}\n",
    "script 1 OPEN { Delay(1); }\n",                                 # braces inside a line
    "function int f(void)\n{\n    return 2;\n}\nscript 1 OPEN\n{\n    Delay(f());\n}\n",
    "script 1 OPEN\n{\n    /*\n    Delay(5);\n    */\n    Delay(1);\n}\n",
]


@pytest.mark.parametrize("source", FOREIGN)
def test_other_acs_goes_to_the_full_parser(source):
    with pytest.raises(Exception):
        parse(source)
    assert compile_generated(source, "f.acs") == compile_source(source, "f.acs")


def test_errors_are_the_full_parsers():
    bad = "script 1 OPEN\n{\n    Delay(1)\n}\n"
    with pytest.raises(CompileError) as full:
        compile_source(bad, "bad.acs")
    with pytest.raises(CompileError) as fast:
        compile_generated(bad, "bad.acs")
    assert str(fast.value) == str(full.value)


def test_an_unclosed_block_is_not_taken():
    with pytest.raises(NotGenerated):
        parse("script 1 OPEN\n{\n    Delay(1);\n")
