//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

#if canImport(Glibc)
package import Glibc
#endif

/// What a callback runs on, as a ``CallbackMonitor`` is told just before it runs: a fixed name (`delegate`, the path
/// of a task whose controller is gone), or a controller or a view, whose path is read only when somebody asks.
///
/// Telling a monitor of a controller's callback does not touch the path's string: the node is passed unretained (its
/// path is cached in the node, built at its first callback in a position). A monitor on another thread reads that
/// path while the main thread is blocked in the callback — the stall detector naming a hung callback — through
/// ``RunningCallback``, which makes the read safe. Outside this package a target is only its ``description``: it
/// holds its node unretained, so it is valid during ``CallbackMonitor/callbackWillStart(sequence:event:target:)``
/// only, and nothing outside the @_spi(Testing) public may read the node through it.
@_spi(Testing) public struct CallbackTarget: @unchecked Sendable, CustomStringConvertible, ExpressibleByStringLiteral {
    // @unchecked Sendable: the nodes are main-actor objects held unretained; off the main thread they are only read
    // through RunningCallback.path(of:publication:), under its mutex, while they are known to be alive.

    enum Storage {
        case name(String)
        case controller(Unmanaged<ViewController>)
        case view(Unmanaged<View>)
    }

    let storage: Storage

    init(_ storage: Storage) {
        self.storage = storage
    }

    /// A target known by its name alone.
    @_spi(Testing) public static func named(_ name: String) -> CallbackTarget {
        CallbackTarget(.name(name))
    }

    @_spi(Testing) public init(stringLiteral name: String) {
        self.init(.name(name))
    }

    /// The target's path now (`delegate`, `root/child`, `root.view/label`). On the main thread, while the callback it
    /// was made for runs (the node is not retained); another thread asks ``RunningCallback/path(of:publication:)``.
    @MainActor
    @_spi(Testing) public var path: String {
        switch storage {
        case .name(let name): name
        case .controller(let controller): controller.takeUnretainedValue().path
        case .view(let view): view.takeUnretainedValue().path
        }
    }

    /// The name, for a named target; a node is described by its kind (its path is only read where that is safe:
    /// ``RunningCallback``).
    @_spi(Testing) public var description: String {
        switch storage {
        case .name(let name): name
        case .controller: "a view controller"
        case .view: "a view"
        }
    }

    /// The node's address, nil for a named target.
    var node: UnsafeMutableRawPointer? {
        switch storage {
        case .name: nil
        case .controller(let controller): controller.toOpaque()
        case .view(let view): view.toOpaque()
        }
    }

    /// The path the node last computed; only under ``RunningCallback/mutex`` while the node is alive.
    fileprivate func cachedPath() -> String? {
        switch storage {
        case .name(let name): name
        case .controller(let controller): controller._withUnsafeGuaranteedRef { $0.pathReadUnderMonitorLock }
        case .view(let view): view._withUnsafeGuaranteedRef { $0.pathReadUnderMonitorLock }
        }
    }
}

/// The callback the main thread runs now, for a monitor that reads it from another thread (the stall detector).
///
/// The protocol (package-internal: its rules are not enforced by types):
/// - the monitor, on the main thread, with ``mutex`` held, as each callback starts
///   (``CallbackMonitor/callbackWillStart(sequence:event:target:)``), ``publish(_:)``es its target and keeps the
///   publication number it returns; only the main thread publishes;
/// - controllers and views write their cached path under the mutex (their own reads on the main thread take no lock);
///   a node that is the published target withdraws at the end of its `deinit`, before its storage goes: under the
///   mutex it leaves its path behind in its place (the check whether it is the published one is made first without
///   the lock, which is sound because only the main thread writes the published node);
/// - with the mutex held, ``path(of:publication:)`` gives the name of a named target, or the node's path while its
///   publication is the latest (the path it left behind once it is gone), nil when a later callback was published.
///
/// So a node is never read after it is gone, and never while its path is being written; publishing costs the main
/// thread a counter and a pointer, under a lock that nobody else holds unless a warning is being written. One
/// publication is the latest for the whole process: with two monitors (two applications in one process), each reads
/// the targets of its own callbacks only while nobody published after them.
package enum RunningCallback {
    /// The lock of the protocol above; a monitor guards its own record of the running callback with it too (and may
    /// wait on a condition with it).
    package nonisolated(unsafe) static let mutex: UnsafeMutablePointer<pthread_mutex_t> = {
        let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
        return mutex
    }()

    // Guarded by `mutex` (written on the main thread only, so the main thread may read them without it).
    nonisolated(unsafe) private static var publication: UInt64 = 0
    nonisolated(unsafe) private static var publishedNode: UnsafeMutableRawPointer?
    /// The path the published node left behind when it went (its publication is still the latest).
    nonisolated(unsafe) private static var withdrawnPath: String?

    /// With ``mutex`` held, on the main thread, as a callback starts: `target` is what runs, until the next
    /// publication. Returns the publication's number.
    package static func publish(_ target: CallbackTarget) -> UInt64 {
        publication &+= 1
        publishedNode = target.node
        withdrawnPath = nil
        return publication
    }

    /// With ``mutex`` held, on any thread: the path of `target`, published as `publication` — its name, or, for a
    /// node, the path it had when last computed (left behind if the node has gone since), provided no callback was
    /// published since; otherwise nil.
    package static func path(of target: CallbackTarget, publication: UInt64) -> String? {
        guard let node = target.node else { return target.cachedPath() }
        guard publication == Self.publication else { return nil }
        guard publishedNode == node else { return withdrawnPath }
        return target.cachedPath()
    }

    /// A deinitializing node, on the main thread: if it is the published target, it is not any more (from then on
    /// its storage may go); its path stays behind for a monitor that names it.
    static func withdraw(_ address: UnsafeMutableRawPointer, path: @autoclosure () -> String?) {
        guard publishedNode == address else { return }
        pthread_mutex_lock(mutex)
        if publishedNode == address {
            publishedNode = nil
            withdrawnPath = path()
        }
        pthread_mutex_unlock(mutex)
    }

    /// Runs `body` with ``mutex`` held (a node writing its path).
    @inline(__always)
    static func withLock<Result>(_ body: () -> Result) -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return body()
    }
}
