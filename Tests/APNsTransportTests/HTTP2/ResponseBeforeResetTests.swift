import APNsCore
import CNGHTTP2
import Logging
import Synchronization
import Testing
@testable import APNsTransport

#if canImport(Glibc)
import Glibc
#endif

/// A byte stream whose server (nghttp2's, in memory) answers every request at once and,
/// on the first connection, then fails the next read the way `TLSStream` does when the
/// peer resets the TCP connection after its last answer (`SSL_read` → ECONNRESET →
/// a thrown `connectionClosed`): the answer and the reset reach the client in one read
/// pass, deterministically.
private final class AnswerThenResetStream: HTTP2ByteStream {
    /// The read end of a pipe that always holds a byte, so poll(2) always reports it
    /// readable and the connection reads whenever it polls.
    let fileDescriptor: Int32
    private let writeEnd: Int32
    private let server = InMemoryHTTP2Server(maxConcurrentStreams: 100)
    private let resets: Bool
    private let answered: @Sendable (String) -> Void
    private var handled = 0
    private var output: [UInt8] = []
    private var closed = false

    init(resets: Bool, answered: @escaping @Sendable (String) -> Void) {
        var ends: [Int32] = [-1, -1]
        _ = pipe(&ends)
        fileDescriptor = ends[0]
        writeEnd = ends[1]
        var one: UInt8 = 1
        _ = Glibc.write(writeEnd, &one, 1)
        self.resets = resets
        self.answered = answered
    }

    func read(into buffer: UnsafeMutableRawBufferPointer) throws(APNsTransportError) -> TLSIOResult {
        if output.isEmpty { output = server.output() }
        if !output.isEmpty {
            let count = min(buffer.count, output.count)
            output.withUnsafeBytes { buffer.copyMemory(from: UnsafeRawBufferPointer(rebasing: $0[0..<count])) }
            output.removeFirst(count)
            return .done(count)
        }
        if resets && handled > 0 {
            throw .connectionClosed("SSL_read failed: Connection reset by peer")
        }
        return .wantRead
    }

    func write(_ buffer: UnsafeRawBufferPointer) throws(APNsTransportError) -> TLSIOResult {
        _ = server.receive(Array(buffer))
        while handled < server.completedStreams.count {
            let streamID = server.completedStreams[handled]
            handled += 1
            let apnsID = server.headers[streamID]?.first { $0.name == "apns-id" }?.value ?? ""
            answered(apnsID)
            server.respond(streamID, status: 200, headers: [("apns-id", apnsID)])
        }
        return .done(buffer.count)
    }

    func close() {
        guard !closed else { return }
        closed = true
        Glibc.close(fileDescriptor)
        Glibc.close(writeEnd)
    }
}

@Suite("A connection that fails right after an answer")
struct ResponseBeforeResetTests {
    /// Found by the soak (Benchmarks/Soak, `--seed 3` at 10,000 notifications): a request
    /// the server had answered `200` was sent again, because the answer and a connection
    /// reset arrived in the same read pass. The read loop threw before the answer was
    /// handed over; the stream's record was gone (the stream had closed), so teardown took
    /// the request for never sent and re-queued it: the notification reached APNs twice.
    @Test("an answer read just before the connection fails is delivered, not sent again")
    func answerBeforeResetIsNotResent() async throws {
        let answers = Mutex<[String: Int]>([:])
        let connections = Mutex(0)
        let connector: HTTP2Connector = { _, _ throws(APNsTransportError) -> any HTTP2ByteStream in
            let number = connections.withLock { count -> Int in
                count += 1
                return count
            }
            return AnswerThenResetStream(resets: number == 1) { apnsID in
                answers.withLock { $0[apnsID, default: 0] += 1 }
            }
        }
        let transport = HTTP2Transport(
            configuration: .init(
                environment: .production,
                reconnectBackoffBase: .milliseconds(1),
                reconnectBackoffMax: .milliseconds(10),
                logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })
            ),
            connector: connector
        )
        let request = try devicePush(token: 7, timeout: .seconds(20))
        let result: Result<APNsResponse, APNsTransportError>
        do throws(APNsTransportError) {
            result = .success(try await transport.send(request))
        } catch {
            result = .failure(error)
        }
        await transport.shutdown()

        // The server answered it once, on the first connection, and that answer is the outcome.
        let id = try #require(request.headers.first { $0.name == "apns-id" }?.value)
        #expect(answers.withLock { $0 } == [id: 1])
        #expect((try? result.get().status) == 200)
        #expect(connections.withLock { $0 } == 1)
    }
}
