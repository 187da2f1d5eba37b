// An APNs provider written on Rust's h2 crate (the HTTP/2 of hyper, and so of a2, the
// Rust APNs client), TLS from rustls and ES256 from ring: a client that shares no code
// with nghttp2, curl, OpenSSL, Python's h2 or Go, used by RustClientTests to check the
// mock server against it.
//
// It signs one provider token with ring, then sends N requests over one connection
// with up to CONC in flight, each of one of these shapes by its index i (the same as
// GoClient's):
//
//   i % 10 == 3  a device token that is not hex        Apple: 400 BadDeviceToken
//   i % 10 == 5  no apns-topic                         Apple: 400 MissingTopic
//   i % 10 == 7  an alert payload of 4,097 bytes       Apple: 413 PayloadTooLarge
//   i % 10 == 8  apns-priority 7                       Apple: 400 BadPriority
//   otherwise    a valid alert                         Apple: 200
//
// What it does differently from Go's client: the authorization field is marked
// sensitive, so h2's HPACK encoder sends the token as a literal never indexed (RFC 7541
// section 6.2.3) in every request, where Go's indexes it; h2's own flow control and
// frame scheduling; and a stream the server refuses (REFUSED_STREAM) is sent again, as
// a careful provider does. The first request goes alone, so that the server's limit of
// one stream (until a provider token is accepted, as APNs) has risen before the others
// start (see the loop).
//
// Odd indices send an apns-id of their own (APNs echoes it); even ones send none (APNs
// makes one). One JSON line per request goes to OUT: index, status, reason, apns_id,
// sent_id, proto, refused, error.
// Usage: apns-rust-client PORT CA KEY KEYID TEAMID N CONC OUT

use std::fs::File;
use std::io::{BufReader, Write};
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use h2::Reason;
use http::{HeaderValue, Request};
use ring::rand::SystemRandom;
use ring::signature::{EcdsaKeyPair, ECDSA_P256_SHA256_FIXED_SIGNING};
use serde_json::{json, Value};
use tokio::net::TcpStream;
use tokio::sync::Semaphore;
use tokio_rustls::rustls;
use tokio_rustls::TlsConnector;

fn fail(message: String) -> ! {
    eprintln!("{}", message);
    std::process::exit(2);
}

fn b64(data: &[u8]) -> String {
    base64::encode_config(data, base64::URL_SAFE_NO_PAD)
}

// An ES256 provider token as Apple describes it: header {alg, kid}, claims {iss, iat},
// the signature as r || s (ring's fixed form), 32 bytes each.
fn provider_token(key: &EcdsaKeyPair, key_id: &str, team_id: &str) -> String {
    let header = json!({"alg": "ES256", "kid": key_id}).to_string();
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs();
    let claims = json!({"iss": team_id, "iat": now}).to_string();
    let signing_input = format!("{}.{}", b64(header.as_bytes()), b64(claims.as_bytes()));
    let signature = key
        .sign(&SystemRandom::new(), signing_input.as_bytes())
        .unwrap_or_else(|_| fail("ring could not sign".into()));
    format!("{}.{}", signing_input, b64(signature.as_ref()))
}

#[tokio::main(worker_threads = 2)]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 9 {
        fail("usage: apns-rust-client PORT CA KEY KEYID TEAMID N CONC OUT".into());
    }
    let port: u16 = args[1].parse().unwrap_or_else(|_| fail(format!("port {}", args[1])));
    let count: usize = args[6].parse().unwrap_or(0);
    let concurrency: usize = args[7].parse().unwrap_or(1);
    let out = Arc::new(Mutex::new(File::create(&args[8]).unwrap_or_else(|e| fail(format!("{}: {}", args[8], e)))));

    let mut roots = rustls::RootCertStore::empty();
    let mut reader = BufReader::new(File::open(&args[2]).unwrap_or_else(|e| fail(format!("{}: {}", args[2], e))));
    for certificate in rustls_pemfile::certs(&mut reader).unwrap_or_default() {
        roots.add(&rustls::Certificate(certificate)).unwrap_or_else(|e| fail(format!("CA: {}", e)));
    }
    let mut reader = BufReader::new(File::open(&args[3]).unwrap_or_else(|e| fail(format!("{}: {}", args[3], e))));
    let der = rustls_pemfile::pkcs8_private_keys(&mut reader).unwrap_or_default();
    if der.is_empty() {
        fail(format!("no PKCS#8 key in {}", args[3]));
    }
    let key = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &der[0])
        .unwrap_or_else(|e| fail(format!("the key is not a P-256 key: {}", e)));
    let mut authorization = HeaderValue::from_str(&format!("bearer {}", provider_token(&key, &args[4], &args[5]))).unwrap();
    authorization.set_sensitive(true);

    let mut config = rustls::ClientConfig::builder()
        .with_safe_defaults()
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"h2".to_vec()];
    let tcp = TcpStream::connect(("127.0.0.1", port)).await.unwrap_or_else(|e| fail(format!("connect: {}", e)));
    let _ = tcp.set_nodelay(true);
    let server_name = rustls::ServerName::try_from("localhost").unwrap();
    let tls = TlsConnector::from(Arc::new(config))
        .connect(server_name, tcp)
        .await
        .unwrap_or_else(|e| fail(format!("TLS: {}", e)));
    // One stream until the server's SETTINGS say more, as the SDK does: with h2's
    // default of 100, h2 sometimes sent streams over the mock server's limit of one after
    // it had acknowledged that limit (the streams it had queued before reading the
    // SETTINGS), which nghttp2, the mock server's HTTP/2, ends the connection for (a
    // stream error it may treat as a connection error, RFC 9113 section 5.4.2).
    let (sender, connection) = h2::client::Builder::new()
        .initial_max_send_streams(1)
        .handshake::<_, Bytes>(tls)
        .await
        .unwrap_or_else(|e| fail(format!("HTTP/2: {}", e)));
    let driver = tokio::spawn(async move {
        if let Err(error) = connection.await {
            eprintln!("connection: {}", error);
        }
    });

    let valid = Bytes::from_static(br#"{"aps":{"alert":{"title":"Rust","body":"Hello"},"sound":"default"}}"#);
    let filler = "x".repeat(4097 - r#"{"aps":{"alert":""}}"#.len());
    let large = Bytes::from(format!(r#"{{"aps":{{"alert":"{}"}}}}"#, filler));
    if large.len() != 4097 {
        fail(format!("large payload is {} bytes", large.len()));
    }

    let slots = Arc::new(Semaphore::new(concurrency));
    let mut tasks = Vec::with_capacity(count);
    for i in 0..count {
        // The first request goes alone: its accepted token raises the server's limit of
        // one stream to many (as APNs does), and only then do the others start. Streams
        // h2 0.3 held back under the limit of one and opened when it rose had their
        // HEADERS sent and never their DATA (in about one run in three, about a hundred
        // streams, seen in the server's frames): the requests hung.
        if i == 1 {
            if let Some(first) = tasks.pop() {
                let _ = first.await;
            }
        }
        let permit = slots.clone().acquire_owned().await.unwrap();
        let mut sender = sender.clone();
        let authorization = authorization.clone();
        let out = out.clone();
        let (valid, large) = (valid.clone(), large.clone());
        tasks.push(tokio::spawn(async move {
            let mut token = format!("{:064x}", i + 1);
            let mut body = valid;
            let (mut topic, mut priority) = ("com.example.app", "10");
            match i % 10 {
                3 => token.replace_range(0..1, "g"),
                5 => topic = "",
                7 => body = large,
                8 => priority = "7",
                _ => {}
            }
            let sent_id = if i % 2 == 1 { format!("{:08x}-0000-4000-8000-{:012x}", i, i) } else { String::new() };
            let mut result = json!({"index": i, "sent_id": sent_id, "refused": 0});
            let mut refused = 0;
            loop {
                let mut request = Request::builder()
                    .method("POST")
                    .uri(format!("https://localhost:{}/3/device/{}", port, token))
                    .header("authorization", authorization.clone())
                    .header("apns-push-type", "alert")
                    .header("apns-priority", priority);
                if !topic.is_empty() {
                    request = request.header("apns-topic", topic);
                }
                if !sent_id.is_empty() {
                    request = request.header("apns-id", sent_id.as_str());
                }
                let request = request.body(()).unwrap();
                let ready = match sender.clone().ready().await {
                    Ok(ready) => ready,
                    Err(error) => {
                        result["error"] = Value::from(format!("ready: {}", error));
                        break;
                    }
                };
                sender = ready;
                let (answer, mut stream) = match sender.send_request(request, false) {
                    Ok(pair) => pair,
                    Err(error) => {
                        result["error"] = Value::from(format!("send_request: {}", error));
                        break;
                    }
                };
                // The body goes once h2 has given the stream the capacity for it.
                stream.reserve_capacity(body.len());
                let mut granted = true;
                while stream.capacity() < body.len() {
                    match futures_util::future::poll_fn(|cx| stream.poll_capacity(cx)).await {
                        Some(Ok(_)) => continue,
                        Some(Err(error)) => {
                            result["error"] = Value::from(format!("capacity: {}", error));
                            granted = false;
                            break;
                        }
                        None => {
                            result["error"] = Value::from("the stream closed before it had capacity");
                            granted = false;
                            break;
                        }
                    }
                }
                if !granted {
                    break;
                }
                let _ = stream.send_data(body.clone(), true);
                // A request without an answer is reported, not waited for for ever.
                let stream_id = format!("{:?}", stream.stream_id());
                let answer = match tokio::time::timeout(std::time::Duration::from_secs(20), answer).await {
                    Ok(answer) => answer,
                    Err(_) => {
                        result["error"] = Value::from(format!("no answer within 20 s on stream {}", stream_id));
                        break;
                    }
                };
                match answer {
                    Ok(response) => {
                        result["status"] = Value::from(response.status().as_u16());
                        result["proto"] = Value::from(format!("{:?}", response.version()));
                        let apns_id = response.headers().get("apns-id").and_then(|v| v.to_str().ok()).unwrap_or("");
                        result["apns_id"] = Value::from(apns_id);
                        let mut data = response.into_body();
                        let mut collected: Vec<u8> = vec![];
                        while let Some(chunk) = data.data().await {
                            match chunk {
                                Ok(chunk) => {
                                    let _ = data.flow_control().release_capacity(chunk.len());
                                    collected.extend_from_slice(&chunk);
                                }
                                Err(error) => {
                                    result["error"] = Value::from(format!("body: {}", error));
                                    break;
                                }
                            }
                        }
                        if !collected.is_empty() {
                            match serde_json::from_slice::<Value>(&collected) {
                                Ok(answer) => result["reason"] = answer["reason"].clone(),
                                Err(_) => {
                                    result["error"] = Value::from(format!("body is not JSON: {}", String::from_utf8_lossy(&collected)))
                                }
                            }
                        }
                        break;
                    }
                    Err(error) if error.reason() == Some(Reason::REFUSED_STREAM) && refused < 50 => {
                        // Refused before the server read it (RFC 9113 section 8.7):
                        // safe to send again.
                        refused += 1;
                        tokio::time::sleep(std::time::Duration::from_millis(2)).await;
                    }
                    Err(error) => {
                        result["error"] = Value::from(format!("response: {}", error));
                        break;
                    }
                }
            }
            result["refused"] = Value::from(refused);
            let mut line = result.to_string();
            line.push('\n');
            let _ = out.lock().unwrap().write_all(line.as_bytes());
            drop(permit);
        }));
    }
    for task in tasks {
        let _ = task.await;
    }
    drop(sender);
    driver.abort();
}
