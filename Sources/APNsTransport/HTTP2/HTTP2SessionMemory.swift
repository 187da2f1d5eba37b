import CNGHTTP2

/// The memory of one nghttp2 session: free lists of small blocks for the session's own
/// allocations (streams, outbound items, header copies), so that a stream's blocks are
/// reused by the next stream instead of going through malloc and free each time.
///
/// With hundreds of streams in flight a session frees and allocates its blocks in bursts
/// larger than glibc's per-thread cache (seven blocks a size), and each malloc and free
/// then takes glibc's slow path; measured with that cache made unbounded
/// (`GLIBC_TUNABLES=glibc.malloc.tcache_count=65535`), a batch at 4 × 1,000 streams cost
/// 6 % less CPU per notification. The allocator itself is C (`capns_mem_*` in CNGHTTP2's
/// shim): blocks of 32 to 4,096 bytes in powers of two, each behind a 16-byte header,
/// cached up to ``maxCachedBytes``.
///
/// The mock server's connections use it too (`APNsMockServer`), for the same reason.
///
/// Not thread-safe, like the session: used by the thread that drives the session, one
/// call at a time. ``releaseCached()`` gives the cache back when the connection is idle;
/// deinitialising frees it, after the session that allocated from it is deleted.
package final class HTTP2SessionMemory {
    /// The most a session keeps cached: about 1,000 streams' blocks.
    package static let maxCachedBytes = 256 * 1024

    private let pool: UnsafeMutablePointer<capns_mem_pool>

    package init(maxCachedBytes: Int = HTTP2SessionMemory.maxCachedBytes) {
        pool = .allocate(capacity: 1)
        pool.initialize(to: capns_mem_pool())
        pool.pointee.max_cached_bytes = maxCachedBytes
    }

    deinit {
        capns_mem_trim(pool)
        pool.deinitialize(count: 1)
        pool.deallocate()
    }

    /// The allocator to create the session with (nghttp2 copies it).
    package var allocator: nghttp2_mem { capns_mem_allocator(pool) }

    /// The bytes cached for reuse.
    package var cachedBytes: Int { pool.pointee.cached_bytes }

    /// Frees the cached blocks (the blocks the session holds stay its own).
    package func releaseCached() {
        if pool.pointee.cached_bytes > 0 { capns_mem_trim(pool) }
    }
}
