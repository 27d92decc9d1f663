//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

// The varlink protocol (https://varlink.org), as systemd's services speak it: every message is one JSON object
// followed by a NUL byte, on an AF_UNIX stream socket. A call is {"method": "iface.Method", "parameters": {...},
// "more": bool, "oneway": bool}; a reply is {"parameters": {...}, "continues": bool} or {"error": "iface.Error",
// "parameters": {...}}. This file holds the values (calls, replies, errors, method declarations) and the framing;
// VarlinkServer.swift serves them on the main loop, VarlinkClient.swift calls them.

/// The name of the interface every varlink service implements.
public enum Varlink {
    /// `org.varlink.service`: `GetInfo`, `GetInterfaceDescription` and the standard errors.
    public static let serviceInterface = "org.varlink.service"

    /// The interface definition of `org.varlink.service`, as the varlink specification gives it.
    public static let serviceInterfaceDescription = """
        # The Varlink Service Interface is provided by every varlink service. It
        # describes the service and the interfaces it implements.
        interface org.varlink.service

        # Get a list of all the interfaces a service provides and information
        # about the implementation.
        method GetInfo() -> (
          vendor: string,
          product: string,
          version: string,
          url: string,
          interfaces: []string
        )

        # Get the description of an interface that is implemented by this service.
        method GetInterfaceDescription(interface: string) -> (description: string)

        # The requested interface was not found.
        error InterfaceNotFound (interface: string)

        # The requested method was not found
        error MethodNotFound (method: string)

        # The interface defines the requested method, but the service does not
        # implement it.
        error MethodNotImplemented (method: string)

        # One of the passed parameters is invalid.
        error InvalidParameter (parameter: string)

        # Client is denied access
        error PermissionDenied ()

        # Method is expected to be called with 'more' set to true, but wasn't
        error ExpectedMore ()

        """
}

/// A method call as a peer sent it.
public struct VarlinkCall: Hashable, Sendable {
    /// The fully qualified method: `io.systemd.service.Ping`.
    public var method: String
    /// The call's parameters (an empty object when it sent none).
    public var parameters: JSONObject
    /// The caller accepts several replies (`continues: true` until the last).
    public var more: Bool
    /// The caller wants no reply at all.
    public var oneway: Bool

    /// Creates a call.
    public init(method: String, parameters: JSONObject = [:], more: Bool = false, oneway: Bool = false) {
        self.method = method
        self.parameters = parameters
        self.more = more
        self.oneway = oneway
    }

    /// The interface part of ``method``: everything before the last dot.
    public var interface: String {
        guard let dot = method.lastIndex(of: ".") else { return "" }
        return String(method[..<dot])
    }

    /// The method's own name: everything after the last dot.
    public var name: String {
        guard let dot = method.lastIndex(of: ".") else { return method }
        return String(method[method.index(after: dot)...])
    }

    /// The message bytes, NUL included.
    public var message: [UInt8] {
        var object: JSONObject = ["method": .string(method)]
        if !parameters.isEmpty { object["parameters"] = .object(parameters) }
        if more { object["more"] = true }
        if oneway { object["oneway"] = true }
        return VarlinkMessage.encode(object)
    }

    /// Reads a call from one message (its bytes without the NUL).
    ///
    /// Bytes that are not a JSON object are a protocol violation (``VarlinkCallError/malformed(_:)``: the server
    /// closes the connection); an object with a missing or mistyped member is answered with
    /// `org.varlink.service.InvalidParameter` naming the member.
    public static func decode(_ message: some Collection<UInt8>) throws(VarlinkCallError) -> VarlinkCall {
        let value: JSONValue
        do {
            value = try JSONValue.parse(message)
        } catch {
            throw .malformed(error.description)
        }
        guard case .object(let object) = value else { throw .malformed("a call must be a JSON object") }
        for key in object.keys where !["method", "parameters", "more", "oneway", "upgrade"].contains(key) {
            throw .invalid(.invalidParameter(key))
        }
        guard let method = object["method"]?.stringValue else { throw .invalid(.invalidParameter("method")) }
        var parameters = JSONObject()
        switch object["parameters"] {
        case nil, .null?: break
        case .object(let given)?: parameters = given
        default: throw .invalid(.invalidParameter("parameters"))
        }
        func flag(_ key: String) throws(VarlinkCallError) -> Bool {
            switch object[key] {
            case nil, .null?: return false
            case .bool(let value)?: return value
            default: throw .invalid(.invalidParameter(key))
            }
        }
        let call = VarlinkCall(method: method, parameters: parameters, more: try flag("more"), oneway: try flag("oneway"))
        // Protocol upgrades hand the connection over to another protocol: nothing here speaks one.
        if try flag("upgrade") { throw .invalid(.invalidParameter("upgrade")) }
        guard Self.isValidMethodName(method) else { throw .invalid(.invalidParameter("method")) }
        if call.more && call.oneway { throw .invalid(.invalidParameter("oneway")) }
        return call
    }

    /// `interface.Method`: a reverse-domain interface name (letters, digits, `-`, dot-separated), then a method name
    /// that starts with an upper-case letter (letters and digits).
    static func isValidMethodName(_ method: String) -> Bool {
        let utf8 = Array(method.utf8)
        guard utf8.count <= 255, let dot = utf8.lastIndex(of: UInt8(ascii: ".")), dot > 0 else { return false }
        let name = utf8[(dot + 1)...]
        guard let first = name.first, (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(first) else { return false }
        guard name.allSatisfy({ isLetter($0) || isDigit($0) }) else { return false }
        let labels = utf8[..<dot].split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard labels.count >= 2 else { return false }
        return labels.allSatisfy { label in
            guard let first = label.first, isLetter(first) else { return false }
            return label.allSatisfy { isLetter($0) || isDigit($0) || $0 == UInt8(ascii: "-") }
        }
    }

    private static func isLetter(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
    }

    private static func isDigit(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
    }
}

/// Why a message is not a call.
public enum VarlinkCallError: Error, Hashable, Sendable {
    /// Not a JSON object at all: the connection is closed.
    case malformed(String)
    /// A call with a member missing or of the wrong type: answered with this error.
    case invalid(VarlinkError)
}

/// A varlink error reply: its qualified name and parameters.
public struct VarlinkError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The qualified error name: `org.varlink.service.InvalidParameter`.
    public var name: String
    /// Its parameters.
    public var parameters: JSONObject

    /// Creates an error reply.
    public init(_ name: String, parameters: JSONObject = [:]) {
        self.name = name
        self.parameters = parameters
    }

    public var description: String {
        parameters.isEmpty ? name : "\(name) \(JSONValue.object(parameters).text)"
    }

    /// No interface of that name is served.
    public static func interfaceNotFound(_ interface: String) -> VarlinkError {
        VarlinkError("org.varlink.service.InterfaceNotFound", parameters: ["interface": .string(interface)])
    }

    /// The interface is served but has no such method.
    public static func methodNotFound(_ method: String) -> VarlinkError {
        VarlinkError("org.varlink.service.MethodNotFound", parameters: ["method": .string(method)])
    }

    /// The interface defines the method but it is not implemented.
    public static func methodNotImplemented(_ method: String) -> VarlinkError {
        VarlinkError("org.varlink.service.MethodNotImplemented", parameters: ["method": .string(method)])
    }

    /// A parameter (or a member of the call itself) is missing, unknown, or of the wrong type or value.
    public static func invalidParameter(_ parameter: String) -> VarlinkError {
        VarlinkError("org.varlink.service.InvalidParameter", parameters: ["parameter": .string(parameter)])
    }

    /// The peer may not do this.
    public static let permissionDenied = VarlinkError("org.varlink.service.PermissionDenied")

    /// The method sends several replies and must be called with `more: true`.
    public static let expectedMore = VarlinkError("org.varlink.service.ExpectedMore")

    /// A reply of `size` bytes, more than the server sends (`limit`): `<interface>.ReplyTooLarge(size, limit)`, which
    /// an interface whose replies can grow declares.
    public static func replyTooLarge(interface: String, size: Int, limit: Int) -> VarlinkError {
        VarlinkError("\(interface).ReplyTooLarge", parameters: ["size": .int(size), "limit": .int(limit)])
    }
}

/// Encodes the messages of the protocol.
public enum VarlinkMessage {
    /// A JSON object followed by NUL.
    public static func encode(_ object: JSONObject) -> [UInt8] {
        var bytes: [UInt8] = []
        JSONValue.object(object).write(to: &bytes)
        bytes.append(0)
        return bytes
    }

    /// A reply with parameters; `continues` when more replies to the same call follow.
    public static func reply(_ parameters: JSONObject, continues: Bool = false) -> [UInt8] {
        var object: JSONObject = ["parameters": .object(parameters)]
        if continues { object["continues"] = true }
        return encode(object)
    }

    /// An error reply.
    public static func error(_ error: VarlinkError) -> [UInt8] {
        encode(["error": .string(error.name), "parameters": .object(error.parameters)])
    }
}

/// One reply as a caller reads it.
public enum VarlinkReply: Hashable, Sendable {
    /// Parameters; `continues` when more replies to the same call follow.
    case parameters(JSONObject, continues: Bool)
    /// An error.
    case error(VarlinkError)

    /// Reads a reply from one message (its bytes without the NUL).
    public static func decode(_ message: some Collection<UInt8>) throws(VarlinkProtocolError) -> VarlinkReply {
        let value: JSONValue
        do {
            value = try JSONValue.parse(message)
        } catch {
            throw VarlinkProtocolError(reason: "the reply is not JSON: \(error)")
        }
        guard case .object(let object) = value else { throw VarlinkProtocolError(reason: "the reply is not an object") }
        let parameters = object["parameters"]?.objectValue ?? JSONObject()
        if let name = object["error"] {
            guard let name = name.stringValue else { throw VarlinkProtocolError(reason: "the error name is not a string") }
            return .error(VarlinkError(name, parameters: parameters))
        }
        return .parameters(parameters, continues: object["continues"]?.boolValue ?? false)
    }
}

/// The peer broke the protocol.
public struct VarlinkProtocolError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What was wrong.
    public var reason: String

    /// An error that says what was wrong with the message.
    public init(reason: String) {
        self.reason = reason
    }

    public var description: String { reason }
}

/// Splits a byte stream into NUL-terminated messages, with a bound on how much may wait unterminated.
///
/// Bytes are kept from the first unread one; a message is handed out once its NUL has arrived. Scanning resumes where
/// it stopped, so a message that arrives in many pieces costs linear time.
public struct VarlinkFramer: Sendable {
    /// The most bytes one message may have (its NUL not counted), and the most unread input that may wait.
    public let maximumMessageSize: Int

    private var buffer: [UInt8] = []
    /// Where the unread input starts.
    private var start = 0
    /// How far the search for the next NUL has got.
    private var scanned = 0

    /// A framer that accepts messages of up to `maximumMessageSize` bytes.
    public init(maximumMessageSize: Int) {
        self.maximumMessageSize = maximumMessageSize
    }

    /// How many bytes of input wait unread.
    public var pendingByteCount: Int { buffer.count - start }

    /// Appends bytes that arrived.
    public mutating func append(_ bytes: some Collection<UInt8>) {
        if start > 0, start == buffer.count {
            buffer.removeAll(keepingCapacity: true)
            start = 0
            scanned = 0
        }
        buffer.append(contentsOf: bytes)
    }

    /// The next complete message (without its NUL), nil when none is complete yet; throws when the unterminated
    /// input has grown beyond ``maximumMessageSize``.
    public mutating func next() throws(VarlinkFramingError) -> ArraySlice<UInt8>? {
        if scanned < start { scanned = start }
        while scanned < buffer.count {
            if buffer[scanned] == 0 {
                let message = buffer[start..<scanned]
                scanned += 1
                start = scanned
                if message.count > maximumMessageSize { throw .messageTooLarge(message.count) }
                compactIfWorthIt()
                return message
            }
            scanned += 1
        }
        if buffer.count - start > maximumMessageSize { throw .messageTooLarge(buffer.count - start) }
        compactIfWorthIt()
        return nil
    }

    /// Drops consumed bytes once they are the larger part of the buffer (amortised linear).
    private mutating func compactIfWorthIt() {
        guard start > 4096, start * 2 > buffer.count else { return }
        buffer.removeFirst(start)
        scanned -= start
        start = 0
    }
}

/// The input broke the framing.
public enum VarlinkFramingError: Error, Hashable, Sendable, CustomStringConvertible {
    /// A message (or unterminated input) larger than the limit.
    case messageTooLarge(Int)

    public var description: String {
        switch self {
        case .messageTooLarge(let size): "a message of more than \(size - 1) bytes, over the limit"
        }
    }
}

/// A method a service declares: its input parameters, checked before its handler runs, and whether it replies more
/// than once.
public struct VarlinkMethodDeclaration: Hashable, Sendable {
    /// What a parameter may hold.
    public enum ParameterType: String, Hashable, Sendable {
        /// A string.
        case string
        /// A whole number.
        case int
        /// A number.
        case float
        /// A boolean.
        case bool
        /// An object.
        case object
        /// An array.
        case array
    }

    /// One input parameter.
    public struct Parameter: Hashable, Sendable {
        /// The parameter's name in a call's `parameters`.
        public var name: String
        /// The JSON type its value must have.
        public var type: ParameterType
        /// Whether it may be left out (or null).
        public var isOptional: Bool

        /// A parameter of this name and type; `optional` when a call may leave it out.
        public init(_ name: String, _ type: ParameterType, optional: Bool = false) {
            self.name = name
            self.type = type
            self.isOptional = optional
        }
    }

    /// The method's name within its interface: `GetStatus`.
    public var name: String
    /// Its input parameters; any other parameter is refused.
    public var parameters: [Parameter]
    /// Whether it only works with `more: true` (it streams); called without, it answers
    /// `org.varlink.service.ExpectedMore`.
    public var requiresMore: Bool

    /// A method with these parameters; `requiresMore` when a call must ask for `more`.
    public init(_ name: String, parameters: [Parameter] = [], requiresMore: Bool = false) {
        self.name = name
        self.parameters = parameters
        self.requiresMore = requiresMore
    }

    /// Checks a call's parameters: every one known, of its type, and none missing; the first one that is not is
    /// named in the `InvalidParameter` error.
    public func validate(_ call: VarlinkCall) throws(VarlinkError) {
        for (key, _) in call.parameters where !parameters.contains(where: { $0.name == key }) {
            throw .invalidParameter(key)
        }
        for parameter in parameters {
            let value = call.parameters[parameter.name]
            guard let value, value != .null else {
                if parameter.isOptional { continue }
                throw .invalidParameter(parameter.name)
            }
            let matches: Bool =
                switch parameter.type {
                case .string: value.stringValue != nil
                case .int: value.integerValue != nil
                case .float: value.doubleValue != nil
                case .bool: value.boolValue != nil
                case .object: value.objectValue != nil
                case .array: value.arrayValue != nil
                }
            if !matches { throw .invalidParameter(parameter.name) }
        }
        if requiresMore, !call.more { throw .expectedMore }
    }
}
