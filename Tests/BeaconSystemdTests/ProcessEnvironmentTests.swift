import CSystemdShims
import Logging
import Testing

@testable import BeaconSystemd

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Everything that reads or changes the process environment runs in this one serialized suite.
@Suite(.serialized)
struct ProcessEnvironmentTests {
    // MARK: - sd_notify

    @Test func notifierIsNilWithoutNotifySocket() {
        withEnvironment(["NOTIFY_SOCKET": nil]) {
            #expect(SystemdNotifier.fromEnvironment() == nil)
        }
        withEnvironment(["NOTIFY_SOCKET": ""]) {
            #expect(SystemdNotifier.fromEnvironment() == nil)
        }
    }

    @Test func notificationsArriveInOrderWhenSent() throws {
        let manager = try DatagramReceiver()
        try withEnvironment(["NOTIFY_SOCKET": manager.path]) {
            let notifier = try #require(SystemdNotifier.fromEnvironment())

            // Nothing is sent before the first call.
            #expect(try manager.receive(timeout: .zero) == nil)

            notifier.ready()
            #expect(try manager.receiveText() == "READY=1")

            notifier.status("2 clients\n3 subscriptions")
            #expect(try manager.receiveText() == "STATUS=2 clients 3 subscriptions")

            let before = beacon_monotonic_usec()
            notifier.reloading()
            let after = beacon_monotonic_usec()
            let reloading = try #require(try manager.receiveText())
            let lines = reloading.split(separator: "\n")
            #expect(lines.count == 2)
            #expect(lines.first == "RELOADING=1")
            let stamp = try #require(lines.last.flatMap { $0.split(separator: "=", maxSplits: 1).last })
            #expect(lines.last?.hasPrefix("MONOTONIC_USEC=") == true)
            let usec = try #require(UInt64(stamp))
            #expect(before <= usec && usec <= after)

            notifier.ready()
            #expect(try manager.receiveText() == "READY=1")

            notifier.watchdogPing()
            #expect(try manager.receiveText() == "WATCHDOG=1")

            notifier.stopping()
            #expect(try manager.receiveText() == "STOPPING=1")

            notifier.send("EXTEND_TIMEOUT_USEC=5000000")
            #expect(try manager.receiveText() == "EXTEND_TIMEOUT_USEC=5000000")

            // Nothing else was sent.
            #expect(try manager.receive(timeout: .zero) == nil)
        }
    }

    // MARK: - Watchdog

    @Test func watchdogIntervalIsHalfOfWatchdogUsecForThisProcess() {
        let pid = String(getpid())
        withEnvironment(["WATCHDOG_USEC": "3000000", "WATCHDOG_PID": pid]) {
            #expect(Watchdog.pingInterval() == .milliseconds(1500))
        }
        withEnvironment(["WATCHDOG_USEC": "20000000", "WATCHDOG_PID": nil]) {
            #expect(Watchdog.pingInterval() == .seconds(10))
        }
    }

    @Test func watchdogIsOffForOtherProcessesOrBadValues() {
        let otherPid = String(getpid() + 1)
        withEnvironment(["WATCHDOG_USEC": "3000000", "WATCHDOG_PID": otherPid]) {
            #expect(Watchdog.pingInterval() == nil)
        }
        withEnvironment(["WATCHDOG_USEC": nil, "WATCHDOG_PID": nil]) {
            #expect(Watchdog.pingInterval() == nil)
        }
        withEnvironment(["WATCHDOG_USEC": "soon", "WATCHDOG_PID": nil]) {
            #expect(Watchdog.pingInterval() == nil)
        }
        withEnvironment(["WATCHDOG_USEC": "0", "WATCHDOG_PID": nil]) {
            #expect(Watchdog.pingInterval() == nil)
        }
    }

    // MARK: - Socket activation

    @Test func noListenFileDescriptorsWithoutActivation() {
        withEnvironment(["LISTEN_FDS": nil, "LISTEN_PID": nil]) {
            #expect(SocketActivation.listenFileDescriptors().isEmpty)
        }
    }

    @Test func listenFileDescriptorsOfAnotherProcessAreIgnoredAndUnset() {
        withEnvironment(["LISTEN_FDS": "1", "LISTEN_PID": String(getpid() + 1), "LISTEN_FDNAMES": "beacon.socket"]) {
            #expect(SocketActivation.listenFileDescriptors().isEmpty)
            #expect(environmentValue("LISTEN_FDS") == nil)
            #expect(environmentValue("LISTEN_PID") == nil)
            #expect(environmentValue("LISTEN_FDNAMES") == nil)
        }
    }

    // MARK: - JOURNAL_STREAM

    @Test func stderrIsJournalOnlyWhenJournalStreamMatchesStderr() throws {
        var status = stat()
        try #require(fstat(2, &status) == 0)
        let device = UInt64(status.st_dev)
        let inode = UInt64(status.st_ino)

        withEnvironment(["JOURNAL_STREAM": "\(device):\(inode)"]) {
            #expect(SystemdLogging.stderrIsJournal)
            #expect(SystemdLogging.makeHandler(label: "test") is JournalLogHandler)
        }
        withEnvironment(["JOURNAL_STREAM": "\(device):\(inode + 1)"]) {
            #expect(!SystemdLogging.stderrIsJournal)
            #expect(SystemdLogging.makeHandler(label: "test") is StreamLogHandler)
        }
        for garbage in ["", "\(device)", "\(device):", ":\(inode)", "\(device):\(inode):1", "x:y"] {
            withEnvironment(["JOURNAL_STREAM": garbage]) {
                #expect(!SystemdLogging.stderrIsJournal, "JOURNAL_STREAM=\(garbage)")
            }
        }
        withEnvironment(["JOURNAL_STREAM": nil]) {
            #expect(!SystemdLogging.stderrIsJournal)
            #expect(SystemdLogging.makeHandler(label: "test") is StreamLogHandler)
        }
    }
}
