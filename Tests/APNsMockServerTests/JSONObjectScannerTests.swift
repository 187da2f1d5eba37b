import Foundation
import Testing
@testable import APNsMockServer

/// JSON texts, judged by Foundation's JSONSerialization as the independent parser.
let jsonSamples: [String] = [
    #"{}"#, #"{"aps":{}}"#, #" {"aps" : {"alert":"hi"} } "#, #"{"a":[1,2.5,-3e+2,true,false,null]}"#,
    #"{"\u0061ps":1}"#, #"{"s":"\ud83d\ude00 \n \" \\ \/"}"#, #"{"a":{"b":{"c":[[[]]]}}}"#,
    #"{"a":0.1e-2}"#, #"{"a":-0}"#,
    #"[]"#, #""aps""#, #"1"#, #"null"#, "",
    #"{"a":1,}"#, #"{"a":01}"#, #"{"a":1.}"#, #"{"a":.5}"#, #"{'a':1}"#, #"{"a":tru}"#,
    #"{"a":"\x"}"#, #"{"a":"\u12"}"#, "{\"a\":\"tab\there\"}", #"{"a":1}{"b":2}"#, #"{"a" 1}"#,
    #"{"a":+1}"#, #"{"a":NaN}"#, #"{"a":[1,]}"#, #"{a:1}"#, #"{"a":1} x"#,
]

/// Python's `json` module (strict RFC 8259 once NaN/Infinity are refused) judges each
/// sample: "1" for a top-level object, "0" otherwise, one line per sample.
func pythonVerdicts(_ samples: [String]) async throws -> [Bool] {
    let file = FileManager.default.temporaryDirectory.appendingPathComponent("json-samples-\(UUID().uuidString)")
    try Data(samples.map { Data($0.utf8).base64EncodedString() }.joined(separator: "\n").utf8).write(to: file)
    defer { try? FileManager.default.removeItem(at: file) }
    let script = """
    import base64, json, sys
    def refuse(name): raise ValueError(name)
    for line in open(sys.argv[1]).read().split("\\n"):
        text = base64.b64decode(line).decode("utf-8", "strict") if line else ""
        try:
            print("1" if isinstance(json.loads(text, parse_constant=refuse), dict) else "0")
        except Exception:
            print("0")
    """
    let result = try await ExternalTool.run("python3", ["-c", script, file.path])
    return result.stdout.split(separator: "\n").map { $0 == "1" }
}

@Suite("JSONObjectScanner against Python's json and Foundation")
struct JSONObjectScannerTests {
    @Test("accepts exactly the texts Python's strict json parses as a top-level object")
    func agreesWithPython() async throws {
        let verdicts = try await pythonVerdicts(jsonSamples)
        try #require(verdicts.count == jsonSamples.count)
        for (text, isObject) in zip(jsonSamples, verdicts) {
            #expect((JSONObjectScanner.topLevelKeys(of: Array(text.utf8)) != nil) == isObject, "\(text)")
        }
    }

    @Test("finds the same top-level keys as JSONSerialization", arguments: jsonSamples)
    func keysAgreeWithFoundation(_ text: String) {
        guard let ours = JSONObjectScanner.topLevelKeys(of: Array(text.utf8)) else { return }
        let foundation = (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any]
        #expect(foundation.map { Set($0.keys) } == ours)
    }

    @Test("rejects invalid UTF-8 and deep nesting")
    func rejectsHostileInput() {
        #expect(JSONObjectScanner.topLevelKeys(of: Array(#"{"a":""#.utf8) + [0xFF] + Array(#""}"#.utf8)) == nil)
        let deep = "{\"a\":" + String(repeating: "[", count: 600) + String(repeating: "]", count: 600) + "}"
        #expect(JSONObjectScanner.topLevelKeys(of: Array(deep.utf8)) == nil)
    }
}

@Suite("ProviderTokenClaims")
struct ProviderTokenClaimsTests {
    @Test("reads alg, kid, iss and integer iat from a JWT built with Foundation")
    func reads() {
        let claims = ProviderTokenClaims(jwt: makeJWT(keyID: "ABC123DEFG", teamID: "DEF123GHIJ", issuedAt: 1_700_000_000))
        #expect(claims == ProviderTokenClaims(algorithm: "ES256", keyID: "ABC123DEFG", teamID: "DEF123GHIJ", issuedAt: 1_700_000_000))
    }

    @Test("refuses an iat that is not an integer, and malformed tokens",
          arguments: [makeJWT(issuedAt: "1700000000"), makeJWT(issuedAt: 1.5), makeJWT(issuedAt: true),
                      "a.b", "a.b.c.d", "", "eyJhbGciOiJFUzI1NiJ9.e30.", "!!.??.sig"])
    func refuses(_ jwt: String) {
        #expect(ProviderTokenClaims(jwt: jwt) == nil)
    }
}
