"""Reading a BEHAVIOR lump back: its scripts, and the bus operations each one performs.

Owns decoding the two encodings our compiler writes (ACSe and ACSE, acs/assembler.py;
format facts in /work/shared/acs-bytecode.md) and a symbolic run of straight-line scripts:
constants, script arguments, map arrays and light levels are tracked on a stack, and every
line special, builtin call, variable assignment and Delay becomes an `Op`. The map's bus is
straight-line code by construction (mapgen/program.py), so a branch in a machine script is
reported as an error rather than followed.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass, field

from acs.defs import OPCODES, SPECIALS
from dsl.diagnostics import VoodooError

_NAME = {v: k for k, v in OPCODES.items()}
_CALLFUNC_NAME = {-s.number: s.name for s in SPECIALS.values() if s.number < 0}
_SPECIAL_NAME = {s.number: s.name for s in SPECIALS.values() if s.number > 0}
_VAR_SUFFIXES = ("SCRIPTVAR", "MAPVAR", "WORLDVAR", "GLOBALVAR", "MAPARRAY", "WORLDARRAY",
                 "GLOBALARRAY")
_BRANCHES = {"GOTO", "IFGOTO", "IFNOTGOTO", "CASEGOTO", "CASEGOTOSORTED"}


class BehaviorError(VoodooError):
    """A BEHAVIOR lump that is not one of ours, or a machine script that is not a bus."""


@dataclass(frozen=True)
class Op:
    """One effect of a script: kind is "special" (name, args), "call" (builtin name, args),
    "assign" (target, value) or "delay" (tics). Values are ("const", n), ("arg", i),
    ("array", slot, index), ("light", tag) or ("global", i)."""
    kind: str
    name: str
    args: tuple = ()


@dataclass
class Script:
    number: int
    type: int          # 0 closed, 1 OPEN, 4 ENTER
    argc: int
    address: int
    ops: list[Op] = field(default_factory=list)
    error: str = ""    # why its code is not a straight-line bus (then ops is empty)


def chunks(lump: bytes) -> dict[bytes, list[bytes]]:
    if len(lump) < 8 or lump[:3] != b"ACS" or lump[3:4] not in (b"e", b"E"):
        raise BehaviorError("not an ACSe/ACSE BEHAVIOR lump (the format our compiler writes)")
    (start,) = struct.unpack_from("<I", lump, 4)
    out: dict[bytes, list[bytes]] = {}
    pos = start
    while pos + 8 <= len(lump):
        ident, size = lump[pos:pos + 4], struct.unpack_from("<I", lump, pos + 4)[0]
        out.setdefault(ident, []).append(lump[pos + 8:pos + 8 + size])
        pos += 8 + size
    return out


def read_scripts(lump: bytes) -> dict[int, Script]:
    """Every script of the lump by number, with the ops of its straight-line code (scripts
    with branches get `error` instead: the machine reader refuses them where it needs them)."""
    compact = lump[3:4] == b"e"
    table = chunks(lump).get(b"SPTR", [b""])[0]
    scripts = {}
    for k in range(0, len(table) - 11, 12):
        num, typ, addr, argc = struct.unpack_from("<hHII", table, k)
        s = Script(num, typ, argc, addr)
        try:
            s.ops = _run(lump, addr, compact, num)
        except BehaviorError as e:  # a control script (a map's own UI): not part of the bus
            s.error = str(e)
        except (IndexError, struct.error):
            s.error = f"script {num}: its code runs past the end of the lump"
        scripts[num] = s
    return scripts


class _Reader:
    def __init__(self, lump: bytes, pos: int, compact: bool):
        self.b, self.pos, self.compact = lump, pos, compact

    def opcode(self) -> int:
        if not self.compact:
            return self.i32()
        c = self.b[self.pos]
        self.pos += 1
        if c < 240:
            return c
        c2 = self.b[self.pos]
        self.pos += 1
        return 240 + ((c - 240) << 8) + c2

    def u8(self) -> int:
        """A one-byte operand in ACSe, four bytes in ACSE."""
        if not self.compact:
            return self.i32()
        self.pos += 1
        return self.b[self.pos - 1]

    def i32(self) -> int:
        self.pos += 4
        return struct.unpack_from("<i", self.b, self.pos - 4)[0]

    def u16(self) -> int:
        if not self.compact:
            return self.i32()
        self.pos += 2
        return struct.unpack_from("<H", self.b, self.pos - 2)[0]


def _run(lump: bytes, addr: int, compact: bool, number: int) -> list[Op]:
    sym = _Symbolic(_Reader(lump, addr, compact), number)
    while sym.r.pos < len(lump):
        code = sym.r.opcode()
        name = _NAME.get(code)
        if name is None:
            raise BehaviorError(f"script {number}: unknown opcode {code} at offset {sym.r.pos}")
        if name == "TERMINATE":
            return sym.ops
        if name in _BRANCHES:
            raise BehaviorError(f"script {number}: a branch ({name}) at offset {sym.r.pos}: "
                                "not a straight-line bus script")
        if not (sym.push(name) or sym.effect(name)):
            raise BehaviorError(f"script {number}: {name} at offset {sym.r.pos} is not a bus "
                                "operation")
    raise BehaviorError(f"script {number}: runs off the end of the lump")


class _Symbolic:
    """The stack and the effects of one script, one opcode at a time."""

    def __init__(self, r: _Reader, number: int):
        self.r, self.number = r, number
        self.stack: list = []
        self.ops: list[Op] = []

    def pop(self, n: int) -> tuple:
        if len(self.stack) < n:
            raise BehaviorError(f"script {self.number}: stack underflow at offset {self.r.pos}")
        vals = tuple(self.stack[len(self.stack) - n:])
        del self.stack[len(self.stack) - n:]
        return vals

    def push(self, name: str) -> bool:
        """Opcodes that only push or drop values."""
        r = self.r
        if name == "PUSHNUMBER":
            self.stack.append(("const", r.i32()))
        elif name == "PUSHBYTE":
            self.stack.append(("const", r.u8()))
        elif name.startswith("PUSH") and name.endswith("BYTES"):
            n = r.u8() if name == "PUSHBYTES" else int(name[4])
            self.stack += [("const", r.u8()) for _ in range(n)]
        elif name == "GETSECTORLIGHTLEVEL":
            self.stack.append(("light", _const(self.pop(1)[0], self.number)))
        elif name == "DROP":
            self.pop(1)
        elif name.endswith(_VAR_SUFFIXES):
            _var_op(name, r.u8(), self.stack, self.pop, self.ops, self.number)
        else:
            return False
        return True

    def effect(self, name: str) -> bool:
        """Opcodes with an effect: delays, line specials, builtin calls."""
        r, ops = self.r, self.ops
        if name in ("DELAYDIRECT", "DELAYDIRECTB"):
            ops.append(Op("delay", "Delay", (r.i32() if name == "DELAYDIRECT" else r.u8(),)))
        elif name == "DELAY":
            ops.append(Op("delay", "Delay", (_const(self.pop(1)[0], self.number),)))
        elif name.startswith("LSPEC"):
            n, special = int(name[5]), r.u8()
            if "DIRECT" in name:
                args = tuple(("const", r.i32() if name.endswith("DIRECT") else r.u8())
                             for _ in range(n))
            else:
                args = self.pop(n)
            ops.append(Op("special", _SPECIAL_NAME.get(special, str(special)), args))
            if name.endswith("RESULT"):
                self.stack.append(("result",))
        elif name == "CALLFUNC":
            argc, index = r.u8(), r.u16()
            ops.append(Op("call", _CALLFUNC_NAME.get(index, f"callfunc{index}"), self.pop(argc)))
            self.stack.append(("result",))
        elif name == "SETACTORPOSITION":
            ops.append(Op("call", "SetActorPosition", self.pop(5)))
            self.stack.append(("result",))
        else:
            return False
        return True


def _var_op(name: str, index: int, stack: list, pop, ops: list, number: int) -> None:
    scope = next(s for s in _VAR_SUFFIXES if name.endswith(s))
    verb = name[:-len(scope)]
    array = scope.endswith("ARRAY")
    if verb == "PUSH":
        if array:
            stack.append(("array", index, _const(pop(1)[0], number)))
        elif scope == "SCRIPTVAR":
            stack.append(("arg", index))
        else:
            stack.append((scope.lower(), index))
    elif verb == "ASSIGN":
        value = pop(1)[0]
        target = ("array", index, _const(pop(1)[0], number)) if array else (scope.lower(), index)
        ops.append(Op("assign", "=", (target, value)))
    else:
        raise BehaviorError(f"script {number}: {name}: arithmetic on a variable is not a bus "
                            "operation")


def _const(v, number: int) -> int:
    if v[0] != "const":
        raise BehaviorError(f"script {number}: expected a constant, found {v}")
    return v[1]
