/// One fuzz target: a name, and a check run on each input that traps on a finding.
public struct FuzzTarget: Sendable {
    /// The name used by `APNS_FUZZ_TARGET`, the corpus folder and scripts/fuzz.sh.
    public let name: String
    /// What the target checks.
    public let summary: String
    /// Runs the checks on one input.
    public let run: @Sendable ([UInt8]) -> Void

    /// Every target, in the order scripts/fuzz.sh runs them.
    public static let all: [FuzzTarget] = [
        FuzzTarget(name: "json-writer", summary: "random JSONValue -> our writer -> our parser and JSONSerialization; round trip is exact", run: JSONWriterTarget.run),
        FuzzTarget(name: "payload-writer", summary: "random payload objects -> Payload -> encoded -> decoded equal, JSONSerialization accepts", run: PayloadWriterTarget.run),
        FuzzTarget(name: "json-parse", summary: "arbitrary bytes -> JSONValue/Payload(jsonBytes:): typed errors with offsets; accepted input re-encodes to JSON that JSONSerialization accepts", run: JSONParseTarget.run),
        FuzzTarget(name: "hpack", summary: "random header lists and table size changes -> HPACKEncoder/APNsHeaderEncoder -> nghttp2 inflater: same fields, flags and dynamic table", run: HPACKTarget.run),
        FuzzTarget(name: "response", summary: "status + headers + body -> APNsRejection/APNsAccepted, and error body / GOAWAY debug data -> APNsReason, against JSONSerialization", run: ResponseTarget.run),
        FuzzTarget(name: "device-token", summary: "arbitrary text/bytes -> DeviceToken(hex:)/DeviceToken(bytes:) against an independent hex codec", run: DeviceTokenTarget.run),
        FuzzTarget(name: "channel-list", summary: "arbitrary and JSON-shaped bodies -> APNsClient.channels(bundleID:) over MockTransport: the channels JSONSerialization and Data(base64Encoded:) find, or a protocolError", run: ChannelListTarget.run),
        FuzzTarget(name: "pem", summary: "arbitrary text -> ProviderKey(pemRepresentation:/derRepresentation:), ClientIdentity(certificatePEM:privateKeyPEM:): typed errors, never a crash", run: PEMTarget.run),
    ]

    /// The target named `name`.
    public static func named(_ name: String) -> FuzzTarget? {
        all.first { $0.name == name }
    }
}
