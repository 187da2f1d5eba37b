import APNsTransport

// The `tasks-global` mode's driver, in a file of its own: a function declared here is
// not isolated to the main actor (top-level code in main.swift is), so the task group's
// parent — which adds a child per notification and awaits each result — runs on the
// global executor, or on `executor`, as a server's request handler would, rather than
// on the main thread.
//
// The `tasks` mode writes the same loop in main.swift's top-level code, on purpose: there
// the children's closures are formed on the main actor and inherit its isolation, which
// is part of what that mode has always measured. Calling this function with the main
// actor as an `isolated` parameter instead keeps only the parent there (measured: 8.5 and
// 9.2 µs with 70,000-88,000 context switches per 100,000, against 6.2 and 6.5 µs).

/// One `client.send(_:to:)` per device token, each in a child task of its own, at most
/// `window` at a time, the group's tasks preferring `executor` (nil: the global
/// executor). Returns how many were accepted.
func sendFromTasks(
    client: APNsClient,
    notification: PushNotification,
    deviceTokens: [DeviceToken],
    window: Int,
    executor: (any TaskExecutor)?
) async -> Int {
    let count = deviceTokens.count
    return await withTaskExecutorPreference(executor) {
        await withTaskGroup(of: Bool.self) { group in
            var next = 0
            var accepted = 0
            while next < min(window, count) {
                let token = deviceTokens[next]
                group.addTask { (try? await client.send(notification, to: token)) != nil }
                next += 1
            }
            while let result = await group.next() {
                if result { accepted += 1 }
                if next < count {
                    let token = deviceTokens[next]
                    group.addTask { (try? await client.send(notification, to: token)) != nil }
                    next += 1
                }
            }
            return accepted
        }
    }
}

/// The `feed` mode: the streamed batch, called from a function that is not isolated to
/// the main actor (as a server's handler would call it), so the sequence is read on the
/// global executor.
func sendFeed(client: APNsClient, notification: PushNotification, deviceTokens: [DeviceToken], window: Int) async -> Int {
    await sendFeed(client: client, notification: notification, tokens: TokenCursor(tokens: deviceTokens), window: window)
}

/// The `feedstream` mode: the streamed batch reading an `AsyncStream` that another task
/// fills, as a queue consumer's would be (the producer yields every token as fast as it
/// can; the stream buffers what the batch has not read yet).
func sendFeedStream(client: APNsClient, notification: PushNotification, deviceTokens: [DeviceToken], window: Int) async -> Int {
    let (stream, input) = AsyncStream.makeStream(of: DeviceToken.self)
    let producer = Task {
        for token in deviceTokens { input.yield(token) }
        input.finish()
    }
    let accepted = await sendFeed(client: client, notification: notification, tokens: stream, window: window)
    await producer.value
    return accepted
}

/// The streamed batch over any sequence of tokens, from a nonisolated function.
func sendFeed(client: APNsClient, notification: PushNotification, tokens: some AsyncSequence<DeviceToken, Never> & Sendable, window: Int) async -> Int {
    await client.send(notification, to: tokens, maxConcurrency: window) { _, _ in }.accepted
}

/// Token `index` of the benchmark: 32 bytes, the index big-endian in the first 8, 0xA5 in
/// the rest; `buffer` (32 bytes) is reused.
func benchToken(_ index: Int, buffer: inout [UInt8]) throws -> DeviceToken {
    buffer.withUnsafeMutableBytes { $0.storeBytes(of: UInt64(index).bigEndian, toByteOffset: 0, as: UInt64.self) }
    return try DeviceToken(bytes: buffer)
}

/// The benchmark's tokens made as they are read (the `feedgen` mode), as a producer that
/// never holds them all would hand them over.
struct GeneratedTokens: AsyncSequence, Sendable {
    let count: Int

    struct AsyncIterator: AsyncIteratorProtocol {
        let count: Int
        var next = 0
        var buffer = [UInt8](repeating: 0xA5, count: 32)

        mutating func next() async -> DeviceToken? { take() }

        mutating func next(isolation actor: isolated (any Actor)?) async -> DeviceToken? { take() }

        private mutating func take() -> DeviceToken? {
            guard next < count, let token = try? benchToken(next, buffer: &buffer) else { return nil }
            next += 1
            return token
        }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(count: count) }
}

/// The device tokens as an `AsyncSequence` that hands them out one by one, as a database
/// cursor or a queue consumer would (the `feed` mode). Its iterator reads where it is
/// called (`next(isolation:)`), as the standard library's sequences do.
struct TokenCursor: AsyncSequence, Sendable {
    let tokens: [DeviceToken]

    struct AsyncIterator: AsyncIteratorProtocol {
        let tokens: [DeviceToken]
        var next = 0

        mutating func next() async -> DeviceToken? {
            take()
        }

        mutating func next(isolation actor: isolated (any Actor)?) async -> DeviceToken? {
            take()
        }

        private mutating func take() -> DeviceToken? {
            guard next < tokens.count else { return nil }
            defer { next += 1 }
            return tokens[next]
        }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(tokens: tokens) }
}
