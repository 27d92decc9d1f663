//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import CSystemd
import LifecyclePrimitives
import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

/// One sd-bus connection attached to a ``MainLoop``: asynchronous method calls with string arguments, signal
/// matches, and the reading of the replies and signals they deliver.
///
/// It knows nothing of who is on the other end; ``Logind`` is built on it. Its handlers are Swift closures, called on
/// the loop's thread; each lives as long as the ``Slot`` that registered it.
final class SdBus {
    /// The bus driver's name, `org.freedesktop.DBus`: the sender of the bus's own replies and signals.
    static let driverName = "org.freedesktop.DBus"

    // Nil once closed.
    private var pointer: OpaquePointer?

    /// Connects to the system bus (`$DBUS_SYSTEM_BUS_ADDRESS`, else /run/dbus/system_bus_socket), or to `address`,
    /// names the connection `description` (for sd-bus's own logs) and attaches it to the loop.
    init(address: String?, description: String, loop: MainLoop) throws(SystemCallError) {
        var connection: OpaquePointer?
        if let address {
            try SystemCallError.check(sd_bus_new(&connection), "sd_bus_new")
            do {
                try SystemCallError.check(sd_bus_set_address(connection, address), "sd_bus_set_address(\(address))")
                try SystemCallError.check(sd_bus_set_bus_client(connection, 1), "sd_bus_set_bus_client")
                try SystemCallError.check(sd_bus_start(connection), "sd_bus_start(\(address))")
            } catch {
                sd_bus_unref(connection)
                throw error
            }
        } else {
            try SystemCallError.check(sd_bus_open_system(&connection), "sd_bus_open_system")
        }
        _ = sd_bus_set_description(connection, description)
        do {
            try SystemCallError.check(sd_bus_attach_event(connection, loop.eventPointer, 0), "sd_bus_attach_event")
        } catch {
            sd_bus_flush_close_unref(connection)
            throw error
        }
        pointer = connection
    }

    deinit {
        close()
    }

    /// Detaches the connection from the loop and closes it; safe to call twice.
    ///
    /// Drop the slots first: each holds a reference to the connection. Nothing still queued is sent: `sd_bus_flush`
    /// waits, without a time limit, until the bus has read it all, and a bus that does not read (stopped, or busy with
    /// other peers) would hold the main loop for as long. Nothing queued needs sending either: the bus drops a closed
    /// connection's matches itself, and an inhibitor is released by closing its descriptor, not by a message.
    func close() {
        guard let pointer else { return }
        sd_bus_detach_event(pointer)
        sd_bus_close_unref(pointer)
        self.pointer = nil
    }

    /// This connection's unique name on the bus (`:1.42`), once the bus has assigned one.
    var uniqueName: String? {
        guard let pointer else { return nil }
        var name: UnsafePointer<CChar>?
        guard sd_bus_get_unique_name(pointer, &name) >= 0, let name else { return nil }
        return String(cString: name)
    }

    /// Whether the connection is still open: false once the bus closed it (or ``close()`` did).
    var isOpen: Bool {
        guard let pointer else { return false }
        return sd_bus_is_open(pointer) > 0
    }

    // MARK: Calls

    /// Sends a method call whose arguments are all strings; `onReply` gets the reply or the error reply (sd-bus
    /// makes one up for a timeout or a closed connection). The returned slot cancels the call when dropped.
    ///
    /// - Parameter autoStart: false forbids the bus to activate the destination just to answer.
    func callAsync(
        destination: String,
        path: String,
        interface: String,
        member: String,
        arguments: [String],
        autoStart: Bool = true,
        onReply: @escaping (Message) -> Void
    ) throws(SystemCallError) -> Slot {
        var message: OpaquePointer?
        try SystemCallError.check(
            sd_bus_message_new_method_call(pointer, &message, destination, path, interface, member),
            "sd_bus_message_new_method_call(\(member))"
        )
        defer { sd_bus_message_unref(message) }
        for argument in arguments {
            let result = argument.withCString { sd_bus_message_append_basic(message, CChar(UInt8(ascii: "s")), $0) }
            try SystemCallError.check(result, "sd_bus_message_append_basic(\(member))")
        }
        if !autoStart { _ = sd_bus_message_set_auto_start(message, 0) }
        let context = Handlers.retained(onMessage: onReply)
        var slot: OpaquePointer?
        let result = sd_bus_call_async(pointer, &slot, message, Handlers.dispatchMessage, context, 0)
        return try Self.adopt(slot, result: result, context: context, operation: "sd_bus_call_async(\(member))")
    }

    // MARK: Matches

    /// Subscribes to one signal from `sender`; `onSignal` gets every message the match lets through, and
    /// `onInstalled` the bus's answer to the subscription (an error reply if it refused). The returned slot
    /// unsubscribes when dropped.
    ///
    /// The bus filters broadcasts by sender, but sd-bus does not know which unique name owns a well-known sender,
    /// so it lets any sender through locally: a caller that cares must check ``Message/sender`` itself.
    func matchSignal(
        sender: String,
        path: String,
        interface: String,
        member: String,
        onSignal: @escaping (Message) -> Void,
        onInstalled: @escaping (Message) -> Void
    ) throws(SystemCallError) -> Slot {
        let context = Handlers.retained(onMessage: onSignal, onInstalled: onInstalled)
        var slot: OpaquePointer?
        let result = sd_bus_match_signal_async(
            pointer,
            &slot,
            sender,
            path,
            interface,
            member,
            Handlers.dispatchMessage,
            Handlers.dispatchInstalled,
            context
        )
        return try Self.adopt(slot, result: result, context: context, operation: "sd_bus_match_signal_async(\(member))")
    }

    /// Subscribes with a whole match rule (for what ``matchSignal(sender:path:interface:member:onSignal:onInstalled:)``
    /// cannot say, such as an `arg0=` filter); `label` names the match in errors.
    func addMatch(
        _ rule: String,
        label: String,
        onMessage: @escaping (Message) -> Void,
        onInstalled: @escaping (Message) -> Void
    ) throws(SystemCallError) -> Slot {
        let context = Handlers.retained(onMessage: onMessage, onInstalled: onInstalled)
        var slot: OpaquePointer?
        let result = sd_bus_add_match_async(
            pointer,
            &slot,
            rule,
            Handlers.dispatchMessage,
            Handlers.dispatchInstalled,
            context
        )
        return try Self.adopt(slot, result: result, context: context, operation: "sd_bus_add_match_async(\(label))")
    }

    /// Calls `onDisconnect` once the connection is lost: the bus closed it (dbus-daemon stopped or restarted, or
    /// refused this client), or reading or writing it failed. The returned slot unsubscribes when dropped.
    ///
    /// sd-bus first fails every pending call (each handler gets an `org.freedesktop.DBus.Error.NoReply` error reply
    /// it makes up), then delivers the `Disconnected` signal of `org.freedesktop.DBus.Local` that it also makes up,
    /// which this matches; by then the connection is closed. The match is local (sd-bus sends no `AddMatch` for the
    /// Local interface), so subscribing costs no round trip and works before the connection is up.
    func matchDisconnected(_ onDisconnect: @escaping () -> Void) throws(SystemCallError) -> Slot {
        let context = Handlers.retained(onMessage: { _ in onDisconnect() })
        var slot: OpaquePointer?
        let result = sd_bus_match_signal(
            pointer,
            &slot,
            "org.freedesktop.DBus.Local",
            "/org/freedesktop/DBus/Local",
            "org.freedesktop.DBus.Local",
            "Disconnected",
            Handlers.dispatchMessage,
            context
        )
        return try Self.adopt(slot, result: result, context: context, operation: "sd_bus_match_signal(Disconnected)")
    }

    // MARK: Slots and their handlers

    /// A registration on the bus (a pending call or a match), held by whoever wants its handler called.
    ///
    /// Dropping the last reference unreferences the sd-bus slot, which cancels the call or the match; inside its own
    /// handler sd-bus holds the slot until the handler returns, so dropping it there is safe.
    final class Slot {
        private let pointer: OpaquePointer

        fileprivate init(_ pointer: OpaquePointer) {
            self.pointer = pointer
        }

        deinit {
            sd_bus_slot_unref(pointer)
        }
    }

    // The closures of one slot; the C callbacks find them through the slot's userdata, and the slot's destroy
    // callback releases them, so they live exactly as long as the registration.
    private final class Handlers {
        let onMessage: (Message) -> Void
        let onInstalled: ((Message) -> Void)?

        private init(onMessage: @escaping (Message) -> Void, onInstalled: ((Message) -> Void)?) {
            self.onMessage = onMessage
            self.onInstalled = onInstalled
        }

        /// A new set of handlers as userdata, retained once; ``SdBus/adopt(_:result:context:operation:)`` hands
        /// that reference to the slot.
        static func retained(
            onMessage: @escaping (Message) -> Void,
            onInstalled: ((Message) -> Void)? = nil
        ) -> UnsafeMutableRawPointer {
            Unmanaged.passRetained(Handlers(onMessage: onMessage, onInstalled: onInstalled)).toOpaque()
        }

        static let dispatchMessage: sd_bus_message_handler_t = { message, userdata, _ in
            guard let message, let userdata else { return 0 }
            let handlers = Unmanaged<Handlers>.fromOpaque(userdata).takeUnretainedValue()
            // A handler may drop its own slot, whose destroy callback releases `handlers`: keep them until the end.
            withExtendedLifetime(handlers) { handlers.onMessage(Message(message)) }
            return 0
        }

        static let dispatchInstalled: sd_bus_message_handler_t = { message, userdata, _ in
            guard let message, let userdata else { return 0 }
            let handlers = Unmanaged<Handlers>.fromOpaque(userdata).takeUnretainedValue()
            withExtendedLifetime(handlers) { handlers.onInstalled?(Message(message)) }
            return 0
        }
    }

    /// Wraps the slot a registration call returned, handing it the handlers' reference; on failure releases the
    /// handlers and throws.
    private static func adopt(
        _ slot: OpaquePointer?,
        result: Int32,
        context: UnsafeMutableRawPointer,
        operation: @autoclosure () -> String
    ) throws(SystemCallError) -> Slot {
        guard result >= 0, let slot else {
            Unmanaged<Handlers>.fromOpaque(context).release()
            let code = result < 0 ? -result : EIO
            throw SystemCallError(operation: operation(), errno: Errno(rawValue: code))
        }
        // The slot releases the handlers when it is freed: after a call's reply was handled, or when cancelled.
        sd_bus_slot_set_destroy_callback(slot) { userdata in
            guard let userdata else { return }
            Unmanaged<Handlers>.fromOpaque(userdata).release()
        }
        return Slot(slot)
    }

    // MARK: Messages

    /// A reply or signal handed to a handler; valid only while the handler runs.
    ///
    /// Each read takes the next argument, as sd-bus does; nil means it is missing or of another type.
    struct Message {
        private let pointer: OpaquePointer

        fileprivate init(_ pointer: OpaquePointer) {
            self.pointer = pointer
        }

        /// The unique name of the connection that sent it (the bus stamps it: a peer cannot forge it), or
        /// `org.freedesktop.DBus` for the bus driver's own messages; nil for a message sd-bus made up itself.
        var sender: String? {
            sd_bus_message_get_sender(pointer).map { String(cString: $0) }
        }

        /// The connection it was addressed to; nil for a broadcast. A signal addressed to this connection reaches it
        /// whatever its match rules say, and any peer may send one: the bus driver and logind only broadcast theirs.
        var destination: String? {
            sd_bus_message_get_destination(pointer).map { String(cString: $0) }
        }

        /// Whether it was broadcast (no destination), as the bus driver's and logind's signals are.
        var isBroadcast: Bool { destination == nil }

        /// `interface.member`, for reports.
        var name: String {
            let interface = sd_bus_message_get_interface(pointer).map { String(cString: $0) } ?? "?"
            let member = sd_bus_message_get_member(pointer).map { String(cString: $0) } ?? "?"
            return "\(interface).\(member)"
        }

        /// Whether it is the signal `member` of `interface`.
        func isSignal(interface: String, member: String) -> Bool {
            sd_bus_message_is_signal(pointer, interface, member) > 0
        }

        /// The next argument, a string (`s`).
        func readString() -> String? {
            var value: UnsafePointer<CChar>?
            guard sd_bus_message_read_basic(pointer, CChar(UInt8(ascii: "s")), &value) >= 0, let value else {
                return nil
            }
            return String(cString: value)
        }

        /// The next argument, a boolean (`b`).
        func readBool() -> Bool? {
            var value: Int32 = 0
            guard sd_bus_message_read_basic(pointer, CChar(UInt8(ascii: "b")), &value) >= 0 else { return nil }
            return value != 0
        }

        /// The next argument, a file descriptor (`h`); the message still owns it and closes it when freed, so a
        /// caller that keeps it must duplicate it.
        func readFileDescriptor() -> Int32? {
            var value: Int32 = -1
            guard sd_bus_message_read_basic(pointer, CChar(UInt8(ascii: "h")), &value) >= 0, value >= 0 else {
                return nil
            }
            return value
        }

        /// The next argument, a variant holding a uint64 (`v` of `t`), as `Properties.Get` returns one.
        func readVariantUInt64() -> UInt64? {
            var value: UInt64 = 0
            guard sd_bus_message_enter_container(pointer, CChar(UInt8(ascii: "v")), "t") > 0,
                sd_bus_message_read_basic(pointer, CChar(UInt8(ascii: "t")), &value) >= 0
            else { return nil }
            return value
        }

        /// The error of an error reply, or nil for anything else.
        var errorReply: ErrorReply? {
            guard sd_bus_message_is_method_error(pointer, nil) > 0 else { return nil }
            // A reply sd-bus made up locally (a timeout, a closed connection) has no sender, or the driver's name.
            let sender = self.sender
            let fromBusDriver = sender == nil || sender == SdBus.driverName
            guard let error = sd_bus_message_get_error(pointer) else {
                return ErrorReply(name: "unknown error", text: "unknown error", fromBusDriver: fromBusDriver)
            }
            let name = error.pointee.name.map { String(cString: $0) } ?? "unknown error"
            let text = error.pointee.message.map { "\(name): \(String(cString: $0))" } ?? name
            return ErrorReply(name: name, text: text, fromBusDriver: fromBusDriver)
        }
    }

    /// An error reply: its D-Bus error name, `name: message`, and whether it came from the bus driver (or sd-bus)
    /// rather than from the peer called.
    struct ErrorReply: Equatable {
        /// The D-Bus error name, e.g. `org.freedesktop.DBus.Error.AccessDenied`.
        let name: String
        /// `name: message`, for logs.
        let text: String
        /// Whether the bus driver answered (or sd-bus made the reply up), not the destination itself.
        let fromBusDriver: Bool
    }
}
