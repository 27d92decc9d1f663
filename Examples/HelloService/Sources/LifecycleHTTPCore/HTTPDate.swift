//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import Synchronization

#if canImport(Glibc)
package import Glibc
#endif

/// The `Date` header's value for now, in RFC 9110's IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`), as Hummingbird's
/// `Application` and Vapor's `HTTPServer` write it.
///
/// Their own caches (Hummingbird's `DateCache`, Vapor's `RFC1123DateCache`) are internal to them; this one formats once
/// per second, on the first response of that second, rather than from a timer.
package enum HTTPDate {
    private static let cache = Mutex((second: time_t(-1), text: ""))
    private static let days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    /// Now, formatted.
    package static var now: String {
        let second = time(nil)
        return cache.withLock { cached in
            if cached.second != second { cached = (second, format(second)) }
            return cached.text
        }
    }

    /// `second` (since the epoch) formatted.
    package static func format(_ second: time_t) -> String {
        var second = second
        var parts = tm()
        gmtime_r(&second, &parts)
        func twoDigits(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        let day = days[Int(parts.tm_wday)]
        let month = months[Int(parts.tm_mon)]
        let time = "\(twoDigits(parts.tm_hour)):\(twoDigits(parts.tm_min)):\(twoDigits(parts.tm_sec))"
        return "\(day), \(twoDigits(parts.tm_mday)) \(month) \(1900 + parts.tm_year) \(time) GMT"
    }
}
