/// One HTTP/2 header field: a lowercase name and its value.
///
/// Requests carry their headers as an ordered list of fields, built in exactly
/// one place, in the order the HPACK header policy expects.
public struct HeaderField: Sendable, Hashable {
    /// The field name, lowercase as HTTP/2 requires (RFC 9113 §8.2.1).
    public var name: String
    /// The field value.
    public var value: String

    /// Creates a header field.
    public init(name: String, value: String) {
        self.name = name
        self.value = value
    }
}
