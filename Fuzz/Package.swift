// swift-tools-version:6.0
//
// Fuzz targets for swift-apns, kept out of the main package so that a normal
// `swift build` / `swift test` never builds them (and never with fuzzer flags).
// Built and run by scripts/fuzz.sh:
//   apns-fuzz         libFuzzer entry point (built with -sanitize=fuzzer,address);
//                     the target is chosen with APNS_FUZZ_TARGET.
//   apns-fuzz-replay  runs the same checks over corpus files and seeded random inputs
//                     without libFuzzer (a plain build; a randomized property test).
import PackageDescription

let package = Package(
    name: "swift-apns-fuzz",
    platforms: [.macOS(.v15)],
    dependencies: [
        // `swift-apns` is a symbolic link to the repository root, so the dependency has the
        // identity swift-apns whatever the checkout directory is called.
        .package(path: "swift-apns"),
    ],
    targets: [
        // nghttp2's HPACK inflater, the independent decoder the HPACK target checks
        // against. Named apart from the main package's CNGHTTP2 (module names are global).
        .systemLibrary(name: "CFuzzNGHTTP2", pkgConfig: "libnghttp2"),
        .target(
            name: "FuzzTargets",
            dependencies: [
                "CFuzzNGHTTP2",
                .product(name: "APNsPayload", package: "swift-apns"),
                .product(name: "APNsCore", package: "swift-apns"),
                .product(name: "APNsTransport", package: "swift-apns"),
                .product(name: "APNsTesting", package: "swift-apns"),
            ]
        ),
        .executableTarget(name: "apns-fuzz", dependencies: ["FuzzTargets"]),
        .executableTarget(name: "apns-fuzz-replay", dependencies: ["FuzzTargets"]),
    ],
    swiftLanguageModes: [.v6]
)
