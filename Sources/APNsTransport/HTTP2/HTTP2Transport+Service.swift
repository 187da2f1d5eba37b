import ServiceLifecycle

extension HTTP2Transport: Service {
    /// Runs the transport as a swift-service-lifecycle `Service`: it stays up until the
    /// service group's graceful shutdown begins (SIGTERM, say) or the task is cancelled,
    /// then shuts down like ``shutdown()``: new requests fail with
    /// ``APNsCore/APNsTransportError/Code/shutdown``, requests in flight get
    /// ``Configuration/shutdownGracePeriod`` to finish (then fail with
    /// `mayHaveReachedAPNs == true`), and `run()` returns when every connection is closed.
    /// Nothing in flight is lost silently.
    ///
    /// ```swift
    /// let group = ServiceGroup(
    ///     services: [transport, myServer],
    ///     gracefulShutdownSignals: [.sigterm],
    ///     logger: logger
    /// )
    /// try await group.run()
    /// ```
    ///
    /// Put the services that send through the transport *after* it in the group: a
    /// group shuts its services down in reverse order, so they stop sending first.
    public func run() async throws {
        // Returns at graceful shutdown; throws CancellationError when cancelled: both end here.
        try? await gracefulShutdown()
        await shutdown()
    }
}
