"""The BEHAVIOR lump byte by byte: hand-derived goldens, chunk contents, determinism.

Golden bytes below are worked out by hand from acs-bytecode.md and acs-pcodes.tsv (not
copied from our output), so they check the encoder against the format itself.
"""
from __future__ import annotations

import glob
import hashlib
import os
import struct
import subprocess
import sys

import acs

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS = sorted(glob.glob(os.path.join(ROOT, "tests", "acs", "*.acs")))


def chunks(lump: bytes) -> list[tuple[bytes, bytes]]:
    (start,) = struct.unpack_from("<I", lump, 4)
    out, pos = [], start
    while pos < len(lump):
        ident, size = lump[pos:pos + 4], struct.unpack_from("<I", lump, pos + 4)[0]
        out.append((ident, lump[pos + 8:pos + 8 + size]))
        pos += 8 + size
    assert pos == len(lump)
    return out


def test_golden_compact_delay_script():
    lump = acs.compile_source("script 1 OPEN { Delay(1); }")
    # ACSe, chunks at 12; code: DELAYDIRECTB(173) 1, TERMINATE(1), one byte of padding;
    # SPTR: number 1, type 1 (OPEN), address 8, argc 0.
    assert lump == (b"ACSe" + struct.pack("<I", 12) + bytes([173, 1, 1, 0]) +
                    b"SPTR" + struct.pack("<IhHII", 12, 1, 1, 8, 0))


def test_golden_wide_delay_script():
    lump = acs.compile_source("#nocompact\nscript 1 OPEN { Delay(1); }")
    # ACSE: every opcode and operand is 4 bytes: DELAYDIRECT(56) 1, TERMINATE(1).
    assert lump == (b"ACSE" + struct.pack("<I", 20) + struct.pack("<iii", 56, 1, 1) +
                    b"SPTR" + struct.pack("<IhHII", 12, 1, 1, 8, 0))


def test_two_byte_opcode_and_byte_operands():
    lump = acs.compile_source("int x; script 1 OPEN { x = GetSectorLightLevel(3); }")
    # PUSHBYTE(167) 3; GETSECTORLIGHTLEVEL 281 -> 240 + (41 >> 8), 41 & 255;
    # ASSIGNMAPVAR(26) slot 0; TERMINATE(1).
    assert lump[8:15] == bytes([167, 3, 240, 41, 26, 0, 1])


def test_special_forms():
    code = acs.compile_source("int v; script 1 OPEN { Light_ChangeToValue(10, 300); "
                              "Light_ChangeToValue(10, 7); Light_ChangeToValue(v, 7); }")[8:]
    # LSPEC2DIRECT(10) special 112, args as words; LSPEC2DIRECTB(169) special, args as
    # bytes; stack form: PUSHMAPVAR(29) 0, PUSHBYTE 7, LSPEC2(5) 112; TERMINATE.
    assert code[:21] == (bytes([10, 112]) + struct.pack("<ii", 10, 300) +
                         bytes([169, 112, 10, 7]) + bytes([29, 0, 167, 7, 5, 112, 1]))


def test_chunk_contents():
    lump = acs.compile_source(
        'int a = 5; int arr[3] = {1, 2}; int b; str s = "hi";\n'
        "function int f(int x) { int y = x; return y; }\n"
        'script 2 (int p) NET { Print(s:"hi", s:"there"); b = f(p); }\n'
        'script "named" (void) { }\n')
    got = dict(chunks(lump))
    assert [c for c, _ in chunks(lump)] == [b"SPTR", b"SFLG", b"SNAM", b"FUNC", b"FNAM",
                                           b"STRL", b"MINI", b"ARAY", b"AINI"]
    assert got[b"SFLG"] == struct.pack("<hH", 2, 1)
    assert got[b"SNAM"] == struct.pack("<II", 1, 8) + b"named\0" + b"\0\0"
    argc, locals_, returns, imported, _ = struct.unpack("<BBBBI", got[b"FUNC"])
    assert (argc, locals_, returns, imported) == (1, 1, 1, 0)
    assert got[b"FNAM"] == struct.pack("<II", 1, 8) + b"f\0\0\0"
    assert got[b"STRL"] == struct.pack("<IIIII", 0, 2, 0, 20, 23) + b"hi\0there\0" + b"\0\0\0"
    # slots: scalars a, b, s first (0, 1, 2), then the array (3); s holds string 0
    assert got[b"MINI"] == struct.pack("<Ii", 0, 5)
    assert got[b"ARAY"] == struct.pack("<II", 3, 3)
    assert got[b"AINI"] == struct.pack("<Iii", 3, 1, 2)
    sptr = [struct.unpack_from("<hHII", got[b"SPTR"], i) for i in range(0, 24, 12)]
    assert [(n, t, argc) for n, t, _, argc in sptr] == [(2, 0, 1), (-1, 0, 0)]


def test_many_locals_get_an_svct_entry():
    body = " ".join(f"int v{i} = {i};" for i in range(30))
    got = dict(chunks(acs.compile_source(f"script 7 (int a) {{ {body} }}")))
    assert got[b"SVCT"] == struct.pack("<hH", 7, 31)


def test_same_source_same_bytes_in_other_processes():
    here = [hashlib.sha256(acs.compile_file(p)).hexdigest() for p in CORPUS]
    again = [hashlib.sha256(acs.compile_file(p)).hexdigest() for p in CORPUS]
    assert here == again
    code = ("import sys, hashlib; sys.path.insert(0, %r); import acs\n"
            "for p in sys.argv[1:]: print(hashlib.sha256(acs.compile_file(p)).hexdigest())"
            % ROOT)
    for seed in ("1", "2"):
        r = subprocess.run([sys.executable, "-c", code, *CORPUS], capture_output=True,
                           text=True, env=dict(os.environ, PYTHONHASHSEED=seed), check=True)
        assert r.stdout.split() == here


def test_library_exports_map_variable_names():
    got = dict(chunks(acs.compile_source('#library "voodoo"\nint alpha; int beta[2];\n'
                                         "script 1 OPEN { alpha = beta[1]; }\n")))
    assert got[b"MEXP"] == struct.pack("<III", 2, 12, 18) + b"alpha\0beta\0" + b"\0"
