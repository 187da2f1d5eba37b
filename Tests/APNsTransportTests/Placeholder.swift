import Testing
@testable import APNsTransport

@Test func unimplementedTLSRefusesToConnect() {
    #expect(throws: APNsTransportError.self) {
        try TLSStream.connect(to: TLSEndpoint(host: "127.0.0.1", port: 1), configuration: .default, timeout: .seconds(1))
    }
}
