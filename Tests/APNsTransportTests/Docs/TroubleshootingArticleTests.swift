import APNsCore
import Foundation
import Testing

/// Troubleshooting.md has one table row per reason Apple documents. These tests keep it in
/// step with ``APNsReason/documented``: a reason added to the code without a row, a row for
/// a reason the code does not know, or a status or remedy that disagrees with the code fails.
@Suite("Troubleshooting article")
struct TroubleshootingArticleTests {
    /// The article's reason rows: `| `Reason` | status | … |` → reason, cells after it.
    static func rows() throws -> [String: [String]] {
        let text = try packageFile("Documentation/SwiftAPNs.docc/Troubleshooting.md")
        var rows: [String: [String]] = [:]
        for line in text.split(separator: "\n") where line.hasPrefix("| `") {
            let cells = line.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
            guard let first = cells.first, first.hasPrefix("`"), first.hasSuffix("`") else { continue }
            let reason = String(first.dropFirst().dropLast())
            #expect(rows[reason] == nil, "\(reason) has two rows")
            rows[reason] = Array(cells.dropFirst())
        }
        return rows
    }

    /// The word the article uses for each remedy.
    static func word(_ remedy: APNsRemedy) -> String {
        switch remedy {
        case .removeDeviceToken: "remove"
        case .retryLater: "retry"
        case .fixCredentials: "credentials"
        case .fixRequest: "request"
        }
    }

    @Test("every documented reason has exactly one row, and every row is a documented reason")
    func rowsMatchTheDocumentedReasons() throws {
        let rows = try Self.rows()
        let documented = Set(APNsReason.documented.map(\.reason.rawValue))
        #expect(documented.count == 42)
        #expect(Set(rows.keys) == documented)
    }

    @Test("each row's status is the one Apple documents, and its remedy the client's")
    func statusAndRemedyAgree() throws {
        let rows = try Self.rows()
        for (reason, status) in APNsReason.documented {
            let cells = try #require(rows[reason.rawValue], "no row for \(reason)")
            #expect(cells.first == (status.map(String.init) ?? "none documented"), "status of \(reason)")
            // The device-push tables have a remedy column; the channel table's remedy is
            // stated once above it ("always request").
            let remedy = APNsRemedy(reason: reason, status: status ?? 400)
            if cells.count == 4 {
                #expect(cells[1] == Self.word(remedy), "remedy of \(reason)")
            } else {
                #expect(remedy == .fixRequest, "\(reason) is in the channel table but its remedy is \(remedy)")
            }
        }
    }
}
