"""Bytecode encoding for one BEHAVIOR lump: opcodes, operands, labels, and the chunk area.

Owns the two encodings the engine reads (acs-bytecode.md): ACSe ("compact": 1-byte opcodes
below 240, 1-byte variable/special/CALL operands, 2-byte CALLFUNC index) and ACSE (every
opcode and operand 4 bytes). Jump targets are absolute lump offsets; code starts right
after the 8-byte header, so a label's address is 8 + its offset in the code buffer.
"""
from __future__ import annotations

import struct

from .defs import OPCODES

HEADER_SIZE = 8
_OP = OPCODES


class Assembler:
    def __init__(self, compact: bool = True):
        self.compact = compact
        self.buf = bytearray()
        self._labels: list[int | None] = []
        self._fixups: list[tuple[int, int]] = []   # (offset in buf, label id)
        self.overflow = False                      # a one-byte operand did not fit

    # ---- positions -----------------------------------------------------------------------------
    @property
    def address(self) -> int:
        return HEADER_SIZE + len(self.buf)

    def label(self) -> int:
        self._labels.append(None)
        return len(self._labels) - 1

    def place(self, label: int) -> None:
        self._labels[label] = self.address

    # ---- encoding --------------------------------------------------------------------------------
    def op(self, name: str) -> None:
        code = _OP[name]
        if not self.compact:
            self.buf += struct.pack("<I", code)
        elif code < 240:
            self.buf.append(code)
        else:
            self.buf.append(240 + ((code - 240) >> 8))
            self.buf.append((code - 240) & 255)

    def byte_arg(self, value: int) -> None:
        """Variable index, special number, CALL index, CALLFUNC arg count."""
        if self.compact:
            # Out of range only when the compiler has reported a limit error (then the
            # lump is discarded); Compiler.compile asserts that.
            if not 0 <= value <= 255:
                self.overflow = True
            self.buf.append(value & 255)
        else:
            self.buf += struct.pack("<i", value)

    def word(self, value: int) -> None:
        self.buf += struct.pack("<i", value)

    def raw_byte(self, value: int) -> None:
        self.buf.append(value & 255)

    def callfunc_index(self, value: int) -> None:
        if self.compact:
            self.buf += struct.pack("<H", value)
        else:
            self.buf += struct.pack("<i", value)

    def jump(self, name: str, label: int) -> None:
        """GOTO / IFGOTO / IFNOTGOTO to a label (patched in finish())."""
        self.op(name)
        self._fixups.append((len(self.buf), label))
        self.buf += b"\0\0\0\0"

    def case_goto(self, value: int, label: int) -> None:
        self.op("CASEGOTO")
        self.word(value)
        self._fixups.append((len(self.buf), label))
        self.buf += b"\0\0\0\0"

    def push(self, value: int) -> None:
        if self.compact and 0 <= value <= 255:
            self.op("PUSHBYTE")
            self.buf.append(value)
        else:
            self.op("PUSHNUMBER")
            self.word(value)

    def finish(self) -> bytes:
        for offset, label in self._fixups:
            target = self._labels[label]
            assert target is not None, "jump to a label that was never placed"
            self.buf[offset:offset + 4] = struct.pack("<I", target)
        self._fixups.clear()
        return bytes(self.buf)


def name_table(names: list[str]) -> bytes:
    """FNAM/SNAM/MEXP body: u32 count, u32 offsets (from the body start), NUL-terminated
    names, padded to 4 bytes."""
    head = 4 + 4 * len(names)
    offsets, blob = [], bytearray()
    for n in names:
        offsets.append(head + len(blob))
        blob += n.encode("utf-8") + b"\0"
    body = struct.pack(f"<I{len(names)}I", len(names), *offsets) + bytes(blob)
    return body + b"\0" * (-len(body) % 4)


def string_table(strings: list[bytes]) -> bytes:
    """STRL body: u32 0, u32 count, u32 0, u32 offsets (from the body start), strings."""
    head = 12 + 4 * len(strings)
    offsets, blob = [], bytearray()
    for s in strings:
        offsets.append(head + len(blob))
        blob += s + b"\0"
    body = struct.pack(f"<III{len(strings)}I", 0, len(strings), 0, *offsets) + bytes(blob)
    return body + b"\0" * (-len(body) % 4)


def chunk(ident: bytes, body: bytes) -> bytes:
    return ident + struct.pack("<I", len(body)) + body
