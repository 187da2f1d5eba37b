import Foundation
import FuzzTargets

/// Runs the fuzz targets without libFuzzer: over every file given (corpus folders or
/// crash files) and over seeded random inputs, a randomized property test.
///
///   apns-fuzz-replay TARGET|all [--random N] [--seed S] [PATH...]
@main
struct Replay {
    static func main() {
        var arguments = Array(CommandLine.arguments.dropFirst())
        guard let which = arguments.first else {
            print("usage: apns-fuzz-replay TARGET|all [--random N] [--seed S] [PATH...]; targets: \(FuzzTarget.all.map(\.name).joined(separator: ", "))")
            exit(2)
        }
        arguments.removeFirst()
        var randomCount = 0
        var seed: UInt64 = 1
        var paths: [String] = []
        while let argument = arguments.first {
            arguments.removeFirst()
            switch argument {
            case "--random": randomCount = Int(arguments.removeFirst()) ?? 0
            case "--seed": seed = UInt64(arguments.removeFirst()) ?? 1
            default: paths.append(argument)
            }
        }
        let targets = which == "all" ? FuzzTarget.all : FuzzTarget.named(which).map { [$0] } ?? []
        guard !targets.isEmpty else { print("unknown target \(which)"); exit(2) }
        for target in targets {
            var files = 0
            for path in paths {
                for file in Self.files(at: path) {
                    target.run(Array(FileManager.default.contents(atPath: file) ?? Data()))
                    files += 1
                }
            }
            var generator = SplitMix(state: seed)
            for _ in 0..<randomCount {
                let length = Int(generator.next() % 512)
                target.run((0..<length).map { _ in UInt8(truncatingIfNeeded: generator.next()) })
            }
            print("\(target.name): \(files) files, \(randomCount) random inputs, no findings")
        }
    }

    static func files(at path: String) -> [String] {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else { return [] }
        guard isDirectory.boolValue else { return [path] }
        let names = (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []
        return names.sorted().map { path + "/" + $0 }.filter { !$0.hasSuffix("/") }
    }
}

/// SplitMix64, for reproducible random inputs.
struct SplitMix {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
