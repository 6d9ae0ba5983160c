import BeaconClient
import BeaconProtocol
import Dispatch
import Glibc
import Signals
import Synchronization

/// Runs `body` on the concurrency pool and blocks this thread until it ends.
func blocking<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) -> T {
    let result = Mutex<Result<T, any Error>?>(nil)
    let done = DispatchSemaphore(value: 0)
    Task {
        do {
            let value = try await body()
            result.withLock { $0 = .success(value) }
        } catch {
            result.withLock { $0 = .failure(error) }
        }
        done.signal()
    }
    done.wait()
    switch result.withLock({ $0 })! {
    case .success(let value): return value
    case .failure(let error): fail("\(error)")
    }
}

/// Where a bound value is waited for: the observer of the local property stamps the time the expected value
/// arrived and wakes the measuring thread.
final class Arrival: Sendable {
    let expected = Atomic<Int>(-1)
    let stamp = Atomic<UInt64>(0)
    let signal = DispatchSemaphore(value: 0)

    func arrived(_ value: Int) {
        guard value == expected.load(ordering: .acquiring) else { return }
        stamp.store(now().bitPattern, ordering: .releasing)
        signal.signal()
    }

    /// Waits (at most 10 s) for the expected value; its arrival time.
    func wait(_ what: String) -> Double {
        if signal.wait(timeout: .now() + .seconds(10)) == .timedOut { fail("\(what): the bound value never arrived") }
        return Double(bitPattern: stamp.load(ordering: .acquiring))
    }
}

/// Encoded `Set bench.bind = value`, the value written without allocating.
struct BindSets {
    let template: [UInt8]
    let digitsAt: Int
    static let digits = 15

    init() {
        let placeholder = String(repeating: "1", count: Self.digits)
        let call = VarlinkCall(
            method: "io.beacon.Properties.Set",
            parameters: ["key": "bench.bind", "value": .int(Int64(placeholder)!)])
        template = encode(call)
        digitsAt = template.withUnsafeBytes { raw in
            Array(placeholder.utf8).withUnsafeBytes { needle in
                guard let hit = find(needle, in: raw.baseAddress!, length: raw.count) else { fail("no placeholder") }
                return raw.baseAddress!.distance(to: hit)
            }
        }
    }

    /// Writes `Set(value)` (value below 10^15, written with leading digits of 1 so that it stays one number).
    func send(_ value: Int, on fd: Int32, scratch: inout [UInt8]) {
        scratch.withUnsafeMutableBufferPointer { bytes in
            var rest = value
            for index in stride(from: digitsAt + Self.digits - 1, through: digitsAt + 1, by: -1) {
                bytes[index] = UInt8(0x30 + rest % 10)
                rest /= 10
            }
        }
        writeAll(fd, scratch)
    }

    /// The number that `send(value)` stores.
    static func stored(_ value: Int) -> Int { 100_000_000_000_000 + value }
}

/// Reads one reply frame into a reused buffer and drops it (no allocation per reply).
func skipFrame(_ fd: Int32, _ buffer: inout [UInt8]) {
    var filled = 0
    while true {
        let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress! + filled, $0.count - filled) }
        if n < 0 && errno == EINTR { continue }
        if n <= 0 { fail("the daemon closed the writer's connection") }
        filled += n
        if buffer[filled - 1] == 0 { return }
        if filled == buffer.count { fail("reply larger than the buffer") }
    }
}

/// What both binding benchmarks start from: a client, a raw writer connection on which `Set bench.bind = 0` is done,
/// the client's remote property of `bench.bind`, and a local `Property` whose observer reports to ``arrival``.
struct BindFixture {
    let client: BeaconClient
    let remote: RemoteProperty<Int>
    let local: Property<Int>
    let arrival: Arrival
    private let sets: BindSets
    private let writer: Int32
    private var scratch: [UInt8]
    private var replies: [UInt8]
    private let observation: any Disposable

    init(_ path: String) {
        let client = blocking { try await BeaconClient.connect(to: BeaconAddress("unix:\(path)")) }
        let sets = BindSets()
        var scratch = sets.template
        var replies = [UInt8](repeating: 0, count: 4096)
        let writer = connectUnix(path)
        sets.send(0, on: writer, scratch: &scratch)
        skipFrame(writer, &replies)
        let remote = client.property("bench.bind", as: Int.self, default: 0)
        let local = Property(0)
        let arrival = Arrival()
        observation = local.observeNext { arrival.arrived($0) }
        self.client = client
        self.remote = remote
        self.local = local
        self.arrival = arrival
        self.sets = sets
        self.writer = writer
        self.scratch = scratch
        self.replies = replies
    }

    /// Writes `Set bench.bind = value` on the writer connection (see ``BindSets/send(_:on:scratch:)``).
    mutating func send(_ value: Int) {
        sets.send(value, on: writer, scratch: &scratch)
    }

    /// Reads and drops the writer's next reply.
    mutating func skipReply() {
        skipFrame(writer, &replies)
    }

    /// Stops observing the local property and closes the client.
    func finish() {
        observation.dispose()
        client.close()
    }
}

/// `<~` latency beside raw Watch latency, in one run: blocks of `block` Sets measured each way in turn, `rounds`
/// times. A raw block reads a Watch stream on its own connection (asking, as a remote property does, for changes
/// without their origin); a binding block waits for the value in a local `Property` bound with
/// `local <~ client.property(...)`. Nothing else watches the key during a block.
func benchBind(_ path: String, _ block: Int, _ rounds: Int) {
    var fixture = BindFixture(path)
    let arrival = fixture.arrival
    var value = 0
    var raw: [Double] = []
    var bound: [Double] = []
    raw.reserveCapacity(block * rounds)
    bound.reserveCapacity(block * rounds)
    let valueTag = Array("\"value\":".utf8)
    for _ in 0..<rounds {
        var watch = Connection(path: path)
        // The same changes a remote property asks for: without their origin.
        let call = VarlinkCall(
            method: "io.beacon.Properties.Watch", parameters: ["patterns": ["bench.bind"], "origin": false], more: true)
        _ = watch.call(encode(call), "Watch")
        for _ in 0..<block {
            value += 1
            let t = now()
            fixture.send(value)
            let frame = watch.nextFrame()
            raw.append(now() - t)
            let seen = frame.withUnsafeBytes { integer(after: valueTag, in: $0) }
            if seen != BindSets.stored(value) { fail("raw Watch saw \(seen), not \(BindSets.stored(value))") }
            fixture.skipReply()
        }
        close(watch.fd)

        arrival.expected.store(BindSets.stored(value), ordering: .releasing)
        let binding = fixture.local <~ fixture.remote
        _ = arrival.wait("the binding's first value")
        for _ in 0..<block {
            value += 1
            arrival.expected.store(BindSets.stored(value), ordering: .releasing)
            let t = now()
            fixture.send(value)
            bound.append(arrival.wait("a change") - t)
            fixture.skipReply()
        }
        binding.dispose()
    }
    fixture.finish()
    reportLatency("Set -> raw Watch change", raw)
    reportLatency("Set -> value in a Property bound with <~", bound)
}

/// Sets `n` values one at a time into a key that a `<~` binding follows, each waited for before the next: the
/// process's allocations grow by what one delivered change costs the client (run under a heap counter at two `n`
/// and take the difference).
func benchBindAllocations(_ path: String, _ n: Int) {
    var fixture = BindFixture(path)
    let arrival = fixture.arrival
    arrival.expected.store(BindSets.stored(0), ordering: .releasing)
    let binding = fixture.local <~ fixture.remote
    _ = arrival.wait("the binding's first value")
    for value in 1...n {
        arrival.expected.store(BindSets.stored(value), ordering: .releasing)
        fixture.send(value)
        _ = arrival.wait("a change")
        fixture.skipReply()
    }
    binding.dispose()
    fixture.finish()
    result("bound changes delivered", "changes", Double(n))
}
