import Foundation
import Logging
import Synchronization
import Testing

@testable import BeaconSystemd

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Drives the production path (`sd_journal_sendv` to /run/systemd/journal/socket) against a stand-in for
/// journald: a dedicated thread enters a private mount namespace where a test directory holding a bound
/// datagram socket is mounted over /run/systemd/journal. Mount namespaces belong to threads, so the rest of
/// the process is not affected, and the namespace disappears with the thread. Needs CAP_SYS_ADMIN.
@Suite(.enabled(if: geteuid() == 0, "mount namespaces need CAP_SYS_ADMIN"))
struct JournaldSocketTests {
    private final class Outcome: Sendable {
        let failure = Mutex<String?>(nil)
        let finished = DispatchSemaphore(value: 0)
    }

    /// Runs `body` on a new thread inside a private mount namespace in which `directory` is /run/systemd/journal.
    private func inPrivateJournalNamespace(
        bindingDirectory directory: String,
        _ body: @escaping @Sendable () -> Void
    ) throws {
        typealias Unshare = @convention(c) (Int32) -> Int32
        let symbol = try #require(dlsym(dlopen(nil, RTLD_NOW), "unshare"))
        let unshare = unsafeBitCast(symbol, to: Unshare.self)
        let newMountNamespace: Int32 = 0x0002_0000  // CLONE_NEWNS

        let outcome = Outcome()
        let thread = Thread {
            defer { outcome.finished.signal() }
            func fail(_ step: String) {
                outcome.failure.withLock { $0 = "\(step): \(String(cString: strerror(errno)))" }
            }
            guard unshare(newMountNamespace) == 0 else { return fail("unshare") }
            guard mount("none", "/", nil, UInt(MS_REC | MS_PRIVATE), nil) == 0 else { return fail("make / private") }
            guard mount("tmpfs", "/run", "tmpfs", 0, "mode=0755") == 0 else { return fail("mount tmpfs on /run") }
            guard mkdir("/run/systemd", 0o755) == 0, mkdir("/run/systemd/journal", 0o755) == 0 else {
                return fail("mkdir /run/systemd/journal")
            }
            guard mount(directory, "/run/systemd/journal", nil, UInt(MS_BIND), nil) == 0 else {
                return fail("bind mount")
            }
            body()
        }
        thread.start()
        try #require(outcome.finished.wait(timeout: .now() + 30) == .success)
        let failure = outcome.failure.withLock { $0 }
        #expect(failure == nil)
    }

    @Test func entriesReachJournaldSocketThroughLibsystemd() throws {
        let directory = try TemporaryDirectory()
        let journal = try DatagramReceiver(path: directory.path + "/socket")
        let line = Mutex<UInt>(0)

        try inPrivateJournalNamespace(bindingDirectory: directory.path) {
            var logger = Logger(label: "io.beacon.journal") { label in
                JournalLogHandler(label: label, syslogIdentifier: "beacond", metadataProvider: nil)
            }
            logger[metadataKey: "client"] = "7"
            line.withLock { $0 = #line + 1 }
            logger.error("store failed\nretrying", metadata: ["attempt": "2"])
        }

        let entry = try JournalDatagram(try #require(try journal.receive()))
        #expect(entry["MESSAGE"] == "store failed\nretrying")
        #expect(entry["PRIORITY"] == "3")
        #expect(entry["SYSLOG_IDENTIFIER"] == "beacond")
        #expect(entry["CODE_FILE"] == #fileID)
        #expect(entry["CODE_LINE"] == String(line.withLock { $0 }))
        #expect(entry["CODE_FUNC"] == #function)
        #expect(entry["SWIFT_LOG_LABEL"] == "io.beacon.journal")
        #expect(entry["CLIENT"] == "7")
        #expect(entry["ATTEMPT"] == "2")
        // Outside the namespace nothing listens at the real path here, and the entry went to the stand-in only.
        #expect(try journal.receive(timeout: .zero) == nil)
    }
}
