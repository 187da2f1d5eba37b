extension MockAPNsServer {
    /// A slower network between the server and its clients: what the server sends reaches
    /// them later, more slowly, or not at all for a while. See ``setLinkEmulation(_:)``.
    ///
    /// It applies to the HTTP/2 bytes of each connection (answers, SETTINGS and their
    /// acknowledgements, PING acknowledgements, GOAWAY), not to the TLS handshake, and only
    /// to what the server sends: a request's round trip grows by ``oneWayDelay``, as if
    /// both directions shared it, so an emulated round trip of 100 ms is a `oneWayDelay` of
    /// 100 ms here.
    public struct LinkEmulation: Sendable, Hashable {
        /// Periodic stalls: from the moment the emulation starts on a connection, nothing
        /// leaves for `length` at the start of every `every`.
        public struct Stalls: Sendable, Hashable {
            /// How often a stall begins.
            public var every: Duration
            /// How long each stall lasts (shorter than `every`).
            public var length: Duration

            /// Stalls of `length` every `every`.
            public init(every: Duration, length: Duration) {
                self.every = every
                self.length = length
            }
        }

        /// How long after the server produces a byte it leaves.
        public var oneWayDelay: Duration
        /// The most bytes per second the server sends per connection; `nil` for no cap.
        public var bytesPerSecond: Int?
        /// Periods in which the server sends nothing; `nil` for none.
        public var stalls: Stalls?

        /// A link.
        /// - Parameters:
        ///   - oneWayDelay: The delay of everything the server sends.
        ///   - bytesPerSecond: A bandwidth cap per connection, or `nil`.
        ///   - stalls: Periodic stalls, or `nil`.
        public init(oneWayDelay: Duration = .zero, bytesPerSecond: Int? = nil, stalls: Stalls? = nil) {
            self.oneWayDelay = max(.zero, oneWayDelay)
            self.bytesPerSecond = bytesPerSecond
            self.stalls = stalls
        }
    }

    /// Puts every connection, open and new, behind `link` (`nil` removes it: what waits is
    /// sent at once). Scriptable at any time, like the other faults; ``resetScript()``
    /// removes it too.
    ///
    /// ```swift
    /// // Answers, SETTINGS and PING acknowledgements arrive 150 ms later.
    /// server.setLinkEmulation(.init(oneWayDelay: .milliseconds(150)))
    /// ```
    public func setLinkEmulation(_ link: LinkEmulation?) {
        state.shared.withLock { $0.link = link }
        state.send(.setLink(link))
    }
}
