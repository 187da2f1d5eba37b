/// One request the mock server received, with what it answered.
///
/// Headers are kept in the order they arrived, each with whether the client sent it as
/// an HPACK *never indexed* literal ([RFC 7541 §6.2.3](https://www.rfc-editor.org/rfc/rfc7541#section-6.2.3)).
public struct RecordedRequest: Sendable, Hashable {
    /// How a header field was represented in the HPACK header block
    /// ([RFC 7541 §6](https://www.rfc-editor.org/rfc/rfc7541#section-6)).
    public enum HeaderRepresentation: String, Sendable, Hashable, CaseIterable {
        /// An index into the static or dynamic table (§6.1): name and value both indexed.
        case indexed
        /// A literal the server adds to its dynamic table (§6.2.1).
        case incrementalIndexing
        /// A literal the server does not add to its table (§6.2.2).
        case withoutIndexing
        /// A literal no intermediary may ever index (§6.2.3).
        case neverIndexed
    }

    /// A header field as received.
    public struct Header: Sendable, Hashable {
        /// The lowercase header name, pseudo-headers included (`:path`).
        public var name: String
        /// The header value.
        public var value: String
        /// Whether the field arrived as a never-indexed literal (nghttp2's `NGHTTP2_NV_FLAG_NO_INDEX`).
        public var neverIndexed: Bool
        /// How the field was represented, read from the raw header block; `nil` if the
        /// block could not be read.
        public var representation: HeaderRepresentation?

        /// A header field as received.
        public init(name: String, value: String, neverIndexed: Bool, representation: HeaderRepresentation? = nil) {
            self.name = name
            self.value = value
            self.neverIndexed = neverIndexed
            self.representation = representation
        }
    }

    /// Position of this request among all requests the server answered, from 0.
    public var sequenceNumber: Int
    /// Which connection carried it, numbered by the server from 0.
    public var connectionNumber: Int
    /// The HTTP/2 stream identifier.
    public var streamID: Int
    /// Every header field, in the order received.
    public var headers: [Header]
    /// The bytes of the HEADERS and CONTINUATION frame payloads that carried the header
    /// block (the HPACK-compressed size, plus padding if the client padded).
    public var headerBlockLength: Int
    /// The size of the server's HPACK decoder table (nghttp2's inflater) right after this
    /// request's header block was decoded, in octets as
    /// [RFC 7541 §4.1](https://www.rfc-editor.org/rfc/rfc7541#section-4.1) counts them:
    /// each entry is its name's and value's length plus 32.
    ///
    /// It is the table of the whole connection, so it grows with each field a client sends
    /// with incremental indexing (``HeaderRepresentation/incrementalIndexing``) and shrinks
    /// only by eviction or a table size update; it never exceeds the 4096 octets of
    /// SETTINGS_HEADER_TABLE_SIZE, which the server leaves at its default. On a
    /// connection that carries concurrent requests, it includes the blocks of requests
    /// whose headers arrived before this one's ended.
    public var inflaterDynamicTableSize: Int
    /// The request body.
    public var body: [UInt8]
    /// The claims of the provider token, when the request carried one that could be read.
    public var providerToken: ProviderTokenClaims?
    /// The status the server answered.
    public var status: Int
    /// The reason the server answered with, `nil` for `200`.
    public var reason: String?
    /// The `apns-id` the server answered with.
    public var apnsID: String

    /// The value of the first header with this name, if any.
    public func value(of name: String) -> String? {
        headers.first { $0.name == name }?.value
    }

    /// The device token from the `:path` (`/3/device/<token>`), if the path has that shape.
    public var deviceToken: String? {
        guard let path = value(of: ":path"), path.hasPrefix("/3/device/") else { return nil }
        return String(path.dropFirst("/3/device/".count))
    }
}
