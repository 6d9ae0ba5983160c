// dnc-bench: post -> observer latency through DistributedNotificationCenter (BeaconFoundation), beside the same
// round through BeaconClient's own notifications, and beside a NotificationCenter.default post in one process for
// scale. Two clients of the daemon at SOCKET in this process: one posts, the other observes; each post waits for its
// delivery before the next. The three kinds alternate in blocks of 100, ROUNDS in all for each.
//
// usage: dnc-bench SOCKET [ROUNDS]     prints RESULT|beacond|TEST|us|VALUE lines and the ratio
import BeaconClient
import BeaconFoundation
import Dispatch
import Foundation
import Synchronization

let arguments = CommandLine.arguments
guard arguments.count >= 2 else {
    FileHandle.standardError.write(Data("usage: dnc-bench SOCKET [ROUNDS]\n".utf8))
    exit(2)
}
let address = BeaconAddress(socketPath: arguments[1])
let rounds = arguments.count > 2 ? Int(arguments[2]) ?? 2000 : 2000

/// The time of the latest delivery, signalled to the waiting poster.
final class Arrival: @unchecked Sendable {
    private let semaphore = DispatchSemaphore(value: 0)
    private let lock = NSLock()
    private var at: UInt64 = 0
    func arrived() {
        lock.withLock { at = DispatchTime.now().uptimeNanoseconds }
        semaphore.signal()
    }
    /// The time of a delivery at or after `start` (an earlier one is a late warm-up delivery, skipped); `nil`
    /// after 10 s without one.
    func wait(after start: UInt64 = 0) -> UInt64? {
        while semaphore.wait(timeout: .now() + 10) == .success {
            let time = lock.withLock { at }
            if time >= start { return time }
        }
        return nil
    }
}

func percentile(_ values: [Double], _ fraction: Double) -> Double {
    let sorted = values.sorted()
    return sorted[min(sorted.count - 1, Int(fraction * Double(sorted.count)))]
}

/// The measurement, away from the main actor: the observers' closures run on the clients' threads.
nonisolated func measure(address: BeaconAddress, rounds: Int) async throws {
    let posterClient = try await BeaconClient.connect(to: address)
    let observerClient = try await BeaconClient.connect(to: address)
    let poster = DistributedNotificationCenter(client: posterClient)
    let observer = DistributedNotificationCenter(client: try await BeaconClient.connect(to: address))

    let direct = Arrival()
    let viaCenter = Arrival()
    let local = Arrival()
    let subscription = observerClient.notifications("bench.client").observeNext { _ in direct.arrived() }
    let token = observer.addObserver(forName: .init("bench.center"), object: nil, queue: nil) { _ in
        viaCenter.arrived()
    }
    let localToken = NotificationCenter.default.addObserver(forName: .init("bench.local"), object: nil, queue: nil) {
        _ in local.arrived()
    }
    // Both streams are up once a post of each comes through.
    for _ in 0..<50 {
        posterClient.send("bench.client")
        poster.post(name: .init("bench.center"), object: nil)
        if direct.wait() != nil && viaCenter.wait() != nil { break }
    }
    var samples: [String: [Double]] = ["client": [], "center": [], "local": []]
    var done = 0
    while done < rounds {
        for kind in ["client", "center", "local"] {
            for _ in 0..<min(100, rounds - done) {
                let start = DispatchTime.now().uptimeNanoseconds
                let end: UInt64?
                switch kind {
                case "client":
                    posterClient.send("bench.client", userInfo: ["n": 1])
                    end = direct.wait(after: start)
                case "center":
                    poster.post(name: .init("bench.center"), object: nil, userInfo: ["n": 1])
                    end = viaCenter.wait(after: start)
                default:
                    NotificationCenter.default.post(name: .init("bench.local"), object: nil, userInfo: ["n": 1])
                    end = local.wait(after: start)
                }
                guard let end else {
                    FileHandle.standardError.write(Data("dnc-bench: a \(kind) post was not delivered\n".utf8))
                    exit(1)
                }
                samples[kind, default: []].append(Double(end - start) / 1000)
            }
        }
        done += min(100, rounds - done)
    }
    subscription.dispose()
    observer.removeObserver(token)
    NotificationCenter.default.removeObserver(localToken)
    let labels = [
        "client": "Post -> observer, BeaconClient notifications",
        "center": "Post -> observer, DistributedNotificationCenter",
        "local": "Post -> observer, NotificationCenter.default in one process",
    ]
    for kind in ["client", "center", "local"] {
        let values = samples[kind]!
        print("RESULT|beacond|\(labels[kind]!) p50|us|\(percentile(values, 0.5))")
        print("RESULT|beacond|\(labels[kind]!) p99|us|\(percentile(values, 0.99))")
    }
    let ratio = percentile(samples["center"]!, 0.5) / percentile(samples["client"]!, 0.5)
    print("ratio p50, DistributedNotificationCenter / BeaconClient (goal <= 1.2): \(ratio)")
}

Task.detached {
    do {
        try await measure(address: address, rounds: rounds)
        exit(0)
    } catch {
        FileHandle.standardError.write(Data("dnc-bench: \(error)\n".utf8))
        exit(1)
    }
}
dispatchMain()
