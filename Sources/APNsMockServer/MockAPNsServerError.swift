/// Why the mock server could not start or could not do what was asked.
public struct MockAPNsServerError: Error, Sendable, CustomStringConvertible {
    /// What failed, with OpenSSL's or the system's own message where there is one.
    public let description: String

    init(_ description: String) {
        self.description = description
    }
}
