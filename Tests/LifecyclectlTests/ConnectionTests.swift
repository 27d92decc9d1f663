//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import ArgumentParser
import LifecycleIPC
import LifecyclePrimitives
import SystemPackage
import Testing

@testable import lifecyclectl

#if canImport(Glibc)
import Glibc
#endif

/// How lifecyclectl finds the daemon's socket: unit names, the look-up's deadline, and what a refused connect says.
@Suite struct ConnectionTests {
    /// The message and exit status of parsing `arguments`, or nil when they parse.
    func refusal(_ arguments: [String]) -> (message: String, code: Int32)? {
        do {
            _ = try ConnectionOptions.parse(arguments)
            return nil
        } catch {
            return (ConnectionOptions.message(for: error), ConnectionOptions.exitCode(for: error).rawValue)
        }
    }

    @Test func aUnitNameSystemdWouldRefuseIsAUsageErrorNamingWhatIsValid() throws {
        for (name, problem) in [
            ("", "it is empty"), ("../../etc/passwd", "'/' is not allowed in it"), ("a b", "' ' is not allowed in it"),
            ("@x", "it begins with @"), ("app@", "it is a template; name an instance (app@NAME)"),
            ("app@.service", "it is a template; name an instance (app@NAME)"), ("..", "it names no unit"),
            (".service", "it is empty"), ("x\u{1B}[2J", "'\\x1b' is not allowed in it"),
            (String(repeating: "a", count: 248), "it is 256 bytes long"),
        ] {
            let refused = try #require(refusal(["-u", name]), "\(name) was accepted")
            #expect(refused.code == 64, "\(name)")
            #expect(refused.message.contains("is not a unit name: \(problem); a unit name is letters, digits"), "\(refused.message)")
            #expect(!refused.message.contains("\u{1B}"))
        }
        #expect(refusal(["-u", String(repeating: "a", count: 247)]) == nil)
    }

    @Test func aNameWithoutAUnitTypesSuffixGetsServiceAsSystemctlCompletesIt() throws {
        for (name, full) in [
            ("hello", "hello.service"), ("foo.bar", "foo.bar.service"), ("app@1", "app@1.service"),
            ("hello.service", "hello.service"), ("hello.socket", "hello.socket"), ("a:b_c\\x2d.d-e", "a:b_c\\x2d.d-e.service"),
        ] {
            #expect(try ConnectionOptions.parse(["-u", name]).unitName == full)
        }
    }

    /// A script standing in for systemctl; removed by the caller.
    func fakeSystemctl(_ body: String) -> String {
        var template = Array("/tmp/lifecyclectl-systemctl-XXXXXX".utf8CString)
        let fd = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        precondition(fd >= 0, "mkstemp failed")
        let text = Array("#!/bin/sh\n\(body)\n".utf8)
        _ = text.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        fchmod(fd, 0o700)
        close(fd)
        return String(decoding: template.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// `--timeout` bounds the look-up too: a systemctl that hangs (a busy manager, a D-Bus stall) is stopped at the
    /// deadline, with the children it started, instead of holding lifecyclectl for as long as it takes.
    @Test func theUnitLookUpEndsAtTheDeadlineWhateverSystemctlDoes() throws {
        let slow = fakeSystemctl("sleep 30")
        defer { unlink(slow) }
        let start = ContinuousClock.now
        #expect(throws: Subprocess.TimedOut.self) {
            try ConnectionOptions.runtimeDirectory(of: "x.service", user: false, before: start + .milliseconds(300), systemctl: slow)
        }
        #expect(ContinuousClock.now - start < .seconds(5))

        let quick = fakeSystemctl("echo 'hello-dir other'")
        defer { unlink(quick) }
        let found = try ConnectionOptions.runtimeDirectory(of: "x.service", user: false, before: .now + .seconds(30), systemctl: quick)
        #expect(found == "hello-dir")
        let failing = fakeSystemctl("exit 1")
        defer { unlink(failing) }
        #expect(try ConnectionOptions.runtimeDirectory(of: "x.service", user: false, before: .now + .seconds(30), systemctl: failing) == nil)
    }

    /// EACCES from connect(2) is not "is it running?" (69): it is a permission problem (77), and the message names
    /// what this user may not do.
    @Test func aConnectRefusedByTheFileSystemIsAPermissionErrorNamingTheDirectory() {
        let denied = VarlinkClientError.connect(.system(SystemCallError(operation: "connect", errno: .permissionDenied)))
        let unsearchable = ControlFailure(connectingTo: "/run/svc/control", target: "svc.service", error: denied) { path, _ in
            path != "/run/svc"
        }
        #expect(unsearchable.exitCode == 77)
        #expect(
            "\(unsearchable)"
                == "cannot reach svc.service at /run/svc/control: permission denied: you (uid \(getuid())) may not search "
                + "the directory /run/svc; run it as a user who may (the service's own, or root)"
        )
        let unwritable = ControlFailure(connectingTo: "/run/svc/control", target: "svc.service", error: denied) { _, mode in
            mode != W_OK
        }
        #expect("\(unwritable)".contains("you (uid \(getuid())) may not write to the socket"))
        let bySocket = ControlFailure(connectingTo: "/tmp/c", target: "/tmp/c", error: denied) { _, _ in false }
        #expect("\(bySocket)".hasPrefix("cannot reach /tmp/c: permission denied: you (uid \(getuid())) may not search the directory /tmp;"))
        let missing = VarlinkClientError.connect(.system(SystemCallError(operation: "connect", errno: .noSuchFileOrDirectory)))
        #expect(ControlFailure(connectingTo: "/run/svc/control", target: "svc.service", error: missing).exitCode == 69)
    }
}
