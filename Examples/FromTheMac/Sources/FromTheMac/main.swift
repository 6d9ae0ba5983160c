// Two copies of this program find each other: each posts a distributed notification and counts up a value in a
// shared defaults suite, until it has seen the other's notification and a change the other made to the suite. Each
// then marks itself done with the other's run in the suite, and leaves once the other is done with its own run (so a
// suite left by earlier runs does not end this one early).
//
//     FromTheMac alice bob & FromTheMac bob alice
//
// Everything below is macOS's Foundation. On Linux, the lines inside `#if canImport(BeaconFoundation)` are the
// whole port.
import Foundation

#if canImport(BeaconFoundation)
    import BeaconFoundation

    typealias UserDefaults = BeaconUserDefaults
#endif

let arguments = CommandLine.arguments
guard arguments.count == 3 else {
    FileHandle.standardError.write(Data("usage: FromTheMac <own name> <the other's name>\n".utf8))
    exit(2)
}
let me = arguments[1]
let other = arguments[2]
let hello = Notification.Name("com.example.fromthemac.hello")

guard let defaults = UserDefaults(suiteName: "com.example.fromthemac") else {
    FileHandle.standardError.write(Data("FromTheMac: the defaults suite is not available\n".utf8))
    exit(1)
}

/// What this copy has seen, from the observers' threads and the main loop.
final class Seen: @unchecked Sendable {
    private let lock = NSLock()
    private var greeting: String?
    private var otherRun: String?
    private var otherCount: Int?
    private var countChanges = 0
    private var changeNotifications = 0

    func greeted(_ text: String, run: String) {
        lock.withLock {
            greeting = greeting ?? text
            otherRun = otherRun ?? run
        }
    }

    func defaultsChanged() { lock.withLock { changeNotifications += 1 } }

    /// Whether the defaults said they changed since the last time this was asked.
    func takeChanges() -> Bool {
        lock.withLock {
            defer { changeNotifications = 0 }
            return changeNotifications > 0
        }
    }

    /// Counts the changes of the other copy's count, as the defaults read after a change notification.
    func read(_ count: Int) {
        lock.withLock {
            if count != 0, count != otherCount {
                if otherCount != nil { countChanges += 1 }
                otherCount = count
            }
        }
    }

    var finding: (greeting: String?, otherRun: String?, countChanges: Int) {
        lock.withLock { (greeting, otherRun, countChanges) }
    }
}
let seen = Seen()

let greetings = DistributedNotificationCenter.default().addObserver(forName: hello, object: other, queue: nil) {
    note in
    let sent = note.userInfo?["sent"] as? Date
    let count = note.userInfo?["count"] as? Int
    guard let run = note.userInfo?["run"] as? String else { return }
    seen.greeted(
        "\(other) says hello (count \(count.map(String.init) ?? "?"), sent \(sent != nil ? "with" : "without") a date)",
        run: run)
}
let changes = NotificationCenter.default.addObserver(
    forName: UserDefaults.didChangeNotification, object: defaults, queue: nil
) { _ in
    seen.defaultsChanged()
}

seen.read(defaults.integer(forKey: "count.\(other)"))
let run = UUID().uuidString
var count = 0
var announced = false
let deadline = Date(timeIntervalSinceNow: 30)
while Date() < deadline {
    count += 1
    defaults.set(count, forKey: "count.\(me)")
    DistributedNotificationCenter.default().postNotificationName(
        hello, object: me, userInfo: ["count": count, "sent": Date(), "run": run], deliverImmediately: true)
    if seen.takeChanges() { seen.read(defaults.integer(forKey: "count.\(other)")) }
    let finding = seen.finding
    if let greeting = finding.greeting, let otherRun = finding.otherRun, finding.countChanges > 0 {
        if !announced {
            print(greeting)
            print("\(me) saw \(other)'s count change \(finding.countChanges) times")
            defaults.set(otherRun, forKey: "done.\(me)")
            announced = true
        }
        if defaults.string(forKey: "done.\(other)") == run {
            print("\(me) and \(other) are both done")
            DistributedNotificationCenter.default().removeObserver(greetings)
            NotificationCenter.default.removeObserver(changes)
            exit(0)
        }
    }
    Thread.sleep(forTimeInterval: 0.1)
}
FileHandle.standardError.write(Data("FromTheMac: \(me) did not find \(other) within 30 s\n".utf8))
exit(1)
