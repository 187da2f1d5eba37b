import Synchronization

/// Chooses the I/O thread (``EventLoop``) of each new connection of one transport, and
/// keeps the transport's home thread: the one ``HTTP2Transport/taskExecutor`` runs tasks
/// on, and, with ``HTTP2Transport/Configuration/ThreadPlacement/taskExecutorThread``, the
/// thread of every connection.
final class ConnectionThreads: Sendable {
    let group: EventLoopGroup
    let placement: HTTP2Transport.Configuration.ThreadPlacement
    /// Chosen the first time it is needed, then kept for the transport's life.
    private let home = Mutex<EventLoop?>(nil)

    init(group: EventLoopGroup = .shared, placement: HTTP2Transport.Configuration.ThreadPlacement) {
        self.group = group
        self.placement = placement
    }

    /// The transport's home thread: the least loaded one when first asked (a new one if
    /// every running loop has work and the group may start more), counted in its load for
    /// the transport's life so that the next transport's home goes elsewhere; `nil` only
    /// when the system has no descriptors for a loop.
    func homeLoop() -> EventLoop? {
        home.withLock { home in
            if let home { return home }
            home = group.next()
            return home
        }
    }

    deinit {
        home.withLock { $0 }?.release()
    }

    /// The loop for a new connection, counted in its load (the connection detaches or
    /// releases it): the home thread with `.taskExecutorThread`, else the least loaded.
    func loopForNewConnection() -> EventLoop? {
        switch placement {
        case .spread:
            return group.next()
        case .taskExecutorThread:
            guard let loop = homeLoop() else { return group.next() }
            loop.reserve()
            return loop
        }
    }
}
