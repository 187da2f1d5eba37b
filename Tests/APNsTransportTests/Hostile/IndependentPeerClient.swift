import Foundation
import Synchronization
@testable import APNsTransport

/// The client side of the tests against servers that are not ours (Python's h2, Go's
/// net/http): one transport and client made the same way, and the four ways a caller
/// sends, so that each server is met by the same client.
enum IndependentPeerClient {
    /// How the client sends.
    enum Way: String, CaseIterable, Sendable {
        /// `send(_:to:maxConcurrency:)`, outcomes collected.
        case batch
        /// `send(_:to:maxConcurrency:onOutcome:)`, outcomes streamed.
        case streamed
        /// One `send(_:to:)` per notification from many tasks.
        case single
        /// The same from tasks that prefer the transport's I/O thread
        /// (`withTaskExecutorPreference(client.taskExecutor)`), with every connection on it.
        case singleOnIOThread
    }

    /// How the client authenticates: a provider token on every request, or a client
    /// certificate in the TLS handshake (the server then requires one from the test CA).
    enum Authentication: String, CaseIterable, Sendable {
        case token
        case certificate
    }

    /// A client of two connections to `port` on localhost, trusting the test CA, with
    /// quick reconnects and up to four attempts per notification.
    static func make(
        port: Int, way: Way, authentication: Authentication, requestTimeout: Duration
    ) throws -> (client: APNsClient, transport: HTTP2Transport) {
        let pki = try TestPKI.get()
        let environment = APNsEnvironment.custom(host: "localhost", port: port)
        let identity = authentication == .certificate
            ? try ClientIdentity(certificatePEM: pki.text("client.pem"), privateKeyPEM: pki.text("client.key")) : nil
        var configuration = HTTP2Transport.Configuration(
            environment: environment,
            tls: TLSConfiguration(trustRoots: .certificates(try pki.text("ca.pem")), clientIdentity: identity),
            connectionCount: 2,
            reconnectBackoffBase: .milliseconds(5),
            reconnectBackoffMax: .milliseconds(50)
        )
        if way == .singleOnIOThread { configuration.threadPlacement = .taskExecutorThread }
        let transport = HTTP2Transport(configuration: configuration)
        let credentials: APNsCredentials = switch authentication {
        case .token:
            .providerToken(try ProviderTokenCache(
                key: ProviderKey(pemRepresentation: try pki.text("client.key")), keyID: "ABC123DEFG", teamID: "DEF123GHIJ"))
        case .certificate:
            .certificate
        }
        let client = APNsClient(
            environment: environment,
            credentials: credentials,
            transport: transport,
            retryPolicy: RetryPolicy(maxAttempts: 4, baseDelay: .milliseconds(5), maxDelay: .milliseconds(40)),
            requestTimeout: requestTimeout
        )
        return (client, transport)
    }

    /// `count` distinct device tokens of 32 bytes: `fill`, with the index, big-endian, in
    /// the 8 bytes at `indexAt` (a server that draws fates from the token replays a seed
    /// only with the same tokens).
    static func deviceTokens(_ count: Int, fill: UInt8, indexAt: Range<Int>) throws -> [DeviceToken] {
        try (0..<count).map { index in
            var bytes = [UInt8](repeating: fill, count: 32)
            withUnsafeBytes(of: UInt64(index).bigEndian) { bytes.replaceSubrange(indexAt, with: $0) }
            return try DeviceToken(bytes: bytes)
        }
    }

    /// Sends `notification` to every token the way `way` says, with `concurrency` in
    /// flight (the batch's window, or that many tasks), and returns one outcome per send.
    static func send(
        _ notification: PushNotification, to deviceTokens: [DeviceToken], way: Way, concurrency: Int, client: APNsClient
    ) async -> [APNsOutcome] {
        switch way {
        case .batch:
            return await client.send(notification, to: deviceTokens, maxConcurrency: concurrency)
        case .streamed:
            let collected = Mutex<[APNsOutcome]>([])
            _ = await client.send(notification, to: deviceTokens, maxConcurrency: concurrency) { _, outcome in
                collected.withLock { $0.append(outcome) }
            }
            return collected.withLock { $0 }
        case .single, .singleOnIOThread:
            let executor = way == .singleOnIOThread ? client.taskExecutor : nil
            return await withTaskExecutorPreference(executor) { await withTaskGroup(of: [APNsOutcome].self) { group in
                for task in 0..<concurrency {
                    let mine = stride(from: task, to: deviceTokens.count, by: concurrency).map { deviceTokens[$0] }
                    group.addTask {
                        var results: [APNsOutcome] = []
                        for token in mine {
                            do throws(APNsError) {
                                results.append(APNsOutcome(deviceToken: token, result: .success(try await client.send(notification, to: token))))
                            } catch {
                                results.append(APNsOutcome(deviceToken: token, result: .failure(error)))
                            }
                        }
                        return results
                    }
                }
                var all: [APNsOutcome] = []
                for await part in group { all += part }
                return all
            } }
        }
    }
}
