// What /proc says about a process: its threads, resident memory and open descriptors.
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A process's threads, resident memory and descriptors at one moment, from
/// `/proc/<pid>/status` (`Threads:`, `VmRSS:`, `VmHWM:`) and `/proc/<pid>/fd`.
struct ProcessFigures {
    /// `Threads:`, or -1 when it could not be read.
    var threads: Int
    /// `VmRSS:` in KiB, or -1.
    var rssKiB: Int
    /// `VmHWM:` (the peak of `VmRSS` so far) in KiB, or -1.
    var peakRSSKiB: Int
    /// Open file descriptors (sockets among them), or -1.
    var descriptors: Int

    /// Resident memory in MiB.
    var rssMiB: Double { Double(rssKiB) / 1024 }
    /// Peak resident memory in MiB.
    var peakRSSMiB: Double { Double(peakRSSKiB) / 1024 }

    /// The figures of process `pid` now (`nil`: this process).
    static func read(pid: pid_t? = nil) -> ProcessFigures {
        let directory = pid.map { "/proc/\($0)" } ?? "/proc/self"
        let status = (try? String(contentsOfFile: directory + "/status", encoding: .utf8)) ?? ""
        func field(_ name: String) -> Int {
            guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix(name + ":") }) else { return -1 }
            return Int(line.split(whereSeparator: { $0 == " " || $0 == "\t" }).dropFirst().first ?? "") ?? -1
        }
        let descriptors = (try? FileManager.default.contentsOfDirectory(atPath: directory + "/fd").count) ?? -1
        return ProcessFigures(
            threads: field("Threads"),
            rssKiB: field("VmRSS"),
            peakRSSKiB: field("VmHWM"),
            descriptors: descriptors
        )
    }
}

/// Raises this process's soft limit of open files to its hard limit when the soft one is
/// below `needed`; a child started later inherits it. Returns the soft limit in force
/// afterwards.
func raiseOpenFileLimit(to needed: Int) -> Int {
    let resource = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
    var limit = rlimit()
    guard getrlimit(resource, &limit) == 0 else { return -1 }
    if limit.rlim_cur < rlim_t(needed) {
        limit.rlim_cur = limit.rlim_max
        if setrlimit(resource, &limit) != 0 {
            // An unlimited hard limit can be above what the kernel allows (nr_open).
            limit.rlim_cur = rlim_t(needed)
            _ = setrlimit(resource, &limit)
        }
        _ = getrlimit(resource, &limit)
    }
    return limit.rlim_cur == rlim_t.max ? Int.max : Int(limit.rlim_cur)
}
