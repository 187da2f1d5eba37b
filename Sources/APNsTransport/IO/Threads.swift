import APNsOpenSSL
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The transport's threads, locks and conditions, on POSIX threads directly.
///
/// The client modules (`APNsPayload`, `APNsCore`, `APNsTransport`) use only
/// `FoundationEssentials`, not `Foundation`: a server that does not import `Foundation`
/// itself then does not load it and its internationalization libraries (about 6 MiB of
/// resident memory). `Thread`, `NSLock` and `NSCondition` live in `Foundation`, so the
/// few places that need them use these instead.
enum OSThread {
    /// Starts a detached thread named `name` (the kernel keeps its first 15 bytes, for
    /// top, perf and /proc) that runs `body` and ends.
    ///
    /// - Returns: `false` if the system could not start a thread (`body` then never runs).
    @discardableResult
    static func start(name: String, stackSize: Int = 512 * 1024, _ body: @escaping @Sendable () -> Void) -> Bool {
        let context = Unmanaged.passRetained(ThreadStart(name: name, body: body)).toOpaque()
        var attributes = pthread_attr_t()
        pthread_attr_init(&attributes)
        defer { pthread_attr_destroy(&attributes) }
        pthread_attr_setdetachstate(&attributes, Int32(PTHREAD_CREATE_DETACHED))
        if stackSize > 0 { pthread_attr_setstacksize(&attributes, stackSize) }
        #if canImport(Glibc)
        var thread = pthread_t()
        #else
        var thread: pthread_t?
        #endif
        let result = pthread_create(&thread, &attributes, { raw in
            let start = Unmanaged<ThreadStart>.fromOpaque(raw!).takeRetainedValue()
            start.run()
            return nil
        }, context)
        if result != 0 {
            Unmanaged<ThreadStart>.fromOpaque(context).release()
            return false
        }
        return true
    }

    /// A number that identifies the calling thread while it runs (never 0).
    static func currentID() -> UInt {
        #if canImport(Glibc)
        UInt(pthread_self())
        #else
        UInt(bitPattern: pthread_self())
        #endif
    }
}

/// What a new thread runs: its name, then its body.
private final class ThreadStart: @unchecked Sendable {
    let name: String
    let body: @Sendable () -> Void

    init(name: String, body: @escaping @Sendable () -> Void) {
        self.name = name
        self.body = body
    }

    func run() {
        #if os(Linux)
        // Glibc's pthread_setname_np is not visible to Swift; its comm file does the same.
        let fd = open("/proc/thread-self/comm", O_WRONLY | O_CLOEXEC)
        if fd >= 0 {
            let bytes = Array(name.utf8.prefix(15))
            _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            close(fd)
        }
        #elseif canImport(Darwin)
        _ = name.withCString { pthread_setname_np($0) }
        #endif
        body()
    }
}

/// A lock taken and given back in separate statements (``Mutex`` suits the rest): the
/// package's one `pthread_mutex_t` wrapper. ThreadSanitizer sees it.
typealias ThreadLock = POSIXMutex

/// A condition variable with its own lock (the pair `NSCondition` is): take the lock,
/// check the state, ``wait(timeout:)``; ``signal()`` wakes one waiter.
final class ThreadCondition: @unchecked Sendable {
    /// The lock the waits release.
    private let mutex = POSIXMutex()
    private let condition: UnsafeMutablePointer<pthread_cond_t>

    #if canImport(Glibc)
    /// The clock deadlines are measured on: monotonic, so a change of the wall clock does
    /// not cut a wait short or stretch it.
    private static let clock = CLOCK_MONOTONIC
    #else
    private static let clock = CLOCK_REALTIME
    #endif

    /// A condition nobody waits on.
    init() {
        condition = .allocate(capacity: 1)
        condition.initialize(to: pthread_cond_t())
        #if canImport(Glibc)
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        pthread_condattr_setclock(&attributes, Self.clock)
        pthread_cond_init(condition, &attributes)
        pthread_condattr_destroy(&attributes)
        #else
        pthread_cond_init(condition, nil)
        #endif
    }

    deinit {
        pthread_cond_destroy(condition)
        condition.deallocate()
    }

    /// Takes the lock.
    func lock() { mutex.lock() }

    /// Gives the lock back.
    func unlock() { mutex.unlock() }

    /// Wakes one thread waiting in ``wait(timeout:)``.
    func signal() { pthread_cond_signal(condition) }

    /// Releases the lock and waits for ``signal()`` or `timeout`, then takes the lock again.
    /// Call it holding the lock.
    /// - Returns: `false` if the time ran out (a wake-up may also be spurious: re-check the state).
    @discardableResult
    func wait(timeout: Duration) -> Bool {
        var now = timespec()
        clock_gettime(Self.clock, &now)
        let (seconds, attoseconds) = max(timeout, .zero).components
        let nanoseconds = Int(now.tv_nsec) + Int(attoseconds / 1_000_000_000)
        var deadline = timespec()
        deadline.tv_sec = now.tv_sec + Int(clamping: min(seconds, 1 << 40)) + nanoseconds / 1_000_000_000
        deadline.tv_nsec = nanoseconds % 1_000_000_000
        return pthread_cond_timedwait(condition, mutex.handle, &deadline) == 0
    }
}
