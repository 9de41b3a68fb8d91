"""Every diagnostic of the .dnet front end: message, position and hint, all reported at once."""
import pytest

from dsl.diagnostics import CompileError
from dsl.parser import parse

HEAD = "input x[2] : 0..3\n"
OUT = "\noutput o\n"

# (source, expected "line:col" of the first diagnostic, expected text in its message/hint)
CASES = [
    # syntax
    ("neuron ((( \x00", "1:8", "unexpected '('"),
    ("input x : 0..3 @", "1:16", "unexpected character '@'"),
    ("input x : 0..3 \x00", "1:16", "character '\\x00'"),
    ("input x : 0..3 \ufffd", "1:16", "not UTF-8"),
    ("input x : 0..", "1:14", "unexpected end of file"),
    ("input x : 99999999999999999999..3\noutput x", "1:11", "is too large"),
    # declarations
    (HEAD + "input x : 0..1" + OUT, "2:7", "'x' is already declared at <t>:1:7"),
    (HEAD + "neuron o[0] : identity" + OUT, "2:8", "has size 0"),
    ("input y : 5..1\noutput y", "1:7", "input range 5..1 is empty"),
    ("input y : 0..3000000000\noutput y", "1:7", "input bound 3000000000 is out of range"),
    ("steps 0\ninput y : 0..1\noutput y", "1:1", "steps 0 is out of range"),
    # names and shapes
    (HEAD + "neuron o : identity = x[0] + hh" + OUT, "2:30", "unknown name 'hh'"),
    (HEAD + "neuron oo : identity = x[0]\noutput o", "3:8", "did you mean 'oo'?"),
    (HEAD + "neuron o : identity = x" + OUT, "2:23", "'x' is a vector of 2"),
    ("input y : 0..1\nneuron o : identity = y[0]" + OUT, "2:23", "'y' is a scalar"),
    (HEAD + "neuron o : identity = x[2]" + OUT, "2:23", "index 2 is out of range for 'x' (size 2)"),
    (HEAD + "neuron o[1] : identity\nlines x[1:5] -> o all 1" + OUT, "3:7", "slice x[1:5] is out of range"),
    (HEAD + "neuron o[2] : identity\nlines x -> o dense [[1, 2]]" + OUT, "3:14", "dense matrix has 1 rows but the destination has 2"),
    (HEAD + "neuron o[1] : identity\nlines x -> o dense [[1, 2, 3]]" + OUT, "3:21", "row 0 has 3 weights but the source has 2"),
    (HEAD + "neuron o[1] : identity\nlines x -> o sparse { 2 -> 0 : 1 }" + OUT, "3:23", "source index 2 is out of range"),
    (HEAD + "neuron o[1] : identity\nlines x -> o sparse { 0 -> 1 : 1 }" + OUT, "3:23", "destination index 1 is out of range"),
    (HEAD + "neuron o[1] : identity\nlines x -> o diag [1, 1]" + OUT, "3:14", "diag needs equal sizes"),
    (HEAD + "neuron o[3] : identity\nbias o = [1, 2]" + OUT, "3:10", "bias has 2 values but the destination has 3"),
    # lines, weights, biases
    (HEAD + "neuron o : identity = x[0]\nlines o -> x all 1" + OUT, "3:14", "lines cannot end at input 'x[0]'"),
    (HEAD + "neuron o : identity = 40000*x[0]" + OUT, "2:23", "weight 40000 is out of range"),
    (HEAD + "neuron o : identity = x[0] + 3000000000" + OUT, "2:30", "bias 3000000000 is out of range"),
    (HEAD + "neuron o : identity = x[0]\nlines x -> o all 2" + OUT, "3:14", "a line from 'x[0]' to 'o' already exists (written at <t>:2:23)"),
    (HEAD + "neuron o : identity = x[0]\noutput o, o", "3:11", "listed as an output twice"),
    (HEAD + "neuron o : identity = x[0]", "1:1", "the netlist has no output"),
    (HEAD + "neuron a : identity = b\nneuron b : identity = a\nneuron o : identity = a" + OUT,
     "2:8", "cycle: a -> b -> a"),
    # gates
    (HEAD + "neuron o : rleu = x[0]" + OUT, "2:12", "did you mean 'relu'?"),
    (HEAD + "neuron o : relu(q=1) = x[0]" + OUT, "2:17", "relu has no parameter 'q'"),
    (HEAD + "neuron o : relu(s=1, s=2) = x[0]" + OUT, "2:22", "parameter 's' is given twice"),
    (HEAD + "neuron o : relu(s=0) = x[0]" + OUT, "2:17", "relu: s=0 is out of range"),
    (HEAD + "neuron o : relu(s=x) = x[0]" + OUT, "2:17", "'s' must be an integer"),
    (HEAD + "neuron o : relu(2) = x[0]" + OUT, "2:17", "relu takes named parameters only"),
    (HEAD + "neuron o : spike(leak=1) = x[0]" + OUT, "2:12", "spike needs the parameter 'threshold'"),
    (HEAD + "neuron o : spike(threshold=2, reset=x) = x[0]" + OUT, "2:31", "reset must be a non-negative integer or 'subtract'"),
    (HEAD + "neuron o : lut(0..2) = x[0]" + OUT, "2:12", "lut needs a domain and a table"),
    (HEAD + "neuron o : lut(lo=0) = x[0]" + OUT, "2:12", "lut takes positional arguments only"),
    (HEAD + "neuron o : lut(2..0, [1]) = x[0]" + OUT, "2:16", "lut domain 2..0 is empty"),
    (HEAD + "neuron o : lut(0..2, [1, 2]) = x[0]" + OUT, "2:22", "lut table has 2 entries but the domain 0..2 has 3"),
    (HEAD + "neuron o : lut(0..70000, [" + "1," * 70001 + "]) = x[0]" + OUT, "2:16", "lut domain 0..70000 is too large"),
    (HEAD + "neuron o : product(x[0]) " + OUT, "2:12", "product needs two operands"),
    (HEAD + "neuron o[2] : product(x[0], x[1])" + OUT, "2:8", "a product neuron is a scalar"),
    (HEAD + "neuron o : product(x[0], x[1]) = x[0]" + OUT, "2:34", "a product neuron takes no weighted sum"),
    (HEAD + "neuron p : product(x[0], x[1])\nneuron o : identity = p\nlines x -> p all 1" + OUT,
     "4:14", "lines cannot end at product 'p'"),
    (HEAD + "neuron o[2] : identity = x[0]" + OUT, "2:26", "an inline sum needs a scalar neuron"),
    (HEAD + "neuron o : product(x[0], zz)" + OUT, "2:26", "unknown name 'zz'"),
]


@pytest.mark.parametrize("src,where,text", CASES, ids=[c[2][:40] for c in CASES])
def test_error(src, where, text):
    with pytest.raises(CompileError) as ei:
        parse(src, "<t>")
    first = ei.value.diagnostics[0]
    rendered = str(first)
    assert rendered.startswith(f"<t>:{where}: error: "), rendered
    assert text in rendered, rendered
    assert first.hint, f"no hint for: {rendered}"


def test_every_problem_reported_at_once():
    src = HEAD + ("neuron o : identity = x[0] + nope\n"
                  "neuron p : rleu = x[1]\n"
                  "lines x -> o all 99999\n"
                  "output o, p, q\n")
    with pytest.raises(CompileError) as ei:
        parse(src, "many.dnet")
    msgs = [d.message for d in ei.value.diagnostics]
    assert any("unknown name 'nope'" in m for m in msgs)
    assert any("unknown gate 'rleu'" in m for m in msgs)
    assert any("weight 99999 is out of range" in m for m in msgs)
    assert any("unknown name 'q'" in m for m in msgs)
    assert len(msgs) == 4, msgs


def test_deep_nesting_and_huge_input_are_clean_errors():
    with pytest.raises(CompileError) as ei:
        parse("input x : 0..1\nbias x = " + "[" * 200_000, "deep.dnet")
    assert str(ei.value).startswith("deep.dnet:2:")
    with pytest.raises(CompileError) as ei:
        parse("input x : 0..1\noutput x\n" + "#" * 100 + "\n" + "9" * 1_000_000, "big.dnet")
    assert str(ei.value).startswith("big.dnet:4:1: error: unexpected '9999")


def test_unreadable_and_oversized_files(tmp_path, monkeypatch):
    from dsl import parser

    with pytest.raises(CompileError) as ei:
        parser.parse_file(str(tmp_path / "missing.dnet"))
    assert "missing.dnet: error: cannot read file" in str(ei.value)
    big = tmp_path / "big.dnet"
    big.write_text("# padding\n" * 20)
    monkeypatch.setattr(parser, "MAX_BYTES", 100)
    with pytest.raises(CompileError) as ei:
        parser.parse_file(str(big))
    assert "big.dnet: error: file is 200 bytes" in str(ei.value)
