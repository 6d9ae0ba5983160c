import BeaconConfiguration
import BeaconEventLoop
import Logging
import NIOCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Follows the schema and lockdown directories with inotify, on the event loop, and calls `changed` once a change is
/// complete, with the files it concerns.
///
/// A file counts as changed when it is closed after writing, renamed or deleted, not at every write, and a reload
/// reads only the files that changed so (``SettingsLoader/load(changed:previous:)``): a file being written while
/// another one changes keeps its last complete reading. A directory that does not exist yet is noticed when it
/// appears: its nearest existing parent is watched for it, and its appearance reads it whole. No timer runs while
/// nothing changes.
final class SettingsWatcher {
    /// What a reload must read again.
    enum Change: Sendable, Equatable {
        /// These files (full paths), each complete: written and closed, renamed, deleted or with new attributes.
        case files(Set<String>)
        /// Every file: a directory came, went or moved.
        case all
    }

    fileprivate static let fileEvents: UInt32 =
        UInt32(IN_CLOSE_WRITE) | UInt32(IN_MOVED_TO) | UInt32(IN_MOVED_FROM) | UInt32(IN_DELETE)
        | UInt32(IN_DELETE_SELF) | UInt32(IN_MOVE_SELF) | UInt32(IN_CREATE) | UInt32(IN_ATTRIB)
    /// Enough for one event with the longest name, which inotify requires of every read.
    private static let readSize = 4096
    /// How long changes are gathered before one reload: an editor's save is a few events in a row.
    static let settleTime = TimeAmount.milliseconds(10)

    private let eventLoop: EpollEventLoop
    private let reader: NIOLoopBound<DescriptorReader>

    private init(eventLoop: EpollEventLoop, reader: NIOLoopBound<DescriptorReader>) {
        self.eventLoop = eventLoop
        self.reader = reader
    }

    /// Starts watching `directories` on `eventLoop`; `nil` (logged) when inotify cannot be used.
    static func start(
        directories: [String], on eventLoop: EpollEventLoop, logger: Logger,
        changed: @escaping @Sendable (Change) -> Void
    ) async -> SettingsWatcher? {
        let descriptor = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        guard descriptor >= 0 else {
            logger.warning(
                "cannot follow the settings directories; SIGHUP reloads them",
                metadata: ["error": "\(String(cString: strerror(errno)))"])
            return nil
        }
        do {
            let reader = try await eventLoop.submit {
                let handler = Handler(
                    eventLoop: eventLoop, descriptor: descriptor, directories: directories, changed: changed)
                // The reader owns the descriptor from here and closes it when it stops.
                let reader = DescriptorReader(
                    descriptor: descriptor, loop: eventLoop, readSize: readSize, received: handler.received,
                    ended: handler.stop)
                try reader.start()
                handler.watches.add()
                return NIOLoopBound(reader, eventLoop: eventLoop)
            }.get()
            return SettingsWatcher(eventLoop: eventLoop, reader: reader)
        } catch {
            logger.warning(
                "cannot follow the settings directories; SIGHUP reloads them", metadata: ["error": "\(error)"])
            return nil
        }
    }

    func stop() async {
        let reader = self.reader
        try? await eventLoop.submit { reader.value.stop() }.get()
    }

    /// The watches of the directories, and which events of each matter. Used on the event loop only.
    private final class Watches {
        private let descriptor: Int32
        private let directories: [String]
        /// For each watch of a missing directory's nearest parent, the names in it that lead to a missing
        /// directory; a watch of a directory itself is not in here (all of its events matter).
        private var awaitedNames: [Int32: Set<String>] = [:]
        /// The directory of each watch of a directory itself.
        private var directoryOf: [Int32: String] = [:]

        init(descriptor: Int32, directories: [String]) {
            self.descriptor = descriptor
            self.directories = directories
        }

        /// Watches every directory, or the nearest existing parent of one that does not exist. Called again after
        /// each reload, so that a directory created since is watched itself (adding a watch twice changes nothing).
        func add() {
            var awaited: [Int32: Set<String>] = [:]
            var targets: Set<Int32> = []
            directoryOf = [:]
            for directory in directories {
                var path = directory
                var mask = SettingsWatcher.fileEvents
                while true {
                    let watch = inotify_add_watch(descriptor, path, mask | UInt32(IN_ONLYDIR))
                    if watch >= 0 {
                        if path == directory {
                            targets.insert(watch)
                            directoryOf[watch] = directory
                        } else {
                            // The next component below `path` on the way to `directory`.
                            let rest = directory.dropFirst(path == "/" ? 1 : path.count + 1)
                            awaited[watch, default: []].insert(String(rest.prefix { $0 != "/" }))
                        }
                        break
                    }
                    guard errno == ENOENT || errno == ENOTDIR else { break }
                    let parent = POSIX.parentDirectory(of: path)
                    guard !parent.isEmpty, parent != path else { break }
                    path = parent
                    mask = UInt32(IN_CREATE) | UInt32(IN_MOVED_TO)
                }
            }
            for target in targets { awaited[target] = nil }
            // A parent watched only for a directory that now exists would report everything that happens in it.
            for watch in awaitedNames.keys where awaited[watch] == nil && !targets.contains(watch) {
                inotify_rm_watch(descriptor, watch)
            }
            awaitedNames = awaited
        }

        /// Whether an event of `watch` about `name` can change what the directories hold. A parent watch sees
        /// everything that happens in the parent (a home directory, `/etc`): only the names on the way count.
        func matters(watch: Int32, name: String) -> Bool {
            guard let names = awaitedNames[watch] else { return true }
            return names.contains(name)
        }

        /// The path of the file `name` in the directory that `watch` watches itself; `nil` for a parent's watch.
        func path(watch: Int32, name: String) -> String? {
            guard !name.isEmpty, let directory = directoryOf[watch] else { return nil }
            return directory.hasSuffix("/") ? directory + name : directory + "/" + name
        }
    }

    /// Reads the events and calls `changed` once they settle.
    private final class Handler {
        private let eventLoop: EventLoop
        let watches: Watches
        private let changed: @Sendable (Change) -> Void
        private var scheduled: Scheduled<Void>?
        /// What changed since the last report.
        private var pending: Change = .files([])
        /// The descriptor is closed: no more watches are added to it and no change is reported.
        private var stopped = false

        init(
            eventLoop: EventLoop, descriptor: Int32, directories: [String],
            changed: @escaping @Sendable (Change) -> Void
        ) {
            self.eventLoop = eventLoop
            self.watches = Watches(descriptor: descriptor, directories: directories)
            self.changed = changed
        }

        func stop() {
            stopped = true
            scheduled?.cancel()
            scheduled = nil
        }

        func received(_ events: ByteBuffer) {
            var buffer = events
            var relevant = false
            // struct inotify_event: int wd; uint32_t mask, cookie, len; char name[len], NUL-padded.
            while buffer.readableBytes >= 16 {
                let start = buffer.readerIndex
                guard let watch = buffer.getInteger(at: start, endianness: .host, as: Int32.self),
                    let mask = buffer.getInteger(at: start + 4, endianness: .host, as: UInt32.self),
                    let length = buffer.getInteger(at: start + 12, endianness: .host, as: UInt32.self)
                else { break }
                let nameBytes =
                    buffer.getBytes(at: start + 16, length: min(Int(length), buffer.readableBytes - 16)) ?? []
                buffer.moveReaderIndex(forwardBy: min(buffer.readableBytes, 16 + Int(length)))
                // A new file is read once it is closed after writing; a new directory at once.
                if mask & UInt32(IN_CREATE) != 0 && mask & UInt32(IN_ISDIR) == 0 { continue }
                let name = String(decoding: nameBytes.prefix { $0 != 0 }, as: UTF8.self)
                guard watches.matters(watch: watch, name: name) else { continue }
                relevant = true
                // A file of a watched directory; anything else (a directory, the directory itself, a parent on the
                // way to a missing one, a lost event) reads everything again.
                if mask & UInt32(IN_ISDIR) == 0, mask & UInt32(IN_Q_OVERFLOW) == 0,
                    let path = watches.path(watch: watch, name: name), case .files(var paths) = pending
                {
                    paths.insert(path)
                    pending = .files(paths)
                } else {
                    pending = .all
                }
            }
            guard relevant, scheduled == nil, !stopped else { return }
            scheduled = eventLoop.assumeIsolated().scheduleTask(in: SettingsWatcher.settleTime) { [self] in
                scheduled = nil
                let change = pending
                pending = .files([])
                watches.add()
                changed(change)
            }
        }
    }
}
