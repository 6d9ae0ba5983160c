import BeaconEventLoop
import CSystemdShims
import NIOCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// The signals the daemon acts on. A program that runs the daemon blocks them (``blockDaemonSignals()``) before it
/// starts any thread, so that they reach the daemon's signalfds rather than one of its threads.
public let daemonSignals: [Int32] = [SIGTERM, SIGINT, SIGHUP]

/// Blocks ``daemonSignals`` in the calling thread and in every thread it starts afterwards.
public func blockDaemonSignals() {
    let result = daemonSignals.withUnsafeBufferPointer { beacon_block_signals($0.baseAddress, $0.count) }
    precondition(result == 0, "cannot block the daemon's signals: \(result)")
}

/// Cannot open a signalfd.
struct SignalDescriptorError: Error, CustomStringConvertible {
    var errno: Int32
    var description: String { "cannot open a signalfd: \(String(cString: strerror(errno)))" }
}

/// A signalfd for some of ``daemonSignals``, opened before the daemon serves: a daemon that has run out of
/// descriptors by the time it would read its signals still stops on them. Opening it consumes no signal; a signal
/// that arrives before ``signalStream(_:on:)`` reads the descriptor waits, blocked and pending. From then on the
/// signals have a handler that does nothing, so that one that is not blocked in every thread (a program that
/// skipped ``blockDaemonSignals()``) is dropped rather than fatal; `SIG_IGN` would also drop the pending ones.
struct SignalDescriptor: Sendable {
    let descriptor: Int32

    init(_ signals: [Int32]) throws {
        for number in signals { signal(number) { _ in } }
        let descriptor = signals.withUnsafeBufferPointer { beacon_signalfd($0.baseAddress, $0.count) }
        guard descriptor >= 0 else { throw SignalDescriptorError(errno: -descriptor) }
        self.descriptor = descriptor
    }

    /// Closes a descriptor that is not to be read after all.
    func close() {
        _ = Glibc.close(descriptor)
    }
}

/// Delivers the signals of `signals` as an asynchronous sequence, read on `eventLoop`: no thread and no timer of
/// its own, so an idle daemon is not woken. A signal that arrived before, blocked, is delivered too.
func signalStream(
    _ signals: SignalDescriptor,
    on eventLoop: EpollEventLoop = DaemonEventLoop.shared
) async throws -> AsyncStream<Int32> {
    let descriptor = signals.descriptor
    let (stream, continuation) = AsyncStream<Int32>.makeStream()
    let recordSize = beacon_signalfd_record_size()
    let reader = try await eventLoop.submit {
        // A signalfd read shorter than one record fails with EINVAL: never offer less.
        let reader = DescriptorReader(
            descriptor: descriptor, loop: eventLoop, readSize: 8 * recordSize,
            received: { records in
                var records = records
                while let record = records.readSlice(length: recordSize) {
                    let number = record.withUnsafeReadableBytes { beacon_signalfd_record_signal($0.baseAddress) }
                    continuation.yield(number)
                }
            },
            ended: { continuation.finish() })
        try reader.start()
        return NIOLoopBound(reader, eventLoop: eventLoop)
    }.get()
    continuation.onTermination = { _ in eventLoop.execute { reader.value.stop() } }
    return stream
}
