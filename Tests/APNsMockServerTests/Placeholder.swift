import Testing
@testable import APNsMockServer

@Test func mockServerModuleBuilds() {
    #expect(Bool(true) == true)
}
