extension MockAPNsServer {
    /// The APNs environment the mock server stands for: what a key limited to one
    /// environment is checked against (see ``KeyScope``).
    public enum Environment: String, Sendable, Hashable, CaseIterable {
        /// `api.sandbox.push.apple.com`, for development builds of an app.
        case sandbox
        /// `api.push.apple.com`, for App Store, TestFlight and ad-hoc builds.
        case production
    }

    /// What a provider key may be used for, as set when the key was created in the
    /// developer account (Apple's key kinds since 2025).
    ///
    /// A team key (the original kind, and the default for keys with no scope) works for any
    /// topic of its team in both environments. An environment-scoped key works in one
    /// environment only: used against the other, APNs answers 403
    /// `BadEnvironmentKeyIdInToken`. A topic-specific key works for its topics only: a
    /// device push to another topic gets 400 `TopicDisallowed`, a broadcast or channel
    /// request for another app's bundle ID 403 `TopicMismatch`.
    ///
    /// ```swift
    /// var configuration = MockAPNsServer.Configuration(authentication: .providerToken(.signature(keys)))
    /// configuration.environment = .production
    /// configuration.keyScopes = [
    ///     "SANDBOX001": .sandboxOnly,                      // 403 BadEnvironmentKeyIdInToken here
    ///     "TOPICKEY01": .topics(["com.example.app"]),     // 400 TopicDisallowed for other topics
    /// ]
    /// ```
    public struct KeyScope: Sendable, Hashable {
        /// The environments the key is enabled for.
        public var environments: Set<Environment>
        /// The topics (bundle identifiers) the key may push to; `nil` for every topic of the
        /// team. A topic matches when it is one of these, or one of these followed by the
        /// suffix of the request's push type (`com.example.app.voip` for `voip`).
        public var topics: Set<String>?

        /// A scope.
        /// - Parameters:
        ///   - environments: The environments the key is enabled for.
        ///   - topics: The topics it may push to; `nil` for any topic of the team.
        public init(environments: Set<Environment> = [.sandbox, .production], topics: Set<String>? = nil) {
            self.environments = environments
            self.topics = topics
        }

        /// A team key: both environments, every topic.
        public static let team = KeyScope()
        /// An environment-scoped key for the sandbox only.
        public static let sandboxOnly = KeyScope(environments: [.sandbox])
        /// An environment-scoped key for production only.
        public static let productionOnly = KeyScope(environments: [.production])

        /// A topic-specific key.
        /// - Parameters:
        ///   - topics: The bundle identifiers it may push to.
        ///   - environments: The environments it is enabled for (default: both).
        public static func topics(_ topics: Set<String>, environments: Set<Environment> = [.sandbox, .production]) -> KeyScope {
            KeyScope(environments: environments, topics: topics)
        }
    }
}
