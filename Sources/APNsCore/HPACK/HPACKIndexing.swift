/// How a header field may be written when it is not sent as an index: the three
/// literal representations of HPACK.
///
/// Defined in [RFC 7541 §6.2](https://www.rfc-editor.org/rfc/rfc7541#section-6.2).
/// Whichever form is chosen, ``HPACKEncoder`` still sends a field the tables already
/// hold in full as an index (§6.1), except for ``neverIndexed`` fields, which are
/// always literals.
public enum HPACKIndexing: Sendable, Hashable, CaseIterable {
    /// Literal with incremental indexing (§6.2.1): the field is added to the dynamic
    /// table, and later occurrences can be sent as a one-octet index.
    case incrementalIndexing
    /// Literal without indexing (§6.2.2): the dynamic table is not changed.
    case withoutIndexing
    /// Literal never indexed (§6.2.3): the dynamic table is not changed, and every
    /// intermediary must re-encode the field as a literal too. Meant for values that
    /// must not be exposed to compression-based attacks (§7.1.3).
    case neverIndexed

    /// Whether a transport built on nghttp2 must set `NGHTTP2_NV_FLAG_NO_INDEX` on the
    /// field to leave the peer's dynamic table as this decision does.
    ///
    /// nghttp2 has one flag, which makes it write a literal never indexed. That adds
    /// nothing to the peer's table, exactly like ``withoutIndexing``, so both map to
    /// the flag; without the flag nghttp2 indexes incrementally, except for names and
    /// sizes it never indexes (see ``APNsHeaderEncoder``).
    public var requiresNoIndexFlag: Bool {
        self != .incrementalIndexing
    }
}
