import COpenSSL

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A file descriptor another thread makes readable to wake an I/O thread out of
/// poll(2): a non-blocking pipe, closed on exec (a child process never inherits it).
final class WakeupSignal: Sendable {
    /// The descriptor the I/O thread polls for `POLLIN`.
    let readDescriptor: Int32
    private let writeDescriptor: Int32

    /// Whether the descriptor could be created (the process may be out of descriptors).
    var isValid: Bool { readDescriptor >= 0 }

    init() {
        var fds: [Int32] = [-1, -1]
        if capns_pipe_nonblocking_cloexec(&fds) != 0 {
            fds = [-1, -1]
        }
        readDescriptor = fds[0]
        writeDescriptor = fds[1]
    }

    deinit {
        if readDescriptor >= 0 { close(readDescriptor) }
        if writeDescriptor != readDescriptor, writeDescriptor >= 0 { close(writeDescriptor) }
    }

    /// Makes ``readDescriptor`` readable. Safe from any thread.
    func signal() {
        guard writeDescriptor >= 0 else { return }
        var one: UInt8 = 1
        _ = write(writeDescriptor, &one, 1)
    }

    /// Consumes pending signals. Called by the I/O thread after poll reports `POLLIN`.
    func drain() {
        guard readDescriptor >= 0 else { return }
        var buffer: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
        while withUnsafeMutableBytes(of: &buffer, { read(readDescriptor, $0.baseAddress, 32) }) == 32 {}
    }
}
