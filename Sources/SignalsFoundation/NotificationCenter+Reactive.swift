import Foundation
import Signals

extension NotificationCenter: ReactiveExtensionProvider {}

extension Reactive where Base: NotificationCenter {
    /// The notifications named `name` (from `object`, or from any sender when `nil`) posted to this
    /// center while observed.
    ///
    /// Each observer registers with the center when it starts observing and is removed when its
    /// disposable is disposed. Notifications arrive on the posting thread, in posting order.
    public func notification(name: Notification.Name, object: AnyObject? = nil) -> Signal<Notification> {
        let center = Unchecked(base)
        let sender = Unchecked(object)
        return Signal { observer in
            let target = Unchecked(observer)
            let token = center.value.addObserver(forName: name, object: sender.value, queue: nil) { notification in
                target.value(.next(notification))
            }
            let registration = Unchecked(token)
            return BlockDisposable { center.value.removeObserver(registration.value) }
        }
    }
}

/// Carries the center, the sender, the observer and the registration token into the `@Sendable`
/// closures above: `NotificationCenter` is thread-safe, and the observer is called on the posting
/// thread as every signal documents.
private struct Unchecked<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}
