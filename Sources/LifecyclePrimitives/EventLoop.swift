//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import CLifecyclePrimitives

#if canImport(Glibc)
import Glibc
#endif

/// What a `VarlinkServer` needs of the event loop it runs on: io sources and one-shot timers, each of which it can
/// prioritise and cancel. The daemon's sd-event loop (`MainLoop`) is one; the server never calls into a loop from
/// another thread.
public protocol EventLoop: AnyObject {
    /// Calls `handler` whenever `fd` is ready for any of `events` (level-triggered), with the events that occurred.
    func addIOSource(fd: Int32, events: IOEvents, handler: @escaping (IOEvents) -> Void) throws(SystemCallError)
        -> any EventLoopSource
    /// Calls `handler` once, after `delay`, up to `accuracy` late.
    func addTimerSource(after delay: Duration, accuracy: Duration, handler: @escaping () -> Void) throws(SystemCallError)
        -> any EventLoopSource
}

/// A source registered on an ``EventLoop``.
public protocol EventLoopSource: AnyObject {
    /// Whether the source is still registered.
    var isActive: Bool { get }
    /// The priority among sources ready at once: lower runs first.
    func setPriority(_ priority: Int64) throws(SystemCallError)
    /// Changes the events an io source waits for.
    func setIOEvents(_ events: IOEvents) throws(SystemCallError)
    /// Stops and drops the source; safe to call twice.
    func cancel()
}

/// The epoll events an io source waits for and reports.
public struct IOEvents: OptionSet, Hashable, Sendable {
    /// The epoll bit mask.
    public let rawValue: UInt32

    /// Wraps an epoll bit mask.
    public init(rawValue: UInt32) {
        self.rawValue = rawValue
    }

    /// `EPOLLIN`: data to read (or a listening socket has a connection).
    public static let readable = IOEvents(rawValue: EPOLLIN.rawValue)
    /// `EPOLLOUT`: room to write.
    public static let writable = IOEvents(rawValue: EPOLLOUT.rawValue)
    /// `EPOLLPRI`: an exceptional condition, e.g. a PSI memory-pressure trigger fired.
    public static let priority = IOEvents(rawValue: EPOLLPRI.rawValue)
    /// `EPOLLRDHUP`: the peer closed its writing end.
    public static let readHangup = IOEvents(rawValue: EPOLLRDHUP.rawValue)
    /// `EPOLLERR`: an error on the descriptor (always reported).
    public static let error = IOEvents(rawValue: EPOLLERR.rawValue)
    /// `EPOLLHUP`: hang-up (always reported).
    public static let hangup = IOEvents(rawValue: EPOLLHUP.rawValue)
}
