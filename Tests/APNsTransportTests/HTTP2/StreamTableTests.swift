import Testing
@testable import APNsTransport

/// The stream table checked against Swift's `Dictionary` (an independent implementation of
/// the same map) under the operations a connection performs, and under adversarial IDs that
/// all want the same slot.
@Suite("Stream table: the same answers as a Dictionary")
struct StreamTableTests {
    private func expectSame(_ table: StreamTable<Int>, _ model: [Int32: Int]) {
        #expect(table.count == model.count)
        #expect(table.isEmpty == model.isEmpty)
        #expect(Set(table.keys) == Set(model.keys))
        var seen: [Int32: Int] = [:]
        for (key, value) in table { seen[key] = value }
        #expect(seen == model)
    }

    @Test("a connection's pattern: odd increasing IDs opened, answered out of order", arguments: [1, 2, 3])
    func connectionPattern(seed: UInt64) {
        var generator = SplitMix64(seed: seed)  // seeded, so that a failure can be replayed
        var table = StreamTable<Int>(capacity: 16)
        var model: [Int32: Int] = [:]
        var nextID: Int32 = 1
        for step in 0..<20_000 {
            // Keep between 0 and about 1,500 streams open, like a connection at its limit.
            if model.count < 1_500, Bool.random(using: &generator) || model.isEmpty {
                table[nextID] = step
                model[nextID] = step
                nextID += 2
            } else {
                let victim = model.keys.randomElement(using: &generator)!
                #expect(table.removeValue(forKey: victim) == model.removeValue(forKey: victim))
            }
            let probe = Int32.random(in: 1...nextID, using: &generator)
            #expect(table[probe] == model[probe])
            if step % 1_000 == 0 { expectSame(table, model) }
        }
        expectSame(table, model)
        // A stream that was never opened, and one removed twice.
        #expect(table[nextID + 2] == nil)
        if let any = model.keys.first {
            #expect(table.removeValue(forKey: any) == model.removeValue(forKey: any))
            #expect(table.removeValue(forKey: any) == nil)
        }
        table.removeAll()
        model.removeAll()
        expectSame(table, model)
    }

    @Test("IDs that all want the same slot overflow beside the table, grow it, and stay reachable as entries leave")
    func collidingIDs() {
        var table = StreamTable<Int>(capacity: 16)
        var model: [Int32: Int] = [:]
        // Stream IDs 29, 61, 93, …: (id >> 1) mod 16 is 14 for all of them, and mod 32 it
        // is 14 or 30, so they collide in the table at its first sizes.
        let ids: [Int32] = (0..<12).map { Int32(29 + 32 * $0) }
        for (value, id) in ids.enumerated() {
            table[id] = value
            model[id] = value
            for other in ids { #expect(table[other] == model[other]) }
        }
        expectSame(table, model)
        // Remove from the slots and from the overflow: every other ID stays reachable.
        for id in [ids[3], ids[0], ids[5], ids[11]] {
            #expect(table.removeValue(forKey: id) == model.removeValue(forKey: id))
            for other in ids { #expect(table[other] == model[other]) }
        }
        expectSame(table, model)
        // Setting nil removes; setting again replaces, in the slots and in the overflow.
        table[ids[1]] = nil
        model[ids[1]] = nil
        for id in [ids[2], ids[9]] {
            table[id] = 99
            model[id] = 99
        }
        expectSame(table, model)
    }

    @Test("iterating a copy while removing from the original sees every entry once")
    func iterationIsASnapshot() {
        var table = StreamTable<Int>()
        for id in stride(from: Int32(1), through: 199, by: 2) { table[id] = Int(id) }
        var visited: [Int32] = []
        for (id, value) in table {
            #expect(Int(id) == value)
            visited.append(id)
            table.removeValue(forKey: id)
        }
        #expect(visited.sorted() == Array(stride(from: Int32(1), through: 199, by: 2)))
        #expect(table.isEmpty)
    }
}
