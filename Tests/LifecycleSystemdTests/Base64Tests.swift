//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import Testing

@_spi(Testing) @testable import LifecycleSystemd

@Suite struct Base64Tests {
    @Test func base64DecodesPaddedTextAndRejectsTheRest() {
        #expect(Base64.decode("") == [])
        #expect(Base64.decode("Zg==") == Array("f".utf8))
        #expect(Base64.decode("Zm8=") == Array("fo".utf8))
        #expect(Base64.decode("Zm9v") == Array("foo".utf8))
        #expect(Base64.decode("Zm9vYg==\n") == Array("foob".utf8))
        #expect(Base64.decode("+/+/") == [0xfb, 0xff, 0xbf])
        #expect(Base64.decode("Zm9") == nil)
        #expect(Base64.decode("Z===") == nil)
        #expect(Base64.decode("Zg==Zg==") == nil)
        #expect(Base64.decode("Zm-v") == nil)
    }
}
