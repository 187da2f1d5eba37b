import Foundation
import Testing

/// The catalog's table of contents cannot fall behind its articles: the landing page's
/// Topics and the README's Documentation section must list every article in
/// Documentation/SwiftAPNs.docc, and each article must open as DocC and STYLE.md ask
/// (`# Title`, then a one-paragraph abstract).
@Suite("DocC catalog completeness")
struct CatalogCompletenessTests {
    /// The article names (file names without `.md`) of the catalog, landing page excluded.
    static func articles() throws -> [String] {
        let root = URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent()
        let catalog = root.appendingPathComponent("Documentation/SwiftAPNs.docc")
        return try FileManager.default.contentsOfDirectory(atPath: catalog.path)
            .filter { $0.hasSuffix(".md") && $0 != "SwiftAPNs.md" }
            .map { String($0.dropLast(3)) }
            .sorted()
    }

    @Test("the catalog holds the articles the landing page promises")
    func catalogIsNotEmpty() throws {
        let names = try Self.articles()
        #expect(names.contains("MigratingFromAPNSwift"))
        #expect(names.contains("Troubleshooting"))
        #expect(names.count >= 12)
    }

    @Test("the landing page's Topics link every article")
    func landingPageListsEveryArticle() throws {
        let landing = try packageFile("Documentation/SwiftAPNs.docc/SwiftAPNs.md")
        let topics = try #require(landing.range(of: "## Topics"))
        let listed = landing[topics.upperBound...]
        for name in try Self.articles() {
            #expect(listed.contains("- <doc:\(name)>"), "SwiftAPNs.md's Topics do not list \(name)")
        }
        for module in ["APNsPayload", "APNsCore", "APNsTransport", "APNsConfiguration", "APNsTesting", "APNsMockServer"] {
            #expect(listed.contains("- ``\(module)``"), "SwiftAPNs.md's Topics do not link the \(module) module")
        }
    }

    @Test("the README's Documentation section links every article")
    func readmeListsEveryArticle() throws {
        let readme = try packageFile("README.md")
        let start = try #require(readme.range(of: "## Documentation"))
        let end = readme[start.upperBound...].range(of: "\n## ")?.lowerBound ?? readme.endIndex
        let section = readme[start.upperBound..<end]
        for name in try Self.articles() + ["SwiftAPNs"] {
            #expect(section.contains("(Documentation/SwiftAPNs.docc/\(name).md)"), "README.md does not link \(name).md")
        }
    }

    @Test("every article starts with a title and an abstract paragraph")
    func articlesOpenWithTitleAndAbstract() throws {
        for name in try Self.articles() {
            let text = try packageFile("Documentation/SwiftAPNs.docc/\(name).md")
            let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
            #expect(lines.first?.hasPrefix("# ") == true, "\(name).md does not start with a # title")
            #expect(lines.count > 2 && lines[1].isEmpty && !lines[2].isEmpty && !lines[2].hasPrefix("#"),
                    "\(name).md has no abstract paragraph after its title")
        }
    }
}
