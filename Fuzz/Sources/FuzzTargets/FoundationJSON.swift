import APNsPayload
import Foundation

/// Foundation's `JSONSerialization`: the independent JSON parser the targets check our
/// output against.
enum FoundationJSON {
    /// Parses `bytes` (any top-level value); `nil` if Foundation refuses them.
    static func parse(_ bytes: [UInt8]) -> Any? {
        try? JSONSerialization.jsonObject(with: Data(bytes), options: [.fragmentsAllowed])
    }

    /// A string as compared with Foundation on Linux: without U+FEFF. Foundation drops a
    /// U+FEFF that starts a raw run of a string (at the start, or right after an escape:
    /// `["\u{FEFF}"]` reads as `[""]`, while `"\\ufeff"` keeps it), a Foundation bug; the
    /// JSON we write there is valid (RFC 8259 §7 allows U+FEFF raw).
    static func foundationReading(_ s: String) -> String {
        s.unicodeScalars.contains("\u{FEFF}") ? String(String.UnicodeScalarView(s.unicodeScalars.filter { $0 != "\u{FEFF}" })) : s
    }

    /// Whether Foundation read a JSON `true` or `false` (an NSNumber of type `c`), not a number.
    static func isBoolean(_ value: Any) -> Bool {
        guard let number = value as? NSNumber else { return false }
        return String(cString: number.objCType) == "c"
    }

    /// Whether Foundation's parse of a text equals our value. Object order is not
    /// compared (Foundation returns a dictionary); numbers compare by value.
    static func matches(_ ours: JSONValue, _ theirs: Any) -> Bool {
        switch ours {
        case .null:
            return theirs is NSNull
        case .bool(let b):
            // Foundation gives an NSNumber for true and false, one that says it is a
            // Boolean: `as? Bool` alone also takes the number 1 for true, so a writer that
            // turned true into 1 would pass.
            guard isBoolean(theirs) else { return false }
            return (theirs as? Bool) == b
        case .integer(let i):
            guard let n = theirs as? NSNumber, !isBoolean(n) else { return false }
            return n.int64Value == i || n.doubleValue == Double(i) || n.stringValue == String(i)
        case .double(let d):
            guard let n = theirs as? NSNumber, !isBoolean(n) else { return false }
            // Foundation keeps some numbers as NSDecimalNumber, whose doubleValue is not
            // correctly rounded (1.4169065279290933e+35 comes back ...35e+35); its
            // decimal digits are exact, so they are compared too.
            return n.doubleValue == d || Double(n.stringValue) == d
        case .string(let s):
            return (theirs as? String).map { $0 == s || foundationReading($0) == foundationReading(s) } ?? false
        case .array(let elements):
            guard let array = theirs as? [Any], array.count == elements.count else { return false }
            return zip(elements, array).allSatisfy { matches($0, $1) }
        case .object(let object):
            guard let dictionary = theirs as? [String: Any], dictionary.count == Set(object.keys.map(foundationReading)).count else { return false }
            // Keys that Foundation's U+FEFF bug makes collide ("\u{FEFF}" and "") keep
            // only one value there; their values are not compared.
            let readings = object.keys.map(foundationReading)
            // Foundation may drop only some of several U+FEFF (one per raw run), so its
            // keys are looked up by their reading too.
            var theirsByReading: [String: Any] = [:]
            for (theirKey, theirValue) in dictionary { theirsByReading[foundationReading(theirKey)] = theirValue }
            return object.allSatisfy { key, value in
                let reading = foundationReading(key)
                guard let theirs = dictionary[key] ?? theirsByReading[reading] else { return false }
                return readings.filter { $0 == reading }.count > 1 || matches(value, theirs)
            }
        }
    }
}
