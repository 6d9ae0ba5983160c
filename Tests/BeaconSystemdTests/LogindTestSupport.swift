import Foundation
import Synchronization
import Testing

/// A failure of the test fixtures themselves (a process that would not start, a call that failed).
struct FixtureError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// A private `dbus-daemon` on a Unix socket in a temporary directory, configured like a system bus that lets
/// everyone own names and talk to everyone, plus the processes started against it.
final class PrivateBus: @unchecked Sendable {
    let directory: URL
    let socketPath: String
    private(set) var address = ""
    private var daemon: Process?
    private var mocks: [String: Process] = [:]

    /// Creates the directory and the configuration; ``start()`` runs the daemon.
    init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("beacon-bus-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        socketPath = directory.appendingPathComponent("bus").path
        let configuration = """
            <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
             "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
            <busconfig>
              <type>system</type>
              <listen>unix:path=\(socketPath)</listen>
              <auth>EXTERNAL</auth>
              <policy context="default">
                <allow user="*"/>
                <allow own="*"/>
                <allow send_type="method_call"/>
                <allow send_type="signal"/>
                <allow send_type="method_return"/>
                <allow send_type="error"/>
                <allow receive_type="method_call"/>
                <allow receive_type="signal"/>
                <allow receive_type="method_return"/>
                <allow receive_type="error"/>
              </policy>
            </busconfig>
            """
        try configuration.write(to: directory.appendingPathComponent("bus.conf"), atomically: true, encoding: .utf8)
    }

    /// The address clients use, known before the daemon runs.
    var plannedAddress: String { "unix:path=\(socketPath)" }

    func start() throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/dbus-daemon")
        process.arguments = [
            "--config-file=\(directory.appendingPathComponent("bus.conf").path)", "--nofork", "--print-address",
        ]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        daemon = process
        // The daemon prints its address once it listens; end of file means it exited.
        var text = ""
        while !text.contains("\n") {
            let chunk = output.fileHandleForReading.availableData
            if chunk.isEmpty { throw FixtureError("dbus-daemon exited before printing its address") }
            text += String(decoding: chunk, as: UTF8.self)
        }
        address = String(text.prefix { $0 != "\n" })
    }

    /// Starts `/usr/bin/python3 -m dbusmock ARGUMENTS` on this bus as its system bus, and waits until it owns
    /// `name`.
    func startMock(name: String, arguments: [String]) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = ["-m", "dbusmock"] + arguments
        var environment = ProcessInfo.processInfo.environment
        environment["DBUS_SYSTEM_BUS_ADDRESS"] = address
        environment["DBUS_SESSION_BUS_ADDRESS"] = address
        process.environment = environment
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        mocks[name] = process
        try waitUntil("\(name) owns its name", within: .seconds(20)) {
            let reply = try? busctl(
                "call", "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
                "NameHasOwner", "s", name)
            return reply == "b true"
        }
    }

    /// Starts python-dbusmock's logind template.
    func startLogind() throws {
        try startMock(name: "org.freedesktop.login1", arguments: ["--system", "--template", "logind"])
    }

    func stopMock(name: String) {
        guard let process = mocks.removeValue(forKey: name) else { return }
        Self.kill(process)
    }

    /// Runs `busctl --address=ADDRESS ARGUMENTS` and returns its trimmed output.
    @discardableResult
    func busctl(_ arguments: String...) throws -> String {
        try busctl(arguments)
    }

    @discardableResult
    func busctl(_ arguments: [String]) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/busctl")
        process.arguments = ["--address=\(address)", "--"] + arguments
        let output = Pipe()
        let errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        let errorData = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw FixtureError(
                "busctl \(arguments.joined(separator: " ")): \(String(decoding: errorData, as: UTF8.self))")
        }
        return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Children inherit the test runner's blocked signal mask (SIGTERM included), so they are killed with SIGKILL.
    private static func kill(_ process: Process) {
        guard process.isRunning else { return }
        _ = Glibc.kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    /// Stops every process and removes the directory.
    func shutdown() {
        for name in Array(mocks.keys) { stopMock(name: name) }
        if let daemon {
            Self.kill(daemon)
            self.daemon = nil
        }
        try? FileManager.default.removeItem(at: directory)
    }
}

/// Checks `condition` until it holds or `limit` passes; for state that has no event to wait on (another
/// process's view, like logind's list of inhibitors).
func waitUntil(_ what: String, within limit: Duration, _ condition: () throws -> Bool) throws {
    let clock = ContinuousClock()
    let deadline = clock.now.advanced(by: limit)
    while clock.now < deadline {
        if try condition() { return }
        usleep(10_000)
    }
    throw FixtureError("timed out waiting until \(what)")
}

/// Collects an `AsyncStream`'s elements and lets a test wait for the next ones with a deadline.
final class EventRecorder<Event: Sendable>: Sendable {
    private struct Waiter {
        var id: Int
        var count: Int
        var continuation: CheckedContinuation<Void, Never>
    }
    private struct State {
        var events: [Event] = []
        var consumed = 0
        var waiters: [Waiter] = []
        var nextID = 0
    }
    private let state = Mutex(State())

    init(_ stream: AsyncStream<Event>) {
        Task { [self] in
            for await event in stream { record(event) }
        }
    }

    /// Everything recorded so far.
    var all: [Event] { state.withLock { $0.events } }

    private func record(_ event: Event) {
        let ready = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.events.append(event)
            let count = state.events.count
            let ready = state.waiters.filter { $0.count <= count }.map(\.continuation)
            state.waiters.removeAll { $0.count <= count }
            return ready
        }
        for continuation in ready { continuation.resume() }
    }

    /// The next `count` events after those already taken; fewer when `limit` passes first.
    func next(_ count: Int, within limit: Duration = .seconds(10)) async -> [Event] {
        let target = state.withLock { $0.consumed + count }
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.waitForCount(target) }
            group.addTask { try? await Task.sleep(for: limit) }
            await group.next()
            group.cancelAll()
        }
        return state.withLock { state in
            let end = min(target, state.events.count)
            let taken = Array(state.events[state.consumed..<end])
            state.consumed = end
            return taken
        }
    }

    /// Takes events one by one until one satisfies `stop` (included) or `limit` passes without a new one.
    func collect(until stop: (Event) -> Bool, within limit: Duration = .seconds(10)) async -> [Event] {
        var taken: [Event] = []
        while true {
            let next = await self.next(1, within: limit)
            guard let event = next.first else { return taken }
            taken.append(event)
            if stop(event) { return taken }
        }
    }

    /// Events recorded after those already taken, without waiting.
    var untaken: [Event] { state.withLock { Array($0.events[$0.consumed...]) } }

    private func waitForCount(_ count: Int) async {
        let id = state.withLock { state -> Int in
            state.nextID += 1
            return state.nextID
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let resumeNow = state.withLock { state -> Bool in
                    if state.events.count >= count || Task.isCancelled { return true }
                    state.waiters.append(Waiter(id: id, count: count, continuation: continuation))
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
                guard let index = state.waiters.firstIndex(where: { $0.id == id }) else { return nil }
                return state.waiters.remove(at: index).continuation
            }
            waiter?.resume()
        }
    }
}
