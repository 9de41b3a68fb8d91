"""The fast TEXTMAP reader (modding/textmap.py) reads exactly what the Lark grammar reads,
and hands everything it does not know to the grammar, whose errors name line and column."""
import random

import pytest

from conftest import ROOT
from modding import textmap as T


def _both(text):
    return T._fast_items(text), T._parser().parse(text)


def test_a_compiled_map_reads_the_same_both_ways():
    import os

    from dsl import load
    from mapgen.compile import compile_netlist

    text = compile_netlist(load(os.path.join(ROOT, "circuits", "mlp3.dnet"))).textmap
    fast, lark = _both(text)
    assert fast is not None, "a compiled map is the fast reader's form"
    assert fast == lark
    assert [type(v) for _, b in fast[1:40] for v in b.values()] == \
        [type(v) for _, b in lark[1:40] for v in b.values()]   # 1 stays int, 1.0 float


EDITOR = '''namespace="zdoom";
Vertex{X=-1.5e2;y=+0x1F;}
thing { x = 0.; y = 2E3; type = 1; ambush = TRUE; comment = "a } b { c = d; // e"; }
linedef { v1 = 0; v2 = 1; sidefront = 0; blocking = false; arg0str = "q\\\\\\"s"; }
sector { texturefloor = "F_SKY1"; lightlevel = -32768; moreids = "3 4 5"; user_x = foo; }
'''


def test_editor_spellings_read_the_same_both_ways():
    fast, lark = _both(EDITOR)
    assert fast is not None and fast == lark
    assert fast[2][1]["comment"] == "a } b { c = d; // e"
    assert fast[1][1] == {"x": -150.0, "y": 31}


@pytest.mark.parametrize("text", [
    "// a comment\nthing { x = 1; y = 2; type = 1; }",   # comments: the grammar's
    "thing { x = 1; y = 2; type = 1; } /* c */",
    "thing { x = 1 }",                              # broken: the grammar says where
    "thing { x = 1; ",
    "x = 1; }",
    "thing { x = 1.5.3; }",
    "thing { x = 1_000; }",
    "thing { x = \u0663; }",                         # an Arabic-Indic digit
    "thing { x = inf; } y = 1e;",
    "thing { x = 1; }\vsector { }",                 # \\v is not the grammar's whitespace
    "thing { thing { x = 1; } }",
])
def test_what_the_fast_reader_does_not_know_goes_to_the_grammar(text):
    assert T._fast_items(text) is None
    try:
        want = T._parser().parse(text)
    except Exception:
        with pytest.raises(T.MapError, match=r"TEXTMAP:\d+:\d+"):
            T.parse_textmap(text)
        return
    assert T.parse_textmap(text).things == [b for k, b in want if k == "thing"]


def test_random_field_soup_reads_the_same_both_ways():
    rng = random.Random(5)
    values = ["0", "-7", "+3", "0x1f", "-0X10", "1.", "2.50", "-3e4", "6E-2", '""', '"x y"',
              '"a\\\\"b"', "true", "False", "name_1", "1.5.3", "1_0", "--1", "0x", ".5"]
    for _ in range(300):
        blocks = []
        for _ in range(rng.randint(0, 4)):
            fields = " ".join(f"{rng.choice(['x', 'Y', 'id', 'k_2'])} = {rng.choice(values)};"
                              for _ in range(rng.randint(0, 4)))
            blocks.append(f"{rng.choice(['thing', 'Sector', 'x'])} {{ {fields} }}")
        text = rng.choice(["", 'namespace = "zdoom";\n']) + "\n".join(blocks)
        fast = T._fast_items(text)
        try:
            lark = T._parser().parse(text)
        except Exception:
            assert fast is None, text
            continue
        assert fast is None or fast == lark, text
