//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

/// RFC 4648 base64 (standard alphabet, padded), the encoding of `$MEMORY_PRESSURE_WRITE`.
enum Base64 {
    /// The bytes, or nil when the text is not padded base64; whitespace is ignored.
    static func decode(_ text: String) -> [UInt8]? {
        let symbols = text.utf8.filter { !($0 == 0x20 || $0 == 0x0a || $0 == 0x0d || $0 == 0x09) }
        guard symbols.count % 4 == 0 else { return nil }
        var output: [UInt8] = []
        output.reserveCapacity(symbols.count / 4 * 3)
        var start = 0
        while start < symbols.count {
            var quad: [UInt8] = []
            var padding = 0
            for offset in 0..<4 {
                let symbol = symbols[start + offset]
                if symbol == UInt8(ascii: "=") {
                    // Padding only in the last two places of the last group.
                    guard start + 4 == symbols.count, offset >= 2 else { return nil }
                    padding += 1
                    continue
                }
                guard padding == 0, let value = value(of: symbol) else { return nil }
                quad.append(value)
            }
            output.append(quad[0] << 2 | quad[1] >> 4)
            if quad.count > 2 { output.append((quad[1] & 0x0f) << 4 | quad[2] >> 2) }
            if quad.count > 3 { output.append((quad[2] & 0x03) << 6 | quad[3]) }
            start += 4
        }
        return output
    }

    private static func value(of symbol: UInt8) -> UInt8? {
        switch symbol {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"): symbol - UInt8(ascii: "A")
        case UInt8(ascii: "a")...UInt8(ascii: "z"): symbol - UInt8(ascii: "a") + 26
        case UInt8(ascii: "0")...UInt8(ascii: "9"): symbol - UInt8(ascii: "0") + 52
        case UInt8(ascii: "+"): 62
        case UInt8(ascii: "/"): 63
        default: nil
        }
    }
}
