import APNsCore
import APNsPayload
import APNsTesting
import Foundation

/// The channel list (`GET /1/apps/<bundle-id>/all-channels`): whatever body APNs answers
/// with a 200, `APNsClient.channels(bundleID:)` returns exactly the channels Foundation's
/// `JSONSerialization` and `Data(base64Encoded:)` find in it, or a `protocolError` when
/// the body is not `{"channels": [base64, ...]}`; never a crash.
///
/// Through the public API: the client over a `MockTransport` that answers the body. Half
/// the inputs are raw bytes; the other half are built as JSON documents from the input's
/// choices (members before and after the list, nested values, white space, escapes, good
/// and bad entries), so the accepting paths are reached too.
enum ChannelListTarget {
    static let name = "channel-list"

    /// One client and mock transport for every input (inputs run one at a time).
    static let mock = MockTransport()
    static let client = APNsClient(environment: .sandbox, credentials: .certificate, transport: mock)

    static func run(_ data: [UInt8]) {
        var input = FuzzInput(data)
        let body = input.bool() ? input.bytes(data.count) : document(&input)
        // The mock keeps every request it was sent: forgotten per input, or memory grows.
        mock.removeAllRequests()
        mock.respondByDefault(with: .response(APNsResponse(status: 200, headers: [], body: body)))
        let result: Result<[ChannelID], APNsError> = Self.wait {
            do throws(APNsError) {
                return .success(try await client.channels(bundleID: "com.example.app").value)
            } catch {
                return .failure(error)
            }
        }
        let text = String(decoding: body.prefix(600), as: UTF8.self)

        // Bodies where two readers may legitimately differ: a repeated "channels" member
        // (RFC 8259 §4: names SHOULD be unique; which one wins is the reader's), and
        // escaped key names, which Foundation and we both decode but compare after.
        let ambiguous = ResponseTarget.occurrences(of: Array("channels".utf8), in: body) > 1
            || ResponseTarget.occurrences(of: Array("\\u".utf8), in: body) > 0
        // Foundation accepts more than RFC 8259 (a trailing comma); our strict parser, a
        // separate implementation in APNsPayload, says whether the body is JSON at all.
        let strict = (try? JSONValue(jsonBytes: body)) != nil
        let expected = expectedChannels(body)

        switch result {
        case .success(let channels):
            require(strict, name, "a channel list read from a body that is not JSON (RFC 8259): \(text)")
            if !ambiguous {
                require(expected == channels.map(\.rawValue), name,
                        "read \(channels.map(\.rawValue)) but Foundation finds \(String(describing: expected)) in \(text)")
            }
        case .failure(let error):
            guard case .failed(let transportError) = error, transportError.code == .protocolError else {
                finding(name, "a body that is not a channel list failed with \(error), not a protocolError: \(text)")
            }
            if !ambiguous, strict {
                require(expected == nil, name,
                        "refused (\(transportError.detail ?? "")) though Foundation finds the channels \(expected ?? []) in \(text)")
            }
        }
    }

    /// The channels Foundation finds: the body is an object whose `channels` is an array of
    /// strings that are base64 (``isBase64(_:)``); `nil` otherwise.
    static func expectedChannels(_ body: [UInt8]) -> [String]? {
        guard let object = FoundationJSON.parse(body) as? [String: Any],
            let list = object["channels"] as? [Any]
        else { return nil }
        var channels: [String] = []
        for entry in list {
            guard let text = entry as? String, isBase64(text) else { return nil }
            channels.append(text)
        }
        return channels
    }

    /// Whether `text` is padded base64 by Foundation's decoder, held to RFC 4648 §3.3 and
    /// §4 where Foundation on Linux is lenient (it reads `====` as one zero byte, and
    /// `ab=c` with padding inside): it decodes to at least one byte, the `=` only end it,
    /// and there are as many of them as the decoded length calls for (its re-encoding's).
    static func isBase64(_ text: String) -> Bool {
        guard let decoded = Data(base64Encoded: text), !decoded.isEmpty else { return false }
        let canonical = decoded.base64EncodedString()
        let padding = text.reversed().prefix { $0 == "=" }.count
        return text.utf8.count == canonical.utf8.count
            && !text.dropLast(padding).contains("=")
            && padding == canonical.reversed().prefix { $0 == "=" }.count
    }

    /// Runs `operation` to its end on a new task; the fuzz harness is synchronous.
    static func wait<T: Sendable>(_ operation: @escaping @Sendable () async -> T) -> T {
        let box = ResultBox<T>()
        let done = DispatchSemaphore(value: 0)
        Task {
            box.value = await operation()
            done.signal()
        }
        done.wait()
        return box.value!
    }

    /// Where the task leaves its result; read after the semaphore, so never concurrently.
    final class ResultBox<T>: @unchecked Sendable {
        var value: T?
    }

    // MARK: Documents built from choices

    static let goodIDs = ["dHN0LXNyY2gtY2hubA==", "AAAA", "YWJjZA==", "Zm9vYg==", "+/+/", "MTIz"]
    static let badIDs = ["", "abc", "dHN0=LXN", "A===", "====", "ab!d", "YWJjZA=", "éééé", "YW Jj"]
    static let otherKeys = ["reason", "chan", "Channels", "channel", "x", ""]

    static func document(_ input: inout FuzzInput) -> [UInt8] {
        var out = space(&input) + "{"
        var members: [String] = []
        for _ in 0..<input.int(below: 3) { members.append(member(&input)) }
        if input.int(below: 8) != 0 {
            var list = space(&input) + "\"channels\"" + space(&input) + ":" + space(&input) + "["
            let count = input.int(below: 5)
            list += (0..<count).map { _ in space(&input) + entry(&input) + space(&input) }.joined(separator: ",")
            if input.int(below: 16) == 0 { list += "," }  // a trailing comma: not JSON
            list += "]"
            members.append(list)
        }
        for _ in 0..<input.int(below: 3) { members.append(member(&input)) }
        out += members.joined(separator: ",") + space(&input) + "}" + space(&input)
        if input.int(below: 16) == 0 { out += "x" }  // garbage after the object
        return Array(out.utf8)
    }

    static func entry(_ input: inout FuzzInput) -> String {
        switch input.int(below: 6) {
        case 0, 1, 2: return "\"" + goodIDs[input.int(below: goodIDs.count)] + "\""
        case 3: return "\"" + badIDs[input.int(below: badIDs.count)] + "\""
        case 4: return value(&input, depth: 1)
        default: return "\"" + escaped(input.string(maxLength: 12)) + "\""
        }
    }

    static func member(_ input: inout FuzzInput) -> String {
        space(&input) + "\"" + escaped(otherKeys[input.int(below: otherKeys.count)]) + "\"" + space(&input) + ":" + value(&input, depth: 0)
    }

    static func value(_ input: inout FuzzInput, depth: Int) -> String {
        let s = space(&input)
        switch depth > 3 ? input.int(below: 5) : input.int(below: 8) {
        case 0: return s + ["0", "-1", "1.5e3", "-0.0", "1E+2", "01", "1.", "-", "1e", "+1", ".5", "1-2"][input.int(below: 12)]
        case 1: return s + ["true", "false", "null", "tru", "nul"][input.int(below: 5)]
        case 2: return s + "\"" + escaped(input.string(maxLength: 16)) + "\""
        case 3: return s + "\"\\u00e9\\n\\\"\\/\""
        case 4: return s + "\"" + goodIDs[input.int(below: goodIDs.count)] + "\""
        case 5: return s + "[" + (0..<input.int(below: 3)).map { _ in value(&input, depth: depth + 1) }.joined(separator: ",") + "]"
        case 6: return s + "{" + (0..<input.int(below: 3)).map { _ in "\"k\":" + value(&input, depth: depth + 1) }.joined(separator: ",") + "}"
        default: return s + "{\"channels\":[" + value(&input, depth: depth + 1) + "]}"
        }
    }

    static func space(_ input: inout FuzzInput) -> String {
        ["", "", "", " ", "\n", "\t", "\r\n  ", "\u{0B}"][input.int(below: 8)]
    }

    /// `text` as the inside of a JSON string, escaped by Foundation's writer.
    static func escaped(_ text: String) -> String {
        guard let data = try? JSONSerialization.data(withJSONObject: text, options: [.fragmentsAllowed]) else { return "" }
        return String(decoding: data.dropFirst().dropLast(), as: UTF8.self)
    }
}
