import Synchronization

/// Chooses the I/O thread (``EventLoop``) of each new connection of one transport, and
/// keeps the transport's home thread: the one ``HTTP2Transport/taskExecutor`` runs tasks
/// on, and, with ``HTTP2Transport/Configuration/ThreadPlacement/taskExecutorThread``, the
/// thread of every connection.
///
/// With ``HTTP2Transport/Configuration/ThreadPlacement/spread`` a connection still goes
/// home while no other connection of the transport is there, and a home chosen while
/// connections are up is the loop of one of them: so a one-connection transport and the
/// tasks that prefer its executor share a thread whatever the placement.
final class ConnectionThreads: Sendable {
    let group: EventLoopGroup
    let placement: HTTP2Transport.Configuration.ThreadPlacement

    private struct State {
        /// Chosen the first time it is needed, then kept for the transport's life.
        var home: EventLoop?
        /// The loops of the transport's live connections, with how many each drives.
        var live: [ObjectIdentifier: (loop: EventLoop, connections: Int)] = [:]
    }

    private let state = Mutex(State())

    init(group: EventLoopGroup = .shared, placement: HTTP2Transport.Configuration.ThreadPlacement) {
        self.group = group
        self.placement = placement
    }

    /// The transport's home thread, counted in its load for the transport's life so that
    /// the next transport's home goes elsewhere. Chosen when first asked: the loop that
    /// drives most of the transport's live connections, or else the least loaded (a new
    /// one if every running loop has work and the group may start more). `nil` only when
    /// the system has no descriptors for a loop.
    func homeLoop() -> EventLoop? {
        state.withLock { Self.home(&$0, group) }
    }

    private static func home(_ state: inout State, _ group: EventLoopGroup) -> EventLoop? {
        if let home = state.home { return home }
        if let busiest = state.live.values.max(by: { $0.connections < $1.connections })?.loop {
            busiest.reserve()
            state.home = busiest
        } else {
            state.home = group.next()
        }
        return state.home
    }

    /// The loop for a new connection, counted in its load (the connection detaches it,
    /// then calls ``connectionEnded(on:)``): the home thread with `.taskExecutorThread`;
    /// with `.spread`, the home thread if it drives none of the transport's connections
    /// yet, else the least loaded.
    func loopForNewConnection() -> EventLoop? {
        state.withLock { state -> EventLoop? in
            let loop: EventLoop?
            switch placement {
            case .taskExecutorThread:
                if let home = Self.home(&state, group) {
                    home.reserve()
                    loop = home
                } else {
                    loop = group.next()
                }
            case .spread:
                if let home = state.home, state.live[ObjectIdentifier(home)] == nil {
                    home.reserve()
                    loop = home
                } else {
                    loop = group.next()
                }
            }
            if let loop { state.live[ObjectIdentifier(loop), default: (loop, 0)].connections += 1 }
            return loop
        }
    }

    /// A connection that ``loopForNewConnection()`` placed on `loop` has ended.
    func connectionEnded(on loop: EventLoop) {
        state.withLock { state in
            let key = ObjectIdentifier(loop)
            guard let entry = state.live[key] else { return }
            if entry.connections > 1 {
                state.live[key]?.connections -= 1
            } else {
                state.live[key] = nil
            }
        }
    }

    deinit {
        state.withLock { $0.home }?.release()
    }
}
