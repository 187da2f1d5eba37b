import Foundation
import Testing

@testable import APNsPayload

/// A JSON tree as Foundation's JSONSerialization (an independent parser) reads it,
/// normalised so two trees compare regardless of key order.
indirect enum FoundationJSON: Equatable, CustomStringConvertible {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([FoundationJSON])
    case object([String: FoundationJSON])

    init(_ any: Any) {
        if any is NSNull {
            self = .null
        } else if let string = any as? String {
            self = .string(string)
        } else if let array = any as? [Any] {
            self = .array(array.map(FoundationJSON.init))
        } else if let dictionary = any as? [String: Any] {
            self = .object(dictionary.mapValues(FoundationJSON.init))
        } else if String(describing: type(of: any)).contains("Boolean"), let bool = any as? Bool {
            self = .bool(bool)
        } else if let number = any as? NSNumber {
            self = .number(number.doubleValue)
        } else {
            self = .string("<unexpected \(type(of: any))>")
        }
    }

    /// Parses `bytes` with JSONSerialization; `nil` when Foundation refuses them.
    static func parse(_ bytes: [UInt8]) -> FoundationJSON? {
        guard let any = try? JSONSerialization.jsonObject(with: Data(bytes), options: [.fragmentsAllowed]) else {
            return nil
        }
        return FoundationJSON(any)
    }

    static func parse(_ text: String) -> FoundationJSON? {
        parse(Array(text.utf8))
    }

    var description: String {
        switch self {
        case .null: return "null"
        case .bool(let b): return "\(b)"
        case .number(let n): return "\(n)"
        case .string(let s): return "\"\(s)\""
        case .array(let a): return "[" + a.map(\.description).joined(separator: ",") + "]"
        case .object(let o):
            return "{" + o.sorted { $0.key < $1.key }.map { "\"\($0.key)\":\($0.value)" }.joined(separator: ",") + "}"
        }
    }
}

/// Expects `bytes` and `expected` to parse (with Foundation) to the same JSON tree.
func expectSameJSON(
    _ bytes: [UInt8], _ expected: String, sourceLocation: SourceLocation = #_sourceLocation
) {
    let actual = FoundationJSON.parse(bytes)
    let wanted = FoundationJSON.parse(expected)
    #expect(actual != nil, "Foundation refuses our output: \(String(decoding: bytes, as: UTF8.self))", sourceLocation: sourceLocation)
    #expect(wanted != nil, "Foundation refuses the expected JSON", sourceLocation: sourceLocation)
    #expect(actual == wanted, sourceLocation: sourceLocation)
}

/// The output as text, for substring checks.
func text(_ bytes: [UInt8]) -> String {
    String(decoding: bytes, as: UTF8.self)
}
