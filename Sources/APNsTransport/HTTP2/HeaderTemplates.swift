import APNsCore
import CNGHTTP2

/// The written header blocks of the last few notifications a connection sent, kept so
/// that the next request of the same notification is sent by overwriting its token's
/// digits and its `apns-id` in place (see ``APNsCore/HeaderTemplateKey``).
///
/// A template holds its names and values in one allocation that never moves, the
/// `nghttp2_nv` list pointing into it, and the header policy's steady-state flags for it.
/// nghttp2 copies the list while submitting, so one buffer serves every request. Used by
/// the connection's I/O thread only, like the rest of ``HTTP2SessionSink``.
struct HeaderTemplates {
    /// One notification's header block.
    final class Template {
        let key: HeaderTemplateKey
        /// The names and values, as ``APNsCore/APNsRequest/writeHeaders(into:fields:)``
        /// wrote them for the request the template was made from.
        let bytes: UnsafeMutableRawBufferPointer
        /// The list nghttp2 reads, pointing into `bytes`, with the policy's flags.
        let list: UnsafeMutableBufferPointer<nghttp2_nv>
        /// Where the token's digits are (within the `:path` value).
        let tokenDigits: UnsafeMutableRawBufferPointer
        /// Where the `apns-id` value is, if the block has one.
        let apnsID: UnsafeMutableRawBufferPointer?

        /// The template of a request written as `written` and `fields`, with `decisions`
        /// (one per field); `nil` if the fields are not those of a device push with `key`.
        init?(key: HeaderTemplateKey, written: [UInt8], fields: [WrittenHeader], decisions: [HPACKIndexing]) {
            guard decisions.count == fields.count,
                  let path = fields.first(where: { $0.name == ":path" }),
                  path.valueLength == APNsRequest.devicePathPrefixLength + 2 * key.tokenByteCount
            else { return nil }
            let apnsIDField = fields.last.flatMap { $0.name == "apns-id" && $0.valueLength == APNsID.textLength ? $0 : nil }
            guard (apnsIDField != nil) == key.hasAPNsID else { return nil }
            let bytes = UnsafeMutableRawBufferPointer.allocate(byteCount: max(1, written.count), alignment: 1)
            written.withUnsafeBytes { bytes.copyMemory(from: $0) }
            let list = UnsafeMutableBufferPointer<nghttp2_nv>.allocate(capacity: fields.count)
            let base = bytes.baseAddress!.assumingMemoryBound(to: UInt8.self)
            for (index, field) in fields.enumerated() {
                list.initializeElement(
                    at: index,
                    to: nghttp2_nv(
                        name: base + field.nameStart,
                        value: base + field.valueStart,
                        namelen: field.valueStart - field.nameStart,
                        valuelen: field.valueLength,
                        flags: decisions[index].requiresNoIndexFlag
                            ? UInt8(NGHTTP2_NV_FLAG_NO_INDEX.rawValue) : UInt8(NGHTTP2_NV_FLAG_NONE.rawValue)
                    )
                )
            }
            let digitsStart = path.valueStart + APNsRequest.devicePathPrefixLength
            self.key = key
            self.bytes = bytes
            self.list = list
            tokenDigits = UnsafeMutableRawBufferPointer(rebasing: bytes[digitsStart..<path.valueEnd])
            apnsID = apnsIDField.map { UnsafeMutableRawBufferPointer(rebasing: bytes[$0.valueStart..<$0.valueEnd]) }
        }

        deinit {
            bytes.deallocate()
            list.deallocate()
        }
    }

    /// How many notifications' templates a connection keeps: a few campaigns interleaved
    /// on one connection each keep theirs.
    static let capacity = 4

    private var templates: [Template] = []
    /// The slot the next new template replaces once all are taken.
    private var nextSlot = 0

    /// The template `request` fits, if one is kept.
    func template(for request: APNsRequest) -> Template? {
        for template in templates where request.fits(template.key) { return template }
        return nil
    }

    /// Keeps `template`, replacing the oldest one when all slots are taken.
    mutating func keep(_ template: Template) {
        if templates.count < Self.capacity {
            templates.append(template)
        } else {
            templates[nextSlot] = template
            nextSlot = (nextSlot + 1) % Self.capacity
        }
    }

    /// Forgets every template: the header policy's decisions changed (a new table size).
    mutating func removeAll() {
        templates.removeAll()
        nextSlot = 0
    }
}
