import APNsOpenSSL
import Foundation
import Testing
@testable import APNsCore

@Suite("ECDSA signature encodings (RFC 3279 DER ↔ RFC 7518 r||s)")
struct ECDSASignatureTests {
    static func hex(_ text: String) -> [UInt8] {
        var bytes: [UInt8] = []
        var chars = Array(text.utf8)[...]
        while chars.count >= 2 {
            bytes.append(UInt8(String(decoding: chars.prefix(2), as: UTF8.self), radix: 16) ?? 0)
            chars = chars.dropFirst(2)
        }
        return bytes
    }

    // DER INTEGERs are minimal and signed: a leading 0x00 when the high bit is set,
    // leading zeros removed otherwise (X.690 §8.3.2).
    @Test func highBitGetsAZeroByteAndShortValuesArePadded() throws {
        let r = [UInt8](repeating: 0x80, count: 32)
        let s = [UInt8](repeating: 0, count: 31) + [0x05]
        let der = try ECDSASignature.der(fromRaw: r + s)
        #expect(der == [0x30, 0x26, 0x02, 0x21, 0x00] + r + [0x02, 0x01, 0x05])
        #expect(try ECDSASignature.raw(fromDER: der) == r + s)
    }

    @Test func maximumLengthUsesShortLengthForm() throws {
        let raw = [UInt8](repeating: 0xFF, count: 64)
        let der = try ECDSASignature.der(fromRaw: raw)
        #expect(der.count == 72)
        #expect(der.prefix(2) == [0x30, 0x46])
        #expect(try ECDSASignature.raw(fromDER: der) == raw)
    }

    @Test("Refuses malformed DER", arguments: [
        "",                                 // empty
        "3006020101020101ff",               // trailing byte
        "3006020101020201",                 // s truncated
        "300702020001020101",               // non-minimal leading zero
        "3006020180020101",                 // negative r
        "3006020100020101",                 // r = 0
        "31060201010201 01",                // not a SEQUENCE
        "30810602010102010 1",              // long length form for a short length
    ])
    func refusesMalformedDER(_ text: String) {
        let der = Self.hex(text.replacingOccurrences(of: " ", with: ""))
        #expect(throws: ECDSASignature.ConversionError.self) {
            _ = try ECDSASignature.raw(fromDER: der)
        }
    }

    @Test func refusesIntegersWiderThan32Bytes() {
        let der: [UInt8] = [0x30, 0x26, 0x02, 0x21, 0x01] + [UInt8](repeating: 1, count: 32) + [0x02, 0x01, 0x01]
        #expect(throws: ECDSASignature.ConversionError.integerOutOfRange) {
            _ = try ECDSASignature.raw(fromDER: der)
        }
    }

    @Test func refusesRawOfWrongLength() {
        #expect(throws: ECDSASignature.ConversionError.wrongRawLength(63)) {
            _ = try ECDSASignature.der(fromRaw: [UInt8](repeating: 1, count: 63))
        }
    }

    // A signature made by the openssl CLI (DER), converted to r||s, verifies with our
    // ES256 verifier: the conversion agrees with OpenSSL's encoder.
    @Test func convertsSignaturesMadeByTheOpenSSLCLI() throws {
        try withTemporaryDirectory { directory in
            let message = Array("eyJhbGciOiJFUzI1NiJ9.eyJpc3MiOiJERUYxMjNHSElKIn0".utf8)
            let input = directory.appendingPathComponent("input.txt")
            let signature = directory.appendingPathComponent("sig.der")
            try Data(message).write(to: input)
            for _ in 0..<8 { // several signatures: some have r or s with the high bit set
                let result = try OpenSSLCLI.run(["dgst", "-sha256", "-sign", AuthFixture.path("p256.p8"),
                                                 "-out", signature.path, input.path])
                #expect(result.status == 0, "\(result.output)")
                let der = [UInt8](try Data(contentsOf: signature))
                let raw = try ECDSASignature.raw(fromDER: der)
                #expect(raw.count == 64)
                #expect(try ECDSASignature.der(fromRaw: raw) == der)
                let key = try #require(EVPKey.publicKey(der: try Self.publicDER()))
                #expect(ES256.verify(signature: raw, signingInput: message, key: key))
            }
        }
    }

    static func publicDER() throws -> [UInt8] {
        let blocks = try PEMBlock.parseAll(Array(try AuthFixture.text("p256.pub.pem").utf8))
        return try #require(blocks.first).der
    }
}
