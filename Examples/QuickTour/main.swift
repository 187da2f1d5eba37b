// The quick tour of README.md. The code between the README markers is quoted there
// verbatim (a test checks it), so the README's example always compiles and runs:
// `swift run QuickTour` needs no credentials and no network — it signs with a key made
// for the run and sends through the in-memory MockTransport instead of makeTransport().

import APNsTesting  // the MockTransport this run sends through

// README:begin
import APNsTransport  // re-exports APNsCore and APNsPayload
import Foundation

struct GameInvite: Encodable { let gameID: Int; let from: String }

/// The real transport: HTTP/2 over TLS to APNs, a pool of long-lived connections.
func makeTransport() -> HTTP2Transport {
    HTTP2Transport(configuration: .init(environment: .sandbox, connectionCount: 2))
}

/// One client for the life of the process; it owns the transport's connections.
func makeClient(key: ProviderKey, transport: some PushTransport) throws -> APNsClient {
    // One token cache per key (ProviderKey(contentsOfFile: "AuthKey_ABC123DEFG.p8")),
    // shared by every connection: one signature every 50 minutes.
    let tokens = try ProviderTokenCache(key: key, keyID: "ABC123DEFG", teamID: "DEF123GHIJ")
    // The environment is stated once, on the transport: the client sends where it connects.
    return APNsClient(credentials: .providerToken(tokens), transport: transport)
}

/// In a server: the environment says where and how, once (APNS_ENVIRONMENT, APNS_KEY_FILE,
/// APNS_KEY_ID, APNS_TEAM_ID, or APNS_CERTIFICATE_FILE; a ConfigReader works too: see
/// the Observability and lifecycle article). A missing or malformed variable is an
/// APNsSettingsError that names it.
func makeClientFromEnvironment(_ variables: [String: String] = ProcessInfo.processInfo.environment) throws -> APNsClient {
    try APNsSettings(environmentVariables: variables).makeClient()
}

func sendGameInvite(to deviceToken: DeviceToken, with client: APNsClient) async throws {
    // A payload: typed keys, custom data beside `aps`, checked for its push type.
    var payload = Payload.alert(title: "Game Request", body: "Bob wants to play poker")
    payload.aps.badge = 5
    payload.aps.sound = "chime.aiff"
    try payload.setCustom("invite", to: GameInvite(gameID: 4711, from: "Bob"))
    print(String(decoding: try payload.encoded(for: .alert), as: UTF8.self))  // compact JSON, ≤ 4096 bytes

    // Every notification ends in exactly one outcome.
    let notification = PushNotification(payload: payload, topic: "com.example.game")
    do {
        let accepted = try await client.send(notification, to: deviceToken)
        print("accepted:", accepted.apnsID?.description ?? "-")
    } catch {
        switch error {
        case .rejected(let rejection) where rejection.remedy == .removeDeviceToken:
            print("forget \(deviceToken):", rejection)  // Unregistered, ExpiredToken
        case .rejected(let rejection):
            print("APNs refused it:", rejection)  // Apple's reason, and what to do
        case .failed(let failure):
            print("no answer; may have reached APNs:", failure.mayHaveReachedAPNs)
        case .invalid(let problem):
            print("never sent:", problem)  // bad token, payload, topic…
        }
    }
}

/// One notification to many devices: the requests are made, sent and answered on the
/// transport's threads, a window of `maxConcurrency` at a time.
func announceTournament(to deviceTokens: [DeviceToken], with client: APNsClient) async -> [String] {
    let notification = PushNotification(payload: .alert(body: "The tournament starts in 10 minutes"), topic: "com.example.game")
    let outcomes = await client.send(notification, to: deviceTokens, maxConcurrency: 1_000)
    print("accepted:", outcomes.filter { $0.accepted != nil }.count, "of", outcomes.count)
    // The tokens to forget (410 Unregistered or ExpiredToken), as stored: hexString is
    // the whole token; its description is redacted, for logs.
    return outcomes.filter { $0.error?.rejection?.remedy == .removeDeviceToken }.map(\.deviceToken.hexString)
}
// README:end

let mock = MockTransport()
let live = try DeviceToken(hex: "00FC13ADFF785122B4AD28809A3420982341241421348097878E577C991DE8F0")
let dead = try DeviceToken(hex: "11fc13adff785122b4ad28809a3420982341241421348097878e577c991de8f1")
mock.respond(to: dead, with: .rejected(.unregistered, timestamp: .now))
let client = try makeClient(key: ProviderKey.generate(), transport: mock)
try await sendGameInvite(to: live, with: client)
try await sendGameInvite(to: dead, with: client)
let forget = await announceTournament(to: [live, dead], with: client)
print("forget:", forget)
await client.shutdown()
do {
    // This run has no credentials in its environment: the error names what is missing.
    _ = try makeClientFromEnvironment(["APNS_ENVIRONMENT": "sandbox"])
} catch {
    print("from the environment:", error)  // APNS_KEY_FILE is not set, nor APNS_KEY or APNS_CERTIFICATE_FILE: …
}
