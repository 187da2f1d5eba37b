import Synchronization

/// The bookkeeping of one ``APNsClient`` batch send, written from the transport's threads:
/// the outcome of each index, the answers that go on to the attempt loop, and the provider
/// tokens the batch's requests carried.
final class BatchPass: @unchecked Sendable {
    // Safe: each slot of `outcomes` is written by one call only — `finish` for an index is
    // called once (by `makeRequest` when the request cannot be made, by `onResult` on
    // acceptance, or by the second pass), as the batch contract calls `makeRequest` and
    // `onResult` once per index — and read by `results()` after every writer returned
    // (the batch and the second pass's task group have completed). The rest is under locks.
    private let outcomes: UnsafeMutableBufferPointer<Result<APNsAccepted, APNsError>?>
    /// Whether ``outcomes(for:)`` moved the outcomes out (the buffer is uninitialized).
    private var movedOut = false
    private let continuations = Mutex<[(Int, APNsClient.Attempt)]>([])
    /// The distinct provider tokens the requests carried, newest last: usually one (a
    /// cache re-signs every 20–50 minutes); at most 16, for a source that signs more
    /// often. Read only for answers that are not acceptances (to invalidate the one that
    /// expired); a request whose token was dropped is retried without invalidating it.
    private let tokens = Mutex<[ProviderToken]>([])

    init(count: Int) {
        outcomes = .allocate(capacity: count)
        outcomes.initialize(repeating: nil)
    }

    deinit {
        if !movedOut { outcomes.deinitialize() }
        outcomes.deallocate()
    }

    /// Records the final outcome of `index`.
    func finish(_ index: Int, _ outcome: Result<APNsAccepted, APNsError>) {
        outcomes[index] = outcome
    }

    /// Hands `attempt` (not an acceptance) to the second pass.
    func continueLater(_ index: Int, _ attempt: APNsClient.Attempt) {
        continuations.withLock { $0.append((index, attempt)) }
    }

    /// The attempts for the second pass, in index order.
    func takeContinuations() -> [(Int, APNsClient.Attempt)] {
        continuations.withLock { list in
            defer { list.removeAll() }
            return list.sorted { $0.0 < $1.0 }
        }
    }

    /// Notes the token a request is about to carry (called for each request, in turn).
    func remember(_ token: ProviderToken?) {
        guard let token else { return }
        tokens.withLock { tokens in
            if tokens.last != token {
                if tokens.count == 16 { tokens.removeFirst() }
                tokens.append(token)
            }
        }
    }

    /// The provider token `request` carried, if any.
    func token(of request: APNsRequest) -> ProviderToken? {
        guard let authorization = request.header("authorization") else { return nil }
        return tokens.withLock { tokens in tokens.last { $0.authorizationValue == authorization } }
    }

    /// The outcome of each device token, in order, moved out of the pass (no copy: a batch
    /// of a million spends nothing on retain/release here). Call once, after every writer.
    /// An index without an outcome (a transport that broke the batch contract) reads as
    /// cancelled before it was sent.
    func outcomes(for deviceTokens: [DeviceToken]) -> [APNsOutcome] {
        precondition(!movedOut && deviceTokens.count == outcomes.count)
        movedOut = true
        return [APNsOutcome](unsafeUninitializedCapacity: deviceTokens.count) { buffer, initialized in
            for index in deviceTokens.indices {
                let result = (outcomes.baseAddress! + index).move()
                (buffer.baseAddress! + index).initialize(
                    to: APNsOutcome(
                        deviceToken: deviceTokens[index],
                        result: result ?? .failure(.failed(.cancelled(mayHaveReachedAPNs: false)))
                    )
                )
            }
            initialized = deviceTokens.count
        }
    }
}
