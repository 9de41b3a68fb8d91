"""ACS syntax tree -> BEHAVIOR lump: name resolution, checks, code generation, chunk layout.

Owns the semantics of our ACS subset (docs/acs.md): scopes and symbols, constant folding
with the engine's 32-bit C arithmetic, the choice of opcode for every construct, the
engine's limits (acs-bytecode.md), and the layout of SPTR/SFLG/SVCT/SNAM/FUNC/FNAM/STRL/
MINI/ARAY/AINI/MSTR/ASTR/MEXP. Every problem is collected as a positioned Diagnostic; the
lump is returned only when there are none.
"""
from __future__ import annotations

import os
import struct
from dataclasses import dataclass, field

from dsl.diagnostics import Collector, Pos, did_you_mean

from . import ast as A
from .assembler import HEADER_SIZE, Assembler, chunk, name_table, string_table
from .defs import (BUILTINS, CONSTANTS, MAX_CALLFUNC_INDEX, PRINT_END, PRINT_ITEMS,
                   SCRIPT_FLAGS, SCRIPT_TYPE_ARGS, SCRIPT_TYPES, SPECIALS, STANDARD_HEADERS,
                   Special)

# Engine limits (ViZDoom 1.3.2 / ZDoom 2.8.1, acs-bytecode.md) and our own sanity bounds.
MAX_MAP_VARS = 128
MAX_WORLD_VARS = 256
MAX_GLOBAL_VARS = 64
MAX_LOCALS = 255          # ACSe encodes a local's index in one byte
DEFAULT_LOCALS = 20       # scripts with more need an SVCT entry
MAX_SCRIPT_ARGS = 4
MIN_SCRIPT, MAX_SCRIPT = 1, 32767
MAX_FUNCTIONS = 256       # ACSe encodes the CALL index in one byte
MAX_STRINGS = 65536       # the engine keeps a string's library in the upper 16 bits
MAX_ARRAY_SIZE = 65536    # ours: a bigger map array is surely a mistake
MAX_NESTING = 600         # ours: deeper input is refused before any recursive pass
# Line specials above 255 do nothing in ViZDoom 1.3.2, called from ACS or set on a line
# (measured: Floor_LowerToHighestEE 256, Floor_RaiseToCeiling 259, Ceiling_ToFloorInstant
# 267), though newer engines' tables list them; 255 is also the most ACSe can encode.
MAX_SPECIAL = 255

_INT_MIN, _INT_MAX = -(1 << 31), (1 << 31) - 1


def wrap32(v: int) -> int:
    return ((v + (1 << 31)) & 0xFFFFFFFF) - (1 << 31)


def _c_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def _c_mod(a: int, b: int) -> int:
    return a - _c_div(a, b) * b


_BINARY_OPS = {
    "+": "ADD", "-": "SUBTRACT", "*": "MULTIPLY", "/": "DIVIDE", "%": "MODULUS",
    "==": "EQ", "!=": "NE", "<": "LT", ">": "GT", "<=": "LE", ">=": "GE",
    "&": "ANDBITWISE", "|": "ORBITWISE", "^": "EORBITWISE", "<<": "LSHIFT", ">>": "RSHIFT",
    # acc evaluates both operands of && and || and combines the two values: no short
    # circuit, so a call on the right runs whatever the left gave.
    "&&": "ANDLOGICAL", "||": "ORLOGICAL",
}
_ASSIGN_OPS = {"=": "ASSIGN", "+=": "ADD", "-=": "SUB", "*=": "MUL", "/=": "DIV",
               "%=": "MOD", "&=": "AND", "|=": "OR", "^=": "EOR", "<<=": "LS", ">>=": "RS"}
_PRINT_NAMES = {"print": "Print", "printbold": "PrintBold", "log": "Log",
                "hudmessage": "HudMessage", "hudmessagebold": "HudMessageBold",
                "strparam": "StrParam"}
_SCOPE_OP = {"script": "SCRIPT", "map": "MAP", "world": "WORLD", "global": "GLOBAL"}


def _fold_binary(op: str, a: int, b: int) -> int | None:
    if op == "+":
        return wrap32(a + b)
    if op == "-":
        return wrap32(a - b)
    if op == "*":
        return wrap32(a * b)
    if op == "/":
        return None if b == 0 else wrap32(_c_div(a, b))
    if op == "%":
        return None if b == 0 else wrap32(_c_mod(a, b))
    if op == "==":
        return int(a == b)
    if op == "!=":
        return int(a != b)
    if op == "<":
        return int(a < b)
    if op == ">":
        return int(a > b)
    if op == "<=":
        return int(a <= b)
    if op == ">=":
        return int(a >= b)
    if op == "&":
        return wrap32(a & b)
    if op == "|":
        return wrap32(a | b)
    if op == "^":
        return wrap32(a ^ b)
    if op == "<<":  # the engine's x86 shift uses the low 5 bits of the count
        return wrap32(a << (b & 31))
    if op == ">>":
        return wrap32(a >> (b & 31))
    if op == "&&":
        return int(bool(a) and bool(b))
    if op == "||":
        return int(bool(a) or bool(b))
    return None


# ---- symbols ----------------------------------------------------------------------------------------
@dataclass
class Var:
    name: str
    scope: str                 # script / map / world / global
    index: int
    type: str
    dims: list[int] | None     # None for a scalar; [] for a global/world array (no size)
    where: Pos

    @property
    def is_array(self) -> bool:
        return self.dims is not None


@dataclass
class Const:
    name: str
    value: int
    where: Pos | None


@dataclass
class Func:
    name: str
    index: int
    params: list
    returns: bool
    node: A.Function
    where: Pos
    locals: int = 0
    address: int = 0


@dataclass
class ScriptInfo:
    number: int
    name: str | None           # named scripts get negative numbers and an SNAM entry
    type: int
    flags: int
    argc: int
    node: A.Script
    locals: int = 0
    address: int = 0


def _ends_in_return(stmts, last: bool = False) -> bool:
    """acc's rule for a function with a value: its last statement that makes code, seen
    through plain blocks, is a return (an empty statement, an empty block or a
    declaration without a value after it changes nothing; anything else, an if / else
    included, does not count as returning)."""
    for st in stmts:
        if isinstance(st, A.Jump) and st.kind == "return":
            last = True  # a `return;` without its value is refused where it stands
        elif isinstance(st, A.Block):
            last = _ends_in_return(st.stmts, last)
        elif isinstance(st, A.VarDecl):
            last = last and all(item.init is None for item in st.items)
        elif not isinstance(st, A.Empty):
            last = False
    return last


@dataclass
class _Frame:
    """Locals of the script or function being compiled. Names are block scoped, but like
    acc every declaration gets a slot of its own, never reused: a local declared without
    a value holds what its slot held (0 when the script starts, last iteration's value in
    a loop), exactly as in acc. `slots` is what the engine must reserve."""
    kind: str                  # "script" or "function"
    func: Func | None = None
    scopes: list[dict] = field(default_factory=lambda: [{}])
    slots: int = 0
    loops: list[tuple[int | None, int | None]] = field(default_factory=list)


class Compiler:
    def __init__(self, compact: bool = True):
        self.compact = compact
        self.diag = Collector()
        self.file = "<acs>"
        self.asm = Assembler(compact)
        self.globals: dict[str, object] = {}     # lower name -> Var | Const | Func
        self.specials: dict[str, Special] = dict(SPECIALS)
        self.map_vars: list[tuple[Var, object]] = []   # (var, initialiser node)
        self.world_used: dict[tuple[bool, int], Var] = {}    # (is array, index) -> var
        self.global_used: dict[tuple[bool, int], Var] = {}
        self.functions: list[Func] = []
        self.scripts: list[ScriptInfo] = []
        self.script_of: dict[int, ScriptInfo] = {}   # id(Script node) -> its info
        self.script_numbers: dict[int, Pos] = {}
        self.strings: dict[str, int] = {}
        self.first_extra_string: Pos | None = None
        self.library: str | None = None
        self.frame: _Frame | None = None

    # ---- diagnostics -----------------------------------------------------------------------
    def pos(self, node) -> Pos:
        return Pos(self.file, getattr(node, "line", 0), getattr(node, "col", 0))

    def error(self, node, message: str, hint: str = "") -> None:
        self.diag.error(self.pos(node), message, hint)

    # ---- entry point ---------------------------------------------------------------------------
    def compile(self, items: list) -> bytes:
        for it in items:
            if it.depth > MAX_NESTING:
                self.file = it.file
                at = A.deepest(it, MAX_NESTING)
                self.diag.error(Pos(it.file, at.line, at.col),
                                f"nesting too deep (more than {MAX_NESTING} levels of "
                                "statements or expressions)",
                                "split the expression or the statement into smaller parts")
        self.diag.check()
        self.intern_literals(items)
        self.declare(items)
        self.assign_map_slots()
        for it in items:
            self.file = it.file
            if isinstance(it, A.Script):
                info = self.script_of.get(id(it))
                if info is not None:
                    self.gen_script(info)
            elif isinstance(it, A.Function):
                fn = self.globals.get(it.name.lower())
                if isinstance(fn, Func) and fn.node is it:
                    self.gen_function(fn)
        self.check_limits()
        self.diag.check()
        assert not self.asm.overflow, "an operand overflowed without a limit error"
        return self.layout()

    # ---- pass 1: declarations -------------------------------------------------------------------
    def declare(self, items: list) -> None:
        for it in items:
            self.file = it.file
            if isinstance(it, A.Directive):
                self.declare_directive(it)
            elif isinstance(it, A.SpecialDecl):
                for number, name, lo, hi, line, col in it.items:
                    self.specials[name.lower()] = Special(number, name, lo, hi)
            elif isinstance(it, A.VarDecl):
                self.declare_top_vars(it)
            elif isinstance(it, A.Function):
                self.declare_function(it)
            elif isinstance(it, A.Script):
                self.declare_script(it)

    def declare_directive(self, d: A.Directive) -> None:
        if d.kind in ("define", "libdefine"):
            value = self.const_int(d.value, what="a #define value")
            if value is not None:
                self.define_global(d.name.name, Const(d.name.name, value, self.pos(d.name)),
                                   d.name)
        elif d.kind == "library":
            self.library = d.value
        elif d.kind == "nocompact":
            pass  # handled by compile_source before the Compiler is made
        elif d.kind == "import":
            if os.path.basename(d.value).lower() not in STANDARD_HEADERS:
                self.error(d, f"cannot import '{d.value}': linking against ACS libraries is "
                              "not supported", "use #include to compile the file into this lump")
        # include was spliced in by the loader; encryptstrings/wadauthor have no effect

    def define_global(self, name: str, sym, node) -> bool:
        key = name.lower()
        old = self.globals.get(key)
        if old is not None:
            where = getattr(old, "where", None)
            self.error(node, f"'{name}' is already defined" + (f" at {where}" if where else ""),
                       "give it another name")
            return False
        self.globals[key] = sym
        return True

    def declare_top_vars(self, decl: A.VarDecl) -> None:
        storage = decl.storage or "map"
        if storage == "static":
            storage = "map"
        if decl.type == "void":
            self.error(decl, "a variable cannot be void", "declare it int, str or bool")
            return
        for item in decl.items:
            dims = self.array_dims(item)
            if storage in ("world", "global"):
                limit = MAX_WORLD_VARS if storage == "world" else MAX_GLOBAL_VARS
                if item.number is None:
                    self.error(item, f"{storage} variable '{item.name}' needs an index",
                               f"write '{storage} int 1:{item.name};'")
                    continue
                if not 0 <= item.number < limit:
                    self.error(item, f"{storage} variable index {item.number} is out of "
                                     f"range 0..{limit - 1}",
                               "ViZDoom reads global 1..60 as USER1..USER60"
                               if storage == "global" else "world variables are 0..255")
                    continue
                # Scalars and arrays of a scope are separate stores in the engine.
                used = self.world_used if storage == "world" else self.global_used
                slot = (dims is not None, item.number)
                if slot in used:
                    other = used[slot]
                    self.error(item, f"{storage} {'array' if dims is not None else 'variable'} "
                                     f"index {item.number} is already used by '{other.name}' "
                                     f"({other.where})", "give each one its own index")
                    continue
                if item.init is not None:
                    self.error(item, f"{storage} variables cannot have an initial value",
                               "assign it in an OPEN script")
                if dims and dims != [None]:
                    self.error(item, f"{storage} arrays are declared without a size",
                               f"write '{storage} int {item.number}:{item.name}[];'")
                var = Var(item.name, storage, item.number, decl.type,
                          [] if dims is not None else None, self.pos(item))
                if self.define_global(item.name, var, item):
                    used[slot] = var
            else:
                if item.number is not None:
                    self.error(item, f"map variable '{item.name}' cannot have an index",
                               f"write 'int {item.name};' or 'global int "
                               f"{item.number}:{item.name};'")
                    continue
                if dims is not None:
                    dims = self.infer_dims(item, dims)
                    if dims is None:
                        continue
                var = Var(item.name, "map", -1, decl.type, dims, self.pos(item))
                if self.define_global(item.name, var, item):
                    self.map_vars.append((var, item.init, self.file))

    def array_dims(self, item: A.VarItem) -> list | None:
        """The sizes of `item`'s dimensions (None for an empty `[]`), or None if scalar."""
        if not item.dims:
            return None
        out = []
        for d in item.dims:
            if d is None:
                out.append(None)
                continue
            n = self.const_int(d, what="an array size")
            if n is not None and not 1 <= n <= MAX_ARRAY_SIZE:
                self.error(d, f"array size {n} is out of range 1..{MAX_ARRAY_SIZE}",
                           "an array holds at least one element")
                n = 1
            out.append(n if n is not None else 1)
        return out

    def infer_dims(self, item: A.VarItem, dims: list) -> list | None:
        if None in dims[1:]:
            self.error(item, f"only the first dimension of '{item.name}' may be left empty",
                       "give every dimension after the first a size")
            return None
        if dims[0] is None:
            if not isinstance(item.init, A.InitList):
                self.error(item, f"array '{item.name}' needs a size or an initialiser list",
                           f"write '{item.name}[10]' or '{item.name}[] = {{1, 2, 3}}'")
                return None
            dims = [len(item.init.items)] + dims[1:]
            if dims[0] == 0:
                self.error(item, f"array '{item.name}' has an empty initialiser list",
                           f"list at least one value, or give a size: {item.name}[10]")
                return None
        total = 1
        for d in dims:
            total *= d
        if total > MAX_ARRAY_SIZE:
            self.error(item, f"array '{item.name}' has {total} elements; the limit is "
                             f"{MAX_ARRAY_SIZE}", "split it into smaller arrays")
            return None
        return dims

    def declare_function(self, fn: A.Function) -> None:
        key = fn.name.lower()
        if key in BUILTINS or key in self.specials:
            self.error(fn, f"'{fn.name}' is a builtin function or line special",
                       "give your function another name")
            return
        info = Func(fn.name, len(self.functions), fn.params, fn.rettype != "void", fn,
                    self.pos(fn))
        if self.define_global(fn.name, info, fn):
            self.functions.append(info)

    def declare_script(self, s: A.Script) -> None:
        at = A.Empty(s.ident_line, s.ident_col)
        ident = self._script_identity(s.ident, at)
        if ident is None:
            return
        number, name, key = ident
        if key in self.script_numbers:
            shown = f'"{name}"' if name is not None else str(number)
            self.error(at, f"script {shown} is already defined at {self.script_numbers[key]}",
                       "give each script its own number")
            return
        self.script_numbers[key] = self.pos(at)
        stype, flags, type_name = self._script_type(s.flags)
        argc = len(s.params)
        if type_name is not None:
            need = SCRIPT_TYPE_ARGS.get(type_name, 0)
            if argc != need:
                self.error(at, f"{type_name.upper()} scripts take {need} argument"
                               f"{'s' if need != 1 else ''}, this one has {argc}",
                           "declare it (void)" if need == 0 else "")
        elif argc > MAX_SCRIPT_ARGS:
            self.error(at, f"a script takes at most {MAX_SCRIPT_ARGS} arguments, this one has "
                           f"{argc}", "pass more values through map or global variables")
        info = ScriptInfo(number, name, stype, flags, argc, s)
        self.scripts.append(info)
        self.script_of[id(s)] = info

    def _script_identity(self, ident, at) -> tuple | None:
        """(number, name, key in script_numbers) of a script header's name or number; None
        after reporting an undefined constant or a number out of range."""
        if isinstance(ident, A.Str):
            number = -1 - sum(1 for x in self.scripts if x.name is not None)
            return number, ident.text, ("named", ident.text.lower())
        if isinstance(ident, str):
            sym = self.globals.get(ident.lower())
            if isinstance(sym, Const):
                number = sym.value
            elif ident.lower() in CONSTANTS:
                number = CONSTANTS[ident.lower()]
            else:
                self.error(at, f"script number '{ident}' is not a defined constant",
                           did_you_mean(ident, self.const_names()) or
                           "use a number or a #define'd name")
                return None
        else:
            number = ident
        if not MIN_SCRIPT <= number <= MAX_SCRIPT:
            self.error(at, f"script number {number} is out of range "
                           f"{MIN_SCRIPT}..{MAX_SCRIPT}",
                       "script 0 is reserved; numbers above 32767 do not fit the "
                       "engine's 16-bit script number")
            return None
        return number, None, number

    def _script_type(self, tokens) -> tuple[int, int, str | None]:
        """(type number, flag bits, type word) from a script header's words."""
        stype, flags, type_name = 0, 0, None
        for tok in tokens:
            word = tok.lower()
            tpos = A.Empty(tok.line, tok.column)
            if word in SCRIPT_TYPES:
                if type_name is not None:
                    self.error(tpos, f"script has two types ({type_name.upper()} and "
                                     f"{word.upper()})", "keep one")
                type_name, stype = word, SCRIPT_TYPES[word]
            elif word in SCRIPT_FLAGS:
                flags |= SCRIPT_FLAGS[word]
            else:
                self.error(tpos, f"unknown script type or flag '{tok}'",
                           did_you_mean(word.upper(), [k.upper() for k in
                                                       list(SCRIPT_TYPES) + list(SCRIPT_FLAGS)])
                           or "use OPEN, ENTER, RESPAWN, DEATH, RETURN, DISCONNECT, "
                              "LIGHTNING, UNLOADING, NET")
        return stype, flags, type_name

    def const_names(self):
        return [v.name for v in self.globals.values() if isinstance(v, Const)] + \
            list(CONSTANTS)

    # ---- constants -------------------------------------------------------------------------------
    def fold(self, e) -> int | None:
        """The value of `e` if it is a compile-time integer constant, else None. Silent: the
        caller reports why a constant was needed."""
        c = e._const
        if c is not A._UNSET:
            return c
        v = self._fold(e)
        e._const = v
        return v

    def _fold(self, e) -> int | None:
        if isinstance(e, A.Num):
            return wrap32(e.value)
        if isinstance(e, A.Name):
            sym = self.lookup(e.name)
            if isinstance(sym, Const):
                return sym.value
            if sym is None and e.name.lower() in CONSTANTS:
                return CONSTANTS[e.name.lower()]
            return None
        if isinstance(e, A.Unary):
            v = self.fold(e.operand)
            if v is None:
                return None
            if e.op == "-":
                return wrap32(-v)
            if e.op == "!":
                return int(not v)
            if e.op == "~":
                return wrap32(~v)
            return v
        if isinstance(e, A.Binary):
            # Iterative along the left spine (see binary()); each node's value is cached.
            spine = []
            n = e
            while type(n) is A.Binary and n._const is A._UNSET:
                spine.append(n)
                n = n.left
            v = self.fold(n)
            for node in reversed(spine):
                if v is not None:
                    b = self.fold(node.right)
                    v = None if b is None else _fold_binary(node.op, v, b)
                node._const = v
            return v
        if isinstance(e, A.Ternary):
            c = self.fold(e.cond)
            if c is None:
                return None
            a, b = self.fold(e.then), self.fold(e.other)
            if a is None or b is None:
                return None
            return a if c else b
        return None

    def const_int(self, e, what: str) -> int | None:
        """fold(e), reporting why when `e` is not a constant."""
        v = self.fold(e)
        if v is None and not self.report_div_zero(e):
            if isinstance(e, A.Name) and self.lookup(e.name) is None \
                    and e.name.lower() not in CONSTANTS:
                self.undefined(e)
            else:
                self.error(e, f"{what} must be a constant expression",
                           "use numbers, strings, #define'd names and operators only")
        return v

    def report_div_zero(self, e) -> bool:
        """Report each `x / 0` or `x % 0` inside a constant expression `e`; True if any."""
        found = False
        stack = [e]
        while stack:
            n = stack.pop()
            if isinstance(n, A.Binary):
                if n.op in ("/", "%") and self.fold(n.right) == 0:
                    self.error(n, "division by zero in a constant expression",
                               "the engine stops a script that divides by zero")
                    found = True
                stack.append(n.left)
                stack.append(n.right)
            elif isinstance(n, A.Unary):
                stack.append(n.operand)
            elif isinstance(n, A.Ternary):
                stack += [n.cond, n.then, n.other]
        return found

    def intern_literals(self, items: list) -> None:
        """Number every string literal as acc does: in source order, as the parser meets
        it (in a map variable's initialiser, in code that never runs), so that string 0,
        which an unset `str` holds, is the same string under both compilers. A named
        script's name is not a literal here (it goes to SNAM)."""
        for it in items:
            self.file = getattr(it, "file", self.file)
            found, stack = [], [it.body] if isinstance(it, A.Script) else [it]
            while stack:
                n = stack.pop()
                if isinstance(n, A.Str):
                    found.append(n)
                stack += A.children(n)
            for lit in sorted(found, key=lambda n: (n.line, n.col)):
                self.intern(lit)

    def intern(self, s: A.Str) -> int:
        """The STRL index of string literal `s`; the first one past the limit is where the
        error will point."""
        idx = self.strings.get(s.text)
        if idx is None:
            idx = len(self.strings)
            self.strings[s.text] = idx
            if idx == MAX_STRINGS:
                self.first_extra_string = self.pos(s)
        return idx

    # ---- name lookup ------------------------------------------------------------------------------
    def lookup(self, name: str):
        key = name.lower()
        f = self.frame
        if f is not None:
            for scope in reversed(f.scopes):
                v = scope.get(key)
                if v is not None:
                    return v
        return self.globals.get(key)

    def visible_names(self):
        names = []
        if self.frame is not None:
            for scope in self.frame.scopes:
                names += [v.name for v in scope.values()]
        names += [getattr(v, "name", k) for k, v in self.globals.items()]
        return names + list(CONSTANTS)

    def undefined(self, e: A.Name) -> None:
        hint = did_you_mean(e.name, self.visible_names()) or \
            "declare it first (int name;) or #define it"
        self.error(e, f"undefined name '{e.name}'", hint)

    # ---- code generation: scripts and functions -----------------------------------------------
    def gen_script(self, info: ScriptInfo) -> None:
        s = info.node
        self.frame = _Frame("script")
        for p in s.params:
            self.declare_local(p, p.name, p.type)
        info.address = self.asm.address
        self.block(s.body, new_scope=False)
        self.asm.op("TERMINATE")
        info.locals = self.frame.slots
        if info.locals > MAX_LOCALS:
            self.error(A.Empty(s.ident_line, s.ident_col),
                       f"script uses {info.locals} local variables; the limit is {MAX_LOCALS}",
                       "move values into map variables or split the script")
        self.frame = None

    def gen_function(self, fn: Func) -> None:
        node = fn.node
        self.frame = _Frame("function", fn)
        for p in node.params:
            if p.type == "void":
                self.error(p, "a parameter cannot be void",
                           "write (void) for no parameters, or give it a type: int")
            self.declare_local(p, p.name, p.type)
        fn.address = self.asm.address
        self.block(node.body, new_scope=False)
        if fn.returns and not _ends_in_return(node.body.stmts):
            line, col = node.body.end
            self.diag.error(Pos(self.file, line, col),
                            f"function '{fn.name}' must return a value: it can end here "
                            "without a return",
                            "end the function with `return VALUE;` (as acc, the last "
                            "statement must be a return, even after an if / else that "
                            "returns in both branches)")
        self.asm.op("RETURNVOID")
        fn.locals = self.frame.slots
        if fn.locals > MAX_LOCALS:
            self.error(node, f"function '{fn.name}' uses {fn.locals} local variables; the "
                             f"limit is {MAX_LOCALS}", "split the function")
        self.frame = None

    def declare_local(self, node, name: str, type_: str) -> Var | None:
        f = self.frame
        key = name.lower()
        if key in f.scopes[-1]:
            self.error(node, f"'{name}' is already declared in this block at "
                             f"{f.scopes[-1][key].where}", "give it another name")
            return None
        var = Var(name, "script", f.slots, type_, None, self.pos(node))
        f.scopes[-1][key] = var
        f.slots += 1
        return var

    # ---- statements -----------------------------------------------------------------------------
    def block(self, b: A.Block, new_scope: bool = True) -> None:
        f = self.frame
        if new_scope:
            f.scopes.append({})
        for st in b.stmts:
            self.stmt(st)
        if new_scope:
            f.scopes.pop()

    def stmt(self, st) -> None:
        _STATEMENTS[type(st)](self, st)

    def expr_stmt(self, st: A.ExprStmt) -> None:
        self.discard(st.expr)

    def empty_stmt(self, st: A.Empty) -> None:
        pass

    def local_decl(self, decl: A.VarDecl) -> None:
        if decl.type == "void":
            self.error(decl, "a variable cannot be void", "declare it int, str or bool")
            return
        for item in decl.items:
            if item.number is not None:
                self.error(item, "a local variable cannot have an index",
                           f"declare it at the top level: 'global int {item.number}:"
                           f"{item.name};'")
                continue
            if item.dims:
                self.error(item, f"local arrays are not supported ('{item.name}')",
                           "declare the array at the top level (a map array)")
                continue
            if isinstance(item.init, A.InitList):
                self.error(item.init, "an initialiser list needs an array",
                           "local arrays are not supported; use a map array")
                continue
            # Declared before its initialiser is compiled: as in acc, `int x = x + 1;`
            # reads the new x (its slot's value). Without an initialiser no code at all.
            var = self.declare_local(item, item.name, decl.type)
            if item.init is None:
                continue
            self.expr(item.init)
            if var is None:
                self.asm.op("DROP")
                continue
            self.asm.op("ASSIGNSCRIPTVAR")
            self.asm.byte_arg(var.index)

    def cond_jump(self, e, label: int, jump_if: bool) -> None:
        v = self.fold(e)
        if v is not None:
            if bool(v) == jump_if:
                self.asm.jump("GOTO", label)
            return
        self.expr(e)
        self.asm.jump("IFGOTO" if jump_if else "IFNOTGOTO", label)

    def if_stmt(self, st: A.If) -> None:
        a = self.asm
        other = a.label()
        self.cond_jump(st.cond, other, False)
        self.stmt(st.then)
        if st.other is not None:
            end = a.label()
            a.jump("GOTO", end)
            a.place(other)
            self.stmt(st.other)
            a.place(end)
        else:
            a.place(other)

    def while_stmt(self, st: A.While) -> None:
        a = self.asm
        top, end = a.label(), a.label()
        a.place(top)
        self.cond_jump(st.cond, end, st.until)
        self.frame.loops.append((end, top))
        self.stmt(st.body)
        self.frame.loops.pop()
        a.jump("GOTO", top)
        a.place(end)

    def do_stmt(self, st: A.DoWhile) -> None:
        a = self.asm
        top, cont, end = a.label(), a.label(), a.label()
        a.place(top)
        self.frame.loops.append((end, cont))
        self.stmt(st.body)
        self.frame.loops.pop()
        a.place(cont)
        self.cond_jump(st.cond, top, not st.until)
        a.place(end)

    def for_stmt(self, st: A.For) -> None:
        a, f = self.asm, self.frame
        f.scopes.append({})
        if isinstance(st.init, A.VarDecl):
            self.local_decl(st.init)
        elif st.init:
            for e in st.init:
                self.discard(e)
        top, cont, end = a.label(), a.label(), a.label()
        a.place(top)
        if st.cond is not None:
            self.cond_jump(st.cond, end, False)
        f.loops.append((end, cont))
        self.stmt(st.body)
        f.loops.pop()
        a.place(cont)
        for e in st.step:
            self.discard(e)
        a.jump("GOTO", top)
        a.place(end)
        f.scopes.pop()

    def switch_stmt(self, st: A.Switch) -> None:
        a, f = self.asm, self.frame
        self.expr(st.expr)
        dispatch, end = a.label(), a.label()
        a.jump("GOTO", dispatch)
        cases: list[tuple[int, int]] = []
        seen: dict[int, A.Case] = {}
        default = None
        f.loops.append((end, None))
        f.scopes.append({})
        for item in st.body:
            if isinstance(item, A.Case):
                lab = a.label()
                a.place(lab)
                if item.expr is None:
                    if default is not None:
                        self.error(item, "switch has two 'default' labels",
                                   f"the first is at {self.pos(default)}")
                    default = item
                    default_label = lab
                    continue
                v = self.const_int(item.expr, what="a case label")
                if v is None:
                    continue
                if v in seen:
                    self.error(item, f"case {v} appears twice in this switch",
                               f"the first is at {self.pos(seen[v])}")
                    continue
                seen[v] = item
                cases.append((v, lab))
            else:
                self.stmt(item)
        f.scopes.pop()
        f.loops.pop()
        a.jump("GOTO", end)
        a.place(dispatch)
        for v, lab in cases:
            a.case_goto(v, lab)
        a.op("DROP")
        a.jump("GOTO", default_label if default is not None else end)
        a.place(end)

    def jump_stmt(self, st: A.Jump) -> None:
        a, f = self.asm, self.frame
        k = st.kind
        if k == "break":
            if not f.loops:
                self.error(st, "'break' outside a loop or switch",
                           "to end the script early, use 'terminate;'")
                return
            a.jump("GOTO", f.loops[-1][0])
        elif k == "continue":
            target = next((c for _, c in reversed(f.loops) if c is not None), None)
            if target is None:
                self.error(st, "'continue' outside a loop",
                           "'continue' jumps to the next iteration of a loop")
                return
            a.jump("GOTO", target)
        elif k == "return":
            if f.kind == "script":
                self.error(st, "'return' is only allowed in a function",
                           "use 'terminate;' to end a script")
                return
            fn = f.func
            if st.value is None:
                if fn.returns:
                    self.error(st, f"function '{fn.name}' must return a value",
                               "write 'return <value>;'")
                a.op("RETURNVOID")
            else:
                if not fn.returns:
                    self.error(st.value, f"void function '{fn.name}' cannot return a value",
                               "declare it 'function int ...' or write 'return;'")
                self.expr(st.value)
                a.op("RETURNVAL")
        elif k == "terminate":
            a.op("TERMINATE")
        elif k == "suspend":
            a.op("SUSPEND")
        elif k == "restart":
            if f.kind != "script":
                self.error(st, "'restart' is only allowed in a script",
                           "return from the function and restart the calling script")
                return
            a.op("RESTART")

    # ---- expressions: for effect -------------------------------------------------------------------
    def discard(self, e) -> None:
        t = type(e)
        if t is A.Assign:
            self.assign(e, want=False)
        elif t is A.IncDec:
            self.incdec(e, want=False)
        elif t is A.Call:
            self.call(e, want=False)
        elif t is A.PrintCall:
            self.print_call(e, want=False)
        elif t is A.Ternary:
            self.ternary(e, self.discard)
        else:
            self.error(e, "this expression has no effect",
                       "a statement must assign, call, or increment; did you mean '='?"
                       if isinstance(e, A.Binary) and e.op == "==" else
                       "a statement must assign, call, or increment")

    def ternary(self, e, branch) -> None:
        """c ? a : b, each branch emitted by `branch` (for its value, or for its effect)."""
        a = self.asm
        other, end = a.label(), a.label()
        self.cond_jump(e.cond, other, False)
        branch(e.then)
        a.jump("GOTO", end)
        a.place(other)
        branch(e.other)
        a.place(end)

    # ---- expressions: for value ---------------------------------------------------------------------
    def expr(self, e) -> None:
        """Emit code that pushes exactly one value."""
        v = self.fold(e)
        if v is not None:
            self.asm.push(v)
            return
        t = type(e)
        if t is A.Name:
            self.push_name(e)
        elif t is A.Str:
            self.push_string(e)
        elif t is A.Binary:
            self.binary(e)
        elif t is A.Unary:
            self.expr(e.operand)
            if e.op == "-":
                self.asm.op("UNARYMINUS")
            elif e.op == "!":
                self.asm.op("NEGATELOGICAL")
            elif e.op == "~":
                self.asm.op("NEGATEBINARY")
        elif t is A.Call:
            self.call(e, want=True)
        elif t is A.Assign:
            self.assign(e, want=True)
        elif t is A.IncDec:
            self.incdec(e, want=True)
        elif t is A.Index:
            self.push_index(e)
        elif t is A.Ternary:
            self.ternary(e, self.expr)
        elif t is A.PrintCall:
            self.print_call(e, want=True)
        else:  # pragma: no cover - numbers always fold; the grammar makes nothing else
            raise AssertionError(f"unknown expression {t.__name__}")

    def push_string(self, e: A.Str) -> None:
        self.asm.push(self.intern(e))
        if self.library is not None:
            # As acc does in a library: the engine adds this module's id to the index, so
            # the string is found in the library's table, not in the map's (which is
            # module 0 and needs no tag).
            self.asm.op("TAGSTRING")

    def binary(self, e: A.Binary) -> None:
        """Left operand, right operand, operator. A left-deep chain (`a + b + ... + z`,
        thousands long in generated scripts) is walked down its left spine in a loop, not
        by recursion, so its length is unbounded."""
        a = self.asm
        spine = []
        n = e
        while type(n) is A.Binary and self.fold(n) is None:
            spine.append(n)
            n = n.left
        self.expr(n)
        for node in reversed(spine):
            if node.op in ("/", "%") and self.fold(node.right) == 0:
                self.error(node, "division by zero",
                           "the engine stops a script that divides by zero")
            self.expr(node.right)
            a.op(_BINARY_OPS[node.op])

    def push_name(self, e: A.Name) -> None:
        sym = self.lookup(e.name)
        if isinstance(sym, Var):
            if sym.is_array:
                self.error(e, f"array '{e.name}' needs an index", f"write {e.name}[i]")
                self.asm.push(0)
                return
            self.asm.op("PUSH" + _SCOPE_OP[sym.scope] + "VAR")
            self.asm.byte_arg(sym.index)
        elif isinstance(sym, Func):
            self.error(e, f"'{e.name}' is a function", f"call it: {e.name}(...)")
            self.asm.push(0)
        else:
            key = e.name.lower()
            if key in BUILTINS or key in self.specials:
                self.error(e, f"'{e.name}' is a builtin function or line special",
                           f"call it: {e.name}(...)")
            else:
                self.undefined(e)
            self.asm.push(0)

    # ---- variables as targets -----------------------------------------------------------------
    def target(self, e):
        """(var, index expression or None) for an assignable expression, or None."""
        if isinstance(e, A.Name):
            sym = self.lookup(e.name)
            if isinstance(sym, Var):
                if sym.is_array:
                    self.error(e, f"array '{e.name}' needs an index", f"write {e.name}[i]")
                    return None
                return sym, None
            if sym is None and e.name.lower() not in CONSTANTS:
                self.undefined(e)
            else:
                self.error(e, f"cannot assign to '{e.name}': it is not a variable",
                           "only variables and array elements can be assigned")
            return None
        if isinstance(e, A.Index):
            return self.array_element(e)
        self.error(e, "the left side of an assignment must be a variable or array element",
                   "write name = value; or name[i] = value;")
        return None

    def array_element(self, e: A.Index):
        indices = []
        n = e
        while isinstance(n, A.Index):
            indices.append(n.index)
            n = n.base
        indices.reverse()
        if not isinstance(n, A.Name):
            self.error(e, "only a named array can be indexed", "write name[i]")
            return None
        sym = self.lookup(n.name)
        if not isinstance(sym, Var):
            if sym is None and n.name.lower() not in CONSTANTS:
                self.undefined(n)
            else:
                self.error(n, f"'{n.name}' is not an array",
                           "declare it with a size: " f"int {n.name}[10];")
            return None
        if not sym.is_array:
            self.error(e, f"'{n.name}' is not an array", "declare it with a size: "
                                                        f"int {n.name}[10];")
            return None
        ndims = max(1, len(sym.dims))
        if len(indices) != ndims:
            self.error(e, f"array '{n.name}' has {ndims} dimension{'s' if ndims > 1 else ''}, "
                          f"indexed with {len(indices)}",
                       "write " + n.name + "".join(f"[{c}]" for c in "ijklmn"[:ndims]))
            return None
        for i, ix in enumerate(indices):
            v = self.fold(ix)
            if v is not None and sym.dims and not 0 <= v < sym.dims[i]:
                self.error(ix, f"index {v} is out of bounds for '{n.name}' "
                               f"(size {sym.dims[i]})",
                           f"indices run from 0 to {sym.dims[i] - 1}")
        return sym, indices

    def push_flat_index(self, var: Var, indices: list) -> None:
        """Push the flattened element offset (row-major) of a multi-dimensional index."""
        if len(indices) == 1:
            self.expr(indices[0])
            return
        strides = []
        s = 1
        for d in reversed(var.dims):
            strides.append(s)
            s *= d
        strides.reverse()
        first = True
        for ix, stride in zip(indices, strides):
            self.expr(ix)
            if stride != 1:
                self.asm.push(stride)
                self.asm.op("MULTIPLY")
            if not first:
                self.asm.op("ADD")
            first = False

    def var_op(self, var: Var, what: str) -> None:
        kind = "ARRAY" if var.is_array else "VAR"
        self.asm.op(what + _SCOPE_OP[var.scope] + kind)
        self.asm.byte_arg(var.index)

    def push_index(self, e: A.Index) -> None:
        t = self.array_element(e)
        if t is None:
            self.asm.push(0)
            return
        var, indices = t
        self.push_flat_index(var, indices)
        self.var_op(var, "PUSH")

    def assign(self, e: A.Assign, want: bool) -> None:
        t = self.target(e.target)
        if t is None:
            self.expr(e.value)   # still check the right side
            if not want:
                self.asm.op("DROP")
            return
        var, indices = t
        if e.op in ("/=", "%=") and self.fold(e.value) == 0:
            self.error(e, "division by zero", "the engine stops a script that divides by zero")
        opname = _ASSIGN_OPS[e.op]
        if indices is None:
            self.expr(e.value)
            self.var_op(var, opname)
            if want:
                self.var_op(var, "PUSH")
        else:
            self.push_flat_index(var, indices)
            if want:
                self.asm.op("DUP")
            self.expr(e.value)
            self.var_op(var, opname)
            if want:
                self.var_op(var, "PUSH")

    def incdec(self, e: A.IncDec, want: bool) -> None:
        t = self.target(e.target)
        if t is None:
            if want:
                self.asm.push(0)
            return
        var, indices = t
        opname = "INC" if e.op == "++" else "DEC"
        a = self.asm
        if indices is None:
            if want and not e.prefix:
                self.var_op(var, "PUSH")
            self.var_op(var, opname)
            if want and e.prefix:
                self.var_op(var, "PUSH")
            return
        self.push_flat_index(var, indices)
        if not want:
            self.var_op(var, opname)
        elif e.prefix:
            a.op("DUP")
            self.var_op(var, opname)
            self.var_op(var, "PUSH")
        else:
            a.op("DUP")
            self.var_op(var, "PUSH")     # index, old value
            a.op("SWAP")                 # old value, index
            self.var_op(var, opname)     # old value

    # ---- calls -------------------------------------------------------------------------------------
    def callable_names(self):
        return [f.name for f in self.functions] + [s.name for s in self.specials.values()] + \
            [b.name for b in BUILTINS.values()]

    def arg_count_error(self, e: A.Call, name: str, lo: int, hi: int, what: str,
                        params=None) -> bool:
        n = len(e.args)
        if lo <= n <= hi:
            return False
        want = str(lo) if lo == hi else f"{lo} to {hi}"
        plural = "s" if hi != 1 else ""
        if params is not None:
            shape = ", ".join(f"{p.type} {p.name}" for p in params)
        else:
            shape = ", ".join([f"arg{i + 1}" for i in range(lo)] +
                              [f"[arg{i + 1}]" for i in range(lo, hi)])
        self.error(e, f"{what} '{name}' takes {want} argument{plural}, but {n} "
                      f"{'was' if n == 1 else 'were'} given", f"{name}({shape})")
        return True

    def call(self, e: A.Call, want: bool) -> None:
        key = e.name.lower()
        sym = self.lookup(e.name)
        if isinstance(sym, Func):
            return self.call_function(e, sym, want)
        if sym is not None and not isinstance(sym, Func):
            self.error(e, f"'{e.name}' is not a function", f"'{e.name}' is a "
                       + ("variable" if isinstance(sym, Var) else "constant"))
            if want:
                self.asm.push(0)
            return
        sp = self.specials.get(key)
        if sp is not None:
            if sp.is_callfunc:
                return self.call_callfunc(e, sp, want)
            return self.call_special(e, sp, want)
        b = BUILTINS.get(key)
        if b is not None:
            return self.call_builtin(e, b, want)
        hint = did_you_mean(e.name, self.callable_names()) or \
            "declare it with 'function' or check the spelling of the special"
        self.error(e, f"unknown function or special '{e.name}'", hint)
        for arg in e.args:   # still check the arguments
            self.expr(arg)
            self.asm.op("DROP")
        if want:
            self.asm.push(0)

    def call_function(self, e: A.Call, fn: Func, want: bool) -> None:
        n = len(fn.params)
        if self.arg_count_error(e, fn.name, n, n, "function", fn.params):
            if want:
                self.asm.push(0)
            return
        if want and not fn.returns:
            self.error(e, f"void function '{fn.name}' has no value to use",
                       "declare it 'function int ...' and return a value")
        for arg in e.args:
            self.expr(arg)
        self.asm.op("CALL" if want else "CALLDISCARD")
        self.asm.byte_arg(fn.index)

    def call_special(self, e: A.Call, sp: Special, want: bool) -> None:
        a = self.asm
        if self.arg_count_error(e, sp.name, sp.min_args, sp.max_args, "special"):
            if want:
                a.push(0)
            return
        if sp.number > MAX_SPECIAL:
            self.error(e, f"line special '{sp.name}' ({sp.number}) does not exist in this "
                          f"engine", f"ViZDoom 1.3.2 (ZDoom 2.8.1) has line specials up to "
                          f"{MAX_SPECIAL}")
            if want:
                a.push(0)
            return
        if want:
            for arg in e.args:
                self.expr(arg)
            for _ in range(5 - len(e.args)):
                a.push(0)
            a.op("LSPEC5RESULT")
            a.byte_arg(sp.number)
            return
        args = e.args
        values = [self.fold(x) for x in args]
        n = max(1, len(args))
        if all(v is not None for v in values):
            values = values or [0]
            if self.compact and all(0 <= v <= 255 for v in values):
                a.op(f"LSPEC{n}DIRECTB")
                a.raw_byte(sp.number)
                for v in values:
                    a.raw_byte(v)
            else:
                a.op(f"LSPEC{n}DIRECT")
                a.byte_arg(sp.number)
                for v in values:
                    a.word(v)
            return
        if e.const_args:
            bad = next(x for x, v in zip(args, values) if v is None)
            self.error(bad, "a 'const:' call needs constant arguments",
                       "drop 'const:' to pass variables")
        for arg in args:
            self.expr(arg)
        if not args:
            a.push(0)
        a.op(f"LSPEC{n}")
        a.byte_arg(sp.number)

    def call_callfunc(self, e: A.Call, sp: Special, want: bool) -> None:
        a = self.asm
        index = -sp.number
        if index > MAX_CALLFUNC_INDEX:
            self.error(e, f"builtin '{sp.name}' (CALLFUNC {index}) does not exist in this engine",
                       f"ViZDoom 1.3.2 (ZDoom 2.8.1) has CALLFUNC functions 1..{MAX_CALLFUNC_INDEX}"
                       "; an unknown one silently returns 0")
            if want:
                a.push(0)
            return
        if self.arg_count_error(e, sp.name, sp.min_args, sp.max_args, "builtin"):
            if want:
                a.push(0)
            return
        for arg in e.args:
            self.expr(arg)
        a.op("CALLFUNC")
        a.byte_arg(len(e.args))
        a.callfunc_index(index)
        if not want:
            a.op("DROP")

    def call_builtin(self, e: A.Call, b, want: bool) -> None:
        a = self.asm
        if b.latent and self.frame is not None and self.frame.kind == "function":
            # The engine cannot suspend a function (acc refuses it too; ViZDoom crashed).
            self.error(e, "Latent functions cannot be used inside functions.",
                       f"call '{b.name}' from the script, before or after the function")
        if self.arg_count_error(e, b.name, b.min_args, b.max_args, "builtin"):
            if want:
                a.push(0)
            return
        if want and not b.returns:
            self.error(e, f"'{b.name}' has no value to use", "call it as a statement")
        args = list(e.args)
        if b.direct is not None:
            values = [self.direct_value(x) for x in args]
            if all(v is not None for v in values):
                if b.name == "Delay" and self.compact and 0 <= values[0] <= 255:
                    a.op("DELAYDIRECTB")
                    a.raw_byte(values[0])
                else:
                    a.op(b.direct)
                    for v in values:
                        a.word(v)
                if b.returns and not want:
                    a.op("DROP")
                elif want and not b.returns:
                    a.push(0)
                return
        for arg in args:
            self.expr(arg)
        for _ in range(b.max_args - len(args)):
            a.push(0)
        a.op(b.op)
        if b.returns and not want:
            a.op("DROP")
        elif want and not b.returns:
            a.push(0)

    def direct_value(self, e) -> int | None:
        if isinstance(e, A.Str):
            return self.intern(e)
        return self.fold(e)

    def print_call(self, e: A.PrintCall, want: bool) -> None:
        a = self.asm
        func = e.func
        shown = _PRINT_NAMES[func]
        if want and func != "strparam":
            self.error(e, f"'{shown}' has no value to use", "call it as a statement")
        a.op("BEGINPRINT")
        for kind, value, line, col in e.items:
            op = PRINT_ITEMS.get(kind)
            if op is None:
                self.error(A.Empty(line, col), f"unknown print item '{kind}:'",
                           "use s: (string), d: or i: (integer), c: (character), f: (fixed), "
                           "x: (hex), b: (binary), n: (player name)")
                continue
            self.expr(value)
            a.op(op)
        if func in ("hudmessage", "hudmessagebold"):
            if len(e.opts) < 6:
                self.error(e, f"{shown} needs at least 6 values after ';' "
                              f"(type, id, color, x, y, hold time), {len(e.opts)} given",
                           "HudMessage(s:\"text\"; HUDMSG_PLAIN, 1, CR_WHITE, 0.5, 0.5, 2.0)")
            a.op("MOREHUDMESSAGE")
            for x in e.opts[:6]:
                self.expr(x)
            if len(e.opts) > 6:
                a.op("OPTHUDMESSAGE")
                for x in e.opts[6:]:
                    self.expr(x)
        elif e.opts:
            self.error(e.opts[0], f"{shown} takes no values after ';'",
                       "only HudMessage takes a layout after ';'")
        a.op(PRINT_END[func])
        if func == "strparam" and not want:
            a.op("DROP")
        elif want and func != "strparam":
            a.push(0)

    # ---- limits and layout ------------------------------------------------------------------------
    def check_limits(self) -> None:
        if len(self.map_vars) > MAX_MAP_VARS:
            var = self.map_vars[MAX_MAP_VARS][0]
            self.diag.error(var.where, f"too many map variables: {len(self.map_vars)} declared, "
                                       f"the engine has {MAX_MAP_VARS} (each array takes one)",
                            "merge variables into a map array")
        if len(self.functions) > MAX_FUNCTIONS:
            fn = self.functions[MAX_FUNCTIONS]
            self.diag.error(fn.where, f"too many functions: {len(self.functions)}, the limit is "
                                      f"{MAX_FUNCTIONS}",
                            "merge functions (CALL takes a one-byte function index)")
        if len(self.strings) > MAX_STRINGS:
            self.diag.error(self.first_extra_string,
                            f"too many distinct strings: {len(self.strings):,}, the limit is "
                            f"{MAX_STRINGS:,} (this is string {MAX_STRINGS + 1:,})",
                            "reuse strings, or print numbers with d: instead of literals")

    def assign_map_slots(self) -> None:
        """Scalars first, then arrays, so one MINI chunk never touches an array's slot."""
        ordered = [v for v, _, _ in self.map_vars if not v.is_array] + \
            [v for v, _, _ in self.map_vars if v.is_array]
        for slot, var in enumerate(ordered):
            var.index = slot

    def map_initialisers(self) -> tuple[list[int], list[tuple[int, int]], list[tuple[int, list]]]:
        """Evaluate map initialisers: (MINI values, ARAY pairs, AINI entries)."""
        scalars = [(v, init, f) for v, init, f in self.map_vars if not v.is_array]
        arrays = [(v, init, f) for v, init, f in self.map_vars if v.is_array]
        mini: list[int] = []
        for var, init, f in scalars:
            self.file = f
            if init is None:
                mini.append(0)
            elif isinstance(init, A.InitList):
                self.error(init, f"'{var.name}' is not an array; it takes a single value",
                           f"write 'int {var.name} = 1;'")
                mini.append(0)
            else:
                v = self.direct_value(init)
                if v is None:
                    self.const_int(init, what=f"the initial value of map variable '{var.name}'")
                    v = 0
                mini.append(v)
        while mini and mini[-1] == 0:
            mini.pop()
        aray, aini = [], []
        for var, init, f in arrays:
            self.file = f
            size = 1
            for d in var.dims:
                size *= d
            aray.append((var.index, size))
            if init is not None:
                values = self.flatten_init(var, init)
                if values is not None:
                    while values and values[-1] == 0:
                        values.pop()
                    if values:
                        aini.append((var.index, values))
        return mini, aray, aini

    def flatten_init(self, var: Var, init) -> list[int] | None:
        if not isinstance(init, A.InitList):
            self.error(init, f"array '{var.name}' needs an initialiser list in braces",
                       f"write {var.name}[] = {{1, 2, 3}}")
            return None
        dims = var.dims
        out: list[int] = []

        def fill(lst: A.InitList, level: int, base: int) -> None:
            stride = 1
            for d in dims[level + 1:]:
                stride *= d
            if len(lst.items) > dims[level]:
                self.error(lst.items[dims[level]], f"too many initialisers for '{var.name}' "
                                                   f"(dimension size {dims[level]})",
                           "remove the extra values or make the array larger")
                return
            for i, it in enumerate(lst.items):
                if level + 1 < len(dims):
                    if not isinstance(it, A.InitList):
                        self.error(it, f"'{var.name}' needs a nested {{...}} list here",
                                   "write the rows in braces: {{1, 2}, {3, 4}}")
                        continue
                    fill(it, level + 1, base + i * stride)
                else:
                    if isinstance(it, A.InitList):
                        self.error(it, "too many levels of braces in the initialiser",
                                   "a one-dimensional array takes {1, 2, 3}")
                        continue
                    v = self.direct_value(it)
                    if v is None:
                        self.const_int(it, what="an array initialiser")
                        v = 0
                    while len(out) <= base + i:
                        out.append(0)
                    out[base + i] = v

        fill(init, 0, 0)
        return out

    def library_string_chunks(self) -> list[bytes]:
        """MSTR (scalars) and ASTR (arrays): the map variables of a library whose initial
        values include string literals, which the engine tags when it loads the library,
        as TAGSTRING does for a literal pushed by code."""
        def has_string(init) -> bool:
            stack = [init]
            while stack:
                n = stack.pop()
                if isinstance(n, A.Str):
                    return True
                if isinstance(n, A.InitList):
                    stack += n.items
            return False

        out = []
        for ident, arrays in ((b"MSTR", False), (b"ASTR", True)):
            slots = sorted(v.index for v, init, _ in self.map_vars
                           if v.is_array == arrays and init is not None and has_string(init))
            if slots:
                out.append(chunk(ident, struct.pack(f"<{len(slots)}I", *slots)))
        return out

    def layout(self) -> bytes:
        mini, aray, aini = self.map_initialisers()
        self.diag.check()
        code = self.asm.finish()
        code += b"\0" * (-(HEADER_SIZE + len(code)) % 4)
        chunks = []
        sptr = b"".join(struct.pack("<hHII", s.number, s.type, s.address, s.argc)
                        for s in self.scripts)
        chunks.append(chunk(b"SPTR", sptr))
        flagged = [s for s in self.scripts if s.flags]
        if flagged:
            chunks.append(chunk(b"SFLG", b"".join(struct.pack("<hH", s.number, s.flags)
                                                  for s in flagged)))
        big = [s for s in self.scripts if s.locals > DEFAULT_LOCALS]
        if big:
            chunks.append(chunk(b"SVCT", b"".join(struct.pack("<hH", s.number, s.locals)
                                                  for s in big)))
        named = sorted((s for s in self.scripts if s.name is not None), key=lambda s: -s.number)
        if named:
            chunks.append(chunk(b"SNAM", name_table([s.name for s in named])))
        if self.functions:
            chunks.append(chunk(b"FUNC", b"".join(
                struct.pack("<BBBBI", len(f.params), f.locals - len(f.params), int(f.returns),
                            0, f.address) for f in self.functions)))
            chunks.append(chunk(b"FNAM", name_table([f.name for f in self.functions])))
        if self.strings:
            chunks.append(chunk(b"STRL", string_table([s.encode("utf-8")
                                                       for s in self.strings])))
        if mini:
            chunks.append(chunk(b"MINI", struct.pack(f"<I{len(mini)}i", 0, *mini)))
        if aray:
            chunks.append(chunk(b"ARAY", b"".join(struct.pack("<II", slot, size)
                                                  for slot, size in aray)))
        for slot, values in aini:
            chunks.append(chunk(b"AINI", struct.pack(f"<I{len(values)}i", slot, *values)))
        if self.library is not None and self.map_vars:
            chunks += self.library_string_chunks()
            ordered = sorted((v for v, _, _ in self.map_vars), key=lambda v: v.index)
            chunks.append(chunk(b"MEXP", name_table([v.name for v in ordered])))
        magic = b"ACSe" if self.compact else b"ACSE"
        chunk_start = HEADER_SIZE + len(code)
        return magic + struct.pack("<I", chunk_start) + code + b"".join(chunks)


# Statement node type -> the Compiler method that generates its code.
_STATEMENTS = {
    A.ExprStmt: Compiler.expr_stmt, A.Block: Compiler.block, A.VarDecl: Compiler.local_decl,
    A.If: Compiler.if_stmt, A.While: Compiler.while_stmt, A.DoWhile: Compiler.do_stmt,
    A.For: Compiler.for_stmt, A.Switch: Compiler.switch_stmt, A.Jump: Compiler.jump_stmt,
    A.Empty: Compiler.empty_stmt,
}
