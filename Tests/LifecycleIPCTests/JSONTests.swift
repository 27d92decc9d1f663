//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import Testing

@testable import LifecycleIPC

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

    @Test func everyCharacterThatCouldEndOrDisturbALineIsEscapedAndReadsBack() throws {
        let value = "a\u{0}\u{8}\u{C}\u{1B}[2J\u{7F}\u{80}\u{85}\u{9F}\u{A0}\u{2027}\u{2028}\u{2029}\u{202A}é\\\"z"
        let text = JSONValue.string(value).text
        #expect(text == #""a\u0000\b\f\u001b[2J\u007f\u0080\u0085\u009f\#u{A0}\#u{2027}\u2028\u2029\#u{202A}é\\\"z""#)
        #expect(try JSONValue.parse(text) == .string(value))
        // Member names too.
        #expect(JSONValue.object(["k\u{2028}": 1]).text == #"{"k\u2028":1}"#)
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

    /// Found while fuzzing (fuzz-json, fuzz-varlink: their slowest inputs were objects of many members): the duplicate
    /// check searched the members already read, so an object of n members cost n² string comparisons. A control
    /// message may have 64 KiB: 7,000 members took 0.16 s of the main loop in a release build (1.8 s in a debug build);
    /// with a set, 2 ms (10 ms). Duplicates, canonically equivalent names included, are still refused.
    ///
    /// The test measures how the cost grows, not how long it takes (which depends on the machine, the build and the
    /// sanitizer): eight times the members cost about eight times as long, where the quadratic check cost 64 times.
    @Test func anObjectOfManyMembersParsesInLinearTime() throws {
        func object(_ count: Int, then tail: String = "") -> [UInt8] {
            let members = (0..<count).map { #""\#(String($0, radix: 16))":0"# }
            return Array(("{" + members.joined(separator: ",") + tail + "}").utf8)
        }
        let text = object(7_000)
        #expect(text.count < 65_536)
        let value = try JSONValue.parse(text)
        #expect(value.objectValue?.members.count == 7_000)
        #expect(value["1b57"] == .integer(0))

        // The fastest of a few runs each, taken in turn, so that a busy machine slows both sizes alike.
        let small = object(1_000), large = object(8_000)
        var fastest = (small: Duration.seconds(3_600), large: Duration.seconds(3_600))
        let clock = ContinuousClock()
        for _ in 0..<5 {
            fastest.small = min(fastest.small, try clock.measure { _ = try JSONValue.parse(small) })
            fastest.large = min(fastest.large, try clock.measure { _ = try JSONValue.parse(large) })
        }
        let growth = fastest.large / fastest.small
        #expect(growth < 24, "8 times the members cost \(growth) times as long (\(fastest.small), \(fastest.large))")

        let duplicate = object(7_000, then: #","1b57":1"#)
        #expect(throws: JSONError(offset: duplicate.count - 3, reason: #"duplicate member "1b57""#)) {
            try JSONValue.parse(duplicate)
        }
        #expect(throws: JSONError.self) { try JSONValue.parse(#"{"\#u{E9}":1,"e\#u{301}":2}"#) }
        #expect(try JSONValue.parse(#"{"b":1,"a":2}"#).objectValue?.keys == ["b", "a"])
    }

    /// The same for equality, which the fuzz targets check every value with: large objects compare through a
    /// dictionary, in any order, as small ones do.
    @Test func objectsCompareByMembersInAnyOrder() throws {
        for count in [3, 17, 300] {
            let pairs = (0..<count).map { (String($0), JSONValue.integer(Int64($0))) }
            let object = JSONObject(pairs)
            #expect(object == JSONObject(pairs.reversed()))
            #expect(object.hashValue == JSONObject(pairs.reversed()).hashValue)
            var changed = object
            changed["1"] = .double(1.5)
            #expect(object != changed)
            changed["1"] = .double(1)
            #expect(object == changed)
            var renamed = JSONObject(pairs.dropLast())
            renamed["x"] = .integer(Int64(count - 1))
            #expect(object != renamed)
        }
    }
}
