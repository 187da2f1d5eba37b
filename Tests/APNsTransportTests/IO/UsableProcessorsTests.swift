import COpenSSL
import Foundation
import Synchronization
import Testing
@testable import APNsTransport

#if canImport(Glibc)
import Glibc
#endif

/// The kernel's `cgroup(7)` and `sched(7)` formats, as the kernel documentation gives them:
/// cgroup v2 `cpu.max` is "$MAX $PERIOD" with "max" for no limit; v1's CFS quota is -1 for
/// none; `/proc/self/cgroup` lines are "hierarchy-ID:controller-list:cgroup-path".
@Suite("Usable processors: quota files")
struct UsableProcessorsParsingTests {
    @Test("cgroup v2 cpu.max: quota over period, rounded up; max is no limit")
    func cpuMax() {
        #expect(UsableProcessors.quota(cpuMax: "max 100000\n") == nil)
        #expect(UsableProcessors.quota(cpuMax: "100000 100000\n") == 1)
        #expect(UsableProcessors.quota(cpuMax: "150000 100000") == 2)
        #expect(UsableProcessors.quota(cpuMax: "50000 100000") == 1)
        #expect(UsableProcessors.quota(cpuMax: "400000 100000\n") == 4)
        #expect(UsableProcessors.quota(cpuMax: "0 100000") == nil)
        #expect(UsableProcessors.quota(cpuMax: "") == nil)
        #expect(UsableProcessors.quota(cpuMax: "lots") == nil)
    }

    @Test("cgroup v1 cpu.cfs_quota_us and cpu.cfs_period_us: -1 is no limit")
    func cfs() {
        #expect(UsableProcessors.quota(cfsQuota: "-1\n", cfsPeriod: "100000\n") == nil)
        #expect(UsableProcessors.quota(cfsQuota: "250000\n", cfsPeriod: "100000\n") == 3)
        #expect(UsableProcessors.quota(cfsQuota: "20000", cfsPeriod: "100000") == 1)
        #expect(UsableProcessors.quota(cfsQuota: "20000", cfsPeriod: "0") == nil)
        #expect(UsableProcessors.quota(cfsQuota: "x", cfsPeriod: "100000") == nil)
    }

    @Test("cgroup v2: the group's own cpu.max, then each ancestor's up to the mount point")
    func v2Files() {
        let files = UsableProcessors.quotaFiles(procSelfCgroup: "0::/kubepods/pod-1/ctr\n", mountRoot: "/sys/fs/cgroup")
        #expect(files == [
            .cpuMax(path: "/sys/fs/cgroup/kubepods/pod-1/ctr/cpu.max"),
            .cpuMax(path: "/sys/fs/cgroup/kubepods/pod-1/cpu.max"),
            .cpuMax(path: "/sys/fs/cgroup/kubepods/cpu.max"),
            .cpuMax(path: "/sys/fs/cgroup/cpu.max"),
        ])
        // A private cgroup namespace shows the container's group as the root.
        #expect(UsableProcessors.quotaFiles(procSelfCgroup: "0::/\n", mountRoot: "/sys/fs/cgroup") == [.cpuMax(path: "/sys/fs/cgroup/cpu.max")])
    }

    @Test("cgroup v1: only the hierarchy with the cpu controller, under its mount point")
    func v1Files() {
        let text = """
            12:pids:/docker/abc
            4:cpu,cpuacct:/docker/abc
            3:cpuset:/docker/abc
            1:name=systemd:/docker/abc
            0::/
            """
        let files = UsableProcessors.quotaFiles(procSelfCgroup: text, mountRoot: "/sys/fs/cgroup")
        let cfs = files.compactMap { file -> String? in
            if case .cfs(let quota, _) = file { return quota }
            return nil
        }
        #expect(cfs == [
            "/sys/fs/cgroup/cpu,cpuacct/docker/abc/cpu.cfs_quota_us",
            "/sys/fs/cgroup/cpu,cpuacct/docker/cpu.cfs_quota_us",
            "/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us",
            "/sys/fs/cgroup/cpu/docker/abc/cpu.cfs_quota_us",
            "/sys/fs/cgroup/cpu/docker/cpu.cfs_quota_us",
            "/sys/fs/cgroup/cpu/cpu.cfs_quota_us",
        ])
        #expect(files.contains(.cfs(quotaPath: "/sys/fs/cgroup/cpu/cpu.cfs_quota_us", periodPath: "/sys/fs/cgroup/cpu/cpu.cfs_period_us")))
        // The hybrid layout's empty v2 line adds the unified root's cpu.max.
        #expect(files.last == .cpuMax(path: "/sys/fs/cgroup/cpu.max"))
        #expect(UsableProcessors.quotaFiles(procSelfCgroup: "1:cpu:/\n", mountRoot: "/sys/fs/cgroup") == [
            .cfs(quotaPath: "/sys/fs/cgroup/cpu/cpu.cfs_quota_us", periodPath: "/sys/fs/cgroup/cpu/cpu.cfs_period_us")
        ])
        #expect(UsableProcessors.quotaFiles(procSelfCgroup: "3:memory:/a\nnot a line\n", mountRoot: "/sys/fs/cgroup").isEmpty)
    }

    @Test("the smallest of online processors, affinity and quota, at least 1")
    func smallest() {
        #expect(UsableProcessors.count(online: 64, affinity: nil, quota: nil) == 64)
        #expect(UsableProcessors.count(online: 64, affinity: 8, quota: nil) == 8)
        #expect(UsableProcessors.count(online: 64, affinity: 8, quota: 2) == 2)
        #expect(UsableProcessors.count(online: 4, affinity: 8, quota: 16) == 4)
        #expect(UsableProcessors.count(online: 0, affinity: 0, quota: 0) == 1)
    }

    @Test("APNS_IO_THREADS overrides the usable processors; by default at least two loops")
    func override() {
        #expect(EventLoopGroup.configuredThreads(["APNS_IO_THREADS": "3"], usable: { 1 }) == 3)
        #expect(EventLoopGroup.configuredThreads(["APNS_IO_THREADS": "1"], usable: { 8 }) == 1)
        #expect(EventLoopGroup.configuredThreads([:], usable: { 1 }) == 2)
        #expect(EventLoopGroup.configuredThreads([:], usable: { 6 }) == 6)
        #expect(EventLoopGroup.configuredThreads(["APNS_IO_THREADS": "0"], usable: { 5 }) == 5)
    }
}

#if os(Linux)
/// The calling thread's affinity mask as the kernel reports it in
/// `/proc/thread-self/status` (`Cpus_allowed_list`, e.g. `0-3,8`): the processor numbers.
private func kernelAllowedProcessors() -> [Int]? {
    guard let status = try? String(contentsOfFile: "/proc/thread-self/status", encoding: .utf8),
        let line = status.split(separator: "\n").first(where: { $0.hasPrefix("Cpus_allowed_list:") })
    else { return nil }
    var processors: [Int] = []
    for range in line.dropFirst("Cpus_allowed_list:".count).split(separator: ",") {
        let bounds = range.split(separator: "-").compactMap { Int($0.trimmingCharacters(in: .whitespaces)) }
        guard let first = bounds.first, let last = bounds.last, first <= last else { return nil }
        processors += Array(first...last)
    }
    return processors
}

/// glibc's `sched_setaffinity`, looked up at run time (Swift's Glibc module does not
/// declare GNU extensions).
private typealias SetAffinity = @convention(c) (pid_t, Int, UnsafeRawPointer) -> Int32

@Suite("Usable processors: against the kernel")
struct UsableProcessorsKernelTests {
    @Test("the affinity count is the kernel's Cpus_allowed_list")
    func matchesKernel() throws {
        let allowed = try #require(kernelAllowedProcessors()?.count)
        #expect(capns_affinity_processor_count() == Int32(allowed))
        #expect(UsableProcessors.current() <= allowed)
        #expect(UsableProcessors.current() >= 1)
    }

    @Test("a thread restricted to one processor counts one")
    func restrictedThread() throws {
        let symbol = try #require(dlsym(UnsafeMutableRawPointer(bitPattern: 0), "sched_setaffinity"))
        let setAffinity = unsafeBitCast(symbol, to: SetAffinity.self)
        let results = Mutex<(Int32, Int32, Int?, Int)?>(nil)
        let done = DispatchSemaphore(value: 0)
        let thread = Thread {
            // The first processor this thread may run on, alone in the mask.
            var mask = [UInt64](repeating: 0, count: 16)
            let allowedBefore = capns_affinity_processor_count()
            let first = kernelAllowedProcessors()?.first ?? 0
            mask[first / 64] = 1 << UInt64(first % 64)
            let status = mask.withUnsafeBytes { setAffinity(0, $0.count, $0.baseAddress!) }
            results.withLock { $0 = (status, allowedBefore, kernelAllowedProcessors()?.count, UsableProcessors.current()) }
            done.signal()
        }
        thread.start()
        #expect(done.wait(timeout: .now() + 10) == .success)
        let (status, before, kernel, usable) = try #require(results.withLock { $0 })
        #expect(status == 0)
        #expect(before >= 1)
        #expect(kernel == 1)
        #expect(usable == 1)
    }
}
#endif
