# Watches the mock server stop, from Python's ssl and h2 (an implementation independent
# of the SDK): connects over TLS and HTTP/2, and once the server's SETTINGS have arrived
# writes READY_FILE; then reads until the server ends the connection and prints one JSON
# line: the GOAWAY that came, if any (its error code and last stream id), and whether TLS
# ended with close_notify (a clean end) or the connection was cut.
# Usage: python3 stop_watcher.py PORT CA READY_FILE

import json, socket, ssl, sys

import h2.config, h2.connection, h2.events, h2.exceptions


def main():
    port, ca, ready_file = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    context = ssl.create_default_context(cafile=ca)
    context.set_alpn_protocols(["h2"])
    # Some builds set this by default; without it an EOF with no close_notify is an error.
    context.options &= ~getattr(ssl, "OP_IGNORE_UNEXPECTED_EOF", 0)
    raw = socket.create_connection(("127.0.0.1", port), timeout=30)
    # A cut without close_notify raises SSLEOFError instead of reading as a clean end.
    sock = context.wrap_socket(raw, server_hostname="localhost", suppress_ragged_eofs=False)
    conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
    conn.initiate_connection()
    sock.sendall(conn.data_to_send())
    result = {"goaway": None, "end": None}
    ready = False
    while True:
        try:
            data = sock.recv(65536)
        except ssl.SSLError as error:  # SSLEOFError, or UNEXPECTED_EOF_WHILE_READING
            result["end"] = "cut (%s)" % error
            break
        except (ConnectionResetError, BrokenPipeError):
            result["end"] = "reset"
            break
        if not data:
            result["end"] = "close_notify"
            break
        try:
            events = conn.receive_data(data)
        except h2.exceptions.ProtocolError:
            events = []
        for event in events:
            if isinstance(event, h2.events.RemoteSettingsChanged) and not ready:
                ready = True
                with open(ready_file, "w") as f:
                    f.write("ready\n")
            elif isinstance(event, h2.events.ConnectionTerminated):
                result["goaway"] = {"error_code": int(event.error_code), "last_stream_id": event.last_stream_id}
        pending = conn.data_to_send()
        if pending:
            try:
                sock.sendall(pending)
            except OSError:
                pass
    print(json.dumps(result))


main()
