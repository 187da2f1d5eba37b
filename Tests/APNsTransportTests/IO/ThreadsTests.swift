import Foundation
import Synchronization
import Testing
@testable import APNsTransport

/// The POSIX thread, lock and condition the transport uses instead of Foundation's.
@Suite(.blockingIO)
struct ThreadsTests {
    /// The names of this process's threads, as the kernel reports them.
    private static func threadNames() -> [String] {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
        return tasks.compactMap { task in
            (try? String(contentsOfFile: "/proc/self/task/\(task)/comm", encoding: .utf8))?
                .trimmingCharacters(in: .newlines)
        }
    }

    @Test("a started thread runs its body, under its name (cut to the kernel's 15 bytes)")
    func startsNamedThread() throws {
        let release = DispatchSemaphore(value: 0)
        let started = DispatchSemaphore(value: 0)
        let ran = OSThread.start(name: "apns-test-thread-name-long") {
            started.signal()
            release.wait()
        }
        #expect(ran)
        #expect(started.wait(timeout: .now() + 5) == .success)
        #expect(Self.threadNames().contains("apns-test-threa"))
        release.signal()
    }

    @Test("a wait ends with false when its time passes, and with true when signalled")
    func conditionWaits() throws {
        let condition = ThreadCondition()
        condition.lock()
        let start = ContinuousClock.now
        let signalled = condition.wait(timeout: .milliseconds(50))
        condition.unlock()
        #expect(!signalled)
        #expect(ContinuousClock.now - start >= .milliseconds(50))

        let flag = Mutex(false)
        OSThread.start(name: "apns-test-signal") {
            usleep(20_000)
            condition.lock()
            flag.withLock { $0 = true }
            condition.signal()
            condition.unlock()
        }
        condition.lock()
        var woke = false
        for _ in 0..<100 where !flag.withLock({ $0 }) {
            woke = condition.wait(timeout: .seconds(5)) || woke
        }
        condition.unlock()
        #expect(flag.withLock { $0 })
        #expect(woke)
    }

    @Test("a lock keeps two threads' increments apart")
    func lockExcludes() throws {
        let lock = ThreadLock()
        final class Counter: @unchecked Sendable { var value = 0 }
        let counter = Counter()
        let done = DispatchSemaphore(value: 0)
        for index in 0..<2 {
            OSThread.start(name: "apns-test-lock-\(index)") {
                for _ in 0..<100_000 { lock.withLock { counter.value += 1 } }
                done.signal()
            }
        }
        #expect(done.wait(timeout: .now() + 30) == .success)
        #expect(done.wait(timeout: .now() + 30) == .success)
        #expect(lock.withLock { counter.value } == 200_000)
    }
}

/// The client modules import `FoundationEssentials`, never all of `Foundation`, so that a
/// server that does not use `Foundation` does not load it (and ICU with it).
struct FoundationEssentialsOnlyTests {
    /// `APNsBench`, built beside this test bundle by `swift build --build-tests` (the test
    /// script's build): a program that imports `APNsTransport` and `FoundationEssentials`
    /// only, as a server that does not use `Foundation` would.
    private static let bench: URL? = {
        guard let executable = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") else { return nil }
        let candidate = URL(fileURLWithPath: executable).deletingLastPathComponent().appendingPathComponent("APNsBench")
        return FileManager.default.isExecutableFile(atPath: candidate.path) ? candidate : nil
    }()

    @Test(
        "a program on APNsTransport alone does not link Foundation or ICU, as the dynamic linker sees it",
        .enabled(if: bench != nil, "APNsBench is built by `swift build --build-tests`, not by `swift test` alone")
    )
    func benchLinksEssentialsOnly() throws {
        let bench = try #require(Self.bench)
        let libraries = try run("ldd", [bench.path])
        // ldd lists what the loader maps: FoundationEssentials, which the modules use…
        #expect(libraries.contains("libFoundationEssentials.so"))
        #expect(libraries.contains("libswiftCore.so"))
        // …and none of Foundation proper or its internationalization (ICU).
        for name in ["libFoundation.so", "libFoundationInternationalization.so", "lib_FoundationICU.so", "libFoundationNetworking.so"] {
            #expect(!libraries.contains(name), "APNsBench links \(name):\n\(libraries)")
        }
    }

    /// The package's `Sources` folder, found from this file's path.
    private static let sources = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Sources")

    @Test("no file of a client module imports Foundation except where FoundationEssentials is missing",
          arguments: ["APNsPayload", "APNsOpenSSL", "APNsCore", "APNsTransport", "APNsTesting"])
    func onlyEssentials(module: String) throws {
        let folder = Self.sources.appendingPathComponent(module)
        let files = try #require(FileManager.default.enumerator(atPath: folder.path)).compactMap { $0 as? String }
            .filter { $0.hasSuffix(".swift") }
        #expect(!files.isEmpty)
        for file in files {
            let lines = try String(contentsOfFile: folder.appendingPathComponent(file).path, encoding: .utf8)
                .split(separator: "\n", omittingEmptySubsequences: false)
            for (index, line) in lines.enumerated() {
                let text = line.trimmingCharacters(in: .whitespaces)
                guard text.hasPrefix("import Foundation") || text.hasPrefix("@_exported import Foundation") else { continue }
                if text == "import FoundationEssentials" { continue }
                let previous = index > 0 ? lines[index - 1].trimmingCharacters(in: .whitespaces) : ""
                #expect(previous == "#else", "\(module)/\(file):\(index + 1) imports Foundation outside `#if canImport(FoundationEssentials) … #else`")
            }
        }
    }
}
