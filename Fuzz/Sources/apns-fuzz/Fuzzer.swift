import FuzzTargets

#if canImport(Glibc)
import Glibc
#endif

/// The target chosen with APNS_FUZZ_TARGET, resolved once.
nonisolated(unsafe) var selected: FuzzTarget?

/// libFuzzer's start-up hook: picks the target.
@_cdecl("LLVMFuzzerInitialize")
public func fuzzerInitialize(_ argc: UnsafeMutablePointer<Int32>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>) -> Int32 {
    let name = getenv("APNS_FUZZ_TARGET").map { String(cString: $0) } ?? ""
    guard let target = FuzzTarget.named(name) else {
        print("set APNS_FUZZ_TARGET to one of: \(FuzzTarget.all.map(\.name).joined(separator: ", "))")
        exit(2)
    }
    selected = target
    return 0
}

/// libFuzzer's entry point: runs the chosen target on one input.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzerTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
    selected?.run(bytes)
    return 0
}

/// libFuzzer's driver, for the `main` below.
@_silgen_name("LLVMFuzzerRunDriver")
func LLVMFuzzerRunDriver(
    _ argc: UnsafeMutablePointer<Int32>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>,
    _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> Int32
) -> Int32

/// The program's entry point. SwiftPM links an executable with `main` aliased to
/// `<module>_main`, so this hands control to libFuzzer's driver with the same arguments
/// libFuzzer's own `main` would.
@_cdecl("apns_fuzz_main")
public func apnsFuzzMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) -> Int32 {
    var count = argc
    var arguments = argv
    return LLVMFuzzerRunDriver(&count, &arguments) { data, size in fuzzerTestOneInput(data, size) }
}
