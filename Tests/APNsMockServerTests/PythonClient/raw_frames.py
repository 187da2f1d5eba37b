# Sends hand-made HTTP/2 frames (RFC 9113) that a library client would refuse to send, and
# prints as one JSON line what the server did: its GOAWAY (last-stream-id, error code), the
# streams it answered (status) or reset (error code), and whether it closed the connection.
# Usage: python3 raw_frames.py PORT CA CASE
#   reused-id:      a request opens stream 5; then HEADERS on stream 3, which 5 closed
#                   (RFC 9113 §5.1.1: a connection error of type PROTOCOL_ERROR)
#   continuations:  one request whose header block is split over a HEADERS frame and
#                   twelve CONTINUATION frames (more than libnghttp2 takes)
import json, socket, ssl, struct, sys, time
import hpack

port, ca, case = int(sys.argv[1]), sys.argv[2], sys.argv[3]
context = ssl.create_default_context(cafile=ca)
context.set_alpn_protocols(["h2"])
sock = context.wrap_socket(socket.create_connection(("127.0.0.1", port), timeout=10), server_hostname="localhost")
encoder = hpack.Encoder()
decoder = hpack.Decoder()
body = b'{"aps":{"alert":"Hi"}}'


def frame(kind, flags, stream, payload=b""):
    return struct.pack(">BHBBI", len(payload) >> 16, len(payload) & 0xFFFF, kind, flags, stream) + payload


def block(stream):
    return encoder.encode([(":method", "POST"), (":scheme", "https"), (":authority", "localhost"),
                           (":path", "/3/device/%064x" % stream), ("apns-topic", "com.example.app"),
                           ("apns-push-type", "alert"), ("x-padding", "p" * 200)])


HEADERS, DATA, SETTINGS, GOAWAY, RST_STREAM, CONTINUATION = 1, 0, 4, 7, 3, 9
END_STREAM, END_HEADERS, ACK = 1, 4, 1
sock.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + frame(SETTINGS, 0, 0))
if case == "reused-id":
    sock.sendall(frame(HEADERS, END_HEADERS, 5, block(5)) + frame(DATA, END_STREAM, 5, body))
    time.sleep(0.3)
    sock.sendall(frame(HEADERS, END_HEADERS, 3, block(3)) + frame(DATA, END_STREAM, 3, body))
elif case == "continuations":
    whole = block(1)
    size = len(whole) // 13 + 1
    parts = [whole[i:i + size] for i in range(0, len(whole), size)]
    data = frame(HEADERS, 0, 1, parts[0])
    for index, part in enumerate(parts[1:]):
        data += frame(CONTINUATION, END_HEADERS if index == len(parts) - 2 else 0, 1, part)
    sock.sendall(data + frame(DATA, END_STREAM, 1, body))
else:
    sys.exit("unknown case " + case)

report = {"goaway": None, "answers": {}, "resets": {}, "closed": False}
buffer = b""
deadline = time.time() + 5
while time.time() < deadline:
    sock.settimeout(max(0.01, deadline - time.time()))
    try:
        chunk = sock.recv(65536)
    except socket.timeout:
        break
    except (ssl.SSLError, OSError):
        report["closed"] = True
        break
    if not chunk:
        report["closed"] = True
        break
    buffer += chunk
    while len(buffer) >= 9 and len(buffer) >= 9 + int.from_bytes(buffer[:3], "big"):
        length = int.from_bytes(buffer[:3], "big")
        kind, flags, stream = buffer[3], buffer[4], int.from_bytes(buffer[5:9], "big") & 0x7FFFFFFF
        payload, buffer = buffer[9:9 + length], buffer[9 + length:]
        if kind == SETTINGS and not flags & ACK:
            sock.sendall(frame(SETTINGS, ACK, 0))
        elif kind == HEADERS:
            status = dict(decoder.decode(payload)).get(":status")
            report["answers"][str(stream)] = int(status)
        elif kind == RST_STREAM:
            report["resets"][str(stream)] = struct.unpack(">I", payload)[0]
        elif kind == GOAWAY:
            last, code = struct.unpack(">II", payload[:8])
            report["goaway"] = {"last_stream_id": last & 0x7FFFFFFF, "error_code": code}
        # Once the answer to the case's last request or a GOAWAY is in, wait no longer.
    if report["goaway"] is not None or (case == "continuations" and "1" in report["answers"]):
        deadline = min(deadline, time.time() + 0.5)
print(json.dumps(report))
