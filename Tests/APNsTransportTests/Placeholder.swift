import Testing
@testable import APNsTransport

@Test func transportModuleBuilds() {
    #expect(TLSConfiguration.default is TLSConfiguration)
}
