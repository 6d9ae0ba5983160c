import Logging
import NIOCore
import NIOPosix

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Follows the schema and lockdown directories with inotify, on the event loop, and calls `changed` once a change is
/// complete.
///
/// A file counts as changed when it is closed after writing, renamed or deleted, not at every write: a reload never
/// reads a half-written file. A directory that does not exist yet is noticed when it appears: its nearest existing
/// parent is watched for it. No timer runs while nothing changes.
final class SettingsWatcher {
    private static let fileEvents: UInt32 =
        UInt32(IN_CLOSE_WRITE) | UInt32(IN_MOVED_TO) | UInt32(IN_MOVED_FROM) | UInt32(IN_DELETE)
        | UInt32(IN_DELETE_SELF) | UInt32(IN_MOVE_SELF) | UInt32(IN_CREATE) | UInt32(IN_ATTRIB)
    /// Enough for one event with the longest name, which inotify requires of every read.
    private static let readSize = 4096
    /// How long changes are gathered before one reload: an editor's save is a few events in a row.
    static let settleTime = TimeAmount.milliseconds(10)

    private let descriptor: Int32
    private let channel: Channel

    private init(descriptor: Int32, channel: Channel) {
        self.descriptor = descriptor
        self.channel = channel
    }

    /// Starts watching `directories` on `eventLoop`; `nil` (logged) when inotify cannot be used.
    static func start(
        directories: [String], on eventLoop: EventLoop, logger: Logger, changed: @escaping @Sendable () -> Void
    ) async -> SettingsWatcher? {
        let descriptor = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        guard descriptor >= 0 else {
            logger.warning(
                "cannot follow the settings directories; SIGHUP reloads them",
                metadata: ["error": "\(String(cString: strerror(errno)))"])
            return nil
        }
        // NIO owns the descriptor from here and closes it with the channel.
        let watched = dup(descriptor)
        do {
            let channel = try await NIOPipeBootstrap(group: eventLoop)
                .channelOption(
                    ChannelOptions.recvAllocator, value: FixedSizeRecvByteBufferAllocator(capacity: readSize)
                )
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(
                            Handler(
                                eventLoop: channel.eventLoop, descriptor: watched, directories: directories,
                                changed: changed))
                    }
                }
                .takingOwnershipOfDescriptor(input: descriptor).get()
            addWatches(descriptor: watched, directories: directories)
            return SettingsWatcher(descriptor: watched, channel: channel)
        } catch {
            close(watched)
            logger.warning(
                "cannot follow the settings directories; SIGHUP reloads them", metadata: ["error": "\(error)"])
            return nil
        }
    }

    /// Watches every directory, or the nearest existing parent of one that does not exist. Called again after each
    /// reload, so that a directory created since is watched itself (adding a watch twice changes nothing).
    static func addWatches(descriptor: Int32, directories: [String]) {
        for directory in directories {
            var path = directory
            var mask = Self.fileEvents
            while inotify_add_watch(descriptor, path, mask | UInt32(IN_ONLYDIR)) < 0 {
                guard errno == ENOENT || errno == ENOTDIR else { break }
                let parent = POSIX.parentDirectory(of: path)
                guard !parent.isEmpty, parent != path else { break }
                path = parent
                mask = UInt32(IN_CREATE) | UInt32(IN_MOVED_TO)
            }
        }
    }

    func stop() async {
        try? await channel.close()
        close(descriptor)
    }

    /// Reads the events and calls `changed` once they settle.
    private final class Handler: ChannelInboundHandler {
        typealias InboundIn = ByteBuffer

        private let eventLoop: EventLoop
        private let descriptor: Int32
        private let directories: [String]
        private let changed: @Sendable () -> Void
        private var scheduled: Scheduled<Void>?

        init(eventLoop: EventLoop, descriptor: Int32, directories: [String], changed: @escaping @Sendable () -> Void) {
            self.eventLoop = eventLoop
            self.descriptor = descriptor
            self.directories = directories
            self.changed = changed
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            var buffer = unwrapInboundIn(data)
            var relevant = false
            // struct inotify_event: int wd; uint32_t mask, cookie, len; char name[len].
            while buffer.readableBytes >= 16 {
                guard let mask = buffer.getInteger(at: buffer.readerIndex + 4, endianness: .host, as: UInt32.self),
                    let length = buffer.getInteger(at: buffer.readerIndex + 12, endianness: .host, as: UInt32.self)
                else { break }
                buffer.moveReaderIndex(forwardBy: min(buffer.readableBytes, 16 + Int(length)))
                // A new file is read once it is closed after writing; a new directory at once.
                if mask & UInt32(IN_CREATE) != 0 && mask & UInt32(IN_ISDIR) == 0 { continue }
                relevant = true
            }
            guard relevant, scheduled == nil else { return }
            scheduled = eventLoop.assumeIsolated().scheduleTask(in: SettingsWatcher.settleTime) { [self] in
                scheduled = nil
                SettingsWatcher.addWatches(descriptor: descriptor, directories: directories)
                changed()
            }
        }
    }
}
