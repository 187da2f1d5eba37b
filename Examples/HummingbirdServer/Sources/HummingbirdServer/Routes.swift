import APNsCore
import DeviceNotifications
import Foundation
import Hummingbird
import Prometheus

/// The body of `POST /users/{user}/devices`.
struct DeviceRegistrationRequest: Decodable {
    /// The device token as the app got it, in hexadecimal.
    var token: String
}

/// The answer to `POST /users/{user}/devices`.
struct DeviceRegistrationResponse: ResponseEncodable {
    var user: String
    /// The redacted token.
    var deviceToken: String
    /// Whether it was new for this user.
    var created: Bool
}

/// The answer to `GET /users/{user}/devices`.
struct DeviceList: ResponseEncodable {
    var user: String
    /// The tokens, redacted, oldest registration first.
    var devices: [String]
}

/// The body of `POST /users/{user}/notifications`.
struct NotificationRequest: Decodable {
    var title: String?
    var body: String
}

extension DeliveryReport: ResponseEncodable {}

/// The HTTP API:
///
/// | method and path | what it does |
/// |---|---|
/// | `POST /users/{user}/devices` `{"token":"<hex>"}` | registers a device token (201 when new, 200 when known) |
/// | `GET /users/{user}/devices` | lists the user's tokens, redacted |
/// | `POST /users/{user}/notifications` `{"title":"…","body":"…"}` | sends an alert to the user's devices; answers a ``DeliveryReport`` |
/// | `GET /metrics` | every metric, in Prometheus's text format |
/// | `GET /health` | 200 while the server runs |
func makeRouter(notifier: UserNotifier, metrics: PrometheusCollectorRegistry) -> Router<BasicRequestContext> {
    let router = Router()
    router.add(middleware: MetricsMiddleware())

    router.get("health") { _, _ in HTTPResponse.Status.ok }

    router.post("users/:user/devices") { request, context -> EditedResponse<DeviceRegistrationResponse> in
        let user = try context.parameters.require("user")
        let body = try await request.decode(as: DeviceRegistrationRequest.self, context: context)
        let deviceToken: DeviceToken
        do {
            deviceToken = try DeviceToken(hex: body.token)
        } catch {
            throw HTTPError(.badRequest, message: "token: \(error)")
        }
        let created = await notifier.register(deviceToken, for: user)
        return EditedResponse(
            status: created ? .created : .ok,
            response: DeviceRegistrationResponse(user: user, deviceToken: deviceToken.redacted, created: created)
        )
    }

    router.get("users/:user/devices") { _, context -> DeviceList in
        let user = try context.parameters.require("user")
        let registrations = await notifier.registry.registrations(for: user)
        return DeviceList(user: user, devices: registrations.map(\.deviceToken.redacted))
    }

    router.post("users/:user/notifications") { request, context -> DeliveryReport in
        let user = try context.parameters.require("user")
        let body = try await request.decode(as: NotificationRequest.self, context: context)
        guard !body.body.isEmpty else { throw HTTPError(.badRequest, message: "body: must not be empty") }
        return await notifier.notify(user: user, title: body.title, body: body.body)
    }

    router.get("metrics") { _, _ -> Response in
        Response(
            status: .ok,
            headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
            body: ResponseBody(byteBuffer: ByteBuffer(bytes: metrics.emitToBuffer()))
        )
    }
    return router
}
