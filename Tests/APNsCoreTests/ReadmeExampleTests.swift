import Foundation
import Testing

/// The README's Swift examples are quoted from code the build compiles; these tests fail
/// when one drifts from its source.
@Suite("README examples")
struct ReadmeExampleTests {
    static let root = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    static func read(_ path: String) throws -> String {
        try String(contentsOf: root.appendingPathComponent(path), encoding: .utf8)
    }

    /// The Swift code blocks of README.md, without their fences.
    static func swiftBlocks() throws -> [String] {
        let readme = try read("README.md")
        var blocks: [String] = []
        var rest = readme[...]
        while let open = rest.range(of: "```swift\n") {
            guard let close = rest[open.upperBound...].range(of: "```") else { break }
            blocks.append(String(rest[open.upperBound..<close.lowerBound]))
            rest = rest[close.upperBound...]
        }
        return blocks
    }

    @Test func quickTourIsQuotedVerbatim() throws {
        let source = try Self.read("Examples/QuickTour/main.swift")
        let begin = try #require(source.range(of: "// README:begin\n"))
        let end = try #require(source.range(of: "// README:end"))
        let quoted = String(source[begin.upperBound..<end.lowerBound])
        #expect(try Self.swiftBlocks().contains(quoted), "README.md must quote Examples/QuickTour between its README markers")
    }

    @Test func mockTransportExampleIsQuotedFromItsTest() throws {
        let source = try Self.read("Tests/APNsTestingTests/RemoveUnregisteredTokensTests.swift")
        let block = try #require(try Self.swiftBlocks().first { $0.contains("removesTokenOnUnregistered") })
        #expect(source.contains(block), "README.md must quote removesTokenOnUnregistered() exactly as the test has it")
    }

    /// The dependency snippet cannot be compiled here: check that the product it names
    /// is a library of this package and the module the quoted tour imports.
    @Test func dependencySnippetNamesTheProductTheTourImports() throws {
        let readme = try Self.read("README.md")
        let manifest = try Self.read("Package.swift")
        let tour = try Self.read("Examples/QuickTour/main.swift")
        let marker = ".product(name: \""
        let start = try #require(readme.range(of: marker)).upperBound
        let product = String(readme[start...].prefix { $0 != "\"" })
        #expect(manifest.contains(".library(name: \"\(product)\""), "README names a product Package.swift does not declare: \(product)")
        #expect(tour.contains("import \(product)"), "README's dependency is \(product), but the tour does not import it")
    }

    @Test func everySwiftBlockComesFromCompiledCode() throws {
        let sources = try [
            Self.read("Examples/QuickTour/main.swift"),
            Self.read("Tests/APNsTestingTests/RemoveUnregisteredTokensTests.swift"),
        ]
        for block in try Self.swiftBlocks() where !block.hasPrefix(".package") && !block.hasPrefix("// Package.swift") {
            #expect(sources.contains { $0.contains(block) }, "a README Swift block is not in compiled code:\n\(block)")
        }
    }
}
