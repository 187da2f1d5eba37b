import Foundation
import Testing
@testable import APNsTransport

/// A server that answers every request it took, says GOAWAY, and resets the connection
/// while the client is still writing (Python's `h2` and `ssl`, not our code).
///
/// The answers are in the client's socket before the reset: the server waits until the
/// client's kernel has acknowledged every byte it sent (`TIOCOUTQ` = 0), then closes with
/// `SO_LINGER` 0. Each answer is its own TLS record, and the client reads one record per
/// round before it writes the requests the answer freed a stream for, so its next write
/// meets the reset (ECONNRESET or EPIPE) with most answers still unread. A reset does not
/// empty the receive queue: those answers are the requests' outcomes. Before the client
/// read what was left after a failed write, about 199 of the 200 failed as
/// `connectionClosed` with `mayHaveReachedAPNs`, though APNs had answered them 200.
@Suite("A server that answers, says GOAWAY and resets while the client writes")
struct ClosedAfterAnswersTests {
    @Test("every answer in the socket reaches its notification; the rest go again on a new connection")
    func answersBeforeTheResetCount() async throws {
        let pki = try TestPKI.get()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("apns-reset-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let script = directory.appendingPathComponent("server.py").path
        let record = directory.appendingPathComponent("answered.txt").path
        try Self.script.write(toFile: script, atomically: true, encoding: .utf8)
        let server = try BackgroundProcess("/usr/bin/python3", [script, pki.path("server.pem"), pki.path("server.key"), record],
                                           log: "apns-reset")
        defer { server.stop() }
        guard let port = server.waitForPortLine() else {
            Issue.record("the server did not start: \(server.log)")
            return
        }

        let (client, transport) = try IndependentPeerClient.make(
            port: port, way: .batch, authentication: .token, requestTimeout: .seconds(60))
        let notification = PushNotification(payload: .alert(title: "Reset", body: "Hello"), topic: .bundleID("com.example.app"))
        let deviceTokens = try IndependentPeerClient.deviceTokens(1_000, fill: 0x42, indexAt: 24..<32)
        let outcomes = await client.send(notification, to: deviceTokens, maxConcurrency: 1_000)
        let statistics = transport.statistics
        await client.shutdown()
        server.stop()

        // What the server answered on the connection it then reset (device tokens in hex).
        let answeredBeforeReset = try String(contentsOfFile: record, encoding: .utf8).split(separator: "\n").map(String.init)
        #expect(answeredBeforeReset.count == 200, "\(server.log)")
        var failed: [String] = []
        for outcome in outcomes {
            guard case .success = outcome.result else {
                failed.append("\(outcome.deviceToken.hexString.suffix(6)): \(outcome.result)")
                continue
            }
        }
        #expect(outcomes.count == 1_000)
        #expect(failed.isEmpty, "\(failed.count) not accepted, e.g. \(failed.prefix(3))")
        #expect(statistics.goAwaysReceived == 1)
        // The first connection's end was the server's, after it had answered everything
        // it took: not a connection lost with requests of unknown fate.
        #expect(statistics.connectionsLost == 0)
        #expect(statistics.requestsRequeued > 0, "no request was sent above the GOAWAY's last-stream-id")
    }

    /// Arguments: certificate, key, and the file where it writes the device tokens it
    /// answered on its first connection. Prints `PORT <n>`. The first connection takes
    /// 200 requests (its stream limit), answers them one TLS record each, all in one send
    /// with a GOAWAY after them (TLS over memory BIOs), waits for the client to acknowledge
    /// every byte, and resets; later connections answer every request at once.
    static let script = #"""
    import fcntl, socket, ssl, struct, sys, termios, threading, time
    import h2.config, h2.connection, h2.events, h2.settings

    CERT, KEY, RECORD = sys.argv[1], sys.argv[2], sys.argv[3]
    STREAMS = 200
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(CERT, KEY)
    context.set_alpn_protocols(["h2"])
    listener = socket.socket(); listener.bind(("127.0.0.1", 0)); listener.listen(16)
    print("PORT %d" % listener.getsockname()[1], flush=True)
    connections = [0]

    class TLS:
        """TLS over memory BIOs, so that many records can leave in one send."""
        def __init__(self, sock):
            self.sock, self.incoming, self.outgoing = sock, ssl.MemoryBIO(), ssl.MemoryBIO()
            self.tls = context.wrap_bio(self.incoming, self.outgoing, server_side=True)
            while True:
                try:
                    self.tls.do_handshake(); break
                except ssl.SSLWantReadError:
                    self.flush()
                    data = sock.recv(65536)
                    if not data: raise EOFError
                    self.incoming.write(data)
            self.flush()
        def flush(self):
            data = self.outgoing.read()
            if data: self.sock.sendall(data)
        def record(self, data):
            """One TLS record, held until flush."""
            if data: self.tls.write(data)
        def recv(self):
            while True:
                try:
                    return self.tls.read(65536)
                except ssl.SSLWantReadError:
                    self.flush()
                    data = self.sock.recv(65536)
                    if not data: return b""
                    self.incoming.write(data)

    def answer(conn, tls, stream_id):
        conn.send_headers(stream_id, [(":status", "200"), ("apns-id", "00000000-0000-4000-8000-%012x" % stream_id)], end_stream=True)
        tls.record(conn.data_to_send())

    def serve(sock, first):
        tls = TLS(sock)
        conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=False, header_encoding="utf-8"))
        conn.local_settings = h2.settings.Settings(client=False, initial_values={h2.settings.SettingCodes.MAX_CONCURRENT_STREAMS: STREAMS})
        conn.initiate_connection()
        tls.record(conn.data_to_send()); tls.flush()
        paths, complete = {}, []
        while True:
            data = tls.recv()
            if not data:
                return
            for event in conn.receive_data(data):
                if isinstance(event, h2.events.RequestReceived):
                    paths[event.stream_id] = dict(event.headers).get(":path", "")
                elif isinstance(event, h2.events.StreamEnded):
                    complete.append(event.stream_id)
            tls.record(conn.data_to_send())
            if not first:
                for stream_id in complete:
                    answer(conn, tls, stream_id)
                complete.clear()
                tls.flush()
            elif len(complete) >= STREAMS:
                taken = complete[:STREAMS]
                with open(RECORD, "w") as record:
                    record.write("".join(paths[s].rsplit("/", 1)[-1] + "\n" for s in taken))
                # Every answer its own record, then GOAWAY, all in one send.
                for stream_id in taken:
                    answer(conn, tls, stream_id)
                conn.close_connection(last_stream_id=max(taken))
                tls.record(conn.data_to_send())
                tls.flush()
                # Every byte in the client's receive queue, then a reset (not a FIN).
                end = time.time() + 5
                while time.time() < end:
                    pending = struct.unpack("i", fcntl.ioctl(sock.fileno(), termios.TIOCOUTQ, b"\0\0\0\0"))[0]
                    if pending == 0:
                        break
                    time.sleep(0.0002)
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                sock.close()
                return
            else:
                tls.flush()

    while True:
        sock, _ = listener.accept()
        connections[0] += 1
        threading.Thread(target=serve, args=(sock, connections[0] == 1), daemon=True).start()
    """#
}
