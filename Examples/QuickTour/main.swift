// The quick tour of README.md, compiled and run by the build so the README cannot drift.
// `swift run QuickTour` prints what each step produces; it needs no credentials and no
// network: the last step sends through the in-memory MockTransport.
import APNsCore

// MARK: Build a payload

/// Custom data of your own, encoded beside `aps` with the SDK's writer.
struct GameInvite: Encodable {
    let gameID: Int
    let from: String
}

func buildPayload() throws -> [UInt8] {
    var payload = Payload.alert(title: "Game Request", body: "Bob wants to play poker")
    payload.aps.badge = 5
    payload.aps.sound = "chime.aiff"
    try payload.setCustom("invite", to: GameInvite(gameID: 4711, from: "Bob"))
    // Compact JSON, checked against the 4096-byte limit of an alert push.
    return try payload.encoded(for: .alert)
}

// MARK: Authenticate with a provider token

func makeTokenCache() throws -> ProviderTokenCache {
    // In production: try ProviderKey(contentsOfFile: "AuthKey_ABC123DEFG.p8")
    // or try ProviderKey(environmentVariable: "APNS_PRIVATE_KEY").
    let key = try ProviderKey.generate()
    // One cache for the whole process: every connection shares its token.
    return try ProviderTokenCache(key: key, keyID: "ABC123DEFG", teamID: "DEF123GHIJ")
}

// MARK: Send, and act on the outcome

func notify(_ client: APNsClient, deviceToken: DeviceToken) async -> String {
    let notification = PushNotification(
        payload: .alert(title: "Game Request", body: "Bob wants to play poker"),
        topic: "com.example.game"
    )
    do {
        let accepted = try await client.send(notification, to: deviceToken)
        return "accepted as \(accepted.apnsID?.description ?? "(no apns-id)")"
    } catch {
        switch error {
        case .rejected(let rejection) where rejection.remedy == .removeDeviceToken:
            return "\(rejection.reason?.rawValue ?? "gone"): remove \(deviceToken) from your store"
        case .rejected(let rejection):
            return "rejected: \(rejection)"
        case .failed(let failure):
            return "failed (\(failure.mayHaveReachedAPNs ? "may have" : "did not") reach APNs): \(failure)"
        case .invalid(let problem):
            return "never sent: \(problem)"
        }
    }
}

// MARK: Run the tour

let body = try buildPayload()
print("payload (\(body.count) bytes): \(String(decoding: body, as: UTF8.self))")

let tokens = try makeTokenCache()
print("authorization: bearer \(try tokens.token().jwt.prefix(16))… (one signature, shared)")

let mock = MockTransport()
let dead = try DeviceToken(hex: "11fc13adff785122b4ad28809a3420982341241421348097878e577c991de8f1")
mock.respond(to: dead, with: .rejected(.unregistered, timestamp: .now))
let client = APNsClient(environment: .sandbox, credentials: .providerToken(tokens), transport: mock)

let live = try DeviceToken(hex: "00FC13ADFF785122B4AD28809A3420982341241421348097878E577C991DE8F0")
print(await notify(client, deviceToken: live))
print(await notify(client, deviceToken: dead))
await client.shutdown()
