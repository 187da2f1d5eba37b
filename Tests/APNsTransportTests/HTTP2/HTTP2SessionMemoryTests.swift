import CNGHTTP2
#if canImport(Glibc)
import Glibc
#endif
import Testing
@testable import APNsTransport

/// The free-list allocator an nghttp2 session of the transport allocates from
/// (`capns_mem_*` in CNGHTTP2's shim, owned by ``HTTP2SessionMemory``): C's allocation
/// contract (alignment, contents kept by realloc, zeroed calloc, NULL on overflow) and the
/// cache's bounds, without a session; then a session that uses it.
@Suite("nghttp2 session memory: free lists per session, bounded, given back when idle")
struct HTTP2SessionMemoryTests {
    /// The allocator of `memory`, called as nghttp2 calls it.
    struct Allocator {
        var mem: nghttp2_mem

        init(_ memory: HTTP2SessionMemory) { mem = memory.allocator }

        func malloc(_ size: Int) -> UnsafeMutableRawPointer? { mem.malloc(size, mem.mem_user_data) }
        func free(_ pointer: UnsafeMutableRawPointer?) { mem.free(pointer, mem.mem_user_data) }
        func calloc(_ count: Int, _ size: Int) -> UnsafeMutableRawPointer? { mem.calloc(count, size, mem.mem_user_data) }
        func realloc(_ pointer: UnsafeMutableRawPointer?, _ size: Int) -> UnsafeMutableRawPointer? {
            mem.realloc(pointer, size, mem.mem_user_data)
        }
    }

    @Test("blocks are 16-byte aligned, hold what is written, and a freed block is the next of its size")
    func reuse() throws {
        let memory = HTTP2SessionMemory()
        let allocator = Allocator(memory)
        for size in [0, 1, 15, 16, 17, 100, 1_000, 4_080, 4_081, 100_000] {
            let block = try #require(allocator.malloc(size))
            #expect(UInt(bitPattern: block) % 16 == 0)
            block.initializeMemory(as: UInt8.self, repeating: 0xA5, count: size)
            allocator.free(block)
            let again = try #require(allocator.malloc(size))
            if size + 16 <= 4_096 {
                #expect(again == block, "a block of \(size) bytes is reused")
            }
            #expect(UInt(bitPattern: again) % 16 == 0)
            allocator.free(again)
        }
        // One block per size class used (32, 64, 128, 1,024 and 4,096 bytes, header
        // included), each reused by the next size of its class; larger blocks are not cached.
        #expect(memory.cachedBytes == 32 + 64 + 128 + 1_024 + 4_096)
        memory.releaseCached()
        #expect(memory.cachedBytes == 0)
    }

    @Test("the cache stops at its limit; what is freed beyond it goes back to malloc")
    func bounded() throws {
        let memory = HTTP2SessionMemory(maxCachedBytes: 10 * 128)
        let allocator = Allocator(memory)
        let blocks = try (0..<50).map { _ in try #require(allocator.malloc(100)) }
        #expect(Set(blocks).count == 50)
        for block in blocks { allocator.free(block) }
        #expect(memory.cachedBytes == 10 * 128)
        let reused = try (0..<10).map { _ in try #require(allocator.malloc(100)) }
        #expect(Set(reused).isSubset(of: Set(blocks)))
        #expect(memory.cachedBytes == 0)
        for block in reused { allocator.free(block) }
    }

    @Test("realloc keeps the contents, in place while the block has room; calloc zeroes; overflow is NULL")
    func reallocAndCalloc() throws {
        let memory = HTTP2SessionMemory()
        let allocator = Allocator(memory)
        let block = try #require(allocator.malloc(40))
        let bytes = block.bindMemory(to: UInt8.self, capacity: 40)
        for index in 0..<40 { bytes[index] = UInt8(index) }
        // 40 + 16 bytes fit a 64-byte block: 48 still does.
        #expect(allocator.realloc(block, 48) == block)
        let grown = try #require(allocator.realloc(block, 5_000))
        let moved = grown.bindMemory(to: UInt8.self, capacity: 5_000)
        #expect((0..<40).allSatisfy { moved[$0] == UInt8($0) })
        let larger = try #require(allocator.realloc(grown, 20_000))
        #expect((0..<40).allSatisfy { larger.load(fromByteOffset: $0, as: UInt8.self) == UInt8($0) })
        #expect(allocator.realloc(larger, 0) == nil)
        let fresh = try #require(allocator.realloc(nil, 24))
        allocator.free(fresh)

        // A reused block is zeroed by calloc, whatever it held.
        let dirty = try #require(allocator.malloc(200))
        dirty.initializeMemory(as: UInt8.self, repeating: 0xFF, count: 200)
        allocator.free(dirty)
        let zeroed = try #require(allocator.calloc(10, 20))
        #expect(zeroed == dirty)
        #expect((0..<200).allSatisfy { zeroed.load(fromByteOffset: $0, as: UInt8.self) == 0 })
        allocator.free(zeroed)
        #expect(allocator.calloc(Int.max / 2, 4) == nil)
        #expect(allocator.malloc(Int.max) == nil)
        allocator.free(nil)
    }

    @Test("a session allocating from it answers 300 requests; its cache is bounded and released when idle")
    func sessionUsesIt() throws {
        let client = try HTTP2ConnectionStateMachine()
        let server = InMemoryHTTP2Server(maxConcurrentStreams: 100)
        try exchange(client, server)
        var answered = 0
        for round in 0..<3 {
            let ids = try (0..<100).map { try client.submit(devicePush(token: round * 100 + $0)) }
            try exchange(client, server)
            for id in ids { server.respond(id, status: 200) }
            answered += try exchange(client, server).filter {
                if case .response(_, let response) = $0 { return response.status == 200 } else { return false }
            }.count
        }
        #expect(answered == 300)
        #expect(client.openStreams == 0)
        #expect(client.cachedMemoryBytes > 0)
        #expect(client.cachedMemoryBytes <= HTTP2SessionMemory.maxCachedBytes)
        client.releaseCachedMemory()
        #expect(client.cachedMemoryBytes == 0)
    }
}

@Suite("A connection gives its session's cached memory back when idle")
struct IdleConnectionMemoryTests {
    @Test("after 300 requests, 100 at a time, the idle connection caches nothing")
    func idleConnectionReleasesItsCache() async throws {
        let server = SocketPairHTTP2Server(SocketPairHTTP2Server.Behaviour())
        let transport = makeTransport(server)
        let results = try await sendMany(transport, count: 300)
        #expect(results.allSatisfy { (try? $0.get())?.status == 200 })
        let pool = try transport.pool(for: devicePush())
        let connection = try #require(pool.connectionObjects.first)
        // The connection goes idle once it has handed the last answer over.
        var cached = await connection.sessionCachedMemory()
        for _ in 0..<2_000 where cached != 0 {
            try await Task.sleep(for: .milliseconds(10))
            cached = await connection.sessionCachedMemory()
        }
        #expect(cached == 0)
        await transport.shutdown()
        await server.stop()
    }
}

@Suite("nghttp2 session memory under AddressSanitizer")
struct HTTP2SessionMemorySanitizerTests {
    @Test("built with AddressSanitizer, and only then, the shim poisons cached blocks (a use after free is still reported)")
    func poisonsUnderAddressSanitizer() {
        // scripts/sanitize.sh says which sanitizer the tests run under.
        let sanitizer = getenv("SWIFT_APNS_SANITIZER").map { String(cString: $0) }
        #expect(capns_mem_poisons() == (sanitizer == "address" ? 1 : 0))
        guard capns_mem_poisons() == 1 else { return }
        let memory = HTTP2SessionMemory()
        let mem = memory.allocator
        guard let block = mem.malloc(100, mem.mem_user_data) else {
            Issue.record("no block")
            return
        }
        #expect(capns_mem_is_poisoned(block) == 0)
        mem.free(block, mem.mem_user_data)
        // Cached: what nghttp2 was given is poisoned until the block is handed out again.
        #expect(capns_mem_is_poisoned(block) == 1)
        #expect(capns_mem_is_poisoned(block + 99) == 1)
        let again = mem.malloc(100, mem.mem_user_data)
        #expect(again == block)
        #expect(capns_mem_is_poisoned(block) == 0 && capns_mem_is_poisoned(block + 99) == 0)
        mem.free(again, mem.mem_user_data)
    }
}
