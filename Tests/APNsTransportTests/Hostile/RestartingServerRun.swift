import Foundation
import TestTools
import Testing
@testable import APNsTransport

/// A server that is not ours and restarts gracefully (Go's, Rust's, Netty's), in a child
/// process on 127.0.0.1 with an OS-chosen port: one of the peers under `Hostile/`, built by
/// ``PeerProgram``, given the test's certificate and key, a record file, the seed and its
/// own arguments; it prints `PORT <n>` once listening and writes one JSON line per request
/// read, per graceful shutdown and per error to the record.
final class PeerServerProcess: Sendable {
    let background: BackgroundProcess
    /// Its port on 127.0.0.1.
    let port: Int
    let recordPath: String
    /// Files made for the server, removed with the record.
    let files: [String]

    /// Starts the peer in `Hostile/<directory>` with `arguments` after the certificate,
    /// key, record path and seed; `name` names it in errors, `files` are removed at the end.
    init(_ directory: String, name: String, seed: UInt64, arguments: [String], files: [String] = []) async throws {
        let pki = try TestPKI.get()
        let command = try await PeerProgram.command(
            in: URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent(directory).path)
        recordPath = FileManager.default.temporaryDirectory
            .appendingPathComponent("apns-\(directory)-\(UUID().uuidString).jsonl").path
        self.files = files
        background = try BackgroundProcess(command[0], Array(command.dropFirst()) + [
            pki.path("server.pem"), pki.path("server.key"), recordPath, String(seed),
        ] + arguments, log: "apns-\(directory)")
        // A JVM takes seconds to start on a busy machine.
        guard let found = background.waitForPortLine(seconds: 60) else {
            background.stop()
            throw HarnessError(description: "the \(name) server did not start: \(background.log)")
        }
        port = found
    }

    /// What the server printed (its port, and any error it logged).
    var log: String { background.log }

    /// Stops the process (idempotent).
    func stop() { background.stop() }

    /// What it wrote: one event per request read, per graceful shutdown, per error.
    func record() throws -> ChaosRecord { try ChaosRecord.read(contentsOf: recordPath) }

    deinit {
        for file in [recordPath] + files { try? FileManager.default.removeItem(atPath: file) }
    }
}

/// One case of the client against a ``PeerServerProcess``: the notifications sent one
/// of the four ways, and the checks every such server shares: outcomes held against its
/// record; unless the server may drop connections (`dropsConnections`), no notification
/// may end `failed` and no connection may be lost; graceful restarts with requests on
/// both sides; every fate met.
struct RestartingServerRun {
    let outcomes: [APNsOutcome]
    let statistics: HTTP2Transport.Statistics
    /// The events that are requests read.
    let requests: [ChaosRecord.Event]
    /// The server generations that read requests.
    let generations: Set<Int>
    /// Graceful shutdowns the server started.
    let restarts: Int
    /// What disagrees with the server's record; a case adds what is its server's own.
    var findings: [String]
    /// Seed, way and authentication, for messages.
    let label: String
    /// Whether the server may drop connections with requests unanswered (see ``run``).
    let dropsConnections: Bool

    /// Sends `notification` to `deviceTokens` through a client of `server` (600 in
    /// flight), shuts both down and reads the server's record. `name` names the server in
    /// findings of the problems it saw in requests.
    ///
    /// `dropsConnections`: whether the server may end a connection with requests it read
    /// still unanswered (it writes `connection_dropped` down then). If not, no
    /// notification may fail and no connection may be lost.
    static func run(
        against server: PeerServerProcess, name: String, seed: UInt64,
        way: IndependentPeerClient.Way, authentication: IndependentPeerClient.Authentication,
        notification: PushNotification, deviceTokens: [DeviceToken], dropsConnections: Bool = false
    ) async throws -> RestartingServerRun {
        let (client, transport) = try IndependentPeerClient.make(
            port: server.port, way: way, authentication: authentication,
            // A call's attempts share this deadline; the run is not about timeouts, and the
            // whole suite running at once can stretch a call's retries over many seconds.
            requestTimeout: .seconds(60))
        let outcomes = await IndependentPeerClient.send(
            notification, to: deviceTokens, way: way, concurrency: 600, client: client)
        let statistics = transport.statistics
        await client.shutdown()
        server.stop()

        let record = try server.record()
        var findings = ChaosRecord.check(
            outcomes: outcomes, expected: deviceTokens, record: record, providerTokens: authentication == .token)
        for event in record.events where !event.problems.isEmpty {
            findings.append("\(event.token ?? "?"): \(name) found \(event.problems.joined(separator: "; "))")
        }
        for outcome in outcomes where !dropsConnections {
            if case .failure(.failed(let failure)) = outcome.result {
                findings.append("\(outcome.deviceToken.hexString): failed \(failure.code) (\(failure)), though the server dropped no connection")
            }
        }
        let requests = record.events.filter { $0.token != nil }
        return RestartingServerRun(
            outcomes: outcomes, statistics: statistics, requests: requests,
            generations: Set(requests.compactMap(\.generation)),
            restarts: record.events.filter { $0.fate == "shutdown_started" }.count,
            findings: findings, label: "seed \(seed), \(way), \(authentication)", dropsConnections: dropsConnections)
    }

    /// The shared checks: no finding, and the run met what it is about (graceful restarts
    /// with requests on both sides, no connection lost, every fate the server draws).
    func expectShared(sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(findings.isEmpty, "\(label): \(findings.prefix(8).joined(separator: "\n"))", sourceLocation: sourceLocation)
        #expect(generations.count >= 3, "\(label): requests read by generations \(generations.sorted())", sourceLocation: sourceLocation)
        #expect(restarts >= 2, "\(label): \(restarts) graceful shutdowns", sourceLocation: sourceLocation)
        if !dropsConnections {
            #expect(statistics.connectionsLost == 0, "\(label): \(statistics.connectionsLost) connections lost", sourceLocation: sourceLocation)
        }
        let fates = Set(requests.map(\.fate))
        for fate in ["ok", "delay_ok", "BadDeviceToken", "Unregistered", "TooManyRequests", "ServiceUnavailable", "InternalServerError"] {
            #expect(fates.contains(fate), "\(label): no request met '\(fate)'", sourceLocation: sourceLocation)
        }
    }

    /// Notifications accepted.
    var accepted: Int { outcomes.filter { if case .success = $0.result { true } else { false } }.count }

    /// The report line's shared part.
    var summary: String {
        "\(label), \(outcomes.count) notifications, \(requests.count) requests read by \(generations.count) generations, \(restarts) graceful shutdowns, \(statistics.goAwaysReceived) GOAWAYs, \(statistics.requestsRequeued) requests sent again, \(statistics.reconnects) reconnects, \(accepted) accepted"
    }
}
