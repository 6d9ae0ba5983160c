import Foundation

extension NotificationCenter: ReactiveExtensionProvider {}

extension Reactive where Base: NotificationCenter {
    /// The notifications named `name` (from `object`, or from any sender when `nil`) posted to this
    /// center while observed.
    ///
    /// Each observer registers with the center when it starts observing and is removed when its
    /// disposable is disposed. Notifications arrive on the posting thread, in posting order.
    public func notification(name: Notification.Name, object: AnyObject? = nil) -> Signal<Notification> {
        let center = UncheckedSendable(base)
        let sender = UncheckedSendable(object)
        return Signal { observer in
            let target = UncheckedSendable(observer)
            let token = center.value.addObserver(forName: name, object: sender.value, queue: nil) { notification in
                target.value(.next(notification))
            }
            let registration = UncheckedSendable(token)
            return BlockDisposable { center.value.removeObserver(registration.value) }
        }
    }
}
