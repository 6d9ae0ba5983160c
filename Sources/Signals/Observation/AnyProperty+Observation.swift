import Dispatch
import Observation

extension AnyProperty {
    /// A property that follows `keyPath` of an `@Observable` model: its value is the model's value
    /// when created, and then the new value after every change.
    ///
    /// `queue` must be the serial queue on which the model is mutated (`.main` for a model that
    /// lives on the main actor). Observation reports a change before the new value is stored, so the
    /// property reads the value in a step enqueued on `queue` at that moment: that step runs after
    /// the mutating step has finished, so it reads the stored value, and it starts tracking again in
    /// the same step, so no later change goes unnoticed. Every change is therefore followed by the
    /// delivery of a value at least as new as it; changes made before the reading step runs (several
    /// in one step, or steps already waiting on `queue`) arrive as one value, the latest. Observers
    /// are called on `queue`, in the order of the changes.
    ///
    /// Lifetime: the model is held weakly. Tracking stops once the model or the returned property has
    /// been deallocated.
    public init<Model: Observable & AnyObject>(
        observing model: Model, _ keyPath: KeyPath<Model, Value>, queue: DispatchQueue
    ) {
        let tracker = KeyPathTracker(model: model, keyPath: keyPath, queue: queue)
        let property = Property(tracker.track() ?? model[keyPath: keyPath])
        tracker.property = property
        self.init(property)
    }
}

extension Observable where Self: AnyObject {
    /// A read-only property that follows `keyPath` of this model; see
    /// ``AnyProperty/init(observing:_:queue:)``.
    public func property<Value>(_ keyPath: KeyPath<Self, Value>, queue: DispatchQueue) -> AnyProperty<Value> {
        AnyProperty(observing: self, keyPath, queue: queue)
    }
}

/// Re-arms `withObservationTracking` after each change and copies the value into a property.
///
/// Only its step crosses threads, to `queue`: after `init`, `property` is written once before any
/// change can be reported, and every later access happens in steps on `queue`, which is serial.
final class KeyPathTracker<Model: Observable & AnyObject, Value> {
    private weak var model: Model?
    private let keyPath: KeyPath<Model, Value>
    private let queue: DispatchQueue
    weak var property: Property<Value>?

    init(model: Model, keyPath: KeyPath<Model, Value>, queue: DispatchQueue) {
        self.model = model
        self.keyPath = keyPath
        self.queue = queue
    }

    /// Reads the value and tracks it again; nil once the model is gone.
    func track() -> Value? {
        guard let model else { return nil }
        let keyPath = keyPath
        let queue = queue
        let changed = UncheckedSendable({ self.changed() })
        return withObservationTracking {
            model[keyPath: keyPath]
        } onChange: {
            queue.async { changed.value() }
        }
    }

    private func changed() {
        guard let property, let value = track() else { return }
        property.set(value)
    }
}
