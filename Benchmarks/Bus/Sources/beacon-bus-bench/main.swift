// beacon-bus-bench: the measurements of the bus peers (Benchmarks/Peers), run against beacond.
//
// Clients are plain blocking POSIX Unix sockets in forked processes, so that the daemon is what is measured.
// Every figure is printed as `RESULT|beacond|test|unit|value`, the format Benchmarks/Peers/table.py aggregates.
//
//   beacon-bus-bench SOCKET get N                  Set once, then N synchronous Get round trips (p50/p99)
//   beacon-bus-bench SOCKET notify NSUB N WINDOW   NSUB Observe processes, one publisher posting N oneway
//   beacon-bus-bench SOCKET setwatch N [WINDOW] [ephemeral]
//                                                  a Watch process, N Sets, synchronous or pipelined (at
//                                                  most WINDOW unanswered, topped up as answers arrive);
//                                                  persistent (committed to SQLite before the answer) or
//                                                  ephemeral (memory only, like a D-Bus property)
//   beacon-bus-bench SOCKET conns K DAEMON_PID     K concurrent Observe connections, daemon RSS growth

import BeaconProtocol

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

// MARK: - Small POSIX helpers

func writeText(_ fd: Int32, _ text: String) {
    writeAll(fd, Array(text.utf8))
}

func warn(_ message: String) {
    writeText(2, "beacon-bus-bench: \(message)\n")
}

func fail(_ message: String) -> Never {
    warn(message)
    exit(1)
}

/// glibc's `memmem`, which the C library module does not import (it is a GNU extension).
let memmemFunction = unsafeBitCast(
    dlsym(nil, "memmem"),
    to: (@convention(c) (UnsafeRawPointer?, Int, UnsafeRawPointer?, Int) -> UnsafeMutableRawPointer?).self)

/// The first occurrence of `needle` in `length` bytes at `base` (with `memmem`: counting subscribers scan every
/// byte they receive, and a needle that starts with a quote would stop a first-byte search every few bytes).
func find(_ needle: UnsafeRawBufferPointer, in base: UnsafeRawPointer, length: Int) -> UnsafeRawPointer? {
    guard let start = needle.baseAddress, !needle.isEmpty, length >= needle.count else { return nil }
    return memmemFunction(base, length, start, needle.count).map { UnsafeRawPointer($0) }
}

func now() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) * 1e-9
}

func result(_ test: String, _ unit: String, _ value: Double) {
    writeText(1, "RESULT|beacond|\(test)|\(unit)|\(format3(value))\n")
}

func format3(_ value: Double) -> String {
    let scaled = (value * 1000).rounded()
    let negative = scaled < 0
    let magnitude = Int64(abs(scaled))
    let fraction = String(magnitude % 1000)
    return (negative ? "-" : "") + "\(magnitude / 1000)." + String(repeating: "0", count: 3 - fraction.count) + fraction
}

func percentile(_ sorted: [Double], _ p: Double) -> Double {
    guard !sorted.isEmpty else { return 0 }
    let k = min(max(Int((p / 100 * Double(sorted.count)).rounded(.up)), 1), sorted.count)
    return sorted[k - 1]
}

func reportLatency(_ test: String, _ samples: [Double]) {
    let sorted = samples.sorted()
    result("\(test) p50", "us", percentile(sorted, 50) * 1e6)
    result("\(test) p99", "us", percentile(sorted, 99) * 1e6)
}

func connectUnix(_ path: String) -> Int32 {
    let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { fail("socket: \(String(cString: strerror(errno)))") }
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    let bytes = Array(path.utf8)
    guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else { fail("socket path too long") }
    withUnsafeMutableBytes(of: &address.sun_path) { raw in
        raw.copyBytes(from: bytes)
        raw[bytes.count] = 0
    }
    let status = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
        }
    }
    guard status == 0 else { fail("connect \(path): \(String(cString: strerror(errno)))") }
    return fd
}

func writeAll(_ fd: Int32, _ bytes: [UInt8]) {
    bytes.withUnsafeBytes { raw in
        var offset = 0
        while offset < raw.count {
            let n = write(fd, raw.baseAddress! + offset, raw.count - offset)
            if n < 0 {
                if errno == EINTR { continue }
                fail("write: \(String(cString: strerror(errno)))")
            }
            offset += n
        }
    }
}

func readExactly(_ fd: Int32, _ count: Int) -> [UInt8]? {
    var bytes = [UInt8](repeating: 0, count: count)
    var offset = 0
    while offset < count {
        let n = bytes.withUnsafeMutableBytes { read(fd, $0.baseAddress! + offset, count - offset) }
        if n < 0 && errno == EINTR { continue }
        if n <= 0 { return nil }
        offset += n
    }
    return bytes
}

/// Occurrences of `needle` in `haystack`.
func count(_ needle: [UInt8], in haystack: UnsafeRawBufferPointer) -> Int {
    guard let base = haystack.baseAddress, haystack.count >= needle.count else { return 0 }
    var found = 0
    var offset = 0
    needle.withUnsafeBytes { n in
        while offset <= haystack.count - needle.count,
            let hit = find(n, in: base + offset, length: haystack.count - offset)
        {
            found += 1
            offset = base.distance(to: UnsafeRawPointer(hit)) + n.count
        }
    }
    return found
}

/// The integer after `needle` (e.g. `"overflow":`) in `frame`, or 0.
func integer(after needle: [UInt8], in frame: UnsafeRawBufferPointer) -> Int {
    guard let base = frame.baseAddress else { return 0 }
    let hit = needle.withUnsafeBytes { find($0, in: base, length: frame.count) }
    guard let hit else { return 0 }
    var index = base.distance(to: UnsafeRawPointer(hit)) + needle.count
    var value = 0
    while index < frame.count, frame[index] >= 0x30, frame[index] <= 0x39 {
        value = value * 10 + Int(frame[index] - 0x30)
        index += 1
    }
    return value
}

/// A blocking varlink connection: calls out, NUL-terminated replies in.
struct Connection {
    let fd: Int32
    var splitter = VarlinkFrameSplitter(maxFrameSize: 64 << 20)
    var buffer = [UInt8](repeating: 0, count: 256 << 10)

    init(path: String) { fd = connectUnix(path) }

    /// Reads more bytes into the splitter; false at end of stream. With a timeout (ms), false also when none came.
    mutating func fill(timeoutMs: Int32 = -1) -> Bool {
        if timeoutMs >= 0 {
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            if poll(&pfd, 1, timeoutMs) <= 0 { return false }
        }
        while true {
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress!, $0.count) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { return false }
            buffer.withUnsafeBytes { splitter.append(UnsafeRawBufferPointer(rebasing: $0[0..<n])) }
            return true
        }
    }

    /// The next reply frame, blocking.
    mutating func nextFrame() -> [UInt8] {
        while true {
            do {
                if let frame = try splitter.nextFrame() { return frame }
            } catch {
                fail("bad frame: \(error)")
            }
            if !fill() { fail("daemon closed the connection") }
        }
    }

    /// Sends an encoded call and returns its reply; fails on a varlink error reply.
    mutating func call(_ encoded: [UInt8], _ what: String) -> [UInt8] {
        writeAll(fd, encoded)
        let frame = nextFrame()
        frame.withUnsafeBytes { raw in
            if count(Array("\"error\":".utf8), in: raw) > 0 {
                fail("\(what) failed: \(String(decoding: frame, as: UTF8.self))")
            }
        }
        return frame
    }
}

func encode(_ call: VarlinkCall) -> [UInt8] {
    var bytes: [UInt8] = []
    call.encode(into: &bytes)
    return bytes
}

/// A 64-byte string payload.
let payload64 = String(repeating: "x", count: 64)

func makePipe() -> (read: Int32, write: Int32) {
    var fds: [Int32] = [0, 0]
    guard pipe(&fds) == 0 else { fail("pipe") }
    return (fds[0], fds[1])
}

/// What a counting subscriber reports to the parent: received, first, last, overflow, error.
func sendReport(_ fd: Int32, _ values: [Double]) {
    writeAll(fd, values.withUnsafeBytes { Array($0) })
}

func readReport(_ fd: Int32) -> [Double] {
    guard let bytes = readExactly(fd, 5 * MemoryLayout<Double>.size) else { fail("missing subscriber report") }
    return bytes.withUnsafeBytes { Array($0.bindMemory(to: Double.self)) }
}

/// In a forked child: reads a stream, counting `item` occurrences until `done` appears or nothing arrives
/// for `idleMs`; reports to `report`.
func countStream(_ connection: inout Connection, item: [UInt8], done: [UInt8], idleMs: Int32, report: Int32) {
    var received = 0
    var first = 0.0
    var last = 0.0
    var overflow = 0
    var finished = false
    let overflowTag = Array("\"overflow\":".utf8)
    while !finished {
        guard connection.fill(timeoutMs: idleMs) else { break }
        var got = 0
        do {
            while let stop = try connection.splitter.withNextFrame({ frame -> Bool in
                got += count(item, in: frame)
                overflow += integer(after: overflowTag, in: frame)
                return count(done, in: frame) > 0
            }) {
                if stop { finished = true }
            }
        } catch {
            fail("bad frame: \(error)")
        }
        if got > 0 {
            let t = now()
            if received == 0 { first = t }
            last = t
            received += got
        }
    }
    sendReport(report, [Double(received), first, last, Double(overflow), finished ? 0 : 1])
}

// MARK: - Tests

/// Synchronous Get of a 64-byte value.
func benchGet(_ path: String, _ n: Int) {
    var connection = Connection(path: path)
    let value: JSONValue = .object(["p": .string(payload64)])
    _ = connection.call(
        encode(VarlinkCall(method: "io.beacon.Properties.Set", parameters: ["key": "bench.get", "value": value])),
        "Set")
    let get = encode(VarlinkCall(method: "io.beacon.Properties.Get", parameters: ["key": "bench.get"]))
    _ = connection.call(get, "Get")
    var samples: [Double] = []
    samples.reserveCapacity(n)
    for _ in 0..<n {
        let t = now()
        writeAll(connection.fd, get)
        _ = connection.nextFrame()
        samples.append(now() - t)
    }
    reportLatency("Get rtt 64B value", samples)
}

/// One publisher posting N oneway notifications (64-byte userInfo), pipelined WINDOW per write, to NSUB observers.
func benchNotify(_ path: String, _ nsub: Int, _ n: Int, _ window: Int) {
    let ready = makePipe()
    let report = makePipe()
    var children: [pid_t] = []
    for _ in 0..<nsub {
        let pid = fork()
        if pid == 0 {
            close(ready.read)
            close(report.read)
            var connection = Connection(path: path)
            let observe = VarlinkCall(
                method: "io.beacon.Notifications.Observe", parameters: ["patterns": ["bench.tick", "bench.done"]],
                more: true)
            _ = connection.call(encode(observe), "Observe")
            writeAll(ready.write, [1])
            countStream(
                &connection, item: Array("\"name\":\"bench.tick\"".utf8), done: Array("\"name\":\"bench.done\"".utf8),
                idleMs: 10_000, report: report.write)
            _exit(0)
        }
        children.append(pid)
    }
    close(ready.write)
    close(report.write)
    for _ in 0..<nsub where readExactly(ready.read, 1) == nil { fail("subscriber failed") }

    var publisher = Connection(path: path)
    let post = encode(
        VarlinkCall(
            method: "io.beacon.Notifications.Post",
            parameters: ["name": "bench.tick", "userInfo": .object(["p": .string(payload64)])], oneway: true))
    var batch: [UInt8] = []
    batch.reserveCapacity(post.count * window)
    for _ in 0..<window { batch.append(contentsOf: post) }
    let t0 = now()
    var sent = 0
    while sent < n {
        let m = min(window, n - sent)
        if m == window {
            writeAll(publisher.fd, batch)
        } else {
            writeAll(publisher.fd, Array(batch[0..<(post.count * m)]))
        }
        sent += m
    }
    // A synchronous call after the last oneway Post: its reply means the daemon has taken every Post.
    _ = publisher.call(
        encode(VarlinkCall(method: "io.beacon.Notifications.Post", parameters: ["name": "bench.done"])), "Post")
    let tPublish = now() - t0

    var total = 0.0
    var last = t0
    var overflow = 0.0
    var errors = 0.0
    for _ in 0..<nsub {
        let r = readReport(report.read)
        total += r[0]
        if r[2] > last { last = r[2] }
        overflow += r[3]
        errors += r[4]
    }
    for pid in children {
        var status: Int32 = 0
        waitpid(pid, &status, 0)
    }
    close(publisher.fd)
    result(
        "Post 1->\(nsub) subs, delivered/s (sum at subscribers), oneway pipeline \(window)", "msg/s",
        total / (last - t0))
    result(
        "Post 1->\(nsub) subs, publisher rate (until daemon took all), oneway pipeline \(window)", "msg/s",
        Double(n) / tPublish)
    result("Post 1->\(nsub) subs, lost", "msgs", Double(n * nsub) - total)
    result("Post 1->\(nsub) subs, daemon-reported overflow", "msgs", overflow)
    if errors > 0 { warn("\(Int(errors)) subscriber(s) timed out before bench.done") }
}

/// N Sets of a 64-byte value (distinct each time) to one key watched by one watcher process: synchronous when
/// `window` is 1, else pipelined with up to `window` Sets unanswered.
func benchSetWatch(_ path: String, _ n: Int, window: Int, ephemeral: Bool) {
    let ready = makePipe()
    let report = makePipe()
    let pid = fork()
    if pid == 0 {
        close(ready.read)
        close(report.read)
        var connection = Connection(path: path)
        let watch = VarlinkCall(
            method: "io.beacon.Properties.Watch", parameters: ["patterns": ["bench.value", "bench.end"]], more: true)
        _ = connection.call(encode(watch), "Watch")
        writeAll(ready.write, [1])
        countStream(
            &connection, item: Array("\"key\":\"bench.value\"".utf8), done: Array("\"key\":\"bench.end\"".utf8),
            idleMs: 10_000, report: report.write)
        _exit(0)
    }
    close(ready.write)
    close(report.write)
    if readExactly(ready.read, 1) == nil { fail("watcher failed") }

    var connection = Connection(path: path)
    // Every Set is the same encoded call with its own 15-digit counter written into the value (64 bytes).
    let placeholder = String(repeating: "x", count: 48) + "-" + String(repeating: "0", count: 15)
    var parameters: [String: JSONValue] = ["key": "bench.value", "value": .object(["p": .string(placeholder)])]
    if ephemeral { parameters["ephemeral"] = true }
    let template = encode(VarlinkCall(method: "io.beacon.Properties.Set", parameters: parameters))
    let digitsAt: Int = template.withUnsafeBytes { raw in
        Array(placeholder.utf8).withUnsafeBytes { needle in
            guard let hit = find(needle, in: raw.baseAddress!, length: raw.count) else { fail("no placeholder") }
            return raw.baseAddress!.distance(to: hit) + 49
        }
    }
    /// Appends Sets `first..<end` to `batch`.
    func appendSets(_ batch: inout [UInt8], _ first: Int, _ end: Int) {
        for i in first..<end {
            let at = batch.count + digitsAt
            batch.append(contentsOf: template)
            var rest = i
            for k in stride(from: 14, through: 0, by: -1) {
                batch[at + k] = UInt8(0x30 + rest % 10)
                rest /= 10
            }
        }
    }
    var samples: [Double] = []
    samples.reserveCapacity(n)
    var batch: [UInt8] = []
    batch.reserveCapacity(template.count * window)
    let t0 = now()
    if window == 1 {
        for i in 0..<n {
            batch.removeAll(keepingCapacity: true)
            appendSets(&batch, i, i + 1)
            let t = now()
            writeAll(connection.fd, batch)
            _ = connection.nextFrame()
            samples.append(now() - t)
        }
    } else {
        // A sliding window: at most `window` Sets unanswered; when half of them are answered, as many more
        // are written in one go. Every answer is read and checked.
        var sent = 0
        var answered = 0
        var failed = 0
        let errorTag = Array("\"error\":".utf8)
        while answered < n {
            if sent < n && sent - answered <= window / 2 {
                let end = min(n, answered + window)
                batch.removeAll(keepingCapacity: true)
                appendSets(&batch, sent, end)
                writeAll(connection.fd, batch)
                sent = end
            }
            if !connection.fill() { fail("daemon closed the connection") }
            do {
                while let isError = try connection.splitter.withNextFrame({ count(errorTag, in: $0) > 0 }) {
                    if isError { failed += 1 }
                    answered += 1
                }
            } catch {
                fail("bad frame: \(error)")
            }
        }
        if failed > 0 { warn("\(failed) Set(s) answered with an error") }
    }
    // The end marker's value differs from every earlier run's (this process's clock): a Set of the value the key
    // already holds changes nothing, and the watcher would see no end.
    let end: JSONValue = ["done": .string("\(getpid())-\(now())")]
    _ = connection.call(
        encode(VarlinkCall(method: "io.beacon.Properties.Set", parameters: ["key": "bench.end", "value": end])),
        "Set")
    let r = readReport(report.read)
    if r[4] != 0 { warn("the watcher timed out before bench.end") }
    var status: Int32 = 0
    waitpid(pid, &status, 0)
    close(connection.fd)
    let mode = (window == 1 ? "" : ", Sets pipelined \(window)") + (ephemeral ? ", ephemeral" : "")
    if window == 1 { reportLatency("Set rtt 64B, \(ephemeral ? "ephemeral" : "persistent") (watched)", samples) }
    result("Set -> Watch changes received/s by 1 watcher\(mode)", "msg/s", r[2] > t0 ? r[0] / (r[2] - t0) : 0)
    // Changes the daemon coalesced for a slow watcher are reported as such, not as lost.
    result("Set -> Watch changes lost\(mode)", "msgs", Double(n) - r[0] - r[3])
    result("Set -> Watch changes coalesced (daemon-reported overflow)\(mode)", "msgs", r[3])
}

func rssKiB(_ pid: Int32) -> Double {
    guard let file = fopen("/proc/\(pid)/status", "r") else { fail("cannot read /proc/\(pid)/status") }
    defer { fclose(file) }
    var line = [CChar](repeating: 0, count: 512)
    while fgets(&line, Int32(line.count), file) != nil {
        let text = String(decoding: line.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        if text.hasPrefix("VmRSS:") {
            return Double(
                text.dropFirst(6).split(whereSeparator: { $0 == " " || $0 == "\t" }).first.flatMap {
                    Double(String($0))
                } ?? 0)
        }
    }
    return 0
}

/// K concurrent connections, each running Observe; the daemon's RSS before and after, and one Post to all.
func benchConnections(_ path: String, _ k: Int, _ daemon: Int32) {
    let before = rssKiB(daemon)
    let observe = encode(
        VarlinkCall(method: "io.beacon.Notifications.Observe", parameters: ["patterns": ["bench.many"]], more: true))
    var connections: [Connection] = []
    connections.reserveCapacity(k)
    let t0 = now()
    for _ in 0..<k {
        var connection = Connection(path: path)
        connection.buffer = [UInt8](repeating: 0, count: 4096)
        writeAll(connection.fd, observe)
        connections.append(connection)
    }
    for i in connections.indices { _ = connections[i].nextFrame() }
    let tConnect = now() - t0
    let after = rssKiB(daemon)
    result("RSS with \(k) Observe subscribers connected", "KiB", after)
    result("RSS growth per Observe subscriber (\(k) held)", "KiB/conn", (after - before) / Double(k))
    result("\(k) Observe subscribers connected and registered, per second", "msg/s", Double(k) / tConnect)

    var publisher = Connection(path: path)
    _ = publisher.call(
        encode(
            VarlinkCall(
                method: "io.beacon.Notifications.Post",
                parameters: ["name": "bench.many", "userInfo": .object(["p": .string(payload64)])])), "Post")
    var delivered = 0
    let item = Array("\"name\":\"bench.many\"".utf8)
    for i in connections.indices {
        var got = 0
        while got == 0 {
            guard connections[i].fill(timeoutMs: 10_000) else { break }
            while let n = try? connections[i].splitter.withNextFrame({ count(item, in: $0) }) { got += n }
        }
        delivered += got
    }
    result("Post to \(k) Observe subscribers, lost", "msgs", Double(k - delivered))
    for connection in connections { close(connection.fd) }
    close(publisher.fd)
}

// MARK: - Main

let arguments = CommandLine.arguments
func usage() -> Never {
    fail(
        "usage: beacon-bus-bench SOCKET get N | notify NSUB N WINDOW | setwatch N [WINDOW [ephemeral]]"
            + " | conns K DAEMON_PID | bind BLOCK ROUNDS | bindallocs N")
}
func argument(_ index: Int) -> Int {
    guard index < arguments.count, let value = Int(arguments[index]), value > 0 else { usage() }
    return value
}
guard arguments.count >= 3 else { usage() }
signal(SIGPIPE, SIG_IGN)
let socketPath = arguments[1]
switch arguments[2] {
case "get": benchGet(socketPath, argument(3))
case "notify": benchNotify(socketPath, argument(3), argument(4), argument(5))
case "setwatch":
    benchSetWatch(
        socketPath, argument(3), window: arguments.count > 4 ? argument(4) : 1,
        ephemeral: arguments.count > 5 && arguments[5] == "ephemeral")
case "conns": benchConnections(socketPath, argument(3), Int32(argument(4)))
case "bind": benchBind(socketPath, argument(3), argument(4))
case "bindallocs": benchBindAllocations(socketPath, argument(3))
default: usage()
}
