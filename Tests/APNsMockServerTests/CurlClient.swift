import Foundation
@testable import APNsMockServer

/// curl (built with nghttp2 on Debian) as the HTTP/2 client that is not ours.
struct CurlClient {
    struct Response {
        var exitCode: Int32
        var status: Int
        var httpVersion: String
        var body: String
        var stderr: String

        /// The body parsed by Foundation's JSONSerialization.
        var json: [String: Any]? {
            (try? JSONSerialization.jsonObject(with: Data(body.utf8))) as? [String: Any]
        }
        var reason: String? { json?["reason"] as? String }
    }

    let caFile: String

    init(server: MockAPNsServer) throws {
        caFile = FileManager.default.temporaryDirectory.appendingPathComponent("apns-mock-ca-\(UUID().uuidString).pem").path
        do { try server.writeCertificateAuthority(to: caFile) } catch {
            remove()
            throw error
        }
    }

    /// Removes the CA file and any file a test wrote beside it (`<caFile>.body`, `<caFile>.<UUID>.body`).
    func remove() {
        let directory = URL(fileURLWithPath: caFile).deletingLastPathComponent()
        let name = URL(fileURLWithPath: caFile).lastPathComponent
        for entry in (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        where entry == name || entry.hasPrefix(name + ".") {
            try? FileManager.default.removeItem(at: directory.appendingPathComponent(entry))
        }
    }

    static let marker = "\n--curl-write-out--"

    /// One request; `body` nil sends none. `trust: false` leaves out `--cacert`.
    func send(
        host: String = "127.0.0.1", port: Int, path: String, method: String = "POST",
        headers: [String] = [], body: String? = #"{"aps":{"alert":"hi"}}"#, trust: Bool = true,
        extra: [String] = []
    ) async throws -> Response {
        var arguments = ["-sS", "--http2", "--max-time", "15", "-X", method,
                         "-w", Self.marker + "%{http_code} %{http_version}"]
        if trust { arguments += ["--cacert", caFile] }
        for header in headers { arguments += ["-H", header] }
        if let body { arguments += ["--data-binary", body] }
        arguments += extra
        let urlHost = host.contains(":") ? "[\(host)]" : host
        arguments.append("https://\(urlHost):\(port)\(path)")
        let result = try await ExternalTool.run("curl", arguments)
        return Self.parse(result)
    }

    /// Runs curl with raw arguments (for `--next` sequences on one connection).
    func raw(_ arguments: [String]) async throws -> ExternalTool.Result {
        try await ExternalTool.run("curl", arguments)
    }

    static func parse(_ result: ExternalTool.Result) -> Response {
        let parts = result.stdout.components(separatedBy: marker)
        let body = parts.first ?? ""
        let tail = (parts.count > 1 ? parts[1] : "").split(separator: " ")
        return Response(exitCode: result.exitCode,
                        status: tail.first.flatMap { Int($0) } ?? 0,
                        httpVersion: tail.count > 1 ? String(tail[1]) : "",
                        body: parts.count > 1 ? body : "",
                        stderr: result.stderr)
    }
}

/// A device token of 32 bytes in hex, like the ones iOS issues.
let sampleDeviceToken = String(repeating: "0123456789abcdef", count: 4)
let samplePayload = #"{"aps":{"alert":"hello"}}"#

/// A compact JWT with the given claims and a dummy signature, built with Foundation's
/// JSONSerialization and base64 (not with the server's code).
func makeJWT(keyID: String = "ABC123DEFG", teamID: String = "DEF123GHIJ", issuedAt: Any) -> String {
    func encode(_ object: [String: Any]) -> String {
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data()
        return data.base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }
    return encode(["alg": "ES256", "kid": keyID]) + "." + encode(["iss": teamID, "iat": issuedAt]) + ".c2lnbmF0dXJl"
}

/// Starts a server, gives the test a curl client trusting its CA, and always stops it.
func withServerAndCurl<T: Sendable>(
    _ configuration: MockAPNsServer.Configuration = .init(bundleIDs: ["com.example.app"]),
    _ body: (MockAPNsServer, CurlClient) async throws -> T
) async throws -> T {
    try await withMockAPNsServer(configuration: configuration) { server in
        let curl = try CurlClient(server: server)
        defer { curl.remove() }
        return try await body(server, curl)
    }
}
