// The kernel's own view of the process's TCP sockets, for tests that check what is
// listening or connected without asking the code under test.
import Foundation

/// One row of the kernel's TCP socket tables, `/proc/net/tcp` and `/proc/net/tcp6`.
public struct KernelTCPSocket: Sendable, Equatable {
    /// The local address and port as the kernel writes them (hex, `0100007F:1F90`).
    public let local: String
    /// The remote address and port, in the same notation.
    public let remote: String
    /// The state in hex: `0A` is LISTEN, `01` ESTABLISHED.
    public let state: String
    /// The socket's inode, as a descriptor's link names it (`socket:[inode]`); `0` for a
    /// socket no process holds any more.
    public let inode: String

    /// The port of ``local``.
    public var localPort: Int? { Self.port(of: local) }
    /// The port of ``remote``.
    public var remotePort: Int? { Self.port(of: remote) }

    private static func port(of address: String) -> Int? {
        address.split(separator: ":").last.flatMap { Int($0, radix: 16) }
    }
}

/// Every row of `/proc/net/tcp` and `/proc/net/tcp6` (IPv4 and IPv6 sockets), read to the
/// end: /proc files report a size of 0, and a long table does not fit one read.
public func kernelTCPSockets() -> [KernelTCPSocket] {
    var sockets: [KernelTCPSocket] = []
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        guard let handle = FileHandle(forReadingAtPath: table) else { continue }
        let text = String(decoding: handle.readDataToEndOfFile(), as: UTF8.self)
        try? handle.close()
        for line in text.split(separator: "\n").dropFirst() {
            let columns = line.split(separator: " ")
            guard columns.count > 9 else { continue }
            sockets.append(KernelTCPSocket(
                local: String(columns[1]), remote: String(columns[2]), state: String(columns[3]), inode: String(columns[9])))
        }
    }
    return sockets
}
