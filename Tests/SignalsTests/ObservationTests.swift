import Dispatch
import Observation
import Signals
import Testing

@Observable
final class Model: @unchecked Sendable {
    // Sendable: only mutated on the queue the test hands to the property.
    var title = "start"
    var count = 0
}

@Suite("Observation key paths")
struct ObservationTests {
    @Test func deliversCurrentValueThenEveryChangeWithNewValue() {
        let queue = DispatchQueue(label: "model")
        let model = Model()
        let title = queue.sync { model.property(\.title, queue: queue) }
        let recorder = Recorder<String>()
        let disposable = title.observeNext { recorder.append($0) }
        let changes = (1...50).map { "title \($0)" }
        for (index, change) in changes.enumerated() {
            queue.async { model.title = change }
            // The next change waits for this one's delivery, so none can be folded into another.
            #expect(recorder.wait(forCount: 2 + index))
        }
        #expect(recorder.values == ["start"] + changes)
        #expect(title.value == "title 50")
        disposable.dispose()
    }

    @Test func burstOfChangesEndsWithTheFinalValue() {
        let queue = DispatchQueue(label: "model")
        let model = Model()
        let count = queue.sync { model.property(\.count, queue: queue) }
        let recorder = Recorder<Int>()
        let disposable = count.observeNext { recorder.append($0) }
        for value in 1...200 {
            queue.async { model.count = value }
        }
        let done = Recorder<Bool>()
        let watcher = count.observeNext { if $0 == 200 { done.append(true) } }
        #expect(done.wait(forCount: 1))
        queue.sync {}
        let values = recorder.values
        #expect(values.first == 0)
        #expect(values.last == 200)
        #expect(values == values.sorted())
        #expect(Set(values).count == values.count)
        watcher.dispose()
        disposable.dispose()
    }

    @Test func changesWithinOneStepArriveAsTheLatestValue() {
        let queue = DispatchQueue(label: "model")
        let model = Model()
        let count = queue.sync { AnyProperty(observing: model, \.count, queue: queue) }
        let recorder = Recorder<Int>()
        let disposable = count.observeNext { recorder.append($0) }
        queue.async {
            model.count = 1
            model.count = 2
            model.count = 3
        }
        #expect(recorder.wait(forCount: 2))
        queue.async { model.count = 4 }
        #expect(recorder.wait(forCount: 3))
        queue.sync {}
        #expect(recorder.values == [0, 3, 4])
        disposable.dispose()
    }

    @Test func otherKeyPathsDoNotTrigger() {
        let queue = DispatchQueue(label: "model")
        let model = Model()
        let title = queue.sync { model.property(\.title, queue: queue) }
        let recorder = Recorder<String>()
        let disposable = title.observeNext { recorder.append($0) }
        queue.async { model.count = 7 }
        queue.async { model.title = "changed" }
        #expect(recorder.wait(forCount: 2))
        queue.sync {}
        #expect(recorder.values == ["start", "changed"])
        disposable.dispose()
    }

    @Test @MainActor func mainActorModel() async {
        let model = Model()
        let title = model.property(\.title, queue: .main)
        let recorder = Recorder<String>()
        let disposable = title.observeNext { recorder.append($0) }
        model.title = "one"
        #expect(await recorder.waitAsync(forCount: 2))
        model.title = "two"
        #expect(await recorder.waitAsync(forCount: 3))
        #expect(recorder.values == ["start", "one", "two"])
        disposable.dispose()
    }

    @Test func trackingStopsWithTheModel() {
        let queue = DispatchQueue(label: "model")
        weak var weakModel: Model?
        let title: AnyProperty<String>
        do {
            let model = Model()
            weakModel = model
            title = queue.sync { model.property(\.title, queue: queue) }
            queue.sync { model.title = "last" }
            queue.sync {}
        }
        #expect(weakModel == nil)
        #expect(title.value == "last")
    }
}
