"""ACS text -> syntax tree (acs/ast.py), with positioned syntax errors.

Owns the one Lark parser for grammar/acs.lark (LALR with the basic lexer, built once and
reused) and the callbacks that build AST nodes while the parser reduces, so no parse tree
is ever materialised. Lark's exceptions never escape: every syntax problem becomes a
CompileError with file:line:col and a hint.
"""
from __future__ import annotations

import re
import threading

from lark import Lark, Token, Transformer
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken

from dsl.diagnostics import CompileError, Diagnostic, Pos, did_you_mean

from . import ast as A

_PARSER = None
_LOCK = threading.Lock()

# How a terminal reads in an error message.
_TERMINAL_TEXT = {
    "SEMICOLON": "';'", "COLON": "':'", "COMMA": "','", "LPAR": "'('", "RPAR": "')'",
    "LBRACE": "'{'", "RBRACE": "'}'", "LBRACKET": "'['", "RSQB": "']'", "EQUALS": "'='",
    "NAME": "a name", "INT": "a number", "FIXED": "a fixed-point number",
    "STRING": "a string", "CHAR": "a character", "$END": "end of file",
    "ASSIGN_OP": "an assignment", "QUESTION": "'?'", "INCDEC": "'++' or '--'",
}


_TOP_KEYWORDS = ["script", "function", "int", "str", "bool", "global", "world", "special"]


def _unquote(tok: Token) -> str:
    # Escapes stay as written: the engine interprets \n, \c... when it prints, as it does
    # for acc's string table (see docs/acs.md).
    return tok[1:-1]


# Python refuses to convert longer decimal strings (its int-string limit); acc would wrap
# such a number to 32 bits, but nobody means a literal that long: it is an error.
MAX_LITERAL_DIGITS = 4300


class _LiteralError(Exception):
    """A malformed number: raised by a parser callback, positioned by parse()."""

    def __init__(self, tok: Token, message: str, hint: str):
        super().__init__(message)
        self.line, self.col, self.message, self.hint = tok.line, tok.column, message, hint


def _digits(tok: Token, digits: str, radix: int) -> int:
    if len(digits) > MAX_LITERAL_DIGITS:
        raise _LiteralError(tok, f"number too large ({len(digits):,} digits)",
                            "ACS numbers are 32-bit: -2147483648..2147483647")
    return int(digits, radix) if digits else 0


def _int_value(tok: Token) -> int:
    if len(tok) < 20 and tok.isdigit():   # the common case, first
        return int(tok)
    text = tok.lower()
    if text.startswith("0x"):
        return _digits(tok, text[2:], 16)
    radix_text, underscore, digits = text.partition("_")
    if not underscore:
        return _digits(tok, text, 10)
    radix = _digits(tok, radix_text, 10)
    if not 2 <= radix <= 36:
        raise _LiteralError(tok, f"radix {radix} is out of range 2..36 in '{tok}'",
                            "write RADIX_DIGITS, e.g. 16_FF or 2_1010")
    bad = next((c for c in digits if int(c, 36) >= radix), None)
    if bad is not None:
        raise _LiteralError(tok, f"'{bad}' is not a digit in radix {radix} ('{tok}')",
                            f"radix {radix} takes digits of value 0..{radix - 1} "
                            "(a = 10, b = 11, ... z = 35)")
    return _digits(tok, digits, radix)


class _Builder(Transformer):
    """Callbacks run by the LALR parser at each reduction (children already built)."""

    # ---- top level ----
    def start(self, items):
        return items

    def include(self, c):
        return A.Directive("include", None, _unquote(c[1]), c[0].line, c[0].column)

    def import_(self, c):
        return A.Directive("import", None, _unquote(c[1]), c[0].line, c[0].column)

    def define(self, c):
        kind = c[0].lower()[1:]
        return A.Directive(kind, A.Name(str(c[1]), c[1].line, c[1].column), c[2],
                           c[0].line, c[0].column)

    def library(self, c):
        return A.Directive("library", None, _unquote(c[1]), c[0].line, c[0].column)

    def nocompact(self, c):
        return A.Directive("nocompact", None, None, c[0].line, c[0].column)

    def directive_flag(self, c):
        return A.Directive(c[0].lower()[1:], None, None, c[0].line, c[0].column)

    def special_decl(self, c):
        return A.SpecialDecl(c[1:], c[0].line, c[0].column)

    def special_item(self, c):
        number, name = c[0], c[1]
        lo = _int_value(c[2])
        hi = _int_value(c[3]) if len(c) > 3 else lo
        return (number, str(name), lo, hi, name.line, name.column)

    def special_num(self, c):
        return -_int_value(c[1]) if len(c) == 2 else _int_value(c[0])

    def script(self, c):
        kw, ident = c[0], c[1]
        params = []
        flags = []
        body = c[-1]
        for x in c[2:-1]:
            if isinstance(x, list):
                params = x
            else:
                flags.append(x)
        return A.Script(ident[0], (ident[1], ident[2]), params, flags, body, kw.line, kw.column)

    def script_id(self, c):
        t = c[0]
        if t.type == "INT":
            value = _int_value(t)
        elif t.type == "STRING":
            value = A.Str(_unquote(t), t.line, t.column)
        else:
            value = str(t)
        return (value, t.line, t.column)

    def script_params(self, c):
        return [p for p in c if isinstance(p, A.Param)]

    def param(self, c):
        return A.Param(c[0], str(c[1]), c[1].line, c[1].column)

    def function(self, c):
        return A.Function(c[1], str(c[2]), c[3], c[4], c[2].line, c[2].column)

    def fparams(self, c):
        return [p for p in c if isinstance(p, A.Param)]

    def type(self, c):
        return c[0].lower()

    def storage(self, c):
        return ("storage", c[0].lower())

    # ---- declarations ----
    def top_decl(self, c):
        storage = None
        if isinstance(c[0], tuple):
            storage = c[0][1]
            c = c[1:]
        first = c[1]
        return A.VarDecl(storage, c[0], c[1:], first.line, first.col)

    def var_decl(self, c):
        return A.VarDecl(None, c[0], c[1:], c[1].line, c[1].col)

    for_decl = var_decl

    def var_item(self, c):
        i = 0
        number = None
        if c[0].type == "INT":
            number = _int_value(c[0])
            i = 1
        name = c[i]
        dims = []
        init = None
        for x in c[i + 1:]:
            if isinstance(x, tuple):
                dims.append(x[1])
            elif isinstance(x, Token):  # the '='
                continue
            else:
                init = x
        return A.VarItem(number, str(name), dims, init, name.line, name.column)

    def dim(self, c):
        return ("dim", c[1] if len(c) > 1 else None)

    def initializer(self, c):
        return c[0]

    def init_list(self, c):
        return A.InitList(c[1:], c[0].line, c[0].column)

    # ---- statements ----
    def block(self, c):
        return A.Block(c[1:-1], c[0].line, c[0].column, (c[-1].line, c[-1].column))

    def if_stmt(self, c):
        return A.If(c[1], c[2], None, c[0].line, c[0].column)

    def if_else(self, c):
        return A.If(c[1], c[2], c[4], c[0].line, c[0].column)

    def while_stmt(self, c):
        return A.While(c[1], c[2], False, c[0].line, c[0].column)

    def until_stmt(self, c):
        return A.While(c[1], c[2], True, c[0].line, c[0].column)

    def do_while(self, c):
        return A.DoWhile(c[1], c[3], False, c[0].line, c[0].column)

    def do_until(self, c):
        return A.DoWhile(c[1], c[3], True, c[0].line, c[0].column)

    def for_stmt(self, c):
        return A.For(c[1], c[2], c[3], c[4], c[0].line, c[0].column)

    def for_init(self, c):
        return c[0] if c else None

    def for_cond(self, c):
        return c[0] if c else None

    def for_step(self, c):
        return c[0] if c else []

    def expr_list(self, c):
        return list(c)

    def expr_stmt(self, c):
        e = c[0]
        return A.ExprStmt(e, e.line, e.col)

    def switch_stmt(self, c):
        return A.Switch(c[1], c[3:], c[0].line, c[0].column)

    def case_label(self, c):
        return A.Case(c[1], c[0].line, c[0].column)

    def default_label(self, c):
        return A.Case(None, c[0].line, c[0].column)

    def _jump(self, c):
        return A.Jump(c[0].lower(), c[1] if len(c) > 1 else None, c[0].line, c[0].column)

    break_stmt = continue_stmt = return_stmt = terminate_stmt = _jump
    suspend_stmt = restart_stmt = _jump

    def empty_stmt(self, c):
        return A.Empty(0, 0)

    # ---- expressions ----
    def assign(self, c):
        return A.Assign(str(c[1]), c[0], c[2], c[1].line, c[1].column)

    def ternary(self, c):
        return A.Ternary(c[0], c[2], c[3], c[1].line, c[1].column)

    def binop(self, c):
        return A.Binary(str(c[1]), c[0], c[2], c[1].line, c[1].column)

    def unop(self, c):
        return A.Unary(str(c[0]), c[1], c[0].line, c[0].column)

    def preinc(self, c):
        return A.IncDec(str(c[0]), c[1], True, c[0].line, c[0].column)

    def postinc(self, c):
        return A.IncDec(str(c[1]), c[0], False, c[1].line, c[1].column)

    def index(self, c):
        return A.Index(c[0], c[2], c[1].line, c[1].column)

    def int_lit(self, c):
        t = c[0]
        return A.Num(_int_value(t), t.line, t.column)

    def fixed_lit(self, c):
        t = c[0]
        whole, _, frac = str(t).partition(".")
        # Exact decimal * 65536, truncated toward zero (no float rounding surprises). A
        # value * 65536 that lies on an integer has at most 16 decimals, so cutting the
        # fraction to 20 digits never moves the truncated result.
        frac = frac[:20]
        scale = 10 ** len(frac)
        value = (_digits(t, whole, 10) * scale + int(frac or "0")) * 65536 // scale
        return A.Num(value, t.line, t.column)

    def char_lit(self, c):
        t = c[0]
        body = t[1:-1]
        if body.startswith("\\"):
            value = {"n": 10, "t": 9, "r": 13, "0": 0, "\\": 92, "'": 39, '"': 34}.get(
                body[1], ord(body[1]))
        else:
            value = ord(body)
        return A.Num(value, t.line, t.column)

    def str_lit(self, c):
        t = c[0]
        return A.Str(_unquote(t), t.line, t.column)

    def name(self, c):
        t = c[0]
        return A.Name(str(t), t.line, t.column)

    def call(self, c):
        t = c[0]
        args = c[1] if len(c) > 1 else []
        const = False
        plain = []
        for a in args:
            if isinstance(a, tuple):
                const = True
                plain.append(a[1])
            else:
                plain.append(a)
        return A.Call(str(t), plain, const, t.line, t.column)

    def args(self, c):
        return list(c)

    def const_arg(self, c):
        return ("const", c[1])

    def printfn(self, c):
        return c[0]

    def print_call(self, c):
        fn = c[0]
        items, opts = [], []
        for x in c[1:]:
            if x[0] == "items":
                items = x[1]
            else:
                opts = x[1]
        return A.PrintCall(fn.lower(), items, opts, fn.line, fn.column)

    def print_items(self, c):
        return ("items", list(c))

    def print_item(self, c):
        t = c[0]
        return (t.lower(), c[1], t.line, t.column)

    def print_opts(self, c):
        return ("opts", list(c))


def _parser() -> Lark:
    global _PARSER
    if _PARSER is None:
        with _LOCK:
            if _PARSER is None:
                _PARSER = Lark.open("../grammar/acs.lark", rel_to=__file__, parser="lalr",
                                    lexer="basic", transformer=_Builder(),
                                    maybe_placeholders=False, cache=False)
    return _PARSER


def _terminal_text(name: str) -> str:
    if name in _TERMINAL_TEXT:
        return _TERMINAL_TEXT[name]
    term = _parser().get_terminal(name) if name.isupper() else None
    if term is not None and term.pattern.type == "str":
        return repr(term.pattern.value)   # a keyword or punctuation: show its text
    return name.lower()


def _describe(names) -> str:
    shown = sorted({_terminal_text(n) for n in names})
    if len(shown) > 8:
        shown = shown[:8] + ["..."]
    return ", ".join(shown)


def _token_text(tok) -> str:
    if tok.type == "$END":
        return "end of file"
    text = str(tok)
    return repr(text if len(text) <= 20 else text[:20] + "...")


def _syntax_error(e: UnexpectedInput, filename: str, text: str) -> Diagnostic:
    if isinstance(e, UnexpectedToken):
        tok = e.token
        line = getattr(tok, "line", None) or e.line
        col = getattr(tok, "column", None) or e.column
        if tok.type == "$END":
            line, col = _end_position(text)
        expected = set(e.expected or ())
        hint = ""
        if tok.type == "$END":
            hint = "check the braces: a '}' may be missing"
        elif "SCRIPT" in expected:
            hint = (did_you_mean(str(tok).lower(), _TOP_KEYWORDS) if tok.type == "NAME" else "") \
                or "at the top level: a script, function, variable declaration or #directive"
        elif "SEMICOLON" in expected:
            hint = "a ';' may be missing at the end of the previous statement"
        elif "RPAR" in expected:
            hint = "check the parentheses: a ')' may be missing"
        elif "RBRACE" in expected:
            hint = "check the braces: a '}' may be missing"
        elif "LBRACE" in expected:
            hint = "a '{' may be missing (a script's flags go after its arguments)"
        else:
            hint = "compare with the ACS syntax in docs/acs.md"
        return Diagnostic(Pos(filename, line, col),
                          f"syntax error: unexpected {_token_text(tok)}; expected "
                          f"{_describe(expected)}", hint)
    if isinstance(e, UnexpectedCharacters):
        ch = text[e.pos_in_stream] if 0 <= e.pos_in_stream < len(text) else "?"
        hint = "strings are written in double quotes and end on the same line" \
            if ch in "\"'" else "ACS has no such character outside strings and comments"
        return Diagnostic(Pos(filename, e.line, e.column),
                          f"syntax error: unexpected character {ch!r}", hint)
    if isinstance(e, UnexpectedEOF):
        line, col = _end_position(text)
        return Diagnostic(Pos(filename, line, col), "syntax error: unexpected end of file",
                          "check the braces: a '}' may be missing")
    return Diagnostic(Pos(filename, getattr(e, "line", 0), getattr(e, "column", 0)),
                      f"syntax error: {e}")


def _end_position(text: str) -> tuple[int, int]:
    line = text.count("\n") + 1
    col = len(text) - (text.rfind("\n") + 1) + 1
    return line, col


# After a syntax error, parsing resumes at the next line that starts a script or function,
# so one run reports the syntax errors of several scripts (up to MAX_SYNTAX_ERRORS).
_RESUME = re.compile(r"^[ \t]*(script|function)\b", re.I | re.M)
MAX_SYNTAX_ERRORS = 20


def _error_offset(e: UnexpectedInput) -> int | None:
    if isinstance(e, UnexpectedToken):
        return None if e.token.type == "$END" else getattr(e.token, "start_pos", None)
    if isinstance(e, UnexpectedCharacters):
        return e.pos_in_stream
    return None


def parse(text: str, filename: str = "<acs>") -> list:
    """The top-level items of `text` (Directive/Script/Function/VarDecl/SpecialDecl)."""
    diags: list[Diagnostic] = []
    offset, line_base = 0, 0
    items = []
    while True:
        try:
            items = _parser().parse(text[offset:] if offset else text)
            break
        except _LiteralError as e:
            diags.append(Diagnostic(Pos(filename, e.line + line_base, e.col), e.message,
                                    e.hint))
            break
        except UnexpectedInput as e:
            d = _syntax_error(e, filename, text[offset:])
            diags.append(Diagnostic(Pos(filename, d.pos.line + line_base, d.pos.col),
                                    d.message, d.hint))
            at = _error_offset(e)
            if at is None or len(diags) >= MAX_SYNTAX_ERRORS:
                break
            m = _RESUME.search(text, offset + at + 1)
            if m is None:
                break
            offset = m.start()
            line_base = text.count("\n", 0, offset)
    if diags:
        raise CompileError(diags)
    for it in items:
        it.file = filename
    return items
