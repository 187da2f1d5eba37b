// Payload encoding and decoding: the SDK's writer and parser against Foundation's
// JSONEncoder/JSONDecoder on an equivalent Codable struct, in the same process, in
// interleaved rounds. Reports the median ns per payload over the rounds.
//
//     swift run -c release PayloadBenchmark [rounds] [iterations-per-round]

import APNsPayload
import Foundation

// MARK: The typical alert payload: title, body, badge, sound, two custom keys.

let payload: Payload = {
    var p = Payload.alert(
        Alert(title: "Game Request", body: "Bob wants to play poker — join the table?"), badge: 5, sound: "chime.aiff")
    p.custom["acme1"] = "bar"
    p.custom["acme2"] = 42
    return p
}()

struct FoundationPayload: Codable {
    struct APS: Codable {
        struct Alert: Codable {
            var title: String
            var body: String
        }
        var alert: Alert
        var badge: Int
        var sound: String
    }
    var aps: APS
    var acme1: String
    var acme2: Int
}

let foundationPayload = FoundationPayload(
    aps: .init(alert: .init(title: "Game Request", body: "Bob wants to play poker — join the table?"), badge: 5, sound: "chime.aiff"),
    acme1: "bar", acme2: 42)

// MARK: Harness

let arguments = CommandLine.arguments
let rounds = arguments.count > 1 ? Int(arguments[1]) ?? 21 : 21
let iterations = arguments.count > 2 ? Int(arguments[2]) ?? 20_000 : 20_000

/// Defeats dead-code elimination. `nonisolated(unsafe)` is safe: only this single-threaded
/// top-level code touches it.
nonisolated(unsafe) var sink = 0

func measure(_ body: () throws -> Int) rethrows -> Double {
    let clock = ContinuousClock()
    var total = 0
    let start = clock.now
    for _ in 0..<iterations { total &+= try body() }
    let elapsed = clock.now - start
    sink &+= total
    let (seconds, attoseconds) = elapsed.components
    let nanoseconds = Double(seconds) * 1e9 + Double(attoseconds) / 1e9
    return nanoseconds / Double(iterations)
}

func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    return sorted[sorted.count / 2]
}

let encoder = JSONEncoder()
let decoder = JSONDecoder()
let sdkBytes = try payload.encoded(for: .alert)
let foundationBytes = try encoder.encode(foundationPayload)

// Sanity: both encodings say the same thing.
let sdkObject = try JSONSerialization.jsonObject(with: Data(sdkBytes)) as! NSDictionary
let foundationObject = try JSONSerialization.jsonObject(with: foundationBytes) as! NSDictionary
precondition(sdkObject.isEqual(foundationObject), "the two encodings differ")

// `PAYLOAD_BENCH_ONLY=encode|decode` loops one SDK path only, for a profiler.
if let only = ProcessInfo.processInfo.environment["PAYLOAD_BENCH_ONLY"] {
    for _ in 0..<rounds {
        _ = try measure {
            only == "decode" ? try Payload(jsonBytes: sdkBytes).aps.badge ?? 0 : try payload.encoded(for: .alert).count
        }
    }
    exit(0)
}

var sdkEncode: [Double] = []
var foundationEncode: [Double] = []
var sdkDecode: [Double] = []
var foundationDecode: [Double] = []

// One warm-up round, then interleaved measured rounds.
for round in 0...rounds {
    let a = try measure { try payload.encoded(for: .alert).count }
    let b = try measure { try encoder.encode(foundationPayload).count }
    let c = try measure { try Payload(jsonBytes: sdkBytes).aps.badge ?? 0 }
    let d = try measure { try decoder.decode(FoundationPayload.self, from: foundationBytes).aps.badge }
    if round > 0 {
        sdkEncode.append(a)
        foundationEncode.append(b)
        sdkDecode.append(c)
        foundationDecode.append(d)
    }
}

func format(_ value: Double) -> String {
    String(format: "%8.0f ns", value)
}

print("Payload: \(sdkBytes.count) bytes: \(String(decoding: sdkBytes, as: UTF8.self))")
print("\(rounds) rounds x \(iterations) payloads, median ns per payload")
print("encode  SDK writer      \(format(median(sdkEncode)))")
print("encode  JSONEncoder     \(format(median(foundationEncode)))")
print(String(format: "encode  ratio           %8.1fx faster", median(foundationEncode) / median(sdkEncode)))
print("decode  SDK parser      \(format(median(sdkDecode)))")
print("decode  JSONDecoder     \(format(median(foundationDecode)))")
print(String(format: "decode  ratio           %8.1fx faster", median(foundationDecode) / median(sdkDecode)))
if sink == 42 { print("") }
