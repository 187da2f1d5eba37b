#!/usr/bin/env python3
"""Generates Sources/APNsCore/HPACK/HuffmanTables.swift from RFC 7541 Appendix B.

Source of the table: the `hpack` package on PyPI (python-hyper), whose
huffman_constants.py is a transcription of RFC 7541 Appendix B
(`pip install hpack==4.0.0`). The script checks what it reads before writing:
257 symbols, every length within 5...30, and the code is *canonical*: sorting the
symbols by (length, symbol) and counting upwards reproduces every code, which is how
Appendix B was built, so a single mis-transcribed code or length cannot pass.
The symbol 256 is EOS; it is never emitted, only its most significant bits pad
the last octet (RFC 7541 §5.2).
Usage: python3 scripts/generate-huffman-tables.py > Sources/APNsCore/HPACK/HuffmanTables.swift
"""
from hpack.huffman_constants import REQUEST_CODES as CODES, REQUEST_CODES_LENGTH as LENGTHS

assert len(CODES) == 257 and len(LENGTHS) == 257
assert all(5 <= n <= 30 for n in LENGTHS)
code, previous = 0, None
for symbol in sorted(range(257), key=lambda s: (LENGTHS[s], s)):
    if previous is not None:
        code = (code + 1) << (LENGTHS[symbol] - LENGTHS[previous])
    else:
        code = 0
    assert CODES[symbol] == code, f"symbol {symbol} is not canonical"
    previous = symbol
assert CODES[256] == (1 << 30) - 1  # EOS is thirty 1 bits

def rows(values, width):
    out = []
    for start in range(0, 256, 8):
        cells = ", ".join(f"0x{v:0{width}x}" for v in values[start:start + 8])
        out.append(f"        {cells}, // {start}...{start + 7}")
    return "\n".join(out)

print(f"""// GENERATED FILE: do not edit by hand.
//
// RFC 7541 Appendix B (https://www.rfc-editor.org/rfc/rfc7541#appendix-B): the
// Huffman code of HPACK string literals, symbols 0...255 (EOS, symbol 256, is only
// used for padding and is not listed). Produced by scripts/generate-huffman-tables.py,
// which reads the Appendix B
// transcription in the `hpack` Python package, verifies that the code is canonical
// (every code follows from the lengths, as the RFC's generator built them) and prints
// this file.
// The tests check the table against the RFC's own Huffman vectors (§C.4, §C.6) and
// against nghttp2's decoder for every byte value.

/// The Huffman code of RFC 7541 Appendix B, indexed by octet value.
enum HuffmanTables {{
    /// The code of each symbol, right-aligned (least significant bits).
    static let codes: [UInt32] = [
{rows(CODES, 8)}
    ]

    /// The length in bits of each symbol's code (5...30).
    static let lengths: [UInt8] = [
{rows(LENGTHS, 2)}
    ]
}}
""")
