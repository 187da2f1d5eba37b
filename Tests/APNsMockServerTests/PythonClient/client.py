# An APNs provider written on Python's h2 and ssl, with provider tokens signed by PyJWT
# (python3-h2, python3-jwt, python3-cryptography): used by PythonFramingClientTests to
# check that the mock server reads a request however RFC 9113 lets a client frame it.
#
# It signs one provider token, then sends N requests over one connection with up to
# CONC in flight, each of the shape its index sets (i % 10, the same as GoClient's; see
# IndependentProvider.swift), and framed as (i // 10) % 7 picks:
#
#   plain      HEADERS, then the body in one DATA frame with END_STREAM
#   padded     the DATA frame padded (section 6.1) with 1 to 200 bytes
#   split      the body over three DATA frames
#   trailers   the body, then a HEADERS frame of trailers carrying END_STREAM (section 8.1)
#   empty_end  the body, then an empty DATA frame carrying END_STREAM
#   priority   HEADERS with the PRIORITY flag, and a PRIORITY frame before the body
#   ping       a PING and a WINDOW_UPDATE between the HEADERS and the body
#
# The first request goes alone: its accepted token raises the server's limit of one
# stream (as APNs). One JSON line per request goes to OUT: index, framing, status,
# reason, apns_id, sent_id, proto, error.
# Usage: python3 client.py PORT CA KEY KEYID TEAMID N CONC OUT

import json, random, socket, ssl, sys, time

import h2.config, h2.connection, h2.events, h2.exceptions
import jwt

FRAMINGS = ["plain", "padded", "split", "trailers", "empty_end", "priority", "ping"]


def main():
    port, ca, key_path, key_id, team_id = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5]
    count, concurrency, out_path = int(sys.argv[6]), int(sys.argv[7]), sys.argv[8]
    with open(key_path) as f:
        token = jwt.encode({"iss": team_id, "iat": int(time.time())}, f.read(), algorithm="ES256", headers={"kid": key_id})
    if isinstance(token, bytes):
        token = token.decode()

    context = ssl.create_default_context(cafile=ca)
    context.set_alpn_protocols(["h2"])
    sock = context.wrap_socket(socket.create_connection(("127.0.0.1", port), timeout=30), server_hostname="localhost")
    if sock.selected_alpn_protocol() != "h2":
        sys.exit("ALPN: %r" % sock.selected_alpn_protocol())
    conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True, header_encoding="utf-8"))
    conn.initiate_connection()
    sock.sendall(conn.data_to_send())

    valid = json.dumps({"aps": {"alert": {"title": "Python", "body": "Hello"}, "sound": "default"}},
                       separators=(",", ":")).encode()
    large = ('{"aps":{"alert":"' + "x" * (4097 - len('{"aps":{"alert":""}}')) + '"}}').encode()
    assert len(large) == 4097
    rng = random.Random(count)
    results, open_streams, pending = {}, {}, []  # stream id -> index; bodies waiting for window

    def start(i):
        device = "%064x" % (i + 1)
        body, topic, priority = valid, "com.example.app", "10"
        shape = i % 10
        if shape == 3: device = "g" + device[1:]
        elif shape == 5: topic = ""
        elif shape == 7: body = large
        elif shape == 8: priority = "7"
        sent_id = "%08x-0000-4000-8000-%012x" % (i, i) if i % 2 == 1 else ""
        framing = FRAMINGS[(i // 10) % len(FRAMINGS)]
        headers = [(":method", "POST"), (":scheme", "https"), (":path", "/3/device/" + device),
                   (":authority", "localhost"), ("authorization", "bearer " + token),
                   ("apns-push-type", "alert"), ("apns-priority", priority)]
        if topic: headers.append(("apns-topic", topic))
        if sent_id: headers.append(("apns-id", sent_id))
        sid = conn.get_next_available_stream_id()
        if framing == "priority":
            conn.send_headers(sid, headers, priority_weight=rng.randint(1, 256), priority_depends_on=0)
            conn.prioritize(sid, weight=rng.randint(1, 256), depends_on=0)
        else:
            conn.send_headers(sid, headers)
        if framing == "ping":
            conn.ping(b"pingpong")
            conn.increment_flow_control_window(1024)
        results[i] = {"index": i, "framing": framing, "sent_id": sent_id}
        open_streams[sid] = {"index": i, "body": b""}
        pending.append((sid, body, framing))

    def send_bodies():
        # Bodies go as the server's window allows (the 4,097-byte ones may wait).
        while pending:
            sid, body, framing = pending[0]
            if conn.local_flow_control_window(sid) < len(body) + 256:
                return
            pending.pop(0)
            if framing == "padded":
                conn.send_data(sid, body, end_stream=True, pad_length=rng.randint(1, 200))
            elif framing == "split":
                a, b = sorted(rng.sample(range(1, len(body)), 2))
                conn.send_data(sid, body[:a])
                conn.send_data(sid, body[a:b])
                conn.send_data(sid, body[b:], end_stream=True)
            elif framing == "trailers":
                conn.send_data(sid, body)
                conn.send_headers(sid, [("x-trailer", "1")], end_stream=True)
            elif framing == "empty_end":
                conn.send_data(sid, body)
                conn.send_data(sid, b"", end_stream=True)
            else:
                conn.send_data(sid, body, end_stream=True)

    def pump():
        data = sock.recv(65536)
        if not data:
            raise ConnectionError("the server closed the connection")
        for event in conn.receive_data(data):
            sid = getattr(event, "stream_id", 0)
            if isinstance(event, h2.events.ResponseReceived):
                result = results[open_streams[sid]["index"]]
                fields = dict(event.headers)
                result["status"] = int(fields[":status"])
                result["apns_id"] = fields.get("apns-id", "")
                result["proto"] = "HTTP/2.0"
            elif isinstance(event, h2.events.DataReceived):
                open_streams[sid]["body"] += event.data
                conn.acknowledge_received_data(event.flow_controlled_length, sid)
            elif isinstance(event, h2.events.StreamEnded):
                entry = open_streams.pop(sid)
                if entry["body"]:
                    try:
                        results[entry["index"]]["reason"] = json.loads(entry["body"]).get("reason", "")
                    except ValueError:
                        results[entry["index"]]["error"] = "body is not JSON: %r" % entry["body"]
            elif isinstance(event, h2.events.StreamReset):
                entry = open_streams.pop(sid, None)
                if entry: results[entry["index"]]["error"] = "stream reset %s" % event.error_code
            elif isinstance(event, h2.events.ConnectionTerminated):
                raise ConnectionError("GOAWAY %s" % event.error_code)
        send_bodies()
        sock.sendall(conn.data_to_send())

    next_index, deadline = 0, time.time() + 90
    while (next_index < count or open_streams) and time.time() < deadline:
        limit = 1 if next_index <= 1 and results.get(0, {}).get("status") is None else concurrency
        limit = min(limit, conn.remote_settings.max_concurrent_streams)
        while next_index < count and len(open_streams) < limit:
            start(next_index)
            next_index += 1
            if next_index == 1: break
        send_bodies()
        sock.sendall(conn.data_to_send())
        pump()
    with open(out_path, "w") as out:
        for i in range(count):
            result = results.get(i, {"index": i, "error": "never sent"})
            if "status" not in result and "error" not in result:
                result["error"] = "no answer"
            out.write(json.dumps(result) + "\n")


main()
