//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

// JSON log lines (the `json` log format): a record read from the bytes (FuzzLogRecord: the message, the label, metadata
// of every kind swift-log has, any bytes in them, values past the bound) → JSONLogLine.line, which must be one line of
// JSON that reads back as the record, whatever the values hold.
import FuzzSupport

@main
enum LogJSONFuzzer: FuzzTarget {
    static func test(_ bytes: [UInt8]) {
        checkJSONLogLine(FuzzLogRecord(bytes))
    }
}
