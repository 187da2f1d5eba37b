/// The representation the encoder wrote for one header field.
///
/// One of the field representations of
/// [RFC 7541 §6](https://www.rfc-editor.org/rfc/rfc7541#section-6).
public enum HPACKRepresentation: Sendable, Hashable {
    /// An indexed header field (§6.1): the whole field as one index
    /// (1...61 static, 62 and up dynamic).
    case indexed(Int)
    /// A literal header field (§6.2) of the given form; `nameIndex` is the index the
    /// name was sent as, or `nil` when the name was sent as a literal too.
    case literal(HPACKIndexing, nameIndex: Int?)
}
