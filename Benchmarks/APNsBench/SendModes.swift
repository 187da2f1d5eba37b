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
