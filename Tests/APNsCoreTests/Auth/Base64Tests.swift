import Testing
@testable import APNsCore

@Suite("Base64 (RFC 4648)")
struct Base64Tests {
    // RFC 4648 §10 test vectors; the URL alphabet of §5 omits the padding (RFC 7515 §2).
    static let vectors: [(String, String, String)] = [
        ("", "", ""),
        ("f", "Zg==", "Zg"),
        ("fo", "Zm8=", "Zm8"),
        ("foo", "Zm9v", "Zm9v"),
        ("foob", "Zm9vYg==", "Zm9vYg"),
        ("fooba", "Zm9vYmE=", "Zm9vYmE"),
        ("foobar", "Zm9vYmFy", "Zm9vYmFy"),
    ]

    @Test("RFC 4648 §10 vectors", arguments: vectors)
    func rfcVectors(input: String, standard: String, url: String) {
        let bytes = Array(input.utf8)
        #expect(Base64.encode(bytes, alphabet: .standard) == standard)
        #expect(Base64.encode(bytes, alphabet: .url) == url)
        #expect(Base64.decode(Array(standard.utf8), alphabet: .standard) == bytes)
        #expect(Base64.decode(Array(url.utf8), alphabet: .url) == bytes)
    }

    // 0xFB 0xFF encodes to the last two symbols of each alphabet: "+/8=" and "-_8".
    @Test func urlAlphabetUsesDashAndUnderscore() {
        let bytes: [UInt8] = [0xFB, 0xFF]
        #expect(Base64.encode(bytes, alphabet: .standard) == "+/8=")
        #expect(Base64.encode(bytes, alphabet: .url) == "-_8")
        #expect(Base64.decode(Array("-_8".utf8), alphabet: .url) == bytes)
        #expect(Base64.encode([0x3E, 0x3F], alphabet: .url) == "Pj8")
        #expect(Base64.encode([0xF8], alphabet: .url) == "-A")
        #expect(Base64.encode([0xFC], alphabet: .url) == "_A")
    }

    @Test("Refuses non-canonical base64url", arguments: [
        "Zg==",   // padding is not part of JWS base64url
        "Z",      // no encoding is 1 mod 4 long
        "Zh",     // non-zero unused bits (RFC 4648 §3.5): "f" is "Zg"
        "+/8",    // standard alphabet
        "Zm9v\n", // whitespace
        "Zm 9",
    ])
    func refusesBadURLText(_ text: String) {
        #expect(Base64.decode(Array(text.utf8), alphabet: .url) == nil)
    }

    @Test("Refuses bad padding in the standard alphabet", arguments: ["Zg=", "Zg===", "Z===", "-_8="])
    func refusesBadStandardText(_ text: String) {
        #expect(Base64.decode(Array(text.utf8), alphabet: .standard) == nil)
    }
}
