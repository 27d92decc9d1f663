import Testing

@testable import LifecycleSystemd

@Suite struct JSONTests {
    @Test func valuesParseAndWriteBackCompactly() throws {
        let text = #"{"a":1,"b":-2.5,"c":"x\"y\\z\n","d":[true,false,null],"e":{},"f":[],"g":1e3}"#
        let value = try JSONValue.parse(text)
        #expect(value["a"] == .integer(1))
        #expect(value["b"] == .double(-2.5))
        #expect(value["c"]?.stringValue == "x\"y\\z\n")
        #expect(value["d"] == [true, false, nil])
        #expect(value["g"]?.integerValue == 1000)
        #expect(value.text == #"{"a":1,"b":-2.5,"c":"x\"y\\z\n","d":[true,false,null],"e":{},"f":[],"g":1000}"#)
        #expect(try JSONValue.parse(value.text).text == value.text)
    }

    @Test func membersKeepTheirOrder() {
        let object: JSONObject = ["state": "active", "pid": 7, "cause": "control"]
        #expect(JSONValue.object(object).text == #"{"state":"active","pid":7,"cause":"control"}"#)
    }

    @Test func unicodeEscapesAndSurrogatePairsDecode() throws {
        #expect(try JSONValue.parse(#""\u00e9\ud83d\ude00\/""#) == .string("é😀/"))
        #expect(JSONValue.string("tab\there\u{1}").text == #""tab\there\u0001""#)
    }

    @Test(arguments: [
        "", "   ", "{", "[1,]", "{\"a\":}", "{\"a\" 1}", "01", "1.", "-", "+1", "tru", "nul", "\"open", "\"\\x\"",
        "\"\\ud800\"", "\"\\udc00\"", "{\"a\":1,\"a\":2}", "[1] 2", "\"\u{01}\"", "NaN", "1e999",
    ])
    func invalidTextIsRefusedWithWhere(_ text: String) {
        #expect(throws: JSONError.self) { try JSONValue.parse(text) }
    }

    @Test func invalidUTF8IsRefused() {
        #expect(throws: JSONError.self) { try JSONValue.parse([0x22, 0xFF, 0xFE, 0x22]) }
    }

    @Test func nestingIsBoundedWithoutRecursingDeeper() {
        let deep = String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)
        #expect(throws: JSONError.self) { try JSONValue.parse(deep) }
        let fine = String(repeating: "[", count: 32) + String(repeating: "]", count: 32)
        #expect((try? JSONValue.parse(fine)) != nil)
    }

    @Test func numbersKeepIntegersExact() throws {
        #expect(try JSONValue.parse("9007199254740993") == .integer(9_007_199_254_740_993))
        #expect(try JSONValue.parse("2.0").integerValue == 2)
        #expect(try JSONValue.parse("2.5").integerValue == nil)
        #expect(JSONValue.double(.infinity).text == "null")
        #expect(JSONValue.double(0.25).text == "0.25")
    }
}
