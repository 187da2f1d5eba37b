// An APNs provider written on Go's own HTTP/2 client (net/http, crypto/tls) and ES256
// signer (crypto/ecdsa): a client that shares no code with nghttp2, curl, OpenSSL or
// Python's h2, used by GoClientTests to check the mock server against it.
//
// It signs one provider token, then sends N requests over one connection with up to
// CONC in flight (goroutines), each of one of these shapes by its index i:
//
//	i % 10 == 3  a device token that is not hex        Apple: 400 BadDeviceToken
//	i % 10 == 5  no apns-topic                         Apple: 400 MissingTopic
//	i % 10 == 7  an alert payload of 4,097 bytes       Apple: 413 PayloadTooLarge
//	i % 10 == 8  apns-priority 7                       Apple: 400 BadPriority
//	otherwise    a valid alert                         Apple: 200
//
// Odd indices send an apns-id of their own (APNs echoes it); even ones send none (APNs
// makes one). Go's transport re-sends a request the server refused (REFUSED_STREAM)
// itself. One JSON line per request goes to OUT: index, status, reason, apns_id, sent_id,
// proto, error. Usage: goclient PORT CA KEY KEYID TEAMID N CONC OUT
package main

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

func fail(format string, arguments ...any) {
	fmt.Fprintf(os.Stderr, format+"\n", arguments...)
	os.Exit(2)
}

func b64(data []byte) string { return base64.RawURLEncoding.EncodeToString(data) }

// An ES256 provider token as Apple describes it: header {alg, kid}, claims {iss, iat},
// the signature as r || s, 32 bytes each.
func providerToken(key *ecdsa.PrivateKey, keyID, teamID string) string {
	header, _ := json.Marshal(map[string]string{"alg": "ES256", "kid": keyID})
	claims, _ := json.Marshal(map[string]any{"iss": teamID, "iat": time.Now().Unix()})
	signingInput := b64(header) + "." + b64(claims)
	digest := sha256.Sum256([]byte(signingInput))
	r, s, err := ecdsa.Sign(rand.Reader, key, digest[:])
	if err != nil {
		fail("sign: %v", err)
	}
	signature := make([]byte, 64)
	r.FillBytes(signature[:32])
	s.FillBytes(signature[32:])
	return signingInput + "." + b64(signature)
}

func main() {
	if len(os.Args) != 9 {
		fail("usage: goclient PORT CA KEY KEYID TEAMID N CONC OUT")
	}
	port, caPath, keyPath, keyID, teamID := os.Args[1], os.Args[2], os.Args[3], os.Args[4], os.Args[5]
	count, _ := strconv.Atoi(os.Args[6])
	concurrency, _ := strconv.Atoi(os.Args[7])
	out, err := os.Create(os.Args[8])
	if err != nil {
		fail("%v", err)
	}
	caPEM, err := os.ReadFile(caPath)
	if err != nil {
		fail("%v", err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(caPEM) {
		fail("no certificate in %s", caPath)
	}
	keyPEM, err := os.ReadFile(keyPath)
	if err != nil {
		fail("%v", err)
	}
	block, _ := pem.Decode(keyPEM)
	if block == nil {
		fail("no PEM in %s", keyPath)
	}
	parsed, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		fail("key: %v", err)
	}
	key, ok := parsed.(*ecdsa.PrivateKey)
	if !ok {
		fail("the key is not an EC key")
	}
	authorization := "bearer " + providerToken(key, keyID, teamID)

	transport := &http.Transport{
		TLSClientConfig:   &tls.Config{RootCAs: roots, ServerName: "localhost"},
		ForceAttemptHTTP2: true,
		MaxConnsPerHost:   1,
	}
	client := &http.Client{Transport: transport, Timeout: 30 * time.Second}
	valid := []byte(`{"aps":{"alert":{"title":"Go","body":"Hello"},"sound":"default"}}`)
	large := []byte(`{"aps":{"alert":"` + strings.Repeat("x", 4097-len(`{"aps":{"alert":""}}`)) + `"}}`)
	if len(large) != 4097 {
		fail("large payload is %d bytes", len(large))
	}

	var mu sync.Mutex
	encoder := json.NewEncoder(out)
	slots := make(chan struct{}, concurrency)
	var group sync.WaitGroup
	for i := 0; i < count; i++ {
		slots <- struct{}{}
		group.Add(1)
		go func(i int) {
			defer func() { <-slots; group.Done() }()
			token := fmt.Sprintf("%064x", i+1)
			body := valid
			topic, priority := "com.example.app", "10"
			switch i % 10 {
			case 3:
				token = "g" + token[1:]
			case 5:
				topic = ""
			case 7:
				body = large
			case 8:
				priority = "7"
			}
			request, err := http.NewRequest("POST", "https://localhost:"+port+"/3/device/"+token, bytes.NewReader(body))
			if err != nil {
				fail("%v", err)
			}
			request.Header.Set("authorization", authorization)
			request.Header.Set("apns-push-type", "alert")
			request.Header.Set("apns-priority", priority)
			if topic != "" {
				request.Header.Set("apns-topic", topic)
			}
			sentID := ""
			if i%2 == 1 {
				sentID = fmt.Sprintf("%08x-0000-4000-8000-%012x", i, i)
				request.Header.Set("apns-id", sentID)
			}
			result := map[string]any{"index": i, "sent_id": sentID}
			response, err := client.Do(request)
			if err != nil {
				result["error"] = err.Error()
			} else {
				data, _ := io.ReadAll(response.Body)
				response.Body.Close()
				result["status"] = response.StatusCode
				result["proto"] = response.Proto
				result["apns_id"] = response.Header.Get("apns-id")
				if len(data) > 0 {
					var answer struct {
						Reason string `json:"reason"`
					}
					if json.Unmarshal(data, &answer) != nil {
						result["error"] = "body is not JSON: " + string(data)
					}
					result["reason"] = answer.Reason
				}
			}
			mu.Lock()
			encoder.Encode(result)
			mu.Unlock()
		}(i)
	}
	group.Wait()
	out.Close()
}
