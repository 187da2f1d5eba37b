import Foundation
import Testing
@testable import APNsTransport

/// The client against an HTTP/2 server that is not ours (Python's `h2`, over Python's
/// `ssl`) and that gives every request a random fate: an answer with each of Apple's
/// common statuses, one with a status and reason Apple does not use, an error whose body
/// is not JSON, a 200 without `apns-id`, a delayed answer, REFUSED_STREAM, INTERNAL_ERROR,
/// GOAWAY with the streams above its last-stream-id left unprocessed, a connection dropped
/// with requests open, a hang, a SETTINGS change of the stream limit (to 0 for a moment,
/// or down to 1), a PING. Answers come framed as APNs frames them or, at random, padded,
/// split over DATA frames, ended by trailers or by an empty DATA frame. The server writes down
/// what it did with each request it read (by device token); the test then holds every
/// outcome the client reported against that record:
///
/// - every notification ends in exactly one outcome;
/// - accepted only if the server's last answer for it was a 200;
/// - rejected with a reason only if the server's last answer carried that reason;
/// - failed with `mayHaveReachedAPNs == false` only if no attempt may have delivered it
///   (each was refused, above a GOAWAY's last-stream-id, or answered with an error);
/// - nothing is sent again after an attempt that may have delivered it (answered 200,
///   reset after it was read, read and never answered): no duplicate delivery;
/// - every attempt of a notification carries the same `apns-id`;
/// - the independent server never found an HTTP/2 error in what the client sent.
///
/// The fates are drawn from a seed and the device token, so a failure names a seed that
/// replays the server's side (the client's timing still varies).
@Suite("An independent HTTP/2 server (Python's h2) that misbehaves at random", .timeLimit(.minutes(30)))
struct IndependentServerFaultTests {
    typealias Way = IndependentPeerClient.Way
    typealias Authentication = IndependentPeerClient.Authentication

    /// The seed (`SWIFT_APNS_CHAOS_SEED`, else random) and the notifications per way
    /// (`SWIFT_APNS_CHAOS_COUNT`, else 1,200): `scripts/chaos.sh` runs longer campaigns.
    static let seed = ProcessInfo.processInfo.environment["SWIFT_APNS_CHAOS_SEED"].flatMap { UInt64($0) }
    static let count = ProcessInfo.processInfo.environment["SWIFT_APNS_CHAOS_COUNT"].flatMap { Int($0) }.map { max(100, $0) } ?? 1_200

    @Test("every outcome agrees with what the server did", arguments: Way.allCases, Authentication.allCases)
    func outcomesAgreeWithTheServer(way: Way, authentication: Authentication) async throws {
        let seed = Self.seed ?? UInt64.random(in: 1...1_000_000)
        let count = Self.count
        let server = try ChaosServer(seed: seed, requiresClientCertificate: authentication == .certificate)
        defer { server.stop() }
        let (client, _) = try IndependentPeerClient.make(
            port: server.port, way: way, authentication: authentication, requestTimeout: .seconds(2))
        let notification = PushNotification(payload: .alert(title: "Chaos", body: "Hello"), topic: .bundleID("com.example.app"))
        let deviceTokens = try IndependentPeerClient.deviceTokens(count, fill: 0x5A, indexAt: 0..<8)
        // The batch's window, or the tasks sending one notification each at a time.
        let concurrency = way == .batch || way == .streamed ? 60 : 40
        let outcomes = await IndependentPeerClient.send(
            notification, to: deviceTokens, way: way, concurrency: concurrency, client: client)
        await client.shutdown()
        server.stop()

        let record = try server.record()
        let findings = ChaosRecord.check(
            outcomes: outcomes, expected: deviceTokens, record: record, providerTokens: authentication == .token)
        #expect(findings.isEmpty, "seed \(seed), \(way), \(authentication): \(findings.prefix(8).joined(separator: "\n"))")
        let summary = Dictionary(grouping: outcomes, by: { outcome -> String in
            switch outcome.result {
            case .success: return "accepted"
            case .failure(.rejected): return "rejected"
            case .failure(.failed(let failure)): return failure.mayHaveReachedAPNs ? "failed, may have reached APNs" : "failed, did not reach APNs"
            case .failure(.invalid): return "invalid"
            }
        }).mapValues(\.count).sorted { $0.key < $1.key }.map { "\($0.value) \($0.key)" }.joined(separator: ", ")
        print("chaos: seed \(seed), \(way), \(authentication), \(count) notifications, \(record.events.count) server events: \(summary); \(findings.count) findings")
        // The run met the faults it is about (not a run where everything was answered 200).
        let fates = Set(record.events.map(\.fate))
        for fate in ["ok", "refuse", "goaway", "after_goaway", "kill", "rst_internal", "Unregistered", "TooManyRequests", "Teapot", "garbage_body"] {
            #expect(fates.contains(fate), "seed \(seed), \(way), \(authentication): no request met '\(fate)'")
        }
        // Answers in every framing RFC 9113 allows here (padded, split, trailers, an empty
        // DATA frame ending the stream), not only as APNs frames them.
        for shape in ["plain", "padded", "split", "trailers", "empty_end", "informational"] {
            #expect(fates.contains("shape:" + shape), "seed \(seed), \(way), \(authentication): no answer was framed '\(shape)'")
        }
    }
}

/// What the chaos server wrote down: one event per request it read, and per connection
/// it ended.
struct ChaosRecord {
    struct Event {
        let fate: String
        let connection: Int
        let stream: Int?
        let token: String?
        let apnsID: String?
        let error: String?
        /// The order in which the server read the request (across connections).
        let sequence: Int
        /// Whether the request carried an `authorization` field (`nil` for events that
        /// are not a request read).
        let authorization: Bool?
        /// What the server found wrong with the request (the Go server checks headers,
        /// body and provider token; the Python server writes none).
        var problems: [String] = []
        /// The server generation that read it (the Go server restarts; `nil` otherwise).
        var generation: Int? = nil
    }

    let events: [Event]

    /// The events a server wrote to `path`, one JSON object per line.
    static func read(contentsOf path: String) throws -> ChaosRecord {
        let text = try String(contentsOfFile: path, encoding: .utf8)
        var events: [Event] = []
        for line in text.split(separator: "\n") {
            guard let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                let fate = object["fate"] as? String
            else { throw HarnessError(description: "unreadable record line: \(line)") }
            events.append(Event(
                fate: fate,
                connection: object["conn"] as? Int ?? 0,
                stream: object["stream"] as? Int,
                token: object["token"] as? String,
                apnsID: object["apns_id"] as? String,
                error: object["error"] as? String,
                sequence: object["seq"] as? Int ?? 0,
                authorization: object["auth"] as? Bool,
                problems: object["problems"] as? [String] ?? [],
                generation: object["gen"] as? Int
            ))
        }
        return ChaosRecord(events: events)
    }

    /// Fates after which the notification cannot have been delivered: refused, above the
    /// GOAWAY's last-stream-id (the request that triggered the GOAWAY is above it too), or
    /// answered with an error status.
    static let undelivered: Set<String> = [
        "refuse", "after_goaway", "goaway", "BadDeviceToken", "Unregistered", "TooManyRequests",
        "ServiceUnavailable", "InternalServerError", "ExpiredProviderToken", "Teapot", "garbage_body",
    ]
    /// Fates after which the notification may have been delivered: answered 200, reset
    /// with INTERNAL_ERROR after it was read, read and never answered.
    static let mayHaveDelivered: Set<String> = ["ok", "delay_ok", "rst_internal", "kill", "hang", "open_when_dropped"]
    /// Answers the client does not retry: the notification's outcome is that rejection.
    static let final: Set<String> = ["BadDeviceToken", "Unregistered", "Teapot", "garbage_body", "ExpiredProviderToken"]
    /// Answers with a status the client sees (the fates of the requests read).
    static let answered: Set<String> = [
        "ok", "delay_ok", "BadDeviceToken", "Unregistered", "TooManyRequests",
        "ServiceUnavailable", "InternalServerError", "ExpiredProviderToken", "Teapot", "garbage_body",
    ]

    /// The disagreements between `outcomes` and the record; empty when they agree.
    ///
    /// `providerTokens`: the client authenticates with provider tokens, so every request
    /// carries `authorization`; otherwise with a certificate, and none may (APNs rejects a
    /// provider token on a certificate connection with InvalidProviderToken).
    static func check(outcomes: [APNsOutcome], expected: [DeviceToken], record: ChaosRecord, providerTokens: Bool) -> [String] {
        var findings: [String] = []
        var byToken: [String: [Event]] = [:]
        var droppedConnections = Set<Int>()
        for event in record.events {
            if let token = event.token { byToken[token, default: []].append(event) }
            if let authorization = event.authorization, authorization != providerTokens {
                findings.append("\(event.token ?? "?"): a request \(authorization ? "with" : "without") authorization on connection \(event.connection)")
            }
            // A handshake cut short (the client shutting down) is not one; a refused certificate is.
            if event.fate == "tls_error", event.error?.lowercased().contains("certificate") == true {
                findings.append("the server refused the client's certificate: \(event.error ?? "")")
            }
            if event.fate == "connection_dropped" { droppedConnections.insert(event.connection) }
            if event.fate == "h2_error" { findings.append("the server's h2 found an HTTP/2 error in the client's frames on connection \(event.connection): \(event.error ?? "")") }
        }
        var seen: [String: Int] = [:]
        for outcome in outcomes { seen[outcome.deviceToken.hexString, default: 0] += 1 }
        for token in expected where seen[token.hexString] != 1 {
            findings.append("\(token.hexString): \(seen[token.hexString] ?? 0) outcomes, not 1")
        }
        if outcomes.count != expected.count { findings.append("\(outcomes.count) outcomes for \(expected.count) notifications") }

        for outcome in outcomes {
            let token = outcome.deviceToken.hexString
            // In the order the server read the attempts, not the order it wrote them down.
            let events = (byToken[token] ?? []).sorted { $0.sequence < $1.sequence }
            let story = events.map { "\($0.fate)@\($0.connection)/\($0.stream ?? 0)" }.joined(separator: " ")
            let ids = Set(events.compactMap(\.apnsID))
            if ids.count > 1 { findings.append("\(token): attempts carried different apns-ids \(ids.sorted()) [\(story)]") }
            // Nothing goes again after an attempt that may have delivered it (the default
            // policy does not retry those): no duplicate delivery.
            if let delivering = events.first(where: { mayHaveDelivered.contains($0.fate) }),
                events.contains(where: { $0.sequence > delivering.sequence })
            {
                findings.append("\(token): sent again after an attempt the server met with \(delivering.fate) [\(story)]")
            }
            let lastAnswer = events.last(where: { answered.contains($0.fate) })
            switch outcome.result {
            case .success:
                if lastAnswer?.fate != "ok" && lastAnswer?.fate != "delay_ok" {
                    findings.append("\(token): accepted, but the server's last answer was \(lastAnswer?.fate ?? "none") [\(story)]")
                }
            case .failure(.rejected(let rejection)):
                let reason = rejection.reason.map { "\($0)" } ?? "none"
                // A body that is not Apple's JSON leaves the reason unknown.
                let answeredReason = lastAnswer.map { $0.fate == "garbage_body" ? "none" : $0.fate }
                if answeredReason != reason {
                    findings.append("\(token): rejected \(reason), but the server's last answer was \(lastAnswer?.fate ?? "none") [\(story)]")
                }
            case .failure(.failed(let failure)):
                // An answer the client neither retries nor can miss (its connection stayed up).
                if let last = events.last, final.contains(last.fate), !droppedConnections.contains(last.connection) {
                    findings.append("\(token): failed \(failure.code), but the server's last answer was \(last.fate) [\(story)]")
                }
                if !failure.mayHaveReachedAPNs, let delivering = events.first(where: { !undelivered.contains($0.fate) }) {
                    findings.append("\(token): failed \(failure.code) with mayHaveReachedAPNs false, but the server \(delivering.fate) it [\(story)]")
                }
                // A 200 the client did not read is possible only if its connection was dropped.
                if let last = lastAnswer, last.fate == "ok" || last.fate == "delay_ok", last.sequence == events.last?.sequence,
                    !droppedConnections.contains(last.connection)
                {
                    findings.append("\(token): failed \(failure.code), but the server answered 200 on a connection it closed cleanly [\(story)]")
                }
            case .failure(.invalid(let error)):
                findings.append("\(token): invalid \(error)")
            }
        }
        return findings
    }
}

/// The Python server (below) in a child process, on 127.0.0.1 with an OS-chosen port.
final class ChaosServer: Sendable {
    let background: BackgroundProcess
    let port: Int
    let logPath: String
    let scriptPath: String

    /// `requiresClientCertificate`: the server asks for a client certificate and accepts
    /// only one issued by the test CA (``TestPKI``'s `ca.pem`).
    init(seed: UInt64, requiresClientCertificate: Bool = false) throws {
        let pki = try TestPKI.get()
        let base = FileManager.default.temporaryDirectory.appendingPathComponent("apns-chaos-\(UUID().uuidString)")
        scriptPath = base.path + ".py"
        logPath = base.path + ".jsonl"
        try Self.script.write(toFile: scriptPath, atomically: true, encoding: .utf8)
        background = try BackgroundProcess(
            "/usr/bin/python3", [scriptPath, pki.path("server.pem"), pki.path("server.key"), logPath, String(seed),
             requiresClientCertificate ? pki.path("ca.pem") : ""], log: "apns-chaos")
        guard let found = background.waitForPortLine() else {
            background.stop()
            try? FileManager.default.removeItem(atPath: scriptPath)
            throw HarnessError(description: "the chaos server did not start (python3 with the h2 module is needed): \(background.log)")
        }
        port = found
    }

    func stop() { background.stop() }

    /// The events the server wrote, read after it stopped.
    func record() throws -> ChaosRecord { try ChaosRecord.read(contentsOf: logPath) }

    deinit {
        try? FileManager.default.removeItem(atPath: scriptPath)
        try? FileManager.default.removeItem(atPath: logPath)
    }

    /// A server on Python's `h2` (sans-I/O HTTP/2) and `ssl`, one thread per connection.
    /// Arguments: certificate, key, record path, seed, and the CA whose client certificates
    /// it requires (empty: none asked for). Prints `PORT <n>` when listening.
    static let script = #"""
    import heapq, json, random, select, socket, ssl, sys, threading, time
    import h2.config, h2.connection, h2.errors, h2.events, h2.exceptions, h2.settings

    CERT, KEY, RECORD, SEED, CLIENT_CA = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5]
    lock = threading.Lock()
    record = open(RECORD, "w")
    attempts = {}
    sequence = [0]
    FATES = [("ok", 50), ("BadDeviceToken", 3), ("Unregistered", 3), ("TooManyRequests", 4),
             ("ServiceUnavailable", 3), ("InternalServerError", 2), ("ExpiredProviderToken", 2),
             ("refuse", 6), ("rst_internal", 3), ("delay", 6), ("goaway", 3), ("kill", 0.7),
             ("hang", 0.3), ("settings", 3), ("ping", 2), ("garbage_body", 1), ("Teapot", 1),
             ("no_apns_id", 2)]
    STATUS = {"BadDeviceToken": 400, "Unregistered": 410, "TooManyRequests": 429,
              "ServiceUnavailable": 503, "InternalServerError": 500, "ExpiredProviderToken": 403,
              "Teapot": 418}

    # How an answer is framed, drawn for each answer: as APNs frames it (plain), or in
    # forms RFC 9113 allows and APNs does not use: a padded DATA frame (section 6.1), the
    # body split over two DATA frames, trailers ending the stream (a HEADERS frame after
    # the DATA, section 8.1), an empty DATA frame carrying END_STREAM, or an interim 1xx
    # response before the final one. The client must read the same answer from each.
    SHAPES = ["plain", "plain", "padded", "split", "trailers", "empty_end", "informational"]
    shape_rng = random.Random(f"{SEED}:shapes")

    def write(**event):
        with lock:
            record.write(json.dumps(event) + "\n"); record.flush()

    def fate_of(rng):
        r = rng.uniform(0, sum(w for _, w in FATES))
        for fate, weight in FATES:
            r -= weight
            if r <= 0: return fate
        return "ok"

    def dropped(cid, sid, s, last_id):
        # A request still open when its connection ends; above a GOAWAY's last-stream-id
        # it was not processed.
        fate = "after_goaway" if last_id is not None and sid > last_id else "open_when_dropped"
        write(conn=cid, stream=sid, token=s["token"], apns_id=s["apns_id"], seq=s["seq"], fate=fate)

    def drain_and_close(sock):
        # Read what the client still sends, so that closing sends FIN rather than RST
        # (which would discard answers the client has not read yet).
        end = time.time() + 1.0
        sock.settimeout(0.05)
        while time.time() < end:
            try:
                if not sock.recv(65536): break
            except (socket.timeout, ssl.SSLWantReadError): continue
            except Exception: break
        sock.close()

    def serve(sock, cid):
        conn = h2.connection.H2Connection(config=h2.config.H2Configuration(client_side=False, header_encoding="utf-8"))
        conn.local_settings = h2.settings.Settings(client=False, initial_values={h2.settings.SettingCodes.MAX_CONCURRENT_STREAMS: 50})
        conn.initiate_connection(); sock.sendall(conn.data_to_send())
        streams, timers, last_id, goaway_at = {}, [], None, None
        # h2 applies a pending setting at the next SETTINGS ACK, whichever frame it
        # acknowledges: changes wait for the ACK of the connection's first SETTINGS.
        first_ack = [False]
        def answer(sid, status, reason=None, with_id=True):
            headers = [(":status", str(status))]
            if with_id:
                headers.append(("apns-id", streams[sid]["apns_id"] or "00000000-0000-0000-0000-000000000000"))
            shape = shape_rng.choice(SHAPES)
            if shape == "informational":
                # An interim response (1xx, section 8.1) before the final one: not the answer.
                conn.send_headers(sid, [(":status", shape_rng.choice(["100", "103"]))])
            if reason == "garbage_body":
                payload, shape = b"<html>bad request</html>", "plain"
                headers.append(("content-type", "text/plain"))
            elif reason is None:
                payload = b""
                if shape in ("padded", "split"): shape = "plain"
            else:
                body = {"reason": reason}
                if reason == "Unregistered": body["timestamp"] = 1700000000000
                payload = json.dumps(body).encode()
                headers.append(("content-type", "application/json"))
            # A 200 as APNs frames it ends with its HEADERS; everything else has a DATA or
            # trailers frame that ends the stream.
            ends_with_headers = not payload and shape in ("plain", "informational")
            conn.send_headers(sid, headers, end_stream=ends_with_headers)
            if ends_with_headers:
                pass
            elif shape == "padded":
                conn.send_data(sid, payload, end_stream=True, pad_length=shape_rng.randint(1, 200))
            elif shape == "split":
                cut = shape_rng.randint(1, len(payload) - 1)
                conn.send_data(sid, payload[:cut])
                conn.send_data(sid, payload[cut:], end_stream=True)
            elif shape in ("trailers", "empty_end"):
                if payload: conn.send_data(sid, payload)
                if shape == "trailers": conn.send_headers(sid, [("x-trailer", "1")], end_stream=True)
                else: conn.send_data(sid, b"", end_stream=True)
            else:
                conn.send_data(sid, payload, end_stream=True)
            write(conn=cid, fate="shape:" + shape)
        try:
            while True:
                timeout = max(0, timers[0][0] - time.time()) if timers else None
                if goaway_at is not None: timeout = 0.02
                readable = sock.pending() > 0 or select.select([sock], [], [], timeout)[0]
                now = time.time()
                while timers and timers[0][0] <= now:
                    _, sid = heapq.heappop(timers)
                    if sid < 0:
                        conn.update_settings({h2.settings.SettingCodes.MAX_CONCURRENT_STREAMS: 50})
                    elif sid in streams:
                        answer(sid, 200); s = streams.pop(sid)
                        write(conn=cid, stream=sid, token=s["token"], apns_id=s["apns_id"], seq=s["seq"], fate="delay_ok")
                if readable:
                    data = sock.recv(65536)
                    if not data: break
                    try:
                        events = conn.receive_data(data)
                    except h2.exceptions.ProtocolError as error:
                        # After its own GOAWAY, h2 refuses new streams the client sent
                        # before reading it (a limit of h2, not the client's fault);
                        # anything else is an HTTP/2 error in what the client sent.
                        write(conn=cid, fate="h2_error" if last_id is None else "h2_closed", error=str(error))
                        break
                    for event in events:
                        if isinstance(event, h2.events.StreamReset):
                            # The client gave up on it (its deadline): no answer is due.
                            streams.pop(event.stream_id, None)
                        elif isinstance(event, h2.events.RequestReceived):
                            fields = dict(event.headers)
                            with lock:
                                sequence[0] += 1; seq = sequence[0]
                            streams[event.stream_id] = {"token": fields.get(":path", "").rsplit("/", 1)[-1], "apns_id": fields.get("apns-id"), "seq": seq,
                                                        "auth": "authorization" in fields}
                        elif isinstance(event, h2.events.SettingsAcknowledged):
                            first_ack[0] = True
                        elif isinstance(event, h2.events.DataReceived):
                            conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
                        elif isinstance(event, h2.events.StreamEnded):
                            sid = event.stream_id; s = streams[sid]
                            base = dict(conn=cid, stream=sid, token=s["token"], apns_id=s["apns_id"], seq=s["seq"], auth=s["auth"])
                            if last_id is not None and sid > last_id:
                                write(fate="after_goaway", **base); del streams[sid]; continue
                            with lock:
                                n = attempts.get(s["token"], 0); attempts[s["token"]] = n + 1
                            rng = random.Random(f"{SEED}:{s['token']}:{n}")
                            fate = fate_of(rng)
                            if fate in ("ok", "settings", "ping", "no_apns_id"):
                                if fate == "settings" and first_ack[0]:
                                    limit = rng.choice([0, 1, 3, 10, 50, 100])
                                    conn.update_settings({h2.settings.SettingCodes.MAX_CONCURRENT_STREAMS: limit})
                                    # No new stream at all for a moment, then 50 again.
                                    if limit == 0: heapq.heappush(timers, (now + 0.03, -1))
                                if fate == "ping":
                                    conn.ping(b"apnschao")
                                answer(sid, 200, with_id=fate != "no_apns_id"); write(fate="ok", **base); del streams[sid]
                            elif fate == "garbage_body":
                                answer(sid, 400, "garbage_body"); write(fate=fate, **base); del streams[sid]
                            elif fate in STATUS:
                                answer(sid, STATUS[fate], fate); write(fate=fate, **base); del streams[sid]
                            elif fate == "refuse":
                                conn.reset_stream(sid, h2.errors.ErrorCodes.REFUSED_STREAM); write(fate=fate, **base); del streams[sid]
                            elif fate == "rst_internal":
                                conn.reset_stream(sid, h2.errors.ErrorCodes.INTERNAL_ERROR); write(fate=fate, **base); del streams[sid]
                            elif fate == "delay":
                                heapq.heappush(timers, (now + rng.uniform(0.01, 0.15), sid)); write(fate=fate, **base)
                            elif fate == "hang":
                                write(fate=fate, **base)
                            elif fate == "goaway":
                                # This request and every later one are not processed.
                                last_id = max(0, sid - 2); goaway_at = now
                                conn.close_connection(error_code=0, last_stream_id=last_id)
                                write(fate=fate, **base); del streams[sid]
                            elif fate == "kill":
                                write(fate=fate, **base); del streams[sid]
                                for osid, o in streams.items():
                                    dropped(cid, osid, o, last_id)
                                write(conn=cid, fate="connection_dropped")
                                sock.sendall(conn.data_to_send()); sock.close(); return
                out = conn.data_to_send()
                if out: sock.sendall(out)
                if goaway_at is not None and (not [s for s in streams if s <= last_id] or time.time() - goaway_at > 0.5):
                    for osid, o in streams.items():
                        dropped(cid, osid, o, last_id)
                    write(conn=cid, fate="connection_dropped")
                    drain_and_close(sock); return
        except h2.exceptions.ProtocolError as error:
            # Raised by this server's own sending: not a finding about the client.
            write(conn=cid, fate="server_h2_error", error=str(error))
        except (ssl.SSLError, OSError) as error:
            write(conn=cid, fate="socket_error", error=str(error))
        for osid, o in streams.items():
            dropped(cid, osid, o, last_id)
        write(conn=cid, fate="connection_dropped")
        try:
            out = conn.data_to_send()
            if out: sock.sendall(out)
            drain_and_close(sock)
        except Exception:
            pass

    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(CERT, KEY); context.set_alpn_protocols(["h2"])
    if CLIENT_CA:
        context.verify_mode = ssl.CERT_REQUIRED; context.load_verify_locations(CLIENT_CA)
    listener = socket.socket(); listener.bind(("127.0.0.1", 0)); listener.listen(64)
    print("PORT", listener.getsockname()[1], flush=True)
    connections = 0
    while True:
        raw, _ = listener.accept()
        try:
            tls = context.wrap_socket(raw, server_side=True)
            if CLIENT_CA and not tls.getpeercert():
                raise ssl.SSLError("no client certificate")
        except Exception as error:
            write(fate="tls_error", error=str(error)); raw.close(); continue
        connections += 1
        threading.Thread(target=serve, args=(tls, connections), daemon=True).start()
    """#
}
