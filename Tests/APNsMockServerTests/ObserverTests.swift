import Foundation
import Synchronization
import Testing
@testable import APNsMockServer

#if canImport(Glibc)
import Glibc
#endif

/// Opens a plain TCP connection to 127.0.0.1:`port` (no TLS: the server counts it as open
/// from accept); returns the descriptor.
private func openTCP(port: Int) throws -> Int32 {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw MockAPNsServerError("socket() failed") }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = UInt16(port).bigEndian
    address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
    let result = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    guard result == 0 else {
        close(fd)
        throw MockAPNsServerError("connect() failed: errno \(errno)")
    }
    return fd
}

/// Waits (bounded) until `condition` holds.
private func eventually(_ condition: () -> Bool) async throws {
    for _ in 0..<2_000 where !condition() {
        try await Task.sleep(for: .milliseconds(10))
    }
}

@Suite("Observing processed requests")
struct ObserverTests {
    @Test("every processed request is reported with its apns-id and answer, without recording")
    func reportsEveryRequest() async throws {
        let seen = Mutex<[MockAPNsServer.ProcessedRequest]>([])
        try await withServerAndCurl(.init(bundleIDs: ["com.example.app"], recordedRequestLimit: 0)) { server, curl in
            server.observeRequests { request in seen.withLock { $0.append(request) } }
            let topic = "apns-topic: com.example.app"
            let ids = (1...4).map { "5e1f0000-0000-4000-8000-00000000000\($0)" }
            let goneToken = String(repeating: "ab", count: 32)
            server.respond(toDeviceToken: goneToken, with: .unregistered())

            let ok = try await curl.send(port: server.port, path: "/3/device/\(sampleDeviceToken)",
                                         headers: [topic, "apns-id: \(ids[0])"])
            let gone = try await curl.send(port: server.port, path: "/3/device/\(goneToken)",
                                           headers: [topic, "apns-id: \(ids[1])"])
            server.failNextRequests(1, with: .serviceUnavailable)
            let busy = try await curl.send(port: server.port, path: "/3/device/\(sampleDeviceToken)",
                                           headers: [topic, "apns-id: \(ids[2])"])
            server.dropConnection(atRequest: 1)
            let dropped = try await curl.send(port: server.port, path: "/3/device/\(sampleDeviceToken)",
                                              headers: [topic, "apns-id: \(ids[3])"])
            // Without an apns-id the server makes one up and reports that one.
            let unnamed = try await curl.send(port: server.port, path: "/3/device/\(sampleDeviceToken)", headers: [topic])
            try await eventually { seen.withLock { $0.count } >= 5 }

            let statuses: [Int] = [ok.status, gone.status, busy.status, dropped.status, unnamed.status]
            #expect(statuses == [200, 410, 503, 0, 200])
            let reports = seen.withLock { $0 }
            #expect(Array(reports.map(\.apnsID).prefix(4)) == ids)
            #expect(reports.map(\.status) == [200, 410, 503, nil, 200] as [Int?])
            #expect(reports.map(\.sequenceNumber) == [0, 1, 2, 3, 4])
            #expect(reports.last?.apnsID.count == 36)
            #expect(reports.last?.apnsID != ids[3])
            #expect(server.recordedRequests.isEmpty)

            // Removed: no more reports.
            server.observeRequests(nil)
            _ = try await curl.send(port: server.port, path: "/3/device/\(sampleDeviceToken)", headers: [topic])
            try await waitForRequests(server, count: 6)
            #expect(server.statistics.requests == 6)
            #expect(seen.withLock { $0.count } == 5)
        }
    }

    @Test("open connections are counted as they open and close, with the peak")
    func openConnections() async throws {
        try await withMockAPNsServer(configuration: .init(listensOnIPv6: false)) { server in
            #expect(server.statistics.openConnections == 0)
            let sockets = try (0..<3).map { _ in try openTCP(port: server.port) }
            try await eventually { server.statistics.openConnections == 3 }
            #expect(server.statistics.openConnections == 3)
            close(sockets[0])
            try await eventually { server.statistics.openConnections == 2 }
            #expect(server.statistics.openConnections == 2)
            for fd in sockets.dropFirst() { close(fd) }
            try await eventually { server.statistics.openConnections == 0 }
            let statistics = server.statistics
            #expect(statistics.openConnections == 0)
            #expect(statistics.peakOpenConnections == 3)
            #expect(statistics.connections == 3)
        }
    }
}
