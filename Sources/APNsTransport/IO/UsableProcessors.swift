import COpenSSL

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// How many processors the process may actually use, for sizing its I/O threads: the
/// smallest of the processors the system has online, the bits of the affinity mask
/// (`taskset`, a container's cpuset) and the CPU quota of its control group (cgroup v2
/// `cpu.max`, v1 `cpu.cfs_quota_us` / `cpu.cfs_period_us`, its own group's and every
/// ancestor's, rounded up to whole processors). `ProcessInfo.activeProcessorCount` reports
/// the machine's processors whatever the process may use: a service given one processor's
/// quota on a 64-core host would start up to 64 loops.
///
/// The parsing is pure (``count(online:affinity:quota:)``, ``quota(cpuMax:)``,
/// ``quota(cfsQuota:cfsPeriod:)``, ``quotaFiles(procSelfCgroup:mountRoot:)``); only
/// ``current()`` reads the system.
enum UsableProcessors {
    /// Where a control group states a CPU quota.
    enum QuotaFile: Equatable {
        /// cgroup v2: a `cpu.max` file (`"<quota> <period>"` or `"max <period>"`).
        case cpuMax(path: String)
        /// cgroup v1: the `cpu` controller's `cpu.cfs_quota_us` (-1 for none) and
        /// `cpu.cfs_period_us`.
        case cfs(quotaPath: String, periodPath: String)
    }

    /// The processors this process may use now (at least 1).
    static func current() -> Int {
        let online = sysconf(Int32(_SC_NPROCESSORS_ONLN))
        let affinity = capns_affinity_processor_count()
        var quota: Int?
        if let cgroup = readSmallFile("/proc/self/cgroup") {
            for file in quotaFiles(procSelfCgroup: cgroup, mountRoot: "/sys/fs/cgroup") {
                let found: Int?
                switch file {
                case .cpuMax(let path):
                    found = readSmallFile(path).flatMap { Self.quota(cpuMax: $0) }
                case .cfs(let quotaPath, let periodPath):
                    if let quotaText = readSmallFile(quotaPath), let periodText = readSmallFile(periodPath) {
                        found = self.quota(cfsQuota: quotaText, cfsPeriod: periodText)
                    } else {
                        found = nil
                    }
                }
                if let found { quota = min(quota ?? found, found) }
            }
        }
        return count(online: online > 0 ? online : 1, affinity: affinity > 0 ? Int(affinity) : nil, quota: quota)
    }

    /// The smallest of the three figures that are known (at least 1).
    static func count(online: Int, affinity: Int?, quota: Int?) -> Int {
        var result = max(1, online)
        if let affinity, affinity > 0 { result = min(result, affinity) }
        if let quota, quota > 0 { result = min(result, quota) }
        return result
    }

    /// Whole processors of a cgroup v2 `cpu.max` (`"150000 100000"` is 2); `nil` for
    /// `"max …"` (no quota) or text that is not two positive numbers.
    static func quota(cpuMax text: String) -> Int? {
        let fields = text.split(whereSeparator: { $0 == " " || $0 == "\n" || $0 == "\t" })
        guard fields.count >= 1, fields[0] != "max" else { return nil }
        guard fields.count == 2, let quota = Int(fields[0]), let period = Int(fields[1]) else { return nil }
        return wholeProcessors(quota: quota, period: period)
    }

    /// Whole processors of a cgroup v1 CFS quota and period (microseconds each); `nil` for
    /// a quota of -1 (none) or text that is not a positive number.
    static func quota(cfsQuota: String, cfsPeriod: String) -> Int? {
        guard let quota = Int(trimmed(cfsQuota)), let period = Int(trimmed(cfsPeriod)) else { return nil }
        return wholeProcessors(quota: quota, period: period)
    }

    /// The files that may state this process's CPU quota, from the text of
    /// `/proc/self/cgroup`: the group's own directory and each ancestor's up to the mount
    /// point, for the v2 hierarchy (`0::/path`) and for a v1 hierarchy that has the `cpu`
    /// controller (`4:cpu,cpuacct:/path`, mounted as `cpu,cpuacct` or `cpu`). A process in
    /// a container often sees a path its mount namespace does not have; the mount point's
    /// own files (the container's group) are among the candidates, and missing files are
    /// skipped by the reader.
    static func quotaFiles(procSelfCgroup text: String, mountRoot: String) -> [QuotaFile] {
        var files: [QuotaFile] = []
        for line in text.split(separator: "\n") {
            // hierarchy-ID:controller-list:cgroup-path; the path may itself hold colons.
            let parts = line.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false)
            guard parts.count == 3, parts[2].hasPrefix("/") else { continue }
            let controllers = parts[1].split(separator: ",")
            let directories = ancestry(of: String(parts[2]))
            if parts[0] == "0", parts[1].isEmpty {
                for directory in directories {
                    files.append(.cpuMax(path: mountRoot + directory + "cpu.max"))
                }
            } else if controllers.contains("cpu") {
                var mounts = [mountRoot + "/" + controllers.joined(separator: ",")]
                if controllers.count > 1 { mounts.append(mountRoot + "/cpu") }
                for mount in mounts {
                    for directory in directories {
                        files.append(.cfs(quotaPath: mount + directory + "cpu.cfs_quota_us", periodPath: mount + directory + "cpu.cfs_period_us"))
                    }
                }
            }
        }
        return files
    }

    /// `/a/b` → `["/a/b/", "/a/", "/"]`; `/` → `["/"]`.
    private static func ancestry(of path: String) -> [String] {
        var components = path.split(separator: "/").filter { $0 != "." && $0 != ".." }
        var result: [String] = []
        while true {
            result.append(components.isEmpty ? "/" : "/" + components.joined(separator: "/") + "/")
            if components.isEmpty { return result }
            components.removeLast()
        }
    }

    private static func wholeProcessors(quota: Int, period: Int) -> Int? {
        guard quota > 0, period > 0 else { return nil }
        return (quota + period - 1) / period
    }

    private static func trimmed(_ text: String) -> Substring {
        text.split(whereSeparator: { $0 == " " || $0 == "\n" || $0 == "\t" }).first ?? ""
    }

    /// The text of a small file such as one of `/proc` or `/sys` (at most 64 KiB), or
    /// `nil` if it cannot be read.
    private static func readSmallFile(_ path: String) -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while bytes.count < 65_536 {
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0, errno == EINTR { continue }
            guard n > 0 else { break }
            bytes.append(contentsOf: chunk[..<n])
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
