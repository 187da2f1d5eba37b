// An APNs-like server on Go's own HTTP/2 (net/http, crypto/tls, crypto/ecdsa): an
// implementation that shares no code with nghttp2, OpenSSL or Python's h2, used by
// GoServerTests to check the client against a third independent server.
//
// What it does that the other servers do not:
//   - Go's HTTP/2 server as it ships: at most 250 concurrent streams per connection
//     (announced in its first SETTINGS), its own flow control and its own HPACK encoder
//     (which indexes response fields), and its strict checks of the client's frames.
//   - A graceful restart every RESTART_EVERY requests: the next generation starts
//     listening on the same port (SO_REUSEPORT) and the current one is shut down
//     (http.Server.Shutdown): Go sends GOAWAY on every connection, finishes the streams
//     it has read, ignores any stream the client opens after that, and closes.
//   - Provider tokens verified with Go's crypto/ecdsa against the public half of the
//     key the test gives (ES256, kid, iss, iat), and each request checked as APNs would
//     (method, path, topic, push type, apns-id, JSON body with "aps", 4 KB).
//
// Usage: goserver CERT KEY RECORD SEED CLIENT_CA|"" SIGNING_KEY|"" RESTART_EVERY
// Prints "PORT <n>" once listening. Writes one JSON line per request it read to RECORD:
// seq, conn, gen, token, apns_id, fate, auth, problems. Runs until it is killed.
package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

var (
	recordMu   sync.Mutex
	record     *os.File
	sequence   int64
	connection int64
	attemptsMu sync.Mutex
	attempts   = map[string]int{}
	seed       uint64
	signingKey *ecdsa.PublicKey
	tokenPath  = regexp.MustCompile(`^/3/device/([0-9a-f]{64})$`)
	uuidForm   = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)
)

type connKey struct{}

// The fates a request may meet, with their weights; a request is answered 200 on its
// fifth attempt or later, so every notification ends (the client gives up after four).
var fates = []struct {
	name   string
	weight float64
	status int
}{
	{"ok", 70, 200}, {"delay_ok", 8, 200}, {"BadDeviceToken", 4, 400}, {"Unregistered", 4, 410},
	{"TooManyRequests", 5, 429}, {"ServiceUnavailable", 4, 503}, {"InternalServerError", 3, 500},
}

// splitmix64, so that a seed and a token replay the same fates.
func mix(x uint64) uint64 {
	x += 0x9E3779B97F4A7C15
	x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9
	x = (x ^ (x >> 27)) * 0x94D049BB133111EB
	return x ^ (x >> 31)
}

func fateOf(token string, attempt int) (string, int) {
	h := seed
	for i := 0; i < len(token); i++ {
		h = mix(h ^ uint64(token[i]))
	}
	h = mix(h ^ uint64(attempt))
	total := 0.0
	for _, f := range fates {
		total += f.weight
	}
	r := float64(h>>11) / float64(1<<53) * total
	for _, f := range fates {
		if r < f.weight {
			return f.name, f.status
		}
		r -= f.weight
	}
	return "ok", 200
}

func write(event map[string]any) {
	line, _ := json.Marshal(event)
	recordMu.Lock()
	defer recordMu.Unlock()
	record.Write(append(line, '\n'))
}

func b64(part string) ([]byte, error) { return base64.RawURLEncoding.DecodeString(part) }

// The problems Go finds with a provider token, or none.
func checkProviderToken(header string) []string {
	if signingKey == nil {
		return nil
	}
	if !strings.HasPrefix(header, "bearer ") {
		return []string{"authorization does not start with 'bearer '"}
	}
	parts := strings.Split(strings.TrimPrefix(header, "bearer "), ".")
	if len(parts) != 3 {
		return []string{fmt.Sprintf("the token has %d parts, not 3", len(parts))}
	}
	var problems []string
	var head struct {
		Alg string `json:"alg"`
		Kid string `json:"kid"`
	}
	var claims struct {
		Iss string `json:"iss"`
		Iat int64  `json:"iat"`
	}
	if raw, err := b64(parts[0]); err != nil || json.Unmarshal(raw, &head) != nil {
		problems = append(problems, "the token's header is not base64url JSON")
	}
	if raw, err := b64(parts[1]); err != nil || json.Unmarshal(raw, &claims) != nil {
		problems = append(problems, "the token's claims are not base64url JSON")
	}
	if head.Alg != "ES256" || head.Kid != "ABC123DEFG" {
		problems = append(problems, fmt.Sprintf("header alg %q kid %q", head.Alg, head.Kid))
	}
	if claims.Iss != "DEF123GHIJ" {
		problems = append(problems, fmt.Sprintf("iss %q", claims.Iss))
	}
	if age := time.Now().Unix() - claims.Iat; age < -60 || age > 3600 {
		problems = append(problems, fmt.Sprintf("iat %d is %d s from now", claims.Iat, age))
	}
	signature, err := b64(parts[2])
	if err != nil || len(signature) != 64 {
		return append(problems, "the signature is not 64 bytes of base64url (r || s)")
	}
	digest := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	r := new(big.Int).SetBytes(signature[:32])
	s := new(big.Int).SetBytes(signature[32:])
	if !ecdsa.Verify(signingKey, digest[:], r, s) {
		problems = append(problems, "the ES256 signature does not verify")
	}
	return problems
}

func handler(generation int) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var problems []string
		if r.ProtoMajor != 2 {
			problems = append(problems, "not HTTP/2: "+r.Proto)
		}
		if r.Method != "POST" {
			problems = append(problems, "method "+r.Method)
		}
		match := tokenPath.FindStringSubmatch(r.URL.Path)
		token := ""
		if match == nil {
			problems = append(problems, "path "+r.URL.Path)
		} else {
			token = match[1]
		}
		if r.Header.Get("apns-topic") != "com.example.app" {
			problems = append(problems, "apns-topic "+r.Header.Get("apns-topic"))
		}
		if r.Header.Get("apns-push-type") != "alert" {
			problems = append(problems, "apns-push-type "+r.Header.Get("apns-push-type"))
		}
		apnsID := r.Header.Get("apns-id")
		if apnsID != "" && !uuidForm.MatchString(apnsID) {
			problems = append(problems, "apns-id "+apnsID)
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, 8192))
		var payload map[string]any
		if err != nil {
			problems = append(problems, "body: "+err.Error())
		} else if len(body) > 4096 {
			problems = append(problems, fmt.Sprintf("body of %d bytes", len(body)))
		} else if json.Unmarshal(body, &payload) != nil {
			problems = append(problems, "body is not JSON: "+string(body))
		} else if _, ok := payload["aps"].(map[string]any); !ok {
			problems = append(problems, "no aps dictionary")
		}
		if length := r.Header.Get("content-length"); length != "" && length != strconv.Itoa(len(body)) {
			problems = append(problems, "content-length "+length+" for "+strconv.Itoa(len(body))+" bytes")
		}
		authorization := r.Header.Get("authorization")
		if authorization != "" {
			problems = append(problems, checkProviderToken(authorization)...)
		}

		attemptsMu.Lock()
		attempts[token]++
		attempt := attempts[token]
		attemptsMu.Unlock()
		fate, status := fateOf(token, attempt)
		if attempt >= 5 {
			fate, status = "ok", 200
		}
		if fate == "delay_ok" {
			time.Sleep(time.Duration(mix(seed^uint64(atomic.LoadInt64(&sequence)))%40) * time.Millisecond)
		}
		if apnsID == "" {
			apnsID = "00000000-0000-4000-8000-000000000000"
		}
		write(map[string]any{
			"seq": atomic.AddInt64(&sequence, 1), "conn": r.Context().Value(connKey{}), "gen": generation,
			"token": token, "apns_id": apnsID, "fate": fate, "auth": authorization != "", "problems": problems,
		})
		w.Header().Set("apns-id", apnsID)
		if status == 200 {
			w.WriteHeader(200)
			return
		}
		w.Header().Set("content-type", "application/json")
		w.WriteHeader(status)
		if fate == "Unregistered" {
			fmt.Fprintf(w, `{"reason":"Unregistered","timestamp":%d}`, time.Now().UnixMilli())
		} else {
			fmt.Fprintf(w, `{"reason":%q}`, fate)
		}
	}
}

func listen(port int) (net.Listener, error) {
	config := net.ListenConfig{Control: func(_, _ string, raw syscall.RawConn) error {
		var failure error
		raw.Control(func(fd uintptr) {
			failure = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, 0xf /* SO_REUSEPORT */, 1)
		})
		return failure
	}}
	return config.Listen(context.Background(), "tcp", fmt.Sprintf("127.0.0.1:%d", port))
}

func main() {
	if len(os.Args) != 8 {
		fmt.Fprintln(os.Stderr, "usage: goserver CERT KEY RECORD SEED CLIENT_CA SIGNING_KEY RESTART_EVERY")
		os.Exit(2)
	}
	certificate, err := tls.LoadX509KeyPair(os.Args[1], os.Args[2])
	if err != nil {
		panic(err)
	}
	if record, err = os.Create(os.Args[3]); err != nil {
		panic(err)
	}
	seed, _ = strconv.ParseUint(os.Args[4], 10, 64)
	tlsConfig := &tls.Config{Certificates: []tls.Certificate{certificate}, NextProtos: []string{"h2"}, MinVersion: tls.VersionTLS12}
	if os.Args[5] != "" {
		pemBytes, err := os.ReadFile(os.Args[5])
		if err != nil {
			panic(err)
		}
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(pemBytes)
		tlsConfig.ClientCAs = pool
		tlsConfig.ClientAuth = tls.RequireAndVerifyClientCert
	}
	if os.Args[6] != "" {
		pemBytes, err := os.ReadFile(os.Args[6])
		if err != nil {
			panic(err)
		}
		block, _ := pem.Decode(pemBytes)
		key, err := x509.ParsePKCS8PrivateKey(block.Bytes)
		if err != nil {
			panic(err)
		}
		ecKey, ok := key.(*ecdsa.PrivateKey)
		if !ok {
			fmt.Fprintln(os.Stderr, "the signing key is not an EC key")
			os.Exit(2)
		}
		signingKey = &ecKey.PublicKey
	}
	restartEvery, _ := strconv.ParseInt(os.Args[7], 10, 64)

	var port int
	var mu sync.Mutex
	var current *http.Server
	generation := 0
	start := func() {
		listener, err := listen(port)
		if err != nil {
			panic(err)
		}
		if port == 0 {
			port = listener.Addr().(*net.TCPAddr).Port
		}
		generation++
		server := &http.Server{
			Handler:   handler(generation),
			TLSConfig: tlsConfig,
			ConnContext: func(ctx context.Context, c net.Conn) context.Context {
				return context.WithValue(ctx, connKey{}, atomic.AddInt64(&connection, 1))
			},
			ErrorLog: nil,
		}
		current = server
		go server.Serve(tls.NewListener(listener, tlsConfig))
	}
	mu.Lock()
	start()
	mu.Unlock()
	fmt.Printf("PORT %d\n", port)

	// Restarts: watch the request count; at each multiple, the next generation listens
	// and the current one shuts down gracefully (GOAWAY on its connections).
	go func() {
		next := restartEvery
		for restartEvery > 0 {
			time.Sleep(2 * time.Millisecond)
			if atomic.LoadInt64(&sequence) < next {
				continue
			}
			next += restartEvery
			mu.Lock()
			old, oldGeneration := current, generation
			start()
			mu.Unlock()
			// Shutdown closes the listener and starts Go's graceful HTTP/2 shutdown on
			// every connection: GOAWAY, the streams read are finished, and the
			// connection closes a second after the last one (while the client may
			// still be writing: its next write meets a reset).
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				old.Shutdown(ctx)
			}()
			write(map[string]any{"seq": atomic.LoadInt64(&sequence), "fate": "shutdown_started", "gen": oldGeneration})
		}
	}()
	select {}
}
