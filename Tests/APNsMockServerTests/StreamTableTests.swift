import Testing
import APNsCore
@testable import APNsMockServer

/// The mock server's table of open request streams, checked against Swift's `Dictionary`
/// (an independent implementation of the same map) under the patterns a connection sees:
/// ids that share slots, streams left open while later ones come and go (a client whose
/// DATA frames wait for flow control), and growth up to the table's limit.
@Suite("Stream table")
struct StreamTableTests {
    /// Every stream of `reference` is found under its id, and no other.
    func expectSame(_ table: StreamTable, _ reference: [Int32: ServerConnection.Stream], absent: [Int32],
                    sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(table.count == reference.count, sourceLocation: sourceLocation)
        for (id, stream) in reference {
            #expect(table[id] === stream, "stream \(id)", sourceLocation: sourceLocation)
            #expect(table.withStream(id) { $0 === stream } == true, "stream \(id)", sourceLocation: sourceLocation)
        }
        for id in absent where reference[id] == nil {
            #expect(table[id] == nil, "stream \(id) is not open", sourceLocation: sourceLocation)
            #expect(table.withStream(id) { _ in true } == nil, sourceLocation: sourceLocation)
        }
    }

    @Test("ids that share a slot are kept apart, before and after one of them closes")
    func sharedSlots() {
        var table = StreamTable()
        let first = ServerConnection.Stream(), second = ServerConnection.Stream(), third = ServerConnection.Stream()
        // 64 slots at first, indexed by id / 2: 1, 129 and 257 share slot 0.
        table.insert(first, as: 1)
        table.insert(second, as: 129)
        table.insert(third, as: 257)
        expectSame(table, [1: first, 129: second, 257: third], absent: [3, 385])
        #expect(table.remove(1) === first)
        expectSame(table, [129: second, 257: third], absent: [1, 385])
        #expect(table.remove(1) == nil, "a stream closes once")
        #expect(table.remove(257) === third)
        #expect(table.remove(129) === second)
        #expect(table.isEmpty)
        expectSame(table, [:], absent: [1, 129, 257])
    }

    @Test("a stream inserted under an open id replaces it")
    func replace() {
        var table = StreamTable()
        let old = ServerConnection.Stream(), new = ServerConnection.Stream()
        table.insert(old, as: 7)
        table.insert(new, as: 7)
        expectSame(table, [7: new], absent: [])
        table.insert(old, as: 135)
        table.insert(new, as: 135)
        expectSame(table, [7: new, 135: new], absent: [])
    }

    @Test("random opens and closes with stragglers match a dictionary", arguments: [UInt64(1), 16, 2026])
    func matchesDictionary(seed: UInt64) {
        // Seeded, so a failure names the step that broke.
        var generator = SplitMix64(seed: seed)
        var table = StreamTable()
        var reference: [Int32: ServerConnection.Stream] = [:]
        var nextID: Int32 = 1
        var open: [Int32] = []  // ascending, as the ids were opened
        var closed: [Int32] = []
        for step in 0..<6_000 {
            let roll = generator.next() % 100
            if roll < 55 || open.isEmpty {
                // A client opens its next stream (ids rise by two).
                let stream = ServerConnection.Stream()
                table.insert(stream, as: nextID)
                reference[nextID] = stream
                open.append(nextID)
                nextID += 2
            } else if roll < 97 {
                // Mostly the oldest streams end first; some stay open for thousands of ids.
                let index = generator.next() % 4 == 0 ? Int(generator.next() % UInt64(open.count)) : 0
                let id = open.remove(at: index)
                #expect(table.remove(id) === reference.removeValue(forKey: id), "step \(step)")
                closed.append(id)
            } else {
                // A stream closed already, or never opened, is not found.
                let id = closed.isEmpty ? nextID : closed[Int(generator.next() % UInt64(closed.count))]
                #expect(table.remove(id) == nil, "step \(step)")
            }
            if step % 499 == 0 {
                expectSame(table, reference, absent: Array(closed.suffix(50)) + [nextID, nextID + 2])
            }
        }
        expectSame(table, reference, absent: Array(closed.suffix(200)))
        var seen: [Int32: Int] = [:]
        table.forEach { stream in
            if let id = reference.first(where: { $0.value === stream })?.key { seen[id, default: 0] += 1 }
        }
        #expect(seen.count == reference.count && seen.values.allSatisfy { $0 == 1 }, "forEach visits each open stream once")
        table.removeAll()
        expectSame(table, [:], absent: Array(reference.keys))
    }

    @Test("thousands of open streams past the table's 4,096 slots")
    func full() {
        var table = StreamTable()
        var reference: [Int32: ServerConnection.Stream] = [:]
        // 6,000 open streams: the table stops at 4,096 slots, so most slots hold two.
        for index in 0..<6_000 {
            let id = Int32(2 * index + 1)
            let stream = ServerConnection.Stream()
            table.insert(stream, as: id)
            reference[id] = stream
        }
        expectSame(table, reference, absent: [12_001, 12_003])
        // Close every other one, then open as many again.
        for index in stride(from: 0, to: 6_000, by: 2) {
            let id = Int32(2 * index + 1)
            #expect(table.remove(id) === reference.removeValue(forKey: id))
        }
        for index in 6_000..<9_000 {
            let id = Int32(2 * index + 1)
            let stream = ServerConnection.Stream()
            table.insert(stream, as: id)
            reference[id] = stream
        }
        expectSame(table, reference, absent: [1, 5, 18_001])
    }
}

@Suite("The client's stream identifiers")
struct ClientStreamIDsTests {
    /// Feeds HEADERS frames on `streamIDs` in order; returns which were admitted.
    static func admitted(_ streamIDs: [Int32], into ids: inout ClientStreamIDs) -> [Bool] {
        streamIDs.map { ids.admitHeaders(on: $0) }
    }

    @Test("a skipped identifier is refused; used ones, new ones and even ones are left to nghttp2")
    func skippedIdentifiers() {
        var ids = ClientStreamIDs()
        // 5 skips 1 and 3; 5 again is trailers; 2 is the server's; 13 skips 9 and 11.
        #expect(Self.admitted([5, 1, 3, 5, 7, 7, 2, 13, 9, 11, 7], into: &ids)
                == [true, false, false, true, true, true, true, true, false, false, true])
        #expect(Self.admitted([Int32.max, 15, Int32.max - 2, Int32.max], into: &ids) == [true, false, false, true])
    }

    @Test("consecutive identifiers from 1 leave nothing skipped")
    func consecutive() {
        var ids = ClientStreamIDs()
        let all = Array(stride(from: Int32(1), through: 2001, by: 2))
        #expect(Self.admitted(all, into: &ids).allSatisfy { $0 })
        #expect(Self.admitted(all.filter { $0 % 100 == 1 }, into: &ids).allSatisfy { $0 })
    }
}
