import Foundation
import Testing

@testable import APNsPayload

/// Apple's payload examples (Local and Remote Notification Programming Guide, in the
/// Chinese translation of the seeds), built with the API and compared with the guide's
/// JSON as parsed by Foundation's JSONSerialization.
@Suite struct SeedExampleTests {
    // Seed 000, 创建远程通知负载 › 创建 JSON 字典, 例 1.
    static let example1 = """
        {
            "aps" : { "alert" : "Message received from Bob" },
            "acme2" : [ "bang",  "whiz" ]
        }
        """

    // Seed 000, 创建 JSON 字典, 例 2.
    static let example2 = """
        {
            "aps" : {
                "alert" : {
                    "title" : "Game Request",
                    "body" : "Bob wants to play poker",
                    "action-loc-key" : "PLAY"
                },
                "badge" : 5
            },
            "acme1" : "bar",
            "acme2" : [ "bang",  "whiz" ]
        }
        """

    // Seed 000, 创建 JSON 字典, 例 3.
    static let example3 = """
        {
            "aps" : {
                "alert" : "You got your emails.",
                "badge" : 9,
                "sound" : "bingbong.aiff"
            },
            "acme1" : "bar",
            "acme2" : 42
        }
        """

    // Seed 000, 创建 JSON 字典, 例 4.
    static let example4 = """
        {
            "aps" : {
                "alert" : {
                    "loc-key" : "GAME_PLAY_REQUEST_FORMAT",
                    "loc-args" : [ "Jenna", "Frank"]
                },
                "sound" : "chime.aiff"
            },
            "acme" : "foo"
        }
        """

    // Seed 000, 配置后台更新通知, 清单 7-1 (Listing 7-1).
    static let listing7_1 = """
        {
            "aps" : {
                "content-available" : 1
            },
            "acme1" : "bar",
            "acme2" : 42
        }
        """

    // Seed 000, 给远程通知指定自定义动作, 清单 7-2 (Listing 7-2), verbatim. The
    // translation's listing is not valid JSON: a comma is missing after the category, a
    // trailing comma follows the body, and "chime.aiff" opens with a curly quote.
    static let listing7_2Verbatim = """
        {
           "aps" : {
              "category" : "NEW_MESSAGE_CATEGORY"
              "alert" : {
                 "body" : "Acme message received from Johnny Appleseed",
              },
              "badge" : 3,
              "sound" : “chime.aiff"
           },
           "acme-account" : "jane.appleseed@apple.com",
           "acme-message" : "message123456"
        }
        """

    // Listing 7-2 with those three typos corrected (as in Apple's English original).
    static let listing7_2 = """
        {
           "aps" : {
              "category" : "NEW_MESSAGE_CATEGORY",
              "alert" : {
                 "body" : "Acme message received from Johnny Appleseed"
              },
              "badge" : 3,
              "sound" : "chime.aiff"
           },
           "acme-account" : "jane.appleseed@apple.com",
           "acme-message" : "message123456"
        }
        """

    // Seed 003, payload数据结构示例 (a Notification Service Extension example with mutable-content).
    static let seed003 = """
        {
            "aps": {
                "alert": {
                    "body": "好几天都不开看我啦？送一个@张小伙jsme的视频给你，看看我嘛！",
                    "loc-key": "LOC_KEY",
                    "loc-args": ["替换参数一","替换参数二"]
                },
                "sound": "default",
                "badge": 1,
                "mutable-content": 1,
        	   "category": "UNInviteCategoryIdentifier"
            },
            "msgid": "123",
            "media": {
                "type": "image",
                "url": "https://www.fotor.com/images2/features/photo_effects/e_bw.jpg"
            }
        }
        """

    @Test func example1PlainTextAlertWithArray() throws {
        let payload = Payload.alert(.text("Message received from Bob"))
            .adding("acme2", ["bang", "whiz"])
        let bytes = try payload.encoded(for: .alert)
        expectSameJSON(bytes, Self.example1)
        #expect(text(bytes) == #"{"aps":{"alert":"Message received from Bob"},"acme2":["bang","whiz"]}"#)
    }

    @Test func example2TitleBodyActionBadge() throws {
        var payload = Payload.alert(
            Alert(title: "Game Request", body: "Bob wants to play poker", actionLocKey: "PLAY"), badge: 5)
        payload.custom["acme1"] = "bar"
        payload.custom["acme2"] = ["bang", "whiz"]
        expectSameJSON(try payload.encoded(for: .alert), Self.example2)
    }

    @Test func example3PlainTextBadgeSound() throws {
        let payload = Payload.alert(.text("You got your emails."), badge: 9, sound: "bingbong.aiff")
            .adding("acme1", "bar").adding("acme2", 42)
        expectSameJSON(try payload.encoded(for: .alert), Self.example3)
    }

    @Test func example4Localized() throws {
        let payload = Payload.alert(.localized("GAME_PLAY_REQUEST_FORMAT", arguments: ["Jenna", "Frank"]), sound: "chime.aiff")
            .adding("acme", "foo")
        expectSameJSON(try payload.encoded(for: .alert), Self.example4)
    }

    @Test func listing7_1Background() throws {
        let payload = Payload.background(["acme1": "bar", "acme2": 42])
        expectSameJSON(try payload.encoded(for: .background), Self.listing7_1)
    }

    @Test func listing7_2Category() throws {
        var payload = Payload.alert(
            Alert(body: "Acme message received from Johnny Appleseed"), badge: 3, sound: "chime.aiff",
            category: "NEW_MESSAGE_CATEGORY")
        try payload.setCustom("acme-account", to: "jane.appleseed@apple.com")
        try payload.setCustom("acme-message", to: "message123456")
        expectSameJSON(try payload.encoded(for: .alert), Self.listing7_2)
    }

    @Test func listing7_2VerbatimIsRefusedByBothParsers() {
        #expect(FoundationJSON.parse(Self.listing7_2Verbatim) == nil)
        #expect(throws: PayloadError.self) { try Payload(jsonBytes: Array(Self.listing7_2Verbatim.utf8)) }
    }

    @Test func seed003MutableContentWithCJK() throws {
        struct Media: Encodable {
            var type: String
            var url: String
        }
        var payload = Payload(aps: APS(
            alert: Alert(
                body: "好几天都不开看我啦？送一个@张小伙jsme的视频给你，看看我嘛！",
                locKey: "LOC_KEY", locArgs: ["替换参数一", "替换参数二"]),
            badge: 1, sound: .default, category: "UNInviteCategoryIdentifier", mutableContent: true))
        payload.custom["msgid"] = "123"
        try payload.setCustom(
            "media", to: Media(type: "image", url: "https://www.fotor.com/images2/features/photo_effects/e_bw.jpg"))
        let bytes = try payload.encoded(for: .alert)
        expectSameJSON(bytes, Self.seed003)
        #expect(!text(bytes).contains("\\u"))
        #expect(text(bytes).contains("好几天都不开看我啦"))
    }

    /// Every seed example decodes into the model and re-encodes to the same JSON tree.
    @Test(arguments: [example1, example2, example3, example4, listing7_1, listing7_2, seed003])
    func seedExamplesRoundTrip(json: String) throws {
        let payload = try Payload(jsonBytes: Array(json.utf8))
        let bytes = try payload.encoded()
        expectSameJSON(bytes, json)
        #expect(try Payload(jsonBytes: bytes) == payload)
    }

    @Test func decodedSeedExampleHasTypedFields() throws {
        let payload = try Payload(jsonBytes: Array(Self.example2.utf8))
        #expect(payload.aps.alert?.title == "Game Request")
        #expect(payload.aps.alert?.actionLocKey == "PLAY")
        #expect(payload.aps.badge == 5)
        #expect(payload.custom.keys == ["acme1", "acme2"])
        let seed003 = try Payload(jsonBytes: Array(Self.seed003.utf8))
        #expect(seed003.aps.mutableContent)
        #expect(seed003.aps.alert?.locArgs == ["替换参数一", "替换参数二"])
    }
}
