"""Every error the ACS compiler reports: exact message, hint and file:line:col.

Each case compiles a small source and compares the whole list of diagnostics with `==`,
so a changed message, a lost hint, a wrong position or a missing/extra error all fail.
Also: limits of the engine, include problems, malformed input (garbage, deep nesting,
huge files) giving a CompileError and never another exception.
"""
from __future__ import annotations

import os
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import acs
import acs.compiler
from dsl.diagnostics import CompileError


def diagnostics(src: str, filename: str = "t.acs", **kw):
    with pytest.raises(CompileError) as info:
        acs.compile_source(src, filename, **kw)
    return [(d.pos.line, d.pos.col, d.message, d.hint) for d in info.value.diagnostics]


CASES = [
    ('script 1 (void) { int x = 1 }',
     [(1, 29, "syntax error: unexpected '}'; expected ',', ';'", "a ';' may be missing at the end of the previous statement")]),
    ('script 1 (void) { x = 1; }',
     [(1, 19, "undefined name 'x'", 'declare it first (int name;) or #define it')]),
    ('int counter; script 1 (void) { countr = 1; }',
     [(1, 32, "undefined name 'countr'", "did you mean 'counter'?")]),
    ('script 1 (void) { Light_ChangeToValue(1, 2, 3); }',
     [(1, 19, "special 'Light_ChangeToValue' takes 2 arguments, but 3 were given", 'Light_ChangeToValue(arg1, arg2)')]),
    ('script 1 (void) { Light_ChangeToValu(1, 2); }',
     [(1, 19, "unknown function or special 'Light_ChangeToValu'", "did you mean 'Light_ChangeToValue'?")]),
    ('script 1 (void) { } script 1 (void) { }',
     [(1, 28, 'script 1 is already defined at t.acs:1:8', 'give each script its own number')]),
    ('function void f(void) { Delay(1); } script 1 (void) { f(); }',
     [(1, 25, 'Latent functions cannot be used inside functions.', "call 'Delay' from the script, before or after the function")]),
    ('function void f(void) { TagWait(2); }',
     [(1, 25, 'Latent functions cannot be used inside functions.', "call 'TagWait' from the script, before or after the function")]),
    ('script 1 (void) { break; }',
     [(1, 19, "'break' outside a loop or switch", "to end the script early, use 'terminate;'")]),
    ('script 1 (void) { continue; }',
     [(1, 19, "'continue' outside a loop", "'continue' jumps to the next iteration of a loop")]),
    ('script 0 (void) { }',
     [(1, 8, 'script number 0 is out of range 1..32767', "script 0 is reserved; numbers above 32767 do not fit the engine's 16-bit script number")]),
    ('script 40000 (void) { }',
     [(1, 8, 'script number 40000 is out of range 1..32767', "script 0 is reserved; numbers above 32767 do not fit the engine's 16-bit script number")]),
    ('script 1 (int a, int b, int c, int d, int e) { }',
     [(1, 8, 'a script takes at most 4 arguments, this one has 5', 'pass more values through map or global variables')]),
    ('script 1 OPEN (int a) { }',
     [(1, 15, "syntax error: unexpected '('; expected '{', a name", "a '{' may be missing (a script's flags go after its arguments)")]),
    ('script 1 (void) OPEN ENTER { }',
     [(1, 22, 'script has two types (OPEN and ENTER)', 'keep one')]),
    ('script 1 (void) OPNE { }',
     [(1, 17, "unknown script type or flag 'OPNE'", "did you mean 'OPEN'?")]),
    ('script NOPE (void) { }',
     [(1, 8, "script number 'NOPE' is not a defined constant", "use a number or a #define'd name")]),
    ('global int 64:g;',
     [(1, 15, 'global variable index 64 is out of range 0..63', 'ViZDoom reads global 1..60 as USER1..USER60')]),
    ('world int 256:w;',
     [(1, 15, 'world variable index 256 is out of range 0..255', 'world variables are 0..255')]),
    ('global int x;',
     [(1, 12, "global variable 'x' needs an index", "write 'global int 1:x;'")]),
    ('global int 1:a; global int 1:b;',
     [(1, 30, "global variable index 1 is already used by 'a' (t.acs:1:14)", 'give each one its own index')]),
    ('global int 1:a = 5;',
     [(1, 14, 'global variables cannot have an initial value', 'assign it in an OPEN script')]),
    ('global int 1:a[10];',
     [(1, 14, 'global arrays are declared without a size', "write 'global int 1:a[];'")]),
    ('int 5:m;',
     [(1, 7, "map variable 'm' cannot have an index", "write 'int m;' or 'global int 5:m;'")]),
    ('int a[0];',
     [(1, 7, 'array size 0 is out of range 1..65536', 'an array holds at least one element')]),
    ('int a[][];',
     [(1, 5, "only the first dimension of 'a' may be left empty", 'give every dimension after the first a size')]),
    ('int a[];',
     [(1, 5, "array 'a' needs a size or an initialiser list", "write 'a[10]' or 'a[] = {1, 2, 3}'")]),
    ('int a[] = {};',
     [(1, 5, "array 'a' has an empty initialiser list", 'list at least one value, or give a size: a[10]')]),
    ('int a[70000];',
     [(1, 7, 'array size 70000 is out of range 1..65536', 'an array holds at least one element')]),
    ('int a[300][300];',
     [(1, 5, "array 'a' has 90000 elements; the limit is 65536", 'split it into smaller arrays')]),
    ('void v;',
     [(1, 6, 'a variable cannot be void', 'declare it int, str or bool')]),
    ('script 1 (void) { void v; }',
     [(1, 24, 'a variable cannot be void', 'declare it int, str or bool')]),
    ('function int Delay(int x) { return x; }',
     [(1, 14, "'Delay' is a builtin function or line special", 'give your function another name')]),
    ('int x; int X;',
     [(1, 12, "'X' is already defined at t.acs:1:5", 'give it another name')]),
    ('#import "lib.acs"',
     [(1, 1, "cannot import 'lib.acs': linking against ACS libraries is not supported", 'use #include to compile the file into this lump')]),
    ('#define A B',
     [(1, 11, "undefined name 'B'", 'declare it first (int name;) or #define it')]),
    ('#define A 1/0',
     [(1, 12, 'division by zero in a constant expression', 'the engine stops a script that divides by zero')]),
    ('script 1 (void) { int x = 1 / 0; }',
     [(1, 29, 'division by zero', 'the engine stops a script that divides by zero')]),
    ('script 1 (void) { int x = 0; x /= 0; }',
     [(1, 32, 'division by zero', 'the engine stops a script that divides by zero')]),
    ('int a[3] = {1, 2, 3, 4};',
     [(1, 22, "too many initialisers for 'a' (dimension size 3)", 'remove the extra values or make the array larger')]),
    ('int a[2][2] = {1, 2};',
     [(1, 16, "'a' needs a nested {...} list here", 'write the rows in braces: {{1, 2}, {3, 4}}'), (1, 19, "'a' needs a nested {...} list here", 'write the rows in braces: {{1, 2}, {3, 4}}')]),
    ('int a[2] = {{1}};',
     [(1, 13, 'too many levels of braces in the initialiser', 'a one-dimensional array takes {1, 2, 3}')]),
    ('int s = {1};',
     [(1, 9, "'s' is not an array; it takes a single value", "write 'int s = 1;'")]),
    ('int a[2] = 5;',
     [(1, 12, "array 'a' needs an initialiser list in braces", 'write a[] = {1, 2, 3}')]),
    ('int m = Timer();',
     [(1, 9, "the initial value of map variable 'm' must be a constant expression", "use numbers, strings, #define'd names and operators only")]),
    ('script 1 (void) { return; }',
     [(1, 19, "'return' is only allowed in a function", "use 'terminate;' to end a script")]),
    ('function int f(void) { return; }',
     [(1, 24, "function 'f' must return a value", "write 'return <value>;'")]),
    ('function void f(void) { return 1; }',
     [(1, 32, "void function 'f' cannot return a value", "declare it 'function int ...' or write 'return;'")]),
    ('function void f(void) { restart; }',
     [(1, 25, "'restart' is only allowed in a script", 'return from the function and restart the calling script')]),
    ('script 1 (void) { int x; x == 1; }',
     [(1, 28, 'this expression has no effect', "a statement must assign, call, or increment; did you mean '='?")]),
    ('script 1 (void) { 5; }',
     [(1, 19, 'this expression has no effect', 'a statement must assign, call, or increment')]),
    ('int arr[3]; script 1 (void) { int x = arr; }',
     [(1, 39, "array 'arr' needs an index", 'write arr[i]')]),
    ('int arr[3]; script 1 (void) { arr = 1; }',
     [(1, 31, "array 'arr' needs an index", 'write arr[i]')]),
    ('function void f(void) { } script 1 (void) { int x = f; }',
     [(1, 53, "'f' is a function", 'call it: f(...)')]),
    ('script 1 (void) { int x = Delay; }',
     [(1, 27, "'Delay' is a builtin function or line special", 'call it: Delay(...)')]),
    ('#define C 3\nscript 1 (void) { C = 1; }',
     [(2, 19, "cannot assign to 'C': it is not a variable", 'only variables and array elements can be assigned')]),
    ('script 1 (void) { 1 = 2; }',
     [(1, 19, 'the left side of an assignment must be a variable or array element', 'write name = value; or name[i] = value;')]),
    ('script 1 (void) { int x; x[1] = 2; }',
     [(1, 27, "'x' is not an array", 'declare it with a size: int x[10];')]),
    ('int g[2][2]; script 1 (void) { g[1] = 2; }',
     [(1, 33, "array 'g' has 2 dimensions, indexed with 1", 'write g[i][j]')]),
    ('int g[2]; script 1 (void) { g[2] = 1; }',
     [(1, 31, "index 2 is out of bounds for 'g' (size 2)", 'indices run from 0 to 1')]),
    ('script 1 (void) { int x = (1+2)[0]; }',
     [(1, 32, 'only a named array can be indexed', 'write name[i]')]),
    ('function int f(int a) { return a; } script 1 (void) { f(1, 2); }',
     [(1, 55, "function 'f' takes 1 argument, but 2 were given", 'f(int a)')]),
    ('script 1 (void) { int x = Sqrt(); }',
     [(1, 27, "builtin 'Sqrt' takes 1 argument, but 0 were given", 'Sqrt(arg1)')]),
    ('script 1 (void) { Random(1); }',
     [(1, 19, "builtin 'Random' takes 2 arguments, but 1 was given", 'Random(arg1, arg2)')]),
    ('int v; script 1 (void) { v(1); }',
     [(1, 26, "'v' is not a function", "'v' is a variable")]),
    ('function void f(void) { } script 1 (void) { int x = f(); }',
     [(1, 53, "void function 'f' has no value to use", "declare it 'function int ...' and return a value")]),
    ('script 1 (void) { Floor_RaiseToCeiling(1, 8); }',
     [(1, 19, "line special 'Floor_RaiseToCeiling' (259) does not exist in this engine", 'ViZDoom 1.3.2 (ZDoom 2.8.1) has line specials up to 255')]),
    ('script 1 (int a) { Light_ChangeToValue(const: a, 2); }',
     [(1, 47, "a 'const:' call needs constant arguments", "drop 'const:' to pass variables")]),
    ('script 1 (void) { SetSectorGlow(1, 1, 1, 1, 1, 1); }',
     [(1, 19, "builtin 'SetSectorGlow' (CALLFUNC 400) does not exist in this engine", 'ViZDoom 1.3.2 (ZDoom 2.8.1) has CALLFUNC functions 1..96; an unknown one silently returns 0')]),
    ('script 1 (void) { int x = Delay(1); }',
     [(1, 27, "'Delay' has no value to use", 'call it as a statement')]),
    ('script 1 (void) { int x = Print(s:"a"); }',
     [(1, 27, "'Print' has no value to use", 'call it as a statement')]),
    ('script 1 (void) { Print(q:1); }',
     [(1, 25, "unknown print item 'q:'", 'use s: (string), d: or i: (integer), c: (character), f: (fixed), x: (hex), b: (binary), n: (player name)')]),
    ('script 1 (void) { HudMessage(s:"a"; 0, 1, 2); }',
     [(1, 19, "HudMessage needs at least 6 values after ';' (type, id, color, x, y, hold time), 3 given", 'HudMessage(s:"text"; HUDMSG_PLAIN, 1, CR_WHITE, 0.5, 0.5, 2.0)')]),
    ('script 1 (void) { Print(s:"a"; 1); }',
     [(1, 32, "Print takes no values after ';'", "only HudMessage takes a layout after ';'")]),
    ('script 1 (void) { int x; int x; }',
     [(1, 30, "'x' is already declared in this block at t.acs:1:23", 'give it another name')]),
    ('script 1 (void) { int 3:x; }',
     [(1, 25, 'a local variable cannot have an index', "declare it at the top level: 'global int 3:x;'")]),
    ('script 1 (void) { int a[3]; }',
     [(1, 23, "local arrays are not supported ('a')", 'declare the array at the top level (a map array)')]),
    ('script 1 (void) { int a = {1}; }',
     [(1, 27, 'an initialiser list needs an array', 'local arrays are not supported; use a map array')]),
    ('script 1 (int x) { switch (x) { default: break; default: break; } }',
     [(1, 49, "switch has two 'default' labels", 'the first is at t.acs:1:33')]),
    ('script 1 (int x) { switch (x) { case 1: break; case 1: break; } }',
     [(1, 48, 'case 1 appears twice in this switch', 'the first is at t.acs:1:33')]),
    ('script 1 (int x) { switch (x) { case x: break; } }',
     [(1, 38, 'a case label must be a constant expression', "use numbers, strings, #define'd names and operators only")]),
    ('function int f(void v) { return 1; }',
     [(1, 21, 'a parameter cannot be void', 'write (void) for no parameters, or give it a type: int')]),
    ('script 1 (void) { int x = 5 }\nint y;',
     [(1, 29, "syntax error: unexpected '}'; expected ',', ';'", "a ';' may be missing at the end of the previous statement")]),
    ('script 1 (void) { if (1) { }',
     [(1, 29, "syntax error: unexpected end of file; expected '!', '(', '+', '++' or '--', '-', ';', 'bool', 'break', ...", "check the braces: a '}' may be missing")]),
    ('script 1 (void) { int x = @; }',
     [(1, 27, "syntax error: unexpected character '@'", 'ACS has no such character outside strings and comments')]),
    ('script 1 (void) { Print(s:"abc); }',
     [(1, 27, 'syntax error: unexpected character \'"\'', 'strings are written in double quotes and end on the same line')]),
    ('scrpt 1 (void) { }',
     [(1, 1, "syntax error: unexpected 'scrpt'; expected '#import', '#include', '#library', '#nocompact', ';', 'bool', 'function', 'global', ...", "did you mean 'script'?")]),
    ('script 1 (void) { int x = 1 / 0; y = 2; Light_ChangeToValue(1); break; }\n',
     [(1, 29, 'division by zero', 'the engine stops a script that divides by zero'), (1, 34, "undefined name 'y'", 'declare it first (int name;) or #define it'), (1, 41, "special 'Light_ChangeToValue' takes 2 arguments, but 1 was given", 'Light_ChangeToValue(arg1, arg2)'), (1, 65, "'break' outside a loop or switch", "to end the script early, use 'terminate;'")]),
]


@pytest.mark.parametrize("src,expected", CASES, ids=[f"case{i}" for i in range(len(CASES))])
def test_error_message(src, expected):
    assert diagnostics(src) == expected


def test_errors_name_the_file_and_print_as_file_line_col():
    with pytest.raises(CompileError) as info:
        acs.compile_source("script 1 (void) {\n    qqq = 1;\n}\n", "maps/door.acs")
    assert str(info.value) == ("maps/door.acs:2:5: error: undefined name 'qqq'\n"
                               "    hint: declare it first (int name;) or #define it")


def test_syntax_errors_of_several_scripts_are_reported_together():
    src = ("script 1 (void)\n{\n    int x = 1\n}\n\n"
           "script 2 (void)\n{\n    Delay(1;\n}\n\n"
           "function void f(void)\n{\n    x = @;\n}\n"
           "script 3 (void) { }\n")
    assert [d[:3] for d in diagnostics(src)] == [
        (4, 1, "syntax error: unexpected '}'; expected ',', ';'"),
        (8, 12, "syntax error: unexpected ';'; expected ')', ','"),
        (13, 9, "syntax error: unexpected character '@'")]


def test_all_semantic_errors_are_reported_together():
    src = ("script 1 (void) { a = 1; }\n"
           "script 1 (void) { Light_ChangeToValue(1); }\n"
           "script 2 (void) { break; b = Nope(2); }\n")
    assert [d[:2] for d in diagnostics(src)] == [(2, 8), (1, 19), (3, 19), (3, 26), (3, 30)]


# ---- limits of the engine ----------------------------------------------------------------------
def test_too_many_map_variables():
    src = "\n".join(f"int m{i};" for i in range(129))
    assert diagnostics(src) == [(129, 5, "too many map variables: 129 declared, the engine has "
                                         "128 (each array takes one)",
                                 "merge variables into a map array")]


def test_128_map_variables_are_fine():
    acs.compile_source("\n".join(f"int m{i};" for i in range(127)) + "\nint arr[5];")


def test_too_many_locals_in_a_script():
    body = " ".join(f"int v{i};" for i in range(256))
    assert diagnostics(f"script 1 (void) {{ {body} }}") == [
        (1, 8, "script uses 256 local variables; the limit is 255",
         "move values into map variables or split the script")]


def test_too_many_locals_in_a_function():
    body = " ".join(f"int v{i};" for i in range(255))
    assert diagnostics(f"function void f(int a) {{ {body} }}") == [
        (1, 15, "function 'f' uses 256 local variables; the limit is 255",
         "split the function")]


def test_too_many_functions():
    src = "\n".join(f"function void f{i}(void) {{ }}" for i in range(257))
    assert diagnostics(src) == [(257, 15, "too many functions: 257, the limit is 256",
                                 "merge functions (CALL takes a one-byte function index)")]


def test_over_the_limits_and_still_used_is_an_error_not_a_crash():
    funcs = "\n".join(f"function int f{i}(void) {{ return {i}; }}" for i in range(300))
    maps = "\n".join(f"int m{i};" for i in range(300))
    src = f"{funcs}\n{maps}\nscript 1 OPEN {{ m299 = f299(); }}\n"
    assert [d[2] for d in diagnostics(src)] == [
        "too many map variables: 300 declared, the engine has 128 (each array takes one)",
        "too many functions: 300, the limit is 256"]


def test_too_many_strings(monkeypatch):
    # Building 65,537 distinct strings takes seconds; the check is the same at any bound.
    monkeypatch.setattr(acs.compiler, "MAX_STRINGS", 3)
    src = 'script 1 (void) { Print(s:"a", s:"b", s:"c", s:"d"); }'
    # positioned at the first string past the limit, "d" (the full-size case with 70,000
    # strings is in test_acs_acc_parity.py)
    assert diagnostics(src) == [(1, 48, "too many distinct strings: 4, the limit is 3 "
                                        "(this is string 4)",
                                 "reuse strings, or print numbers with d: instead of literals")]


# ---- files and includes ---------------------------------------------------------------------------
def test_missing_include(tmp_path):
    src = tmp_path / "main.acs"
    src.write_text('#include "zcommon.acs"\n#include "nothere.acs"\n')
    with pytest.raises(CompileError) as info:
        acs.compile_file(str(src))
    (d,) = info.value.diagnostics
    assert (d.pos.line, d.pos.col, d.message) == (2, 1, "cannot find include file 'nothere.acs'")
    assert d.hint == f"searched {tmp_path}"


def test_include_cycle(tmp_path):
    (tmp_path / "a.acs").write_text('#include "b.acs"\n')
    (tmp_path / "b.acs").write_text('int x;\n#include "a.acs"\n')
    with pytest.raises(CompileError) as info:
        acs.compile_file(str(tmp_path / "a.acs"))
    (d,) = info.value.diagnostics
    assert (str(d.pos), d.message, d.hint) == (
        "b.acs:2:1", "'a.acs' includes itself (directly or through other files)",
        "remove the circular #include")


def test_error_inside_an_include_names_that_file(tmp_path):
    (tmp_path / "main.acs").write_text('#include "lib.acs"\nscript 1 (void) { f(); }\n')
    (tmp_path / "lib.acs").write_text("function void f(void)\n{\n    g = 1;\n}\n")
    with pytest.raises(CompileError) as info:
        acs.compile_file(str(tmp_path / "main.acs"))
    assert [str(d.pos) for d in info.value.diagnostics] == ["lib.acs:3:5"]


def test_an_error_in_an_included_file_shows_where_it_was_included(tmp_path):
    """Issue 25 item 18: every problem inside an included file (a syntax error, a name
    error found later by the compiler, a binary file) shows the #include lines that
    brought the file in, innermost first."""
    main = tmp_path / "main.acs"
    main.write_text('#include "a.acs"\nscript 1 OPEN { }\n')
    (tmp_path / "a.acs").write_text('#include "b.acs"\nfunction void f(void) { x = 1; }\n')
    (tmp_path / "b.acs").write_text("script 2 (void) { y = 1; }\n")
    with pytest.raises(CompileError) as info:
        acs.compile_file(str(main))
    assert str(info.value) == (
        "b.acs:1:19: error: undefined name 'y'\n    hint: declare it first (int name;) or "
        f"#define it\n    included from a.acs:1:1\n    included from {main}:1:1\n"
        "a.acs:2:25: error: undefined name 'x'\n    hint: declare it first (int name;) or "
        f"#define it\n    included from {main}:1:1")
    (tmp_path / "b.acs").write_text("script 2 (void) { int a = ; }\n")
    with pytest.raises(CompileError) as info:
        acs.compile_file(str(main))
    assert str(info.value).endswith(f"\n    included from a.acs:1:1\n    included from {main}:1:1")


def test_including_a_file_that_is_not_acs_names_the_include(tmp_path):
    main = tmp_path / "main.acs"
    main.write_text('script 1 OPEN { }\n#include "/etc/passwd"\n')
    with pytest.raises(CompileError) as info:
        acs.compile_file(str(main))
    shown = str(info.value)
    assert shown.startswith("/etc/passwd:1:1: error: syntax error"), shown
    assert shown.endswith(f"\n    included from {main}:2:1"), shown
    (tmp_path / "bin.acs").write_bytes(b"\x00\x01")
    main.write_text('#include "bin.acs"\n')
    with pytest.raises(CompileError) as info:
        acs.compile_file(str(main))
    assert str(info.value).endswith(f"binary file?\n    hint: pass the .acs source, not a "
                                    f"compiled lump\n    included from {main}:1:1")


def test_unreadable_file(tmp_path):
    with pytest.raises(CompileError) as info:
        acs.compile_file(str(tmp_path / "missing.acs"))
    (d,) = info.value.diagnostics
    assert d.message == "cannot read the file: No such file or directory"


def test_huge_file_is_refused_quickly(tmp_path):
    path = tmp_path / "huge.acs"
    path.write_bytes(b"// filler line of a huge generated file\n" * 262144)   # 10 MiB
    with pytest.raises(CompileError) as info:
        acs.compile_file(str(path))
    (d,) = info.value.diagnostics
    assert (d.pos.line, d.pos.col, d.message) == (1, 1, "source is larger than 4,194,304 bytes")


def test_huge_text_is_refused():
    assert diagnostics("//\n" * 1_500_000) == [
        (1, 1, "source is 4,500,000 characters; the limit is 4,194,304",
         "split the scripts over several files or maps")]


def test_binary_file_is_refused():
    assert diagnostics("script 1 (void) { }\n\0\0ACSe") == [
        (2, 1, "the file contains a NUL byte; is it a binary file?",
         "pass the .acs source, not a compiled lump")]


# ---- malformed input never escapes as another exception ---------------------------------------
# The error points at the node 600 levels below the script, on the deepest path.
@pytest.mark.parametrize("src,col", [
    # script -> block 1 -> ... -> block 600, each brace one column further
    ("script 1 (void) " + "{" * 5000 + "}" * 5000, 17 + 599),
    # script -> block -> declaration -> item -> 597 nested '--' (the lexer pairs the minuses)
    ("script 1 (void) { int x = " + "-" * 20000 + "1; }", 27 + 2 * 596),
    # right-deep sum (a left-deep one is a loop, not nesting: test_acs_acc_parity.py):
    # level 4 is the first '+' (k = 0, column 30), level 600 is the 597th
    ("script 1 (void) { int x = " + "(1 + " * 20000 + "1" + ")" * 20000 + "; }",
     30 + 5 * 596),
    # script -> block -> if 1 -> ... -> if 599 (each ' if (1)' is 7 columns)
    ("script 1 (void) {" + " if (1)" * 5000 + " ; }", 19 + 7 * 598),
])
def test_deep_nesting_is_a_positioned_error(src, col):
    assert diagnostics(src) == [
        (1, col, "nesting too deep (more than 600 levels of statements or expressions)",
         "split the expression or the statement into smaller parts")]


def test_deep_parentheses_compile():
    # Parentheses make no tree nodes, so any depth is fine.
    acs.compile_source("int x; script 1 (void) { x = " + "(" * 20000 + "1" + ")" * 20000 + "; }")


def test_garbage_bytes():
    text = bytes(random.Random(7).randrange(1, 256) for _ in range(5000)).decode("latin-1")
    (d,) = diagnostics(text)
    assert d[2].startswith("syntax error: ")


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from([
    "script", "1", "(", ")", "{", "}", "int", "x", "=", "+", ";", "if", "else", "while",
    "Delay", "Print", "s:", '"a"', "[", "]", ",", "global", ":", "function", "void",
    "return", "switch", "case", "default", "break", "0", "-", "?", "++", "#define", "A",
    "Light_ChangeToValue", "for", "do", "until", "'c'", "1.5", "str", "world", "&&",
]), max_size=40))
def test_token_soup_gives_compile_error_or_lump(tokens):
    src = " ".join(tokens)
    try:
        lump = acs.compile_source(src, "soup.acs")
    except CompileError as e:
        assert e.diagnostics and all(d.pos.file == "soup.acs" for d in e.diagnostics)
    else:
        assert lump[:4] == b"ACSe"
