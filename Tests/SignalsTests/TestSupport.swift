import Dispatch
import Foundation
import Signals

/// Collects values from any thread and lets a test wait, with a deadline, for a number of them.
final class Recorder<Value> {
    private let condition = NSCondition()
    private var storage: [Value] = []
    private var completions = 0
    private var waiters: [(count: Int, resume: (Bool) -> Void)] = []

    var values: [Value] {
        condition.lock()
        defer { condition.unlock() }
        return storage
    }

    var completionCount: Int {
        condition.lock()
        defer { condition.unlock() }
        return completions
    }

    var count: Int { values.count }

    func append(_ value: Value) {
        condition.lock()
        storage.append(value)
        let count = storage.count
        let ready = waiters.filter { $0.count <= count }
        waiters.removeAll { $0.count <= count }
        condition.broadcast()
        condition.unlock()
        for waiter in ready { waiter.resume(true) }
    }

    func record(_ event: Event<Value>) {
        switch event {
        case .next(let value): append(value)
        case .completed:
            condition.lock()
            completions += 1
            condition.broadcast()
            condition.unlock()
        }
    }

    /// Observes `signal`, recording its events.
    @discardableResult
    func observe<S: SignalProtocol>(_ signal: S) -> any Disposable where S.Element == Value {
        signal.observe { [self] event in record(event) }
    }

    /// Blocks the calling thread until `count` values arrived or `timeout` passed.
    func wait(forCount count: Int, timeout: TimeInterval = 10) -> Bool {
        let deadline = Date(timeIntervalSinceNow: timeout)
        condition.lock()
        defer { condition.unlock() }
        while storage.count < count {
            if !condition.wait(until: deadline) { return storage.count >= count }
        }
        return true
    }

    /// Suspends until `count` values arrived or `timeout` passed, without blocking a thread.
    func waitAsync(forCount count: Int, timeout: TimeInterval = 60) async -> Bool {
        await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            let once = Once(continuation)
            condition.lock()
            if storage.count >= count {
                condition.unlock()
                once.resume(true)
                return
            }
            waiters.append((count, { once.resume($0) }))
            condition.unlock()
            DispatchQueue.global().asyncAfter(deadline: .now() + timeout) { once.resume(false) }
        }
    }
}

// Sendable: all state is guarded by `condition`.
extension Recorder: @unchecked Sendable where Value: Sendable {}

/// Resumes a continuation at most once.
final class Once: @unchecked Sendable {
    // Sendable: `continuation` is taken under `lock`.
    private let lock = NSLock()
    private var continuation: CheckedContinuation<Bool, Never>?

    init(_ continuation: CheckedContinuation<Bool, Never>) {
        self.continuation = continuation
    }

    func resume(_ value: Bool) {
        lock.lock()
        let taken = continuation
        continuation = nil
        lock.unlock()
        taken?.resume(returning: value)
    }
}

/// A user-interface-like object for binding tests.
final class Label: BindingOwner, ReactiveExtensionProvider {
    let bag = DisposeBag()
    var text: String = ""
    var optionalText: String?
    var setCount = 0
}

extension Reactive where Base: Label {
    var text: BindingTarget<String> {
        BindingTarget(object: base) { label, text in
            label.text = text
            label.setCount += 1
        }
    }
}

/// A plain class that is not a binding owner.
final class Plain {
    var value = 0
}

/// Runs `body` on `threads` threads at once and returns when all have finished.
func concurrently(threads: Int, _ body: @escaping @Sendable (Int) -> Void) {
    DispatchQueue.concurrentPerform(iterations: threads, execute: body)
}
