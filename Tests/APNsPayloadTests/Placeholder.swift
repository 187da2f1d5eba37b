import Testing
@testable import APNsPayload

@Test func stubEncodes() throws {
    #expect(try Payload.alert(body: "x").encoded().count > 0)
}
