import Testing
@testable import APNsCore

@Test func headerFieldHoldsValues() {
    #expect(HeaderField(name: "apns-topic", value: "a").name == "apns-topic")
}
