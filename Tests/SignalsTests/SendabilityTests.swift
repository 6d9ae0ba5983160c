import Signals
import Testing

/// Compiles only for a `Sendable` argument.
private func requireSendable<T: Sendable>(_: T) {}

/// Whether `T` is `Sendable`, decided at compile time: the constrained overload wins when it applies.
private func isSendable<T>(_: T.Type) -> Bool { false }
private func isSendable<T: Sendable>(_: T.Type) -> Bool { true }

/// A class that is not `Sendable`.
private final class NotSendable {
    var value = 0
}

@Suite("Sendability")
struct SendabilityTests {
    @Test func typesOfSendableValuesAreSendable() {
        requireSendable(Property(1))
        requireSendable(Property(1).readOnly)
        requireSendable(PassthroughSubject<Int>())
        requireSendable(MutableObservableArray([1, 2]))
        requireSendable(MutableObservableArray([1, 2]).readOnly)
        requireSendable(MutableObservableSectionedArray<String, Int>())
        requireSendable(ObservableArrayEvent<Int>.reset(to: [1]))
        requireSendable(Event<Int>.next(1))
    }

    @Test func typesThatHoldNoElementAreSendable() {
        requireSendable(CompositeDisposable())
        requireSendable(SerialDisposable())
        requireSendable(DisposeBag())
        requireSendable(BlockDisposable {})
        requireSendable(ManualClock())
    }

    @Test func typesOfNonSendableValuesAreNotSendable() {
        #expect(!isSendable(Property<NotSendable>.self))
        #expect(!isSendable(AnyProperty<NotSendable>.self))
        #expect(!isSendable(PassthroughSubject<NotSendable>.self))
        #expect(!isSendable(MutableObservableArray<NotSendable>.self))
        #expect(!isSendable(ObservableArray<NotSendable>.self))
        #expect(!isSendable(MutableObservableSectionedArray<String, NotSendable>.self))
        #expect(!isSendable(MutableObservableSectionedArray<NotSendable, Int>.self))
        #expect(isSendable(Property<Int>.self))
        #expect(isSendable(MutableObservableSectionedArray<String, Int>.self))
    }

    @Test func nonSendableValuesWorkWithinOneIsolationDomain() {
        let property = Property(NotSendable())
        let array = MutableObservableArray<NotSendable>()
        var seen: [Int] = []
        let observation = property.observeNext { seen.append($0.value) }
        let replacement = NotSendable()
        replacement.value = 1
        property.value = replacement
        array.append(replacement)
        #expect(seen == [0, 1])
        #expect(array.array.map(\.value) == [1])
        observation.dispose()
    }

    @Test func propertyOfSendableValueIsWrittenFromAnotherTask() async {
        let property = Property(0)
        let recorder = Recorder<Int>()
        recorder.observe(property)
        await Task.detached { property.value = 1 }.value
        #expect(property.value == 1)
        #expect(recorder.values == [0, 1])
    }
}
