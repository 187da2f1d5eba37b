// swift-tools-version:6.2
//
// swift-apns: an SDK for Apple Push Notification service providers.
// Layers (see Documentation/SwiftAPNs.docc): APNsPayload <- APNsCore <- APNsTransport,
// with APNsConfiguration (settings from a ConfigReader), the test products APNsTesting
// (on APNsCore) and APNsMockServer, and the `apns` tool on top. C libraries (libnghttp2, OpenSSL)
// come in through system-library targets found by pkg-config.
// Tools 6.2: swift-configuration's own manifest needs it, and `traits: []` below keeps
// its optional parts (JSON, YAML, reloading) out of the SDK's graph.
import PackageDescription

let package = Package(
    name: "swift-apns",
    // Synchronization.Mutex needs macOS 15 on Apple platforms; Linux has it everywhere.
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "APNsPayload", targets: ["APNsPayload"]),
        .library(name: "APNsCore", targets: ["APNsCore"]),
        .library(name: "APNsTransport", targets: ["APNsTransport"]),
        .library(name: "APNsMockServer", targets: ["APNsMockServer"]),
        // What users test with, as swift-log offers InMemoryLogging: the mock transport.
        .library(name: "APNsTesting", targets: ["APNsTesting"]),
        // Settings from a swift-configuration ConfigReader; its own product so that
        // users of APNsTransport alone do not get swift-configuration's dependencies.
        .library(name: "APNsConfiguration", targets: ["APNsConfiguration"]),
        .executable(name: "apns", targets: ["apns"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-log.git", from: "1.6.0"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.5.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.6.0"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.5.0"),
        .package(url: "https://github.com/apple/swift-distributed-tracing.git", from: "1.1.0"),
        .package(url: "https://github.com/apple/swift-configuration.git", from: "1.4.0", traits: []),
    ],
    targets: [
        // MARK: C libraries
        .systemLibrary(
            name: "CNGHTTP2",
            pkgConfig: "libnghttp2",
            providers: [.apt(["libnghttp2-dev"])]
        ),
        .systemLibrary(
            name: "COpenSSL",
            pkgConfig: "openssl",
            providers: [.apt(["libssl-dev"])]
        ),

        // MARK: Library modules
        // The one owner of OpenSSL handles (EVP_PKEY, X509, X509_STORE, SSL_CTX, SSL) for
        // APNsCore, APNsTransport and APNsMockServer; package-internal, not a product.
        .target(name: "APNsOpenSSL", dependencies: ["COpenSSL"]),
        .target(name: "APNsPayload"),
        .target(
            name: "APNsCore",
            dependencies: [
                "APNsPayload",
                "APNsOpenSSL",
                "COpenSSL",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ]
        ),
        .target(
            name: "APNsTransport",
            dependencies: [
                "APNsCore",
                "APNsOpenSSL",
                "CNGHTTP2",
                "COpenSSL",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        .target(
            name: "APNsTesting",
            dependencies: ["APNsCore"]
        ),
        .target(
            name: "APNsConfiguration",
            dependencies: [
                "APNsTransport",
                .product(name: "Configuration", package: "swift-configuration"),
            ]
        ),
        .target(
            name: "APNsMockServer",
            dependencies: [
                "APNsCore",
                // A test server hands its users a transport already pointed at it.
                "APNsTransport",
                "APNsOpenSSL",
                "CNGHTTP2",
                "COpenSSL",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),

        // MARK: Tools
        .executableTarget(
            name: "apns",
            dependencies: [
                "APNsPayload",
                "APNsCore",
                "APNsTransport",
                "APNsMockServer",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .executableTarget(
            name: "QuickTour",
            dependencies: ["APNsTransport", "APNsTesting"],
            path: "Examples/QuickTour"
        ),
        .executableTarget(
            name: "PayloadBenchmark",
            dependencies: ["APNsPayload"],
            path: "Benchmarks/PayloadBenchmark"
        ),
        .executableTarget(
            name: "HPACKBenchmark",
            dependencies: ["APNsCore", "CNGHTTP2"],
            path: "Benchmarks/HPACKBenchmark"
        ),
        .executableTarget(
            name: "APNsBench",
            dependencies: ["APNsTransport"],
            path: "Benchmarks/APNsBench",
            exclude: ["count-allocations.sh", "fastmock-common.sh", "task-frames.sh"]
        ),
        .executableTarget(
            name: "TransportBenchmark",
            dependencies: [
                "APNsTransport",
                "APNsMockServer",
                "APNsCore",
                // Only to give the client and transport an in-process backend and tracer.
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ],
            path: "Benchmarks/TransportBenchmark"
        ),
        // The latency-bound throughput of issue #18: the public API against the mock
        // server behind its link emulation, beside h2load (Benchmarks/README.md).
        .executableTarget(
            name: "WANBenchmark",
            dependencies: ["APNsTransport", "APNsMockServer"],
            path: "Benchmarks/WANBenchmark"
        ),
        // Issue #18's idle cost of many credentials: 1,000 provider keys of distinct teams,
        // one connection each on one shared transport, against `apns mock-server` in a
        // child process; the public API only (Benchmarks/README.md).
        .executableTarget(
            name: "ManyCredentialsBenchmark",
            dependencies: ["APNsCore", "APNsTransport"],
            path: "Benchmarks/ManyCredentials"
        ),
        // The soak of issue #8; its engine is a package-internal module so the default
        // test suite can run it small (not a product).
        .target(
            name: "SoakEngine",
            dependencies: [
                "APNsCore",
                "APNsTransport",
                "APNsMockServer",
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Benchmarks/SoakEngine"
        ),
        .executableTarget(
            name: "Soak",
            dependencies: ["SoakEngine"],
            path: "Benchmarks/Soak"
        ),

        // MARK: Tests
        // What the test targets share for running outside tools.
        .target(
            name: "TestTools",
            path: "Tests/TestTools"
        ),
        .testTarget(
            name: "APNsPayloadTests",
            dependencies: ["APNsPayload"]
        ),
        .testTarget(
            name: "APNsCoreTests",
            dependencies: [
                "APNsCore",
                "APNsOpenSSL",
                "APNsPayload",
                "APNsTesting",
                "TestTools",
                "CNGHTTP2",
                "COpenSSL",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "MetricsTestKit", package: "swift-metrics"),
            ],
            resources: [.copy("Fixtures")]
        ),
        .testTarget(
            name: "APNsTransportTests",
            dependencies: [
                "APNsTransport",
                "APNsMockServer",
                "APNsCore",
                "SoakEngine",
                "TestTools",
                "APNsTesting",
                "CNGHTTP2",
                "COpenSSL",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "MetricsTestKit", package: "swift-metrics"),
                .product(name: "InMemoryTracing", package: "swift-distributed-tracing"),
            ],
            // Go's HTTP/2 server for GoServerTests, built with the go tool at test time.
            exclude: ["Hostile/GoServer", "Hostile/RustServer", "Hostile/NettyServer"]
        ),
        .testTarget(
            name: "APNsTestingTests",
            dependencies: ["APNsTesting", "APNsCore"]
        ),
        .testTarget(
            name: "APNsConfigurationTests",
            dependencies: [
                "APNsConfiguration",
                "APNsTransport",
                "APNsMockServer",
                .product(name: "Configuration", package: "swift-configuration"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            resources: [.copy("Fixtures")]
        ),
        .testTarget(
            name: "APNsMockServerTests",
            dependencies: [
                "APNsMockServer",
                "APNsCore",
                "APNsOpenSSL",
                "CNGHTTP2",
                "COpenSSL",
                "TestTools",
            ],
            // A provider on Go's HTTP/2 client for GoClientTests, built with the go tool at test time.
            exclude: ["GoClient", "RustClient", "NettyClient", "PythonClient"]
        ),
        .testTarget(
            name: "apnsTests",
            dependencies: ["APNsMockServer", "APNsCore"]
        ),
    ],
    swiftLanguageModes: [.v6]
)
