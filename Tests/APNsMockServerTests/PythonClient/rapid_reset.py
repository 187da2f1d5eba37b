# A client that resets thousands of streams at once (as mass cancellation does), with a
# complete request among every ten, then sends complete requests, and prints the server's
# GOAWAY, its answers and the streams it sent whole as one JSON line.
# Usage: python3 rapid_reset.py PORT CA RESETS REQUESTS
import json, socket, ssl, sys, time
import h2.config, h2.connection, h2.events, h2.exceptions

port, ca, resets, requests = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
context = ssl.create_default_context(cafile=ca)
context.set_alpn_protocols(["h2"])
sock = context.wrap_socket(socket.create_connection(("127.0.0.1", port), timeout=10), server_hostname="localhost")
conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True, header_encoding="utf-8"))
conn.initiate_connection()
sock.sendall(conn.data_to_send())
body = b'{"aps":{"alert":"Hi"}}'

def headers(i):
    return [(":method", "POST"), (":scheme", "https"), (":authority", "127.0.0.1:%d" % port),
            (":path", "/3/device/%064x" % (i + 1)), ("apns-topic", "com.example.app"),
            ("apns-push-type", "alert"), ("content-length", str(len(body)))]

goaway, answers, closed = None, {}, False
def pump(deadline):
    global goaway, closed
    sock.settimeout(0.05)
    while time.time() < deadline and not closed:
        try:
            data = sock.recv(65536)
        except socket.timeout:
            if goaway is not None and time.time() > deadline - 1: break
            continue
        except (ssl.SSLError, OSError):
            closed = True; break
        if not data:
            closed = True; break
        try:
            events = conn.receive_data(data)
        except h2.exceptions.ProtocolError:
            closed = True; break
        for e in events:
            if isinstance(e, h2.events.ResponseReceived):
                answers[e.stream_id] = int(dict(e.headers)[":status"])
            elif isinstance(e, h2.events.ConnectionTerminated):
                goaway = {"last_stream_id": e.last_stream_id, "error_code": int(e.error_code)}
        out = conn.data_to_send()
        if out:
            try: sock.sendall(out)
            except OSError: closed = True

pump(time.time() + 0.5)  # the server's SETTINGS
stream = 1
complete = []
for n in range(resets):
    if n % 10 == 9:
        # Every tenth request is complete (not cancelled), among the resets.
        conn.send_headers(stream, headers(stream))
        conn.send_data(stream, body, end_stream=True)
        complete.append(stream)
    else:
        conn.send_headers(stream, headers(stream), end_stream=False)
        conn.reset_stream(stream, error_code=8)  # CANCEL
    stream += 2
try:
    sock.sendall(conn.data_to_send())
except OSError:
    closed = True
sent = []
for _ in range(requests):
    if closed or conn.state_machine.state.name == "CLOSED": break
    try:
        conn.send_headers(stream, headers(stream))
        conn.send_data(stream, body, end_stream=True)
        sock.sendall(conn.data_to_send())
        sent.append(stream)
    except Exception:
        break
    stream += 2
pump(time.time() + 3)
print(json.dumps({"goaway": goaway, "answers": answers, "sent": complete + sent}), flush=True)
