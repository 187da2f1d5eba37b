import Foundation
import Testing

@testable import APNsCore

/// APNs's channel list answer, read in one pass: the same channels Foundation's
/// JSONSerialization (an independent JSON reader) finds, for every shape RFC 8259 allows;
/// an entry that is not a channel ID named by its position; a body that is not such a list
/// refused; and a huge list of non-entries refused at its first entry, not decoded whole.
@Suite struct ChannelListReaderTests {
    static let valid: [String] = [
        #"{"channels":[]}"#,
        #"{"channels":["dHN0LTEyMzQ1Njc4OTA=","Zm9vYmFy"]}"#,
        " {\n\t\"channels\" : [ \"Zm9vYmFy\" ,\r\n \"YWJj\" ] } \n",
        #"{"channels":["Zm9v\/w=="]}"#,  // RFC 8259 §7: "\/" is "/"
        #"{"\u0063hannels":["Zm9vYmFy"]}"#,  // an escaped key is the same key
        #"{"other":{"a":[1,-2.5e3,{"b":null}],"c":"\"}\u00e9\ud83d\ude00"},"channels":["Zm9vYmFy"],"x":true,"y":false}"#,
    ]

    @Test(arguments: valid)
    func readsWhatJSONSerializationReads(_ body: String) throws {
        let foundation = try #require(JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any])
        let expected = try #require(foundation["channels"] as? [String])
        let read = try ChannelListReader.channels(in: Array(body.utf8)).get()
        #expect(read.map(\.rawValue) == expected)
    }

    @Test(arguments: [
        (#"{"channels":[1]}"#, 0),
        (#"{"channels":["Zm9vYmFy",{}]}"#, 1),
        (#"{"channels":["Zm9vYmFy","YWJj",null]}"#, 2),
        (#"{"channels":["not base64!"]}"#, 0),
    ])
    func namesTheEntryThatIsNotAChannel(_ body: String, _ index: Int) {
        #expect(ChannelListReader.channels(in: Array(body.utf8)) == .failure(.entry(index)))
    }

    @Test(arguments: [
        "", "[]", "{}", #"{"channels":"Zm9vYmFy"}"#, #"{"channels":["Zm9vYmFy""#, #"{"channels":[]} x"#,
        #"{"channels":[],}"#, #"{"channels" ["Zm9vYmFy"]}"#, #"{"a":tru,"channels":[]}"#,
        #"{"a":"\x","channels":[]}"#, "{\"a\":\"tab\there\",\"channels\":[]}",
        #"{"a":"#  + String(repeating: "[", count: 100) + String(repeating: "]", count: 100) + #","channels":[]}"#,
    ])
    func refusesWhatIsNotAList(_ body: String) {
        #expect(ChannelListReader.channels(in: Array(body.utf8)) == .failure(.notAList), "\(body.prefix(60))")
    }

    /// RFC 8259 §6's number grammar, in a member that is skipped: what JSONSerialization
    /// and the grammar refuse is refused (found by the channel-list fuzz target: `1.` was
    /// skipped as a number, so a body that is not JSON was read as a list).
    @Test(arguments: ["1.", "01", "+1", ".5", "-", "1e", "1e+", "1-2", "1.e3", "--1", "0x1", "1.5.5", "1E+-2"])
    func refusesANumberThatIsNotJSON(_ number: String) {
        let body = #"{"a":"# + number + #","channels":[]}"#
        #expect((try? JSONSerialization.jsonObject(with: Data(#"{"a":"# .utf8) + Data(number.utf8) + Data("}".utf8))) == nil)
        #expect(ChannelListReader.channels(in: Array(body.utf8)) == .failure(.notAList), "\(body)")
    }

    @Test(arguments: ["0", "-0", "1", "-12.5", "1e3", "1E-3", "1.5e+10", "0.000", "123456789012345678901234567890"])
    func skipsEveryJSONNumber(_ number: String) throws {
        let body = #"{"a":"# + number + #","channels":["Zm9vYmFy"],"b":["# + number + "," + number + "]}"
        #expect(try JSONSerialization.jsonObject(with: Data(body.utf8)) is [String: Any])
        #expect(try ChannelListReader.channels(in: Array(body.utf8)).get().map(\.rawValue) == ["Zm9vYmFy"])
    }

    @Test func aHugeListOfNumbersIsRefusedAtItsFirstEntry() {
        // 4 MiB of [1,1,1,…]: a general decoder built two million values before looking.
        var body = Array(#"{"channels":[1"#.utf8)
        body.reserveCapacity(4 << 20)
        while body.count < (4 << 20) - 3 { body.append(contentsOf: Array(",1".utf8)) }
        body.append(contentsOf: Array("]}".utf8))
        #expect(ChannelListReader.channels(in: body) == .failure(.entry(0)))
    }

    @Test func tenThousandChannelsAreRead() throws {
        let ids = (0..<10_000).map { Data("channel-\($0)".utf8).base64EncodedString() }
        let body = #"{"channels":["# + ids.map { "\"\($0)\"" }.joined(separator: ",") + "]}"
        let read = try ChannelListReader.channels(in: Array(body.utf8)).get()
        #expect(read.map(\.rawValue) == ids)
    }
}
