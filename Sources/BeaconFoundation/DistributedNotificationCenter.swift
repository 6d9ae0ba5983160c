import BeaconClient
import BeaconProtocol
import Foundation
import Signals
import Synchronization

#if !canImport(Darwin)
    /// Notifications between processes, with the shape of macOS's `DistributedNotificationCenter`, carried by the
    /// user's beacond: code written for the Mac builds and works on Linux with `import BeaconFoundation`.
    ///
    /// ```swift
    /// let center = DistributedNotificationCenter.default()
    /// let token = center.addObserver(forName: .init("com.example.sync.done"), object: nil, queue: .main) { note in
    ///     print(note.userInfo?["count"] ?? 0)
    /// }
    /// center.post(name: .init("com.example.sync.done"), object: "inbox", userInfo: ["count": 3])
    /// center.removeObserver(token)
    /// ```
    ///
    /// A notification's name is a Beacon name (dot-separated words: `com.example.sync.done`); `object` is a string;
    /// `userInfo` holds property-list values, which arrive as they were sent (``PropertyListJSON``). A name or a
    /// `userInfo` that cannot be sent is reported on ``errors`` and not posted. Posts go out in the order they are
    /// made, without waiting for the daemon.
    open class DistributedNotificationCenter: @unchecked Sendable {
        /// What an observer's notifications become while the center is ``suspended``.
        public enum SuspensionBehavior: Sendable, Hashable, CaseIterable {
            case drop, coalesce, hold, deliverImmediately

            var beacon: BeaconClient.SuspensionBehavior {
                switch self {
                case .drop: .drop
                case .coalesce: .coalesce
                case .hold: .hold
                case .deliverImmediately: .deliverImmediately
                }
            }
        }

        /// Options of a post.
        public struct Options: OptionSet, Sendable {
            public let rawValue: UInt
            public init(rawValue: UInt) { self.rawValue = rawValue }
            /// Reach suspended observers at once, after what they kept.
            public static let deliverImmediately = Options(rawValue: 1 << 0)
            /// Accepted for the Mac's sake; every notification is posted to every user's process of this bus.
            public static let postToAllSessions = Options(rawValue: 1 << 1)
        }

        /// The client that carries the notifications.
        public let client: BeaconClient
        private let observers = Mutex<[ObjectIdentifier: any Disposable]>([:])
        private let suspension = Mutex(false)

        private static let shared = Mutex<DistributedNotificationCenter?>(nil)

        /// The center of this process, on the user's daemon (`BEACON_ADDRESS`, else `$XDG_RUNTIME_DIR/beacon.sock`).
        /// It connects when first used. Without an address to use (no `XDG_RUNTIME_DIR` nor `BEACON_ADDRESS`), it
        /// stops the program: there is no bus to post to.
        open class func `default`() -> DistributedNotificationCenter {
            shared.withLock { center in
                if let center { return center }
                do {
                    let made = DistributedNotificationCenter(client: try BeaconClient.unconnected())
                    center = made
                    return made
                } catch {
                    fatalError("DistributedNotificationCenter: no Beacon daemon address: \(error)")
                }
            }
        }

        /// A center on `client`.
        public init(client: BeaconClient) {
            self.client = client
        }

        /// Names, userInfo values and connections that failed, as the client reports them.
        public var errors: Signal<BeaconError> { client.errors }

        /// While true, observers get their notifications as their ``SuspensionBehavior`` says (by default:
        /// coalesced), and notifications posted with ``Options/deliverImmediately`` at once. To have delivery follow
        /// the session as AppKit has it follow the app (suspended while the session is locked, asleep or another
        /// user's), make the center with a client whose `BeaconClient.Options.suspendsWhileSessionInactive` is set.
        open var suspended: Bool {
            get { suspension.withLock { $0 } }
            set {
                let changed = suspension.withLock { suspended in
                    defer { suspended = newValue }
                    return suspended != newValue
                }
                guard changed else { return }
                if newValue { client.suspend() } else { client.resume() }
            }
        }

        // MARK: Observing

        /// Calls `block` for each notification named `name` (every one when `nil`) posted with `object` (any when
        /// `nil`), on `queue` when one is given, else on the client's thread. Returns the token for
        /// ``removeObserver(_:)``.
        @discardableResult
        open func addObserver(
            forName name: Notification.Name?, object: String?, queue: OperationQueue?,
            using block: @escaping @Sendable (Notification) -> Void
        ) -> any NSObjectProtocol {
            addObserver(forName: name, object: object, suspensionBehavior: .coalesce, queue: queue, using: block)
        }

        /// As ``addObserver(forName:object:queue:using:)``, with what becomes of the notifications while the center
        /// is suspended.
        @discardableResult
        open func addObserver(
            forName name: Notification.Name?, object: String?, suspensionBehavior: SuspensionBehavior,
            queue: OperationQueue?, using block: @escaping @Sendable (Notification) -> Void
        ) -> any NSObjectProtocol {
            let token = ObserverToken()
            let signal = client.notifications(
                matching: [name?.rawValue ?? "**"], object: object, whileSuspended: suspensionBehavior.beacon)
            let subscription = signal.observeNext { note in
                // A Notification is not Sendable (its userInfo holds Any); this one is made here and handed over once.
                nonisolated(unsafe) let notification = Self.notification(note)
                if let queue {
                    queue.addOperation { block(notification) }
                } else {
                    block(notification)
                }
            }
            observers.withLock { $0[ObjectIdentifier(token)] = subscription }
            return token
        }

        /// Stops the observer that `observer` (a token of ``addObserver(forName:object:queue:using:)``) stands for.
        open func removeObserver(_ observer: Any) {
            guard let token = observer as? ObserverToken else { return }
            observers.withLock { $0.removeValue(forKey: ObjectIdentifier(token)) }?.dispose()
        }

        /// The notifications named `name` posted with `object` (any when `nil`), as an `AsyncSequence`, like
        /// `NotificationCenter`'s.
        open func notifications(named name: Notification.Name, object: String? = nil) -> AsyncStream<Notification> {
            let signal = client.notifications(matching: [name.rawValue], object: object, whileSuspended: .coalesce)
            return AsyncStream { continuation in
                let subscription = signal.observeNext { note in continuation.yield(Self.notification(note)) }
                continuation.onTermination = { _ in subscription.dispose() }
            }
        }

        // MARK: Posting

        /// Posts `name` to every observer of the user's processes.
        open func post(name: Notification.Name, object: String?, userInfo: [AnyHashable: Any]? = nil) {
            postNotificationName(name, object: object, userInfo: userInfo, options: [])
        }

        open func post(_ notification: Notification) {
            postNotificationName(
                notification.name, object: notification.object as? String, userInfo: notification.userInfo,
                options: [])
        }

        open func postNotificationName(
            _ name: Notification.Name, object: String?, userInfo: [AnyHashable: Any]? = nil,
            deliverImmediately: Bool = false
        ) {
            postNotificationName(
                name, object: object, userInfo: userInfo, options: deliverImmediately ? .deliverImmediately : [])
        }

        open func postNotificationName(
            _ name: Notification.Name, object: String?, userInfo: [AnyHashable: Any]?, options: Options
        ) {
            var info: JSONValue?
            if let userInfo {
                guard let converted = PropertyListJSON.json(userInfo) else {
                    client.reportUnsentPost(
                        name.rawValue, reason: "its userInfo holds a value that is not a property-list value")
                    return
                }
                info = converted
            }
            client.send(
                name.rawValue, userInfo: info, object: object,
                deliverImmediately: options.contains(.deliverImmediately))
        }

        /// A Beacon notification as Foundation's.
        static func notification(_ note: BeaconNotification) -> Notification {
            var userInfo: [AnyHashable: Any]?
            if let info = note.userInfo, case .object(let members) = info {
                userInfo = [:]
                for (key, value) in members { userInfo?[key] = PropertyListJSON.value(value) }
                if let wrapped = PropertyListJSON.value(info) as? [String: Any], members["$dictionary"] != nil {
                    userInfo = wrapped
                }
            }
            return Notification(name: Notification.Name(note.name), object: note.object, userInfo: userInfo)
        }
    }

    /// The token of one observer.
    private final class ObserverToken: NSObject, @unchecked Sendable {}
#endif
