import APNsTransport

// The `tasks` mode's driver, in a file of its own: a function declared here is not
// isolated to the main actor (top-level code in main.swift is), so the task group's
// parent — which adds a child per notification and awaits each result — runs on the
// global executor, or on `executor`, as a server's request handler would, rather than
// on the main thread.

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
