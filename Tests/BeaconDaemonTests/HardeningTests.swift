import BeaconProtocol
import BeaconTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

@Suite("Hardening: what one client does does not hurt another")
struct HardeningTests {
    @Test("a connection over maxConnectionsPerUid is told LimitExceeded before it is closed; the others are served")
    func refusedConnectionHearsWhy() throws {
        let daemon = try TestDaemon(arguments: ["--limits-max-connections-per-uid", "2"])
        let first = try daemon.connect()
        let second = try daemon.connect()
        #expect(try first.set("held", 1) > 0)
        let refused = try daemon.connect()
        let reply = try refused.receive()
        #expect(reply.error == "io.beacon.LimitExceeded")
        #expect(reply["limit"] == "maxConnectionsPerUid")
        #expect(reply["maximum"] == 2)
        #expect(refused.waitForClose())
        #expect(try second.set("held", 2) > 0)
    }

    @Test("200 clients connecting at once while the daemon accepts none are all queued, none refused with EAGAIN")
    func listenBacklog() throws {
        let daemon = try TestDaemon()
        let pid = daemon.pid
        kill(pid, SIGSTOP)
        defer { kill(pid, SIGCONT) }
        var descriptors: [Int32] = []
        defer { for fd in descriptors { close(fd) } }
        var failures: [String] = []
        for _ in 0..<200 {
            let fd = socket(
                AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            try #require(fd >= 0)
            descriptors.append(fd)
            let result = try withUnixSocketAddress(daemon.socketPath) { connect(fd, $0, $1) }
            if result != 0 && errno != EINPROGRESS { failures.append(String(cString: strerror(errno))) }
        }
        #expect(failures.isEmpty, "\(failures.count) connects failed: \(Set(failures))")
        kill(pid, SIGCONT)
        // Served once it runs again.
        let client = try daemon.connect()
        #expect(try client.set("after.burst", true) > 0)
    }
}

@Suite("Watchdog")
struct WatchdogTests {
    @Test("under WatchdogSec the daemon pings from its event loop, again and again, while it serves")
    func pingsFromTheLoop() throws {
        // WATCHDOG_PID is left unset: the pings are for whichever process reads WATCHDOG_USEC.
        let daemon = try TestDaemon(environment: ["WATCHDOG_USEC": "200000"])
        let notify = try #require(daemon.notify)
        let first = try notify.wait(for: "WATCHDOG=1", alive: { daemon.isRunning })
        let second = try notify.wait(for: "WATCHDOG=1", after: first + 1, alive: { daemon.isRunning })
        #expect(second > first)
        #expect(daemon.log.contains("watchdog pings from the event loop"))
        let client = try daemon.connect()
        #expect(try client.set("watched.dog", true) > 0)
    }
}

@Suite("Loading the store")
struct StoreLoadingTests {
    @Test("rows the bus could not have written are skipped, each with a log line; List and Watch still work")
    func badRowsAreSkipped() throws {
        let daemon = try TestDaemon()
        let client = try daemon.connect()
        try client.set("good.key", "kept")
        #expect(daemon.terminate() == 0)
        let path = daemon.directory + "/state/beacon/store.sqlite"
        let statements = """
            INSERT INTO property (key, value, version, modified, uid, pid, command)
              VALUES ('bad key!', '1', 7, 0, 0, 0, NULL), ('caf\u{00E9}', '2', 8, 0, 0, 0, NULL),
                     ('neg.version', '3', -4, 0, 0, 0, NULL), ('a..b', '4', 9, 0, 0, 0, NULL);
            INSERT INTO tombstone (key, version, modified, uid, pid, command) VALUES ('.gone', 10, 0, 0, 0, NULL);
            """
        let result = try runProcess("/usr/bin/sqlite3", [path, statements])
        try #require(result.status == 0, "sqlite3: \(result.errors)")

        try daemon.start()
        let again = try daemon.connect()
        let list = try again.parameters("io.beacon.Properties.List")
        #expect(list["properties"]?.elements.compactMap { $0["key"]?.stringValue } == ["good.key"])
        let watch = try again.call("io.beacon.Properties.Watch", ["patterns": ["**"], "since": 0], more: true)
        #expect(watch.error == nil)
        #expect(watch["changes"]?.elements.compactMap { $0["key"]?.stringValue } == ["good.key"])
        for key in ["bad key!", "caf\u{00E9}", "neg.version", "a..b", ".gone"] {
            #expect(daemon.log.contains("skipping a stored row") && daemon.log.contains(key), "no log line for \(key)")
        }
    }
}

@Suite("A full disk")
struct FullDiskTests {
    /// A 2 MiB tmpfs mounted for the test's store; needs root.
    final class SmallFilesystem {
        let path: String

        init() throws {
            path = try makeTemporaryDirectory("beacon-full-disk")
            let result = try runProcess("/bin/mount", ["-t", "tmpfs", "-o", "size=2m,mode=0700", "tmpfs", path])
            guard result.status == 0 else { throw TestFailure("mount: \(result.errors)") }
        }

        deinit {
            _ = try? runProcess("/bin/umount", [path])
            rmdir(path)
        }

        /// Fills what is left with a file.
        func fill() throws {
            _ = try runProcess("/bin/dd", ["if=/dev/zero", "of=\(path)/filler", "bs=16k"])
        }

        func free() {
            unlink(path + "/filler")
        }
    }

    @Test(
        "a full disk fails writes with StoreFailed, keeps serving reads, shows in Status, and recovers by itself",
        .enabled(if: getuid() == 0, "mounting a small tmpfs needs root")
    )
    func fullDisk() throws {
        let filesystem = try SmallFilesystem()
        let daemon = try TestDaemon(arguments: ["--store-path", filesystem.path + "/store.sqlite"])
        let client = try daemon.connect()
        let watcher = try daemon.connect()
        #expect(try watcher.call("io.beacon.Properties.Watch", ["patterns": ["disk.**"]], more: true).error == nil)
        try client.set("disk.before", "kept")
        _ = try watcher.receiveItems("changes", count: 1)
        try filesystem.fill()

        let big = JSONValue.string(String(repeating: "x", count: 16_000))
        var failure: VarlinkReply?
        var accepted = 0
        for round in 0..<100 {
            let reply = try client.call("io.beacon.Properties.Set", ["key": .string("disk.big\(round)"), "value": big])
            if reply.error != nil {
                failure = reply
                break
            }
            accepted += 1
        }
        let failed = try #require(failure, "no Set failed on a full disk")
        #expect(failed.error == "io.beacon.StoreFailed")
        // The watcher saw exactly the accepted Sets, not the failed one.
        _ = try watcher.receiveItems("changes", count: accepted)
        #expect(try !watcher.hasPendingFrame(within: .milliseconds(200)))
        let get = try client.parameters("io.beacon.Properties.Get", ["key": "disk.before"])
        #expect(get["property"]?["value"] == "kept")
        let status = try client.parameters("io.beacon.Daemon.Status")["status"]?.members ?? [:]
        #expect(status["storeError"]?["reason"]?.stringValue?.isEmpty == false)

        filesystem.free()
        try client.set("disk.after", "written")
        let recovered = try client.parameters("io.beacon.Daemon.Status")["status"]?.members ?? [:]
        #expect(recovered["storeError"] == nil)
        #expect(daemon.log.contains("the store takes writes again"))
        #expect(daemon.terminate() == 0)
    }
}

@Suite("A store that lost its tail")
struct LostTailTests {
    enum Damage: String, CaseIterable, Sendable {
        case truncated, overwritten
    }

    @Test(
        "after a damaged write-ahead log no version is handed out twice, the loss is logged, and watchers resync",
        arguments: Damage.allCases)
    func lostTail(damage: Damage) throws {
        let daemon = try TestDaemon()
        let client = try daemon.connect()
        var last: Int64 = 0
        for index in 0..<100 {
            last = try client.set("tail.k\(index)", .int(Int64(index)))
        }
        daemon.kill()
        let wal = daemon.directory + "/state/beacon/store.sqlite-wal"
        var info = stat()
        try #require(stat(wal, &info) == 0 && info.st_size > 4096, "no write-ahead log to damage")
        switch damage {
        case .truncated:
            #expect(truncate(wal, info.st_size / 2) == 0)
        case .overwritten:
            let fd = open(wal, O_WRONLY)
            try #require(fd >= 0)
            // Bytes that look random to SQLite: a multiplicative hash of the offset.
            let bytes = (0..<Int(info.st_size)).map { UInt8(truncatingIfNeeded: ($0 &* 2_654_435_761) >> 13) }
            #expect(bytes.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, 0) } == bytes.count)
            close(fd)
        }

        try daemon.start()
        #expect(daemon.log.contains("the store lost committed changes"))
        let again = try daemon.connect()
        let kept = try again.parameters("io.beacon.Properties.List", ["prefix": "tail"])["properties"]?.elements ?? []
        #expect(kept.count < 100)
        #expect(try again.set("tail.after", true) > last)
        let watch = try again.call(
            "io.beacon.Properties.Watch", ["patterns": ["tail.**"], "since": .int(last)], more: true)
        #expect(watch["resync"] == true)
        #expect(watch["changes"]?.elements.count == kept.count + 1)
    }
}

extension LostTailTests {
    @Test(
        "the first change after a clean restart reserves its versions before it is answered: none is handed out twice")
    func firstChangeAfterCleanRestart() throws {
        let daemon = try TestDaemon()
        let client = try daemon.connect()
        for index in 0..<20 { try client.set("tail.before\(index)", .int(Int64(index))) }
        // A clean stop records that no version above the current one was handed out: the next start reserves none.
        #expect(daemon.terminate() == 0)
        try daemon.start()
        let again = try daemon.connect()
        var last: Int64 = 0
        for index in 0..<100 { last = try again.set("tail.k\(index)", .int(Int64(index))) }
        daemon.kill()
        // Every change since the restart is lost with the write-ahead log.
        let wal = daemon.directory + "/state/beacon/store.sqlite-wal"
        var info = stat()
        try #require(stat(wal, &info) == 0 && info.st_size > 0, "no write-ahead log to lose")
        #expect(truncate(wal, 0) == 0)

        try daemon.start()
        #expect(daemon.log.contains("the store lost committed changes"))
        let third = try daemon.connect()
        #expect(
            try third.parameters("io.beacon.Properties.List", ["prefix": "tail"])["properties"]?.elements.count == 20)
        // The versions the lost changes had were reserved on disk before the first of them was answered.
        #expect(try third.set("tail.after", true) > last)
    }
}

@Suite("A damaged store")
struct DamagedStoreTests {
    enum Damage: String, CaseIterable, Sendable {
        case notSQLite, corruptPages
    }

    /// Stores 300 keys, stops the daemon, and overwrites 8 KiB of its store at `offset` (from the end when
    /// negative); returns the store's directory.
    private func damagedStore(of daemon: TestDaemon, at offset: off_t) throws -> String {
        let client = try daemon.connect()
        for index in 0..<300 {
            try client.set("damage.k\(index)", .string(String(repeating: "v", count: 200)))
        }
        #expect(daemon.terminate() == 0)
        let directory = daemon.directory + "/state/beacon"
        let fd = open(directory + "/store.sqlite", O_WRONLY)
        try #require(fd >= 0)
        defer { close(fd) }
        let garbage = [UInt8](repeating: 0xA5, count: 8192)
        let at = offset >= 0 ? offset : lseek(fd, 0, SEEK_END) + offset
        #expect(garbage.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, at) } == garbage.count)
        return directory
    }

    @Test(
        "a store that is not SQLite or fails the integrity check is set aside, and the daemon serves an empty one",
        arguments: Damage.allCases)
    func setAside(damage: Damage) throws {
        let daemon = try TestDaemon()
        // Not SQLite: the header is gone. Corrupt pages: the header stays and pages after the first are overwritten.
        let directory = try damagedStore(of: daemon, at: damage == .notSQLite ? 0 : 4096)

        try daemon.start()
        #expect(daemon.log.contains("it was set aside"))
        let names = try #require(try? directoryEntries(directory))
        #expect(names.contains { $0.hasPrefix("store.sqlite.damaged-") })
        let again = try daemon.connect()
        #expect(try again.parameters("io.beacon.Properties.List")["properties"]?.elements.isEmpty == true)
        #expect(try again.set("damage.after", true) > 0)
    }

    @Test(
        "a store checked after the start: the damage is logged and shown in Status, and the next start sets it aside")
    func checkedAfterTheStart() throws {
        // Every store but an empty one is checked after the start, as a store larger than the limit is.
        let deferred = ["--store-check-at-start-max-bytes", "0"]
        let daemon = try TestDaemon(arguments: deferred)
        // The last pages: rows of properties, which a start does not read (a start reads the tombstones, the
        // ephemeral keys and the counters, and would find damage there before serving).
        let directory = try damagedStore(of: daemon, at: -8192)
        let path = directory + "/store.sqlite"

        // A store of some size now: the check comes after the start.
        try daemon.start()
        // It serves before the check ends; the check finds the damage beside the serving.
        let status = try daemon.connect()
        try waitUntil("the damage logged", within: .seconds(20)) {
            daemon.log.contains("the store failed its integrity check")
        }
        let shown = try status.parameters("io.beacon.Daemon.Status")["status"]?.members ?? [:]
        #expect(shown["storeDamage"]?["reason"]?.stringValue?.isEmpty == false)
        #expect(access(path + "-check-failed", F_OK) == 0)
        #expect(!daemon.log.contains("it was set aside"))
        #expect(daemon.terminate() == 0)

        // The next start checks before serving, whatever the size, and sets the store aside.
        try daemon.start()
        #expect(daemon.log.contains("it was set aside"))
        let names = try directoryEntries(directory)
        #expect(names.contains { $0.hasPrefix("store.sqlite.damaged-") })
        #expect(access(path + "-check-failed", F_OK) != 0)
        let again = try daemon.connect()
        #expect(try again.parameters("io.beacon.Properties.List")["properties"]?.elements.isEmpty == true)
        #expect(try again.set("damage.after", true) > 0)
        let after = try again.parameters("io.beacon.Daemon.Status")["status"]?.members ?? [:]
        #expect(after["storeDamage"] == nil)
    }

    private func directoryEntries(_ path: String) throws -> [String] {
        guard let directory = opendir(path) else { throw TestFailure("opendir \(path)") }
        defer { closedir(directory) }
        var names: [String] = []
        while let entry = readdir(directory) {
            var name = entry.pointee.d_name
            names.append(withUnsafeBytes(of: &name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) })
        }
        return names
    }
}

@Suite("Out of file descriptors")
struct DescriptorExhaustionTests {
    /// The daemon's user and system CPU time so far, in clock ticks.
    static func cpuTicks(_ pid: Int32) throws -> Int {
        let text = try String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)
        // Fields after the command name, which is in parentheses and may hold spaces.
        let fields = text[text.index(after: text.lastIndex(of: ")")!)...].split(separator: " ")
        return Int(fields[11])! + Int(fields[12])!
    }

    @Test("out of descriptors the daemon pauses accepting, logs it, does not spin, and recovers by itself")
    func outOfDescriptors() throws {
        let daemon = try TestDaemon()
        let limit = try runProcess("/usr/bin/prlimit", ["--pid", "\(daemon.pid)", "--nofile=48:48"])
        try #require(limit.status == 0, "prlimit: \(limit.errors)")
        var clients: [VarlinkTestClient] = []
        for _ in 0..<80 { clients.append(try daemon.connect()) }
        let deadline = ContinuousClock.now + .seconds(20)
        while !daemon.log.contains("cannot accept connections"), ContinuousClock.now < deadline {
            usleep(20_000)
        }
        #expect(daemon.log.contains("cannot accept connections"))

        // Two seconds out of descriptors cost the daemon less than a fifth of a CPU.
        let ticksPerSecond = Int(sysconf(Int32(_SC_CLK_TCK)))
        let before = try Self.cpuTicks(daemon.pid)
        usleep(2_000_000)
        let used = try Self.cpuTicks(daemon.pid) - before
        #expect(used * 5 < 2 * ticksPerSecond, "the daemon used \(used) ticks of CPU in 2 s")

        // Descriptors come free: the client still waiting is accepted and served.
        for client in clients.dropLast() { client.close() }
        let waiting = try #require(clients.last)
        let reply: VarlinkReply
        do {
            reply = try waiting.call("io.beacon.Properties.Set", ["key": "fd.after", "value": true])
        } catch {
            Issue.record("\(error); the daemon's log:\n\(daemon.log)")
            return
        }
        #expect(reply.error == nil)
    }
}

@Suite("Replies a client does not read")
struct UnreadRepliesTests {
    static func residentKiB(_ pid: Int32) throws -> Int {
        let status = try String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)
        let line = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") } ?? ""
        return Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0
    }

    @Test("a client pipelining Lists it never reads is no longer read from; memory stays bounded; others are served")
    func unreadLists() throws {
        let daemon = try TestDaemon()
        let writer = try daemon.connect()
        let value = JSONValue.string(String(repeating: "v", count: 60_000))
        for index in 0..<40 {
            try writer.set("big.k\(index)", value)
        }
        let baseline = try Self.residentKiB(daemon.pid)
        // 200 Lists of 2.4 MB each: 480 MB of replies if the daemon answered them all.
        let hostile = try daemon.connect()
        let list = Array(#"{"method":"io.beacon.Properties.List","parameters":{"prefix":"big"}}"#.utf8) + [0]
        let pipelined = Array([[UInt8]](repeating: list, count: 200).joined())
        #expect(hostile.sendRaw(pipelined))

        let bystander = try daemon.connect()
        for _ in 0..<50 {
            let reply = try bystander.call("io.beacon.Properties.Get", ["key": "big.k0"])
            #expect(reply.error == nil)
        }
        let grown = try Self.residentKiB(daemon.pid) - baseline
        #expect(grown < 64 * 1024, "the daemon grew by \(grown) KiB")
        // Gone while it is not read from: the daemon hears of the hang-up all the same and closes the connection
        // (an event loop that only watched for bytes to read would not, and would hear of it again and again).
        hostile.close()
        try waitUntil("the hostile client's connection is closed", within: .seconds(10)) {
            (try bystander.parameters("io.beacon.Daemon.Status")["status"]?.members ?? [:])["clients"] == 2
        }
        #expect(try bystander.set("after.hostile", true) > 0)
    }
}

extension UnreadRepliesTests {
    @Test("unread output counts against limits.maxBytesPerUid: the connection that would pass it is closed")
    func unreadOutputPerUid() throws {
        let daemon = try TestDaemon(arguments: ["--limits-max-bytes-per-uid", "10000000"])
        let writer = try daemon.connect()
        let value = JSONValue.string(String(repeating: "v", count: 60_000))
        for index in 0..<40 {
            try writer.set("big.k\(index)", value)
        }
        let list = Array(#"{"method":"io.beacon.Properties.List","parameters":{"prefix":"big"}}"#.utf8) + [0]
        let pipelined = Array([[UInt8]](repeating: list, count: 20).joined())
        // Each unread connection holds at least limits.maxQueuedBytes (4 MiB): two fit in 10 MB, the third does not.
        var hostile: [VarlinkTestClient] = []
        for _ in 0..<3 {
            let client = try daemon.connect()
            #expect(client.sendRaw(pipelined))
            hostile.append(client)
            #expect(try writer.set("tick", true) > 0)
        }
        let deadline = ContinuousClock.now + .seconds(20)
        while !daemon.log.contains("unread output passed its uid's budget"), ContinuousClock.now < deadline {
            usleep(10_000)
        }
        #expect(daemon.log.contains("unread output passed its uid's budget"))
        #expect(hostile[2].waitForClose())
        #expect(try writer.set("after.unread", true) > 0)
    }
}

@Suite("Budgets per uid and unfinished messages")
struct BudgetTests {
    static func unfinished(_ count: Int) -> [UInt8] {
        Array(#"{"method":"io.beacon.Properties.Set","parameters":{"key":"k","value":""#.utf8)
            + [UInt8](repeating: UInt8(ascii: "x"), count: count)
    }

    @Test("a message left unfinished past limits.frameTimeoutMs gets ProtocolError and a closed connection")
    func unfinishedMessageTimesOut() throws {
        let daemon = try TestDaemon(arguments: ["--limits-frame-timeout-ms", "300"])
        let slow = try daemon.connect()
        #expect(slow.sendRaw(Self.unfinished(10)))
        // One more byte now and then does not keep the message alive.
        #expect(slow.sendRaw([UInt8(ascii: "x")]))
        let reply = try slow.receive(timeout: .seconds(20))
        #expect(reply.error == "io.beacon.ProtocolError")
        #expect(slow.waitForClose())
        #expect(daemon.log.contains("message unfinished after frameTimeout"))
        let other = try daemon.connect()
        #expect(try other.set("after.slow", true) > 0)
    }

    @Test("unfinished messages of one uid past limits.maxBytesPerUid: the connection that passes it is closed")
    func unfinishedMessagesPerUid() throws {
        let daemon = try TestDaemon(arguments: ["--limits-max-bytes-per-uid", "4000000"])
        let bystander = try daemon.connect()
        var clients: [VarlinkTestClient] = []
        for _ in 0..<10 {
            let client = try daemon.connect()
            // A refused client may find its connection closed before it has sent everything.
            _ = client.sendRaw(Self.unfinished(600_000))
            clients.append(client)
        }
        // Six of them fit in 4 MB; the seventh passes the budget, and so do the ones after it.
        for client in clients[6...] {
            let reply = try client.receive(timeout: .seconds(20))
            #expect(reply.error == "io.beacon.LimitExceeded")
            #expect(reply["limit"] == "maxBytesPerUid")
            #expect(client.waitForClose())
        }
        // The six kept connections finish their messages and are answered.
        for client in clients[..<6] {
            #expect(client.sendRaw(Array(#""}}"#.utf8) + [0]))
            #expect(try client.receive(timeout: .seconds(20)).error == "io.beacon.Properties.ValueTooLarge")
        }
        #expect(try bystander.set("after.budget", true) > 0)
    }

    @Test("a Watch whose patterns would pass limits.maxBytesPerUid gets LimitExceeded and a closed connection")
    func subscriptionsPerUid() throws {
        let daemon = try TestDaemon(arguments: ["--limits-max-bytes-per-uid", "100000"])
        let first = try daemon.connect()
        let patterns = (0..<150).map { JSONValue.string("p\($0).**") }
        #expect(try first.call("io.beacon.Properties.Watch", ["patterns": .array(patterns)], more: true).error == nil)
        let second = try daemon.connect()
        let reply = try second.call("io.beacon.Properties.Watch", ["patterns": .array(patterns)], more: true)
        #expect(reply.error == "io.beacon.LimitExceeded")
        #expect(second.waitForClose())
        // The first one's charge goes back when it ends: a new Watch fits again.
        first.close()
        let observer = try daemon.connect()
        let deadline = ContinuousClock.now + .seconds(20)
        while ContinuousClock.now < deadline {
            let status = try observer.parameters("io.beacon.Daemon.Status")["status"]?.members ?? [:]
            if status["subscriptions"]?.intValue == 0 { break }
            usleep(10_000)
        }
        let third = try daemon.connect()
        let answered =
            try third.call("io.beacon.Properties.Watch", ["patterns": .array(patterns)], more: true)
            .error == nil
        #expect(answered)
    }
}

@Suite("Logging what clients do")
struct LogFloodTests {
    @Test("calls pipelined after a protocol violation are neither answered nor logged; such lines are rate-limited")
    func violationsAreLoggedOnce() throws {
        let daemon = try TestDaemon()
        let watch = Array(
            #"{"method":"io.beacon.Properties.Watch","more":true,"parameters":{"patterns":["a.**"]}}"#.utf8)
        let get = Array(#"{"method":"io.beacon.Properties.Get","parameters":{"key":"a.b"}}"#.utf8)
        for _ in 0..<20 {
            let client = try daemon.connect()
            let flood = [watch] + [[UInt8]](repeating: get, count: 5000)
            _ = client.sendRaw(Array(flood.map { $0 + [0] }.joined()))
            let first = try client.receive()
            #expect(first.error == nil)
            let violation = try client.receive()
            #expect(violation.error == "io.beacon.ProtocolError")
            #expect(client.waitForClose())
        }
        let bystander = try daemon.connect()
        #expect(try bystander.set("after.flood", true) > 0)
        let lines = daemon.log.split(separator: "\n").filter { $0.contains("closing connection: call") }
        #expect(lines.count == 5)
    }
}
