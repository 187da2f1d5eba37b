import Foundation
import Testing

@testable import APNsCore

@Suite struct DeviceTokenTests {
    /// Found from outside: `dump()` of an error holding a token showed its stored words,
    /// from which the whole token could be rebuilt. Reflection shows the redacted form.
    @Test func reflectionShowsOnlyTheRedactedForm() throws {
        let hex = "00fc13adff785122b4ad28809a3420982341241421348097878e577c991de8f0"
        let token = try DeviceToken(hex: hex)
        let outcome = APNsOutcome(deviceToken: token, result: .failure(.failed(.timeout(mayHaveReachedAPNs: false, "test"))))
        var dumped = ""
        dump(outcome, to: &dumped)
        dump([token], to: &dumped)
        #expect(dumped.contains("00fc13ad…"))
        #expect(!dumped.lowercased().contains("ff785122"), "\(dumped)")
        // Nothing numeric from the storage either: the second 8 bytes as a word, either order.
        for word in token.rawBytesWords() {
            #expect(!dumped.contains(String(word)), "\(dumped)")
        }
        #expect(String(reflecting: Mirror(reflecting: token).children.map(\.label)) == #"[Optional("redacted"), Optional("byteCount")]"#)
    }

    // Apple's example token, seed 000 listing 8-1.
    static let appleToken = "00fc13adff785122b4ad28809a3420982341241421348097878e577c991de8f0"

    @Test func parsesAppleExampleAndNormalizesCase() throws {
        let lower = try DeviceToken(hex: Self.appleToken)
        let upper = try DeviceToken(hex: Self.appleToken.uppercased())
        #expect(lower.hexString == Self.appleToken)
        #expect(upper.hexString == Self.appleToken)
        #expect(lower == upper)
        #expect(lower.byteCount == 32)
        #expect(lower.bytes.first == 0x00 && lower.bytes[1] == 0xfc && lower.bytes.last == 0xf0)
    }

    @Test func bytesAndHexAgreeWithFoundationFormatting() throws {
        // 80-byte tokens exist: never assume 32 bytes.
        var generator = SystemRandomNumberGenerator()
        for length in [1, 7, 8, 9, 31, 32, 33, 64, 80, 100] {
            let bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let foundationHex = bytes.map { String(format: "%02x", $0) }.joined()
            let fromBytes = try DeviceToken(bytes: bytes)
            let fromHex = try DeviceToken(hex: foundationHex)
            #expect(fromBytes.hexString == foundationHex)
            #expect(fromHex == fromBytes)
            #expect(fromHex.bytes == bytes)
            #expect(fromHex.byteCount == length)
        }
    }

    @Test func tokensOfUpTo32BytesAreInlineAndLongerOnesAreNot() throws {
        for length in [1, 32] {
            guard case .inline = try DeviceToken(bytes: [UInt8](repeating: 0xA5, count: length)).storage else {
                Issue.record("a \(length)-byte token is not inline")
                continue
            }
        }
        guard case .heap(let bytes) = try DeviceToken(bytes: [UInt8](repeating: 0xA5, count: 33)).storage else {
            Issue.record("a 33-byte token is inline")
            return
        }
        #expect(bytes.count == 33)
        // Equal tokens are equal and hash alike however they were made.
        let a = try DeviceToken(hex: Self.appleToken)
        let b = try DeviceToken(bytes: a.bytes)
        #expect(a == b)
        #expect(Set([a, b]).count == 1)
    }

    /// Storing a token keeps all of it: Codable writes the whole hex (read back by
    /// JSONSerialization), while description stays redacted for logs.
    @Test func codableKeepsTheWholeTokenAndDescriptionDoesNot() throws {
        let token = try DeviceToken(hex: Self.appleToken.uppercased())
        let data = try JSONEncoder().encode([token])
        #expect(try JSONSerialization.jsonObject(with: data) as? [String] == [Self.appleToken])
        #expect(try JSONDecoder().decode([DeviceToken].self, from: data) == [token])
        #expect(token.description != Self.appleToken)
        #expect(!"\(token)".contains(Self.appleToken))
        #expect(throws: DecodingError.self) { try JSONDecoder().decode([DeviceToken].self, from: Data(#"["00fc13zz"]"#.utf8)) }
    }

    @Test func eightyByteTokenGoesIntoThePath() throws {
        let hex = String(repeating: "ab", count: 80)
        let token = try DeviceToken(hex: hex)
        let request = try PushNotification(body: .raw(Array("{\"aps\":{}}".utf8)), topic: "com.example.app")
            .request(to: token, environment: .sandbox)
        #expect(request.path == "/3/device/" + hex)
        #expect(request.path.utf8.count == 10 + 160)
    }

    @Test(arguments: [
        ("00fc13zz", 6),
        ("g0", 0),
        ("00 fc", 2),
        ("00fc-13ad", 4),
        ("0x00fc", 1),
        ("00fcé1", 4),
        ("00fc\n1", 4),
        ("00fc１２", 4),  // fullwidth digits are not hexadecimal
    ])
    func nonHexCharacterIsReportedAtItsPosition(input: String, position: Int) {
        #expect {
            try DeviceToken(hex: input)
        } throws: { error in
            guard let error = error as? APNsRequestError else { return false }
            return error.code == .invalidDeviceToken && error.position == position
                && error.description.contains("position \(position)")
        }
    }

    @Test func emptyTokenIsAnError() {
        #expect(throws: APNsRequestError.self) { try DeviceToken(hex: "") }
        #expect(throws: APNsRequestError.self) { try DeviceToken(bytes: []) }
        do {
            _ = try DeviceToken(hex: "")
        } catch {
            #expect(error.code == .invalidDeviceToken)
            #expect(error.description.contains("empty"))
        }
    }

    @Test func oddLengthNamesTheUnpairedDigit() {
        do {
            _ = try DeviceToken(hex: "00fc1")
            Issue.record("odd length accepted")
        } catch {
            #expect(error.code == .invalidDeviceToken)
            #expect(error.position == 4)
            #expect(error.description.contains("odd"))
        }
    }

    @Test("a token pasted as NSData's description is refused with how to fix it")
    func dataDescriptionIsNamed() {
        // -[NSData description] of a device token, as apps before iOS 13 logged it.
        for (pasted, position) in [("<00fc13ad ff785122 b4ad2880>", 0), ("00fc13ad ff785122", 8)] {
            #expect {
                _ = try DeviceToken(hex: pasted)
            } throws: { error in
                guard let error = error as? APNsRequestError else { return false }
                return error.code == .invalidDeviceToken && error.position == position
                    && error.description.contains("brackets and spaces removed")
            }
        }
        do {
            _ = try DeviceToken(hex: "00fc13adzz")
            Issue.record("non-hex accepted")
        } catch {
            #expect(error.position == 8)
            #expect(!error.description.contains("brackets"))
        }
    }

    @Test func descriptionNeverPrintsTheWholeToken() throws {
        let token = try DeviceToken(hex: Self.appleToken)
        #expect(token.description == "00fc13ad…")
        #expect("\(token)" == "00fc13ad…")
        #expect(!String(reflecting: token).contains(Self.appleToken))
        #expect(!"\([token])".contains(Self.appleToken))
        let short = try DeviceToken(hex: "abcd")
        #expect(!short.description.contains("abcd"))
    }
}

extension DeviceToken {
    /// The token's bytes as little- and big-endian 64-bit words, as a reflection of
    /// inline storage would print them.
    fileprivate func rawBytesWords() -> [UInt64] {
        var words: [UInt64] = []
        let raw = stride(from: 0, to: hexString.count, by: 2).map { offset -> UInt8 in
            let start = hexString.index(hexString.startIndex, offsetBy: offset)
            return UInt8(hexString[start..<hexString.index(start, offsetBy: 2)], radix: 16)!
        }
        for start in stride(from: 0, to: raw.count - 7, by: 8) {
            let chunk = raw[start..<start + 8]
            words.append(chunk.reduce(0) { $0 << 8 | UInt64($1) })
            words.append(chunk.reversed().reduce(0) { $0 << 8 | UInt64($1) })
        }
        return words
    }
}
