// An APNs-like server on Rust's h2 crate, tokio-rustls and ring: an HTTP/2, TLS and
// ECDSA implementation that shares no code with nghttp2, OpenSSL, Python's h2 or Go's
// net/http, used by RustServerTests to check the client against a fourth independent
// server. The h2 crate is what a2 (the Rust APNs client, on hyper) speaks HTTP/2 with.
//
// What it does that the other servers do not:
//   - Flow control the server's application drives: a small stream window (WINDOW
//     bytes, announced in a SETTINGS frame right after the handshake's), so a
//     notification's body crosses in several DATA frames, each let in by a
//     WINDOW_UPDATE the handler causes as it reads, and the windows of the streams the
//     client opened before it learnt of the small window shrink below zero.
//   - Early answers: a request whose fate is BadDeviceToken is answered (400) from its
//     headers alone, before its body is read, as RFC 9113 section 8.1 allows; the h2
//     crate then resets the rest of the stream. The answer must still reach the sender.
//   - h2's graceful shutdown every RESTART_EVERY requests: GOAWAY with the highest
//     stream id and a PING, then, one round trip later, GOAWAY with the last stream it
//     took (RFC 9113 section 6.8); the next generation listens on the same port
//     (SO_REUSEPORT).
//   - TLS from rustls (TLS 1.3 first, client certificates checked by webpki), and
//     provider tokens verified with ring against the public half of the test's key.
//
// Usage: apns-rust-server CERT KEY RECORD SEED CLIENT_CA|"" SIGNING_KEY|"" RESTART_EVERY
//        MAX_STREAMS WINDOW
// Prints "PORT <n>" once listening. Writes one JSON line per request it read to RECORD
// (seq, conn, gen, token, apns_id, fate, auth, problems) and one per connection error
// (fate h2_error or socket_error). Runs until it is killed.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufReader, Write};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use h2::server::SendResponse;
use h2::RecvStream;
use http::{Request, Response};
use ring::signature::{self, KeyPair};
use serde_json::{json, Value};
use tokio::net::{TcpListener, TcpSocket};
use tokio::sync::watch;
use tokio_rustls::rustls;
use tokio_rustls::TlsAcceptor;

struct Shared {
    record: Mutex<File>,
    sequence: AtomicI64,
    connection: AtomicI64,
    attempts: Mutex<HashMap<String, i64>>,
    seed: u64,
    public_key: Option<Vec<u8>>,
}

// The fates a request may meet, with their weights (the same table as GoServer's, so
// ChaosRecord reads both); a request is answered 200 on its fifth attempt or later, so
// every notification ends (the client gives up after four).
const FATES: [(&str, f64, u16); 7] = [
    ("ok", 70.0, 200),
    ("delay_ok", 8.0, 200),
    ("BadDeviceToken", 4.0, 400),
    ("Unregistered", 4.0, 410),
    ("TooManyRequests", 5.0, 429),
    ("ServiceUnavailable", 4.0, 503),
    ("InternalServerError", 3.0, 500),
];

// splitmix64, so that a seed and a token replay the same fates.
fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E3779B97F4A7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58476D1CE4E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D049BB133111EB);
    x ^ (x >> 31)
}

fn fate_of(seed: u64, token: &str, attempt: i64) -> (&'static str, u16) {
    let mut h = seed;
    for byte in token.bytes() {
        h = mix(h ^ byte as u64);
    }
    h = mix(h ^ attempt as u64);
    let total: f64 = FATES.iter().map(|f| f.1).sum();
    let mut r = (h >> 11) as f64 / (1u64 << 53) as f64 * total;
    for (name, weight, status) in FATES.iter() {
        if r < *weight {
            return (name, *status);
        }
        r -= weight;
    }
    ("ok", 200)
}

impl Shared {
    fn write(&self, event: Value) {
        let mut line = event.to_string();
        line.push('\n');
        let mut file = self.record.lock().unwrap();
        let _ = file.write_all(line.as_bytes());
    }
}

fn b64(part: &str) -> Option<Vec<u8>> {
    base64::decode_config(part, base64::URL_SAFE_NO_PAD).ok()
}

// The problems ring and serde find with a provider token, or none.
fn check_provider_token(public_key: &Option<Vec<u8>>, header: &str) -> Vec<String> {
    let key = match public_key {
        Some(key) => key,
        None => return vec![],
    };
    let token = match header.strip_prefix("bearer ") {
        Some(token) => token,
        None => return vec!["authorization does not start with 'bearer '".into()],
    };
    let parts: Vec<&str> = token.split('.').collect();
    if parts.len() != 3 {
        return vec![format!("the token has {} parts, not 3", parts.len())];
    }
    let mut problems = vec![];
    let head: Value = b64(parts[0]).and_then(|raw| serde_json::from_slice(&raw).ok()).unwrap_or(Value::Null);
    let claims: Value = b64(parts[1]).and_then(|raw| serde_json::from_slice(&raw).ok()).unwrap_or(Value::Null);
    if !head.is_object() {
        problems.push("the token's header is not base64url JSON".to_string());
    }
    if !claims.is_object() {
        problems.push("the token's claims are not base64url JSON".to_string());
    }
    if head["alg"] != "ES256" || head["kid"] != "ABC123DEFG" {
        problems.push(format!("header alg {} kid {}", head["alg"], head["kid"]));
    }
    if claims["iss"] != "DEF123GHIJ" {
        problems.push(format!("iss {}", claims["iss"]));
    }
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs() as i64;
    match claims["iat"].as_i64() {
        Some(iat) if now - iat >= -60 && now - iat <= 3600 => {}
        other => problems.push(format!("iat {:?} is not within an hour before now ({})", other, now)),
    }
    let signature_bytes = match b64(parts[2]) {
        Some(bytes) if bytes.len() == 64 => bytes,
        _ => {
            problems.push("the signature is not 64 bytes of base64url (r || s)".into());
            return problems;
        }
    };
    let message = format!("{}.{}", parts[0], parts[1]);
    let verifier = signature::UnparsedPublicKey::new(&signature::ECDSA_P256_SHA256_FIXED, key);
    if verifier.verify(message.as_bytes(), &signature_bytes).is_err() {
        problems.push("the ES256 signature does not verify".into());
    }
    problems
}

fn is_uuid(text: &str) -> bool {
    let bytes = text.as_bytes();
    bytes.len() == 36
        && bytes.iter().enumerate().all(|(i, b)| match i {
            8 | 13 | 18 | 23 => *b == b'-',
            _ => b.is_ascii_hexdigit(),
        })
}

fn header<'a>(request: &'a Request<RecvStream>, name: &str) -> Option<&'a str> {
    request.headers().get(name).and_then(|value| value.to_str().ok())
}

async fn handle(
    shared: Arc<Shared>,
    generation: i64,
    connection: i64,
    request: Request<RecvStream>,
    mut respond: SendResponse<Bytes>,
) {
    let mut problems: Vec<String> = vec![];
    if request.method() != "POST" {
        problems.push(format!("method {}", request.method()));
    }
    let path = request.uri().path().to_string();
    let token = match path.strip_prefix("/3/device/") {
        Some(hex) if hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)) => hex.to_string(),
        _ => {
            problems.push(format!("path {}", path));
            String::new()
        }
    };
    if header(&request, "apns-topic") != Some("com.example.app") {
        problems.push(format!("apns-topic {:?}", header(&request, "apns-topic")));
    }
    if header(&request, "apns-push-type") != Some("alert") {
        problems.push(format!("apns-push-type {:?}", header(&request, "apns-push-type")));
    }
    let mut apns_id = header(&request, "apns-id").unwrap_or("").to_string();
    if !apns_id.is_empty() && !is_uuid(&apns_id) {
        problems.push(format!("apns-id {}", apns_id));
    }
    let authorization = header(&request, "authorization").unwrap_or("").to_string();
    if !authorization.is_empty() {
        problems.extend(check_provider_token(&shared.public_key, &authorization));
    }
    let content_length = header(&request, "content-length").map(|s| s.to_string());

    let attempt = {
        let mut attempts = shared.attempts.lock().unwrap();
        let count = attempts.entry(token.clone()).or_insert(0);
        *count += 1;
        *count
    };
    let (mut fate, mut status) = fate_of(shared.seed, &token, attempt);
    if attempt >= 5 {
        fate = "ok";
        status = 200;
    }

    // BadDeviceToken is answered from the headers alone; every other fate reads the
    // body first, releasing the window as it goes (each release lets h2 send a
    // WINDOW_UPDATE), and checks it as APNs would.
    let mut body_stream = request.into_body();
    let mut body_error = false;
    if fate != "BadDeviceToken" {
        let mut body: Vec<u8> = vec![];
        loop {
            // h2 0.3 queues a WINDOW_UPDATE for a stream only when the handler releases
            // capacity, not when a smaller SETTINGS window is acknowledged: a stream
            // whose window the change left at or below zero, with everything read
            // released already, would wait for ever. Releasing nothing every 25
            // ms while waiting makes h2 look at the stream's window again.
            let next = tokio::select! {
                next = body_stream.data() => next,
                _ = tokio::time::sleep(Duration::from_millis(25)) => {
                    let _ = body_stream.flow_control().release_capacity(0);
                    continue;
                }
            };
            match next {
                Some(Ok(chunk)) => {
                    let _ = body_stream.flow_control().release_capacity(chunk.len());
                    body.extend_from_slice(&chunk);
                    if body.len() > 8192 {
                        break;
                    }
                }
                Some(Err(error)) => {
                    problems.push(format!("body: {}", error));
                    body_error = true;
                    break;
                }
                None => break,
            }
        }
        if body.len() > 4096 {
            problems.push(format!("body of {} bytes", body.len()));
        } else {
            match serde_json::from_slice::<Value>(&body) {
                Ok(payload) if payload["aps"].is_object() => {}
                Ok(_) => problems.push("no aps dictionary".into()),
                Err(_) => problems.push(format!("body is not JSON: {}", String::from_utf8_lossy(&body))),
            }
        }
        if let Some(length) = content_length {
            if length != body.len().to_string() {
                problems.push(format!("content-length {} for {} bytes", length, body.len()));
            }
        }
    }
    if body_error {
        // h2 reset the stream (the client broke a rule in its body): nothing to answer.
        shared.write(json!({
            "seq": shared.sequence.fetch_add(1, Ordering::SeqCst) + 1, "conn": connection, "gen": generation,
            "token": token, "apns_id": apns_id, "fate": "body_error", "auth": !authorization.is_empty(), "problems": problems,
        }));
        return;
    }
    if fate == "delay_ok" {
        let wait = mix(shared.seed ^ shared.sequence.load(Ordering::Relaxed) as u64) % 40;
        tokio::time::sleep(Duration::from_millis(wait)).await;
    }
    if apns_id.is_empty() {
        apns_id = "00000000-0000-4000-8000-000000000000".into();
    }
    shared.write(json!({
        "seq": shared.sequence.fetch_add(1, Ordering::SeqCst) + 1, "conn": connection, "gen": generation,
        "token": token, "apns_id": apns_id, "fate": fate, "auth": !authorization.is_empty(), "problems": problems,
    }));
    let mut response = Response::builder().status(status).header("apns-id", apns_id.as_str());
    if status == 200 {
        let _ = respond.send_response(response.body(()).unwrap(), true);
    } else {
        response = response.header("content-type", "application/json");
        let body = if fate == "Unregistered" {
            let millis = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis();
            format!("{{\"reason\":\"Unregistered\",\"timestamp\":{}}}", millis)
        } else {
            format!("{{\"reason\":\"{}\"}}", fate)
        };
        if let Ok(mut stream) = respond.send_response(response.body(()).unwrap(), false) {
            let _ = stream.send_data(Bytes::from(body), true);
        }
    }
    // Dropping an unread body resets the rest of the stream (the early answer).
    drop(body_stream);
}

async fn serve(
    shared: Arc<Shared>,
    acceptor: TlsAcceptor,
    socket: tokio::net::TcpStream,
    generation: i64,
    mut shutdown: watch::Receiver<bool>,
    max_streams: u32,
    window: u32,
) {
    let connection = shared.connection.fetch_add(1, Ordering::SeqCst) + 1;
    let tls = match acceptor.accept(socket).await {
        Ok(tls) => tls,
        Err(error) => {
            shared.write(json!({"conn": connection, "gen": generation, "fate": "tls_error", "error": error.to_string()}));
            return;
        }
    };
    // The stream window is lowered by a second SETTINGS after the handshake rather than
    // in the first: h2 0.3 enforces its first SETTINGS' window before the client has
    // acknowledged it (hyperium/h2 issue 630), where RFC 9113 section 6.9.2 lets a client
    // send with the default window until then. A later SETTINGS h2 applies on its ACK,
    // and the windows of streams already open shrink, some below zero: the client must
    // wait for WINDOW_UPDATEs before it sends more on them.
    let handshake = h2::server::Builder::new()
        .max_concurrent_streams(max_streams)
        .handshake::<_, Bytes>(tls)
        .await;
    let mut connection_state = match handshake {
        Ok(state) => state,
        Err(error) => {
            shared.write(json!({"conn": connection, "gen": generation, "fate": "socket_error", "error": error.to_string()}));
            return;
        }
    };
    // h2 sends the second SETTINGS only once the first is acknowledged, which the API
    // does not report: it is tried at every turn of the loop, and every millisecond.
    let mut window_pending = true;
    let mut tick = tokio::time::interval(Duration::from_millis(1));
    let mut shutting_down = false;
    loop {
        if window_pending && connection_state.set_initial_window_size(window).is_ok() {
            window_pending = false;
        }
        if !shutting_down && *shutdown.borrow() {
            shutting_down = true;
            connection_state.graceful_shutdown();
        }
        tokio::select! {
            _ = tick.tick(), if window_pending => {}
            next = connection_state.accept() => match next {
                Some(Ok((request, respond))) => {
                    tokio::spawn(handle(shared.clone(), generation, connection, request, respond));
                }
                Some(Err(error)) => {
                    // An I/O error (the client closed its socket) is not the client's
                    // fault in HTTP/2; a protocol error is.
                    let fate = if error.is_io() { "socket_error" } else { "h2_error" };
                    shared.write(json!({"conn": connection, "gen": generation, "fate": fate, "error": error.to_string()}));
                    return;
                }
                None => return,
            },
            changed = shutdown.changed(), if !shutting_down => {
                if changed.is_err() { shutting_down = true; connection_state.graceful_shutdown(); }
            }
        }
    }
}

fn listen(port: u16) -> std::io::Result<TcpListener> {
    let socket = TcpSocket::new_v4()?;
    socket.set_reuseport(true)?;
    socket.set_reuseaddr(true)?;
    socket.bind(SocketAddr::from(([127, 0, 0, 1], port)))?;
    socket.listen(1024)
}

fn read_pem(path: &str) -> Vec<Vec<u8>> {
    let mut reader = BufReader::new(File::open(path).expect("a PEM file"));
    rustls_pemfile::certs(&mut reader).expect("certificates in PEM")
}

fn read_key(path: &str) -> Vec<u8> {
    let mut reader = BufReader::new(File::open(path).expect("a key file"));
    rustls_pemfile::pkcs8_private_keys(&mut reader).expect("a PKCS#8 key").remove(0)
}

#[tokio::main(worker_threads = 2)]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 10 {
        eprintln!("usage: apns-rust-server CERT KEY RECORD SEED CLIENT_CA SIGNING_KEY RESTART_EVERY MAX_STREAMS WINDOW");
        std::process::exit(2);
    }
    let certificates: Vec<rustls::Certificate> = read_pem(&args[1]).into_iter().map(rustls::Certificate).collect();
    let key = rustls::PrivateKey(read_key(&args[2]));
    let builder = rustls::ServerConfig::builder().with_safe_defaults();
    let mut config = if !args[5].is_empty() {
        let mut roots = rustls::RootCertStore::empty();
        for certificate in read_pem(&args[5]) {
            roots.add(&rustls::Certificate(certificate)).expect("a CA certificate");
        }
        builder
            .with_client_cert_verifier(rustls::server::AllowAnyAuthenticatedClient::new(roots))
            .with_single_cert(certificates, key)
            .expect("the server's certificate and key")
    } else {
        builder.with_no_client_auth().with_single_cert(certificates, key).expect("the server's certificate and key")
    };
    config.alpn_protocols = vec![b"h2".to_vec()];
    let acceptor = TlsAcceptor::from(Arc::new(config));

    let public_key = if args[6].is_empty() {
        None
    } else {
        let der = read_key(&args[6]);
        let pair = signature::EcdsaKeyPair::from_pkcs8(&signature::ECDSA_P256_SHA256_FIXED_SIGNING, &der)
            .expect("the signing key is a P-256 key in PKCS#8");
        Some(pair.public_key().as_ref().to_vec())
    };
    let shared = Arc::new(Shared {
        record: Mutex::new(File::create(&args[3]).expect("the record file")),
        sequence: AtomicI64::new(0),
        connection: AtomicI64::new(0),
        attempts: Mutex::new(HashMap::new()),
        seed: args[4].parse().unwrap_or(1),
        public_key,
    });
    let restart_every: i64 = args[7].parse().unwrap_or(0);
    let max_streams: u32 = args[8].parse().unwrap_or(100);
    let window: u32 = args[9].parse().unwrap_or(65_535);

    // One generation: a listener on the port and the connections it accepted, all told
    // to shut down gracefully when `stop` changes (or is dropped).
    let start = |port: u16, generation: i64| -> (u16, watch::Sender<bool>) {
        let listener = listen(port).expect("a listening socket");
        let bound = listener.local_addr().unwrap().port();
        let (stop, mut stopped) = watch::channel(false);
        let shared = shared.clone();
        let acceptor = acceptor.clone();
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    accepted = listener.accept() => {
                        if let Ok((socket, _)) = accepted {
                            let _ = socket.set_nodelay(true);
                            tokio::spawn(serve(shared.clone(), acceptor.clone(), socket, generation, stopped.clone(), max_streams, window));
                        }
                    }
                    _ = stopped.changed() => return,
                }
            }
        });
        (bound, stop)
    };
    let (port, mut current) = start(0, 1);
    println!("PORT {}", port);
    let _ = std::io::stdout().flush();

    let mut generation = 1;
    let mut next = restart_every;
    loop {
        tokio::time::sleep(Duration::from_millis(2)).await;
        if restart_every <= 0 || shared.sequence.load(Ordering::SeqCst) < next {
            continue;
        }
        next += restart_every;
        generation += 1;
        let (_, following) = start(port, generation);
        let _ = current.send(true);
        shared.write(json!({"seq": shared.sequence.load(Ordering::SeqCst), "fate": "shutdown_started", "gen": generation - 1}));
        current = following;
    }
}
