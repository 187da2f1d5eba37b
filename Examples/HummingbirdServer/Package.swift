// swift-tools-version:6.2
//
// An example provider server: Hummingbird 2 in front of swift-apns. A package of its own,
// so the SDK's dependency tree never includes Hummingbird or a metrics backend.
//
//   DeviceNotifications   the device-token store and the send-and-forget logic (APNsCore only)
//   HummingbirdServer     the HTTP API, Prometheus metrics, the ServiceGroup
import PackageDescription

let package = Package(
    name: "HummingbirdServer",
    platforms: [.macOS(.v15)],
    dependencies: [
        // Named, so that the identity does not depend on the folder the SDK was cloned into.
        .package(name: "swift-apns", path: "../.."),
        // No default traits: the example reads its settings with APNsSettings, not swift-configuration.
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1", traits: []),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.6.0"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.5.0"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.6.0"),
    ],
    targets: [
        .target(
            name: "DeviceNotifications",
            dependencies: [
                .product(name: "APNsCore", package: "swift-apns"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
            ]
        ),
        .executableTarget(
            name: "HummingbirdServer",
            dependencies: [
                "DeviceNotifications",
                .product(name: "APNsTransport", package: "swift-apns"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(
            name: "DeviceNotificationsTests",
            dependencies: [
                "DeviceNotifications",
                .product(name: "APNsCore", package: "swift-apns"),
                .product(name: "APNsTesting", package: "swift-apns"),
                .product(name: "MetricsTestKit", package: "swift-metrics"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
