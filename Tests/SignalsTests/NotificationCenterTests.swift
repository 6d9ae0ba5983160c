import Foundation
import Signals
import SignalsFoundation
import Testing

@Suite("NotificationCenter")
struct NotificationCenterTests {
    @Test func notificationCenterSignal() {
        let center = NotificationCenter()
        let name = Notification.Name("signals.test")
        let recorder = Recorder<String>()
        let disposable = center.reactive.notification(name: name).observeNext { notification in
            recorder.append(notification.name.rawValue)
        }
        center.post(name: name, object: nil)
        center.post(name: Notification.Name("other"), object: nil)
        disposable.dispose()
        center.post(name: name, object: nil)
        #expect(recorder.values == ["signals.test"])
    }
}
