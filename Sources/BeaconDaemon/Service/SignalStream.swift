import CSystemdShims
import NIOCore
import NIOPosix

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

/// Delivers signals as an asynchronous sequence, read from a signalfd on `eventLoop`: no thread and no timer of
/// its own, so an idle daemon is not woken. A signal that arrived before, blocked, is delivered too. From then on
/// the signals have a handler that does nothing, so that one that is not blocked in every thread (a program that
/// skipped ``blockDaemonSignals()``) is dropped rather than fatal; `SIG_IGN` would also drop the pending ones.
func signalStream(
    _ signals: [Int32],
    on eventLoop: any EventLoop = MultiThreadedEventLoopGroup.singleton.any()
) async throws -> AsyncStream<Int32> {
    for number in signals { signal(number) { _ in } }
    let descriptor = signals.withUnsafeBufferPointer { beacon_signalfd($0.baseAddress, $0.count) }
    guard descriptor >= 0 else { throw SignalDescriptorError(errno: -descriptor) }
    let (stream, continuation) = AsyncStream<Int32>.makeStream()
    let recordSize = beacon_signalfd_record_size()
    let channel: any Channel
    do {
        channel = try await NIOPipeBootstrap(group: eventLoop)
            // A signalfd read shorter than one record fails with EINVAL: never offer less.
            .channelOption(
                ChannelOptions.recvAllocator, value: FixedSizeRecvByteBufferAllocator(capacity: 8 * recordSize)
            )
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(
                        SignalRecordHandler(continuation: continuation, recordSize: recordSize))
                }
            }
            .takingOwnershipOfDescriptor(input: descriptor).get()
    } catch {
        // On failure the descriptor is still ours.
        close(descriptor)
        throw error
    }
    continuation.onTermination = { _ in channel.close(promise: nil) }
    return stream
}

/// Turns signalfd records into signal numbers.
private final class SignalRecordHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer

    let continuation: AsyncStream<Int32>.Continuation
    let recordSize: Int

    init(continuation: AsyncStream<Int32>.Continuation, recordSize: Int) {
        self.continuation = continuation
        self.recordSize = recordSize
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var buffer = unwrapInboundIn(data)
        while let record = buffer.readSlice(length: recordSize) {
            let number = record.withUnsafeReadableBytes { beacon_signalfd_record_signal($0.baseAddress) }
            continuation.yield(number)
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        continuation.finish()
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}
