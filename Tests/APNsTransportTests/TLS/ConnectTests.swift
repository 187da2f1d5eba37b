import Foundation
import Testing
@testable import APNsTransport
#if canImport(Glibc)
import Glibc
#endif

/// TCP connect failures: refused, timed out, unresolvable.
@Suite(.blockingIO)
struct ConnectTests {
    /// Found from outside over a 1.2 s round-trip path: a handshake that only took too
    /// long was a tlsFailure, which reads as a certificate problem on a dashboard.
    @Test("a TLS handshake that does not finish within the connect timeout is a connection failure (a slow path), not a TLS failure")
    func handshakeTimeoutIsAConnectionFailure() throws {
        // The kernel completes the TCP handshake into the backlog; nobody accepts, so the
        // ClientHello goes unanswered.
        let silent = try LoopbackListener(address: "127.0.0.1", port: 0)
        defer { silent.close() }
        let error = connectionError(TLSEndpoint(host: "127.0.0.1", port: silent.port), .default, timeout: .milliseconds(300))
        #expect(error?.code == .connectionFailed, "\(String(describing: error))")
        #expect(error?.mayHaveReachedAPNs == false)
        #expect(error?.isPermanent == false)
        #expect(error?.detail?.contains("did not finish within the connect timeout") == true, "\(String(describing: error))")
    }

    @Test func refusedPortIsAConnectionFailure() throws {
        let port = try unusedLoopbackPort()
        let error = connectionError(TLSEndpoint(host: "127.0.0.1", port: port), .default)
        #expect(error?.code == .connectionFailed)
        #expect(error?.mayHaveReachedAPNs == false)
        #expect(error?.detail?.contains("connection refused") == true, "\(String(describing: error))")
    }

    @Test func unresolvableHostIsAConnectionFailure() {
        let error = connectionError(TLSEndpoint(host: "no-such-host.invalid", port: 443), .default)
        #expect(error?.code == .connectionFailed)
        #expect(error?.detail?.contains("cannot resolve no-such-host.invalid") == true, "\(String(describing: error))")
    }

    @Test func portOutOfRangeIsAConnectionFailure() {
        let error = connectionError(TLSEndpoint(host: "127.0.0.1", port: 70000), .default)
        #expect(error?.code == .connectionFailed)
    }

    /// A listener whose accept queue is full drops new SYNs (Linux), so connect hangs
    /// until our deadline.
    @Test func connectTimesOutAgainstAFullBacklog() throws {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(listener) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        _ = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        #expect(listen(listener, 0) == 0)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &length) } }
        // Fill the queue with connections nobody accepts.
        var fillers: [Int32] = []
        defer { fillers.forEach { close($0) } }
        for _ in 0..<4 {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            _ = fcntl(fd, F_SETFL, O_NONBLOCK)
            _ = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
            fillers.append(fd)
        }
        usleep(100_000)
        let port = Int(UInt16(bigEndian: address.sin_port))
        let error = connectionError(TLSEndpoint(host: "127.0.0.1", port: port), try .trustingTestCA(), timeout: .milliseconds(700))
        #expect(error?.code == .connectionFailed || error?.code == .tlsFailure)
        #expect(error?.mayHaveReachedAPNs == false)
        #expect(error?.detail?.contains("timed out") == true || error?.detail?.contains("did not finish within") == true, "\(String(describing: error))")
    }
}
