import Foundation
import Synchronization

/// The channels of every bundle ID, in creation order, behind one `Mutex`: the server
/// thread creates, reads and deletes them; tests read and seed them from any thread.
final class ChannelRegistry: Sendable {
    private struct Storage {
        var byBundle: [String: [MockChannel]] = [:]
        var limit: Int
    }

    /// Apple: "you can maintain up to 10,000 channels for your app in the development and
    /// production environment, respectively" (Sending channel management requests to APNs).
    static let appleLimit = 10_000

    private let storage = Mutex(Storage(limit: ChannelRegistry.appleLimit))

    /// The most channels one bundle ID may have.
    var limit: Int {
        get { storage.withLock { $0.limit } }
        set { storage.withLock { $0.limit = max(0, newValue) } }
    }

    /// Creates a channel with a fresh ID, or returns `nil` when `bundleID` has `limit` channels.
    func create(bundleID: String, storagePolicy: Int) -> MockChannel? {
        storage.withLock { storage in
            var channels = storage.byBundle[bundleID, default: []]
            guard channels.count < storage.limit else { return nil }
            var id: String
            repeat {
                var generator = SystemRandomNumberGenerator()
                let bytes = (0..<16).map { _ in UInt8.random(in: 0...255, using: &generator) }
                id = Data(bytes).base64EncodedString()
            } while channels.contains { $0.id == id }
            let channel = MockChannel(id: id, bundleID: bundleID, storagePolicy: storagePolicy)
            channels.append(channel)
            storage.byBundle[bundleID] = channels
            return channel
        }
    }

    /// The channel `id` of `bundleID`, if it exists.
    func channel(_ id: String, bundleID: String) -> MockChannel? {
        storage.withLock { $0.byBundle[bundleID]?.first { $0.id == id } }
    }

    /// Every channel of `bundleID`, in creation order.
    func channels(bundleID: String) -> [MockChannel] {
        storage.withLock { $0.byBundle[bundleID] ?? [] }
    }

    /// Every channel of every bundle ID.
    var all: [MockChannel] {
        storage.withLock { storage in
            storage.byBundle.keys.sorted().flatMap { storage.byBundle[$0] ?? [] }
        }
    }

    /// Deletes the channel; `false` if it did not exist.
    func delete(_ id: String, bundleID: String) -> Bool {
        storage.withLock { storage in
            guard let index = storage.byBundle[bundleID]?.firstIndex(where: { $0.id == id }) else { return false }
            storage.byBundle[bundleID]?.remove(at: index)
            return true
        }
    }

    /// Deletes every channel.
    func removeAll() {
        storage.withLock { $0.byBundle.removeAll() }
    }
}
