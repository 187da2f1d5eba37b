// HPACKBenchmark: the cost of encoding the header block of one token-authenticated
// alert request (ten headers) on a warm connection, APNsHeaderEncoder against
// nghttp2's deflater (nghttp2_hd_deflate_hd) on the same headers with the flags the
// policy hands the transport. Each request has its own device token and apns-id,
// prepared before timing. Rounds interleave the encoders; the medians are reported.
// For reference, nghttp2 without flags (its own indexing choices) is timed as well.
//
//     swift run -c release HPACKBenchmark [rounds]
//
// Allocations per block: `HPACKBenchmark allocations ours|nghttp2 <blocks>` only
// encodes <blocks> blocks after the warm-up. Run it under valgrind with two block
// counts; the difference in "total heap usage: N allocs" divided by the difference
// in blocks is the number of heap allocations per block in steady state:
//
//     valgrind .build/release/HPACKBenchmark allocations ours 0
//     valgrind .build/release/HPACKBenchmark allocations ours 10000
import APNsCore
import CNGHTTP2
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// MARK: Requests

func hex(_ count: Int) -> String {
    let digits = Array("0123456789abcdef")
    return String((0..<count).map { _ in digits.randomElement()! })
}
func uuid() -> String { [8, 4, 4, 4, 12].map(hex).joined(separator: "-") }
let jwtAlphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
let jwt = String((0..<200).map { index in index == 36 || index == 113 ? "." : jwtAlphabet.randomElement()! })

func request() -> [HeaderField] {
    [
        HeaderField(name: ":method", value: "POST"),
        HeaderField(name: ":scheme", value: "https"),
        HeaderField(name: ":path", value: "/3/device/" + hex(64)),
        HeaderField(name: ":authority", value: "api.push.apple.com"),
        HeaderField(name: "authorization", value: "bearer " + jwt),
        HeaderField(name: "apns-topic", value: "com.example.app"),
        HeaderField(name: "apns-push-type", value: "alert"),
        HeaderField(name: "apns-priority", value: "10"),
        HeaderField(name: "apns-expiration", value: String(1_700_000_000 + Int.random(in: 0..<86_400))),
        HeaderField(name: "apns-id", value: uuid()),
    ]
}

let requestCount = 1024
let arguments = Array(CommandLine.arguments.dropFirst())
let allocationMode = arguments.first == "allocations" && arguments.count == 3 ? arguments[1] : nil
let rounds = allocationMode == nil ? arguments.first.flatMap(Int.init) ?? 41 : 0
let requests = (0..<requestCount).map { _ in request() }

// The flags the transport would pass: the policy's decisions for each request.
var flagPolicy = APNsHeaderEncoder()
let flags: [[UInt8]] = requests.map { headers in
    flagPolicy.decisions(for: headers).map { UInt8($0.requiresNoIndexFlag ? NGHTTP2_NV_FLAG_NO_INDEX.rawValue : NGHTTP2_NV_FLAG_NONE.rawValue) }
}

// nghttp2_nv arrays over stable copies of the bytes, built before timing.
func copyBytes(_ string: String) -> (UnsafeMutablePointer<UInt8>, Int) {
    let bytes = Array(string.utf8)
    let pointer = UnsafeMutablePointer<UInt8>.allocate(capacity: max(1, bytes.count))
    pointer.initialize(from: bytes, count: bytes.count)
    return (pointer, bytes.count)
}
func makeNVArrays(flags: [[UInt8]]) -> [UnsafeMutablePointer<nghttp2_nv>] {
    zip(requests, flags).map { headers, flags in
        let array = UnsafeMutablePointer<nghttp2_nv>.allocate(capacity: headers.count)
        for (index, field) in headers.enumerated() {
            let name = copyBytes(field.name), value = copyBytes(field.value)
            array[index] = nghttp2_nv(name: name.0, value: value.0, namelen: name.1, valuelen: value.1, flags: flags[index])
        }
        return array
    }
}
/// With the policy's flags: what the transport sends.
let nvArrays = makeNVArrays(flags: flags)
/// Without flags: nghttp2's own choices (it indexes apns-id and expiration, churning its table).
let defaultNVArrays = makeNVArrays(flags: flags.map { $0.map { _ in UInt8(NGHTTP2_NV_FLAG_NONE.rawValue) } })

// MARK: Encoders, warmed up with the connection's first request

var policy = APNsHeaderEncoder()
var block: [UInt8] = []
block.reserveCapacity(1024)
var decisions: [HPACKIndexing] = []
decisions.reserveCapacity(16)
policy.encodeHeaderBlock(requests[0], into: &block, decisions: &decisions)

var deflater: OpaquePointer?
guard nghttp2_hd_deflate_new(&deflater, 4096) == 0, let deflater else {
    fatalError("nghttp2_hd_deflate_new failed")
}
let outputCapacity = 4096
let output = UnsafeMutablePointer<UInt8>.allocate(capacity: outputCapacity)
_ = nghttp2_hd_deflate_hd(deflater, output, outputCapacity, nvArrays[0], 10)
var defaultDeflater: OpaquePointer?
guard nghttp2_hd_deflate_new(&defaultDeflater, 4096) == 0, let defaultDeflater else {
    fatalError("nghttp2_hd_deflate_new failed")
}
_ = nghttp2_hd_deflate_hd(defaultDeflater, output, outputCapacity, defaultNVArrays[0], 10)

func now() -> UInt64 {
    var time = timespec()
    clock_gettime(CLOCK_MONOTONIC, &time)
    return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
}

var sink = 0
@MainActor func runOurs() -> Double {
    let start = now()
    for index in 1..<requestCount {
        block.removeAll(keepingCapacity: true)
        policy.encodeHeaderBlock(requests[index], into: &block, decisions: &decisions)
        sink &+= block.count
    }
    return Double(now() - start) / Double(requestCount - 1)
}
@MainActor func runNGHTTP2() -> Double {
    let start = now()
    for index in 1..<requestCount {
        sink &+= nghttp2_hd_deflate_hd(deflater, output, outputCapacity, nvArrays[index], 10)
    }
    return Double(now() - start) / Double(requestCount - 1)
}

@MainActor func runNGHTTP2Default() -> Double {
    let start = now()
    for index in 1..<requestCount {
        sink &+= nghttp2_hd_deflate_hd(defaultDeflater, output, outputCapacity, defaultNVArrays[index], 10)
    }
    return Double(now() - start) / Double(requestCount - 1)
}

if let allocationMode, let blocks = Int(arguments[2]) {
    // Allocation mode: encode `blocks` more blocks with one encoder and exit.
    for number in 0..<blocks {
        let index = 1 + number % (requestCount - 1)
        if allocationMode == "ours" {
            block.removeAll(keepingCapacity: true)
            policy.encodeHeaderBlock(requests[index], into: &block, decisions: &decisions)
            sink &+= block.count
        } else {
            sink &+= nghttp2_hd_deflate_hd(deflater, output, outputCapacity, nvArrays[index], 10)
        }
    }
    print("\(allocationMode): \(blocks) blocks encoded (\(sink))")
    exit(0)
}

// One untimed pass each, then interleaved rounds (rotating which goes first).
_ = runOurs()
_ = runNGHTTP2()
_ = runNGHTTP2Default()
var ours: [Double] = [], theirs: [Double] = [], theirDefaults: [Double] = []
for round in 0..<rounds {
    // Rotate the order so that none always runs first.
    for slot in 0..<3 {
        switch (round + slot) % 3 {
        case 0: ours.append(runOurs())
        case 1: theirs.append(runNGHTTP2())
        default: theirDefaults.append(runNGHTTP2Default())
        }
    }
}

// Block sizes, for the record.
block.removeAll(keepingCapacity: true)
policy.encodeHeaderBlock(requests[1], into: &block, decisions: &decisions)
let ourSize = block.count
let theirSize = nghttp2_hd_deflate_hd(deflater, output, outputCapacity, nvArrays[1], 10)

func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    return sorted[sorted.count / 2]
}
let ourMedian = median(ours), theirMedian = median(theirs)
print("HPACK header block, token-authenticated alert request (10 headers), steady state")
print("  rounds: \(rounds) x \(requestCount - 1) blocks, interleaved; median ns per block")
print("  APNsHeaderEncoder:    \((ourMedian * 10).rounded() / 10) ns/block, \(ourSize) octets")
print("  nghttp2_hd_deflate_hd: \((theirMedian * 10).rounded() / 10) ns/block, \(theirSize) octets")
print("  nghttp2, no flags:     \((median(theirDefaults) * 10).rounded() / 10) ns/block (its own indexing choices, for reference)")
print("  ratio ours/nghttp2:   \((ourMedian / theirMedian * 100).rounded() / 100)x")
if sink == 42 { print("") }
