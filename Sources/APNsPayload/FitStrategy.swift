/// What ``Payload/encoded(for:fitting:)`` may change to make an over-long payload fit.
///
/// An open set, so strategies can be added later.
public struct FitStrategy: Sendable, Hashable, CustomStringConvertible {
    private enum Code: String, Sendable, Hashable {
        case truncatingBody = "truncating body"
    }
    private let code: Code
    private init(_ code: Code) { self.code = code }

    /// Shortens the alert body (`aps.alert.body`, a plain-text alert, or a plain Live
    /// Activity alert body) on a `Character` boundary and ends it with "…". Localization
    /// keys, titles and custom data are never touched.
    public static let truncatingBody = FitStrategy(.truncatingBody)

    /// The strategy's name.
    public var description: String { code.rawValue }
}
