"""Where our ACS compiler must do what acc does (issue 15): the bytes it emits, the
programs it accepts, the errors it gives at the edges, and strings in a #library.

Opcode numbers below are from acs-pcodes.tsv: TERMINATE 1, ADD 14, ASSIGNSCRIPTVAR 25,
PUSHSCRIPTVAR 28, PUSHMAPVAR 29, ANDLOGICAL 70, ORLOGICAL 71, BEGINPRINT 85, ENDPRINT 86,
PRINTSTRING 87, PUSHBYTE 167, ASSIGNGLOBALVAR 181, TAGSTRING 225. The engine checks of the
same behaviour are the corpus files tests/acs/06, 57, 58 and 59.
"""
from __future__ import annotations

import struct

import pytest

import acs
from acs.testmap import room_textmap
from acs.wad import MapLump, write_wad
from dsl.diagnostics import CompileError
from engine.doom import Engine

G = "global int 1:g;\n"


def code(src: str) -> bytes:
    """The code area of the compiled lump, without the zero padding before the chunks."""
    lump = acs.compile_source(src, "t.acs")
    (start,) = struct.unpack_from("<I", lump, 4)
    return lump[8:start].rstrip(b"\0")


def chunks(lump: bytes) -> dict[bytes, bytes]:
    (pos,) = struct.unpack_from("<I", lump, 4)
    out = {}
    while pos < len(lump):
        ident, size = lump[pos:pos + 4], struct.unpack_from("<I", lump, pos + 4)[0]
        out[ident] = lump[pos + 8:pos + 8 + size]
        pos += 8 + size
    return out


def errors(src: str) -> list[tuple[str, str]]:
    with pytest.raises(CompileError) as info:
        acs.compile_source(src, "t.acs")
    return [(str(d.pos), d.message) for d in info.value.diagnostics]


# ---- 1. && and || take two values, like acc's ANDLOGICAL / ORLOGICAL ------------------------
def test_logical_operators_evaluate_both_operands():
    assert code(G + "script 1 (int a, int b) { g = a && b; g = a || b; }") == bytes(
        [28, 0, 28, 1, 70, 181, 1,
         28, 0, 28, 1, 71, 181, 1, 1])


def test_logical_operator_in_a_condition_has_no_short_circuit_jump():
    # if (a && f()) : both pushed, ANDLOGICAL, one IFNOTGOTO (79) past the body.
    got = code("function int f(void) { return 1; }\n" + G +
               "script 1 (int a) { if (a && f()) g = 1; }")
    assert got.count(bytes([70, 79])) == 1
    assert bytes([28, 0, 203, 0, 70, 79]) in got        # PUSHSCRIPTVAR a, CALL f, ANDLOGICAL


# ---- 2. local slots: one per declaration, no code for a declaration without a value ---------
def test_uninitialised_local_emits_no_code_and_gets_its_own_slot():
    # t is slot 0, u slot 1 (t's ended block does not give its slot back); `int u;` is silent.
    assert code(G + "script 1 (void) { { int t = 5; } int u; g = u; }") == bytes(
        [167, 5, 25, 0, 28, 1, 181, 1, 1])


def test_issue_repro_loop_local_keeps_its_value_like_acc():
    # the loop body's `int u;` must not zero the slot (acc: r == 7); see 57_acc_locals.acs
    got = code(G + "script 1 (void) { int i; int r; { int t; } "
                   "for (i = 0; i < 2; i++) { int u; r = r * 10 + u; u = 7; } g = r; }")
    # the only PUSHBYTE 0, ASSIGNSCRIPTVAR is `i = 0` (slot 0); none clears u
    assert got.count(bytes([167, 0, 25])) == 1 and bytes([167, 0, 25, 0]) in got


def test_locals_are_counted_per_declaration():
    body = " ".join(f"{{ int v{k} = {k}; }}" for k in range(25))
    lump = acs.compile_source("script 1 (void) { " + body + " }")
    assert chunks(lump)[b"SVCT"] == struct.pack("<hH", 1, 25)


# ---- 3. long left-associative chains ---------------------------------------------------------
def test_chain_of_5000_operands_compiles_to_a_flat_sequence():
    src = G + "script 1 (int a) { g = " + " + ".join(["a"] * 5000) + "; }"
    assert code(src) == bytes([28, 0]) + bytes([28, 0, 14]) * 4999 + bytes([181, 1, 1])


def test_long_constant_chain_folds():
    src = G + "script 1 (void) { g = " + " + ".join(["1"] * 5000) + "; }"
    assert code(src) == bytes([3]) + struct.pack("<i", 5000) + bytes([181, 1, 1])


def test_long_chain_still_reports_division_by_zero_where_it_is():
    src = G + "script 1 (int a) { g = " + " + ".join(["a"] * 3000) + " / 0 + a; }"
    assert errors(src) == [(f"t.acs:2:{22 + 4 * 3000}", "division by zero")]   # the /


# ---- 4. what acc accepts -------------------------------------------------------------------
def test_name_is_in_scope_in_its_own_initialiser():
    # int x = x + 1; : PUSHSCRIPTVAR x (slot 0), PUSHBYTE 1, ADD, ASSIGNSCRIPTVAR x
    assert code("script 1 (void) { int x = x + 1; }") == bytes([28, 0, 167, 1, 14, 25, 0, 1])


def test_radix_literals():
    assert code(G + "script 1 (void) { g = 16_FF; g = 2_1010; g = 36_Zz; g = 8_; }") == bytes(
        [167, 255, 181, 1, 167, 10, 181, 1, 3]) + struct.pack("<i", 1295) + bytes(
        [181, 1, 167, 0, 181, 1, 1])


@pytest.mark.parametrize("literal,message", [
    ("1_0", "radix 1 is out of range 2..36 in '1_0'"),
    ("37_1", "radix 37 is out of range 2..36 in '37_1'"),
    ("2_102", "'2' is not a digit in radix 2 ('2_102')"),
    ("16_FG", "'g' is not a digit in radix 16 ('16_FG')"),
])
def test_bad_radix_literals_are_positioned_errors(literal, message):
    assert errors(G + "script 1 (void)\n{\n    g = " + literal + ";\n}\n") == [
        ("t.acs:4:9", message)]


# ---- 5. and 6. limits give positioned errors, never an internal one --------------------------
@pytest.mark.parametrize("literal,digits", [
    ("1" * 4301, 4301),
    ("9" * 4301 + ".5", 4301),
    ("0x" + "f" * 5000, 5000),
    ("10_" + "1" * 4400, 4400),
])
def test_huge_literal_is_number_too_large(literal, digits):
    assert errors(G + "script 1 (void)\n{\n    g = 1 + " + literal + ";\n}\n") == [
        ("t.acs:4:13", f"number too large ({digits:,} digits)")]


def test_literal_error_after_a_syntax_error_counts_lines_from_the_file_start():
    src = "script 1 (void) { x = ; }\n\n" + G + "script 2 (void) { g = " + "7" * 5000 + "; }\n"
    assert [pos for pos, _ in errors(src)] == ["t.acs:1:23", "t.acs:4:23"]


def test_long_fraction_is_exact_not_an_error():
    # 0.5 followed by 5,000 digits: the fraction is cut to 20 digits, the value is exact.
    assert code(G + "script 1 (void) { g = 0.5" + "0" * 4000 + "1" + "; }") == \
        bytes([3]) + struct.pack("<i", 32768) + bytes([181, 1, 1])


def test_too_many_strings_error_points_at_the_first_string_past_the_limit():
    lines = [f'    g = StrLen("s{i}");' for i in range(70000)]
    src = G + "script 1 (void)\n{\n" + "\n".join(lines) + "\n}\n"
    assert errors(src) == [
        ("t.acs:65540:16",
         "too many distinct strings: 70,000, the limit is 65,536 (this is string 65,537)")]


# ---- 22. strings in a #library ---------------------------------------------------------------
def test_string_literals_are_tagged_in_a_library_only():
    body = 'script 1 (void) { Print(s:"hi"); }'
    # BEGINPRINT, PUSHBYTE 0, [TAGSTRING], PRINTSTRING, ENDPRINT, TERMINATE
    assert code(body) == bytes([85, 167, 0, 87, 86, 1])
    assert code('#library "lib"\n' + body) == bytes([85, 167, 0, 225, 87, 86, 1])


def test_library_lists_map_variables_initialised_with_strings():
    lump = acs.compile_source('#library "lib"\nint n = 3; str s = "x"; str a[2] = {0, "y"};'
                              "\nint b[2] = {1, 2};\n")
    got = chunks(lump)
    # slots: n 0, s 1 (scalars first), then a 2, b 3
    assert got[b"MSTR"] == struct.pack("<I", 1)
    assert got[b"ASTR"] == struct.pack("<I", 2)
    plain = chunks(acs.compile_source('str s = "x";\n'))
    assert b"MSTR" not in plain and b"ASTR" not in plain


LIBRARY = '''#library "TESTLIB"
global int 1:lit;
global int 2:held;
global int 3:element;
global int 4:same;
str s = "library-map-variable";
str arr[2] = {"a", "library-array-element"};
script 7 OPEN
{
    lit = StrLen("library!");
    held = StrLen(s);
    element = StrLen(arr[1]);
    same = !StrCmp(StrParam(s:"lib-", d:5), "lib-5");
}
'''

MAP = '''global int 5:map_len;
script 1 OPEN { map_len = StrLen("the map's own string 0") + StrLen("1") + StrLen("22"); }
'''


def test_library_strings_in_the_engine(tmp_path):
    """A library loaded by LOADACS: its literals and string map variables are its own
    strings, not the map's strings of the same index."""
    wad = str(tmp_path / "lib.wad")
    write_wad(wad, [MapLump("MAP01", room_textmap(), acs.compile_source(MAP, "map.acs"))],
              extra_lumps={"LOADACS": b"TESTLIB\n", "A_START": b"",
                           "TESTLIB": acs.compile_source(LIBRARY, "lib.acs"), "A_END": b""})
    with Engine(wad) as e:
        e.advance(3)
        assert e.users()[:5] == [len("library!"), len("library-map-variable"),
                                 len("library-array-element"), 1, 22 + 1 + 2]


# ---- 23. strings are numbered in source order, as acc numbers them (issue 25 item 13) --------
def strl(lump: bytes) -> list[str]:
    """The string table of a lump, ours (ACSe chunks) or acc's (ACS0 header, ACSe chunks)."""
    i = lump.find(b"STRL")
    if i < 0:
        return []
    body = lump[i + 8:i + 8 + struct.unpack_from("<I", lump, i + 4)[0]]
    n = struct.unpack_from("<I", body, 4)[0]
    return [body[o:body.index(b"\0", o)].decode()
            for o in struct.unpack_from(f"<{n}I", body, 12)]


STRING_ORDER = {
    "map variable first": ('str t = "abc";\nscript 1 (void) { str s; Print(s:"z"); }\n',
                           ["abc", "z"]),
    "array and a later variable": ('function void f(void) { Print(s:"f"); }\n'
                                   'str arr[2] = {"x", "y"};\nscript 1 (void) { Print(s:"s"); '
                                   'f(); }\nstr late = "late";\n',
                                   ["f", "x", "y", "s", "late"]),
    "repeated": ('str a1[3] = {"p", "q"};\nstr b1 = "p";\nscript 1 (void) { Print(s:"r"); }\n',
                 ["p", "q", "r"]),
    "named script": ('script "foo" (void) { Print(s:"k"); }\nstr z = "zz";\n', ["k", "zz"]),
    "code that never runs": ('script 1 (void) { if (0) Print(s:"dead"); Print(s:"live"); }\n',
                             ["dead", "live"]),
}


@pytest.mark.parametrize("name", list(STRING_ORDER))
def test_strings_are_numbered_in_source_order(name):
    src, want = STRING_ORDER[name]
    assert strl(acs.compile_source('#include "zcommon.acs"\n' + src, "t.acs")) == want


@pytest.mark.parametrize("name", list(STRING_ORDER))
def test_string_numbering_equals_the_real_accs(name):
    from acs.external import compile_with_acc, find_acc

    if find_acc() is None:
        pytest.skip("NOT RUN: the real acc is not installed; set $ACC to its path (or put "
                    "acc on PATH) to compare with it")
    src, want = STRING_ORDER[name]
    assert strl(compile_with_acc('#include "zcommon.acs"\n' + src, "t.acs")) == want


def test_an_unset_str_is_string_0_as_under_acc(tmp_path):
    """The issue's program: `str t = "abc";` before a script using "z": an unset `str s`
    holds string 0, "abc" (length 3) under acc and under ours."""
    src = ('#include "zcommon.acs"\nglobal int 1:g;\nstr t = "abc";\n'
           'script 1 OPEN { str s; g = StrLen(s) + 10 * StrLen("z"); }\n')
    wad = str(tmp_path / "s.wad")
    write_wad(wad, [MapLump("MAP01", room_textmap(), acs.compile_source(src, "s.acs"))])
    with Engine(wad) as e:
        e.advance(3)
        assert e.user(1) == 3 + 10


# ---- 24. a function with a value must end in a return, as acc requires (issue 25 item 14) ----
@pytest.mark.parametrize("body, where", [
    ("function int f(int a) { if (a) return 5; }", "2:42"),
    ("function int f(int a) { if (a) return 5; else return 6; }", "2:57"),
    ("function str f(int a) { }", "2:25"),
    ("function bool f(int a) { return 1; a++; }", "2:41"),
    ("function int f(int a) { while (a) { return 1; } }", "2:49"),
    ("function int f(int a) { switch (a) { default: return 1; } }", "2:59"),
    ("function int f(int a) { return 1; int b = 2; }", "2:46"),
    ("function int f(int a)\n{\n    if (a)\n        return 5;\n}", "6:1"),
])
def test_a_function_that_can_end_without_a_return_is_refused(body, where):
    """acc says "Function must return a value." for each (the line of the closing brace):
    we refuse them too, at the brace; without this the function returned 0."""
    assert errors('#include "zcommon.acs"\n' + body + "\nscript 1 (void) { }\n") == [
        (f"t.acs:{where}", "function 'f' must return a value: it can end here without a "
                           "return")]


@pytest.mark.parametrize("body", [
    "function int f(int a) { if (a) { return 2; } return 1; }",
    "function int f(int a) { { { return 1; } } }",
    "function int f(int a) { return 1;; { } int b; { int c; } }",
    "function void f(int a) { if (a) return; }",
])
def test_functions_acc_accepts_are_accepted(body):
    acs.compile_source('#include "zcommon.acs"\n' + body + "\nscript 1 (void) { }\n", "t.acs")


def test_the_return_rule_agrees_with_the_real_acc():
    from acs.external import compile_with_acc, find_acc

    if find_acc() is None:
        pytest.skip("NOT RUN: the real acc is not installed; set $ACC to its path (or put "
                    "acc on PATH) to compare with it")
    for body, refused in [("function int f(int a) { if (a) return 5; else return 6; }", True),
                          ("function int f(int a) { return 1; int b = 2; }", True),
                          ("function int f(int a) { return 1;; { } int b; }", False),
                          ("function int f(int a) { { return 1; } }", False)]:
        src = '#include "zcommon.acs"\n' + body + "\nscript 1 (void) { }\n"
        for compile_ in (acs.compile_source, compile_with_acc):
            try:
                compile_(src, "t.acs")
                got = False
            except CompileError as e:
                got = "must return a value" in str(e).lower()
            assert got == refused, (body, compile_)
