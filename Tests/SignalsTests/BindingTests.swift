import Foundation
import Signals
import Testing

@Suite("Bindings")
struct BindingTests {
    @Test func reactiveTargetReceivesValues() {
        let label = Label()
        let subject = PassthroughSubject<String>()
        label.reactive.text <~ subject
        subject.send("hello")
        #expect(label.text == "hello")
        #expect(label.setCount == 1)
    }

    @Test func bindingEndsWithOwner() {
        let subject = PassthroughSubject<String>()
        weak var weakLabel: Label?
        do {
            let label = Label()
            weakLabel = label
            label.reactive.text <~ subject.map { $0.uppercased() }
            subject.send("a")
            #expect(label.text == "A")
            #expect(subject.observerCount == 1)
        }
        #expect(weakLabel == nil)
        #expect(subject.observerCount == 0)
    }

    @Test func bindToSetterEndsWithOwner() {
        let property = Property(1)
        weak var weakLabel: Label?
        do {
            let label = Label()
            weakLabel = label
            property.map(String.init).bind(to: label) { label, text in label.text = text }
            #expect(label.text == "1")
            property.value = 2
            #expect(label.text == "2")
        }
        #expect(weakLabel == nil)
        #expect(property.observerCount == 0)
    }

    @Test func bindToKeyPath() {
        let label = Label()
        let subject = PassthroughSubject<String>()
        subject.bind(to: label, \.text)
        subject.bind(to: label, \.optionalText)
        subject.send("x")
        #expect(label.text == "x")
        #expect(label.optionalText == "x")
    }

    @Test func bindingToPlainObjectEndsOnFirstValueAfterRelease() {
        let subject = PassthroughSubject<Int>()
        weak var weakTarget: Plain?
        do {
            let target = Plain()
            weakTarget = target
            subject.bind(to: target, \.value)
            subject.send(3)
            #expect(target.value == 3)
        }
        #expect(weakTarget == nil)
        #expect(subject.observerCount == 1)
        subject.send(4)
        #expect(subject.observerCount == 0)
    }

    @Test func disposingBindingStopsIt() {
        let label = Label()
        let subject = PassthroughSubject<String>()
        let binding = label.reactive.text <~ subject
        binding.dispose()
        subject.send("x")
        #expect(label.text == "")
        #expect(subject.observerCount == 0)
    }

    @Test func outputBindingToClosureAndSubject() {
        let source = PassthroughSubject<Int>()
        let sink = PassthroughSubject<Int>()
        let recorder = Recorder<Int>()
        let bag = DisposeBag()
        source ~> sink
        (sink ~> { recorder.append($0) }).dispose(in: bag)
        source.send(1)
        source.send(2)
        #expect(recorder.values == [1, 2])
        bag.dispose()
        source.send(3)
        #expect(recorder.values == [1, 2])
    }

    @Test func propertyInputBindingEndsWithProperty() {
        let source = PassthroughSubject<Int>()
        weak var weakProperty: Property<Int>?
        do {
            let property = Property(0)
            weakProperty = property
            property <~ source
            source.send(5)
            #expect(property.value == 5)
        }
        #expect(weakProperty == nil)
        #expect(source.observerCount == 0)
    }

    @Test func optionalTargetAcceptsNonOptionalSignal() {
        let property = Property<String?>(nil)
        let source = PassthroughSubject<String>()
        property <~ source
        source.send("v")
        #expect(property.value == "v")
    }

    @Test func bindingOnQueueContext() {
        let label = Label()
        let queue = DispatchQueue(label: "binding-test")
        let subject = PassthroughSubject<String>()
        BindingTarget<String>(object: label, \.text, context: .queue(queue)) <~ subject
        subject.send("later")
        queue.sync {}
        #expect(label.text == "later")
    }

    @Test func bidirectionalBindingHasNoFeedbackLoop() {
        let a = Property(1)
        let b = Property(0)
        let aValues = Recorder<Int>()
        let bValues = Recorder<Int>()
        a.observeNext { aValues.append($0) }
        b.observeNext { bValues.append($0) }
        a.bidirectionalBind(to: b)
        #expect(b.value == 1)
        a.value = 2
        b.value = 3
        #expect(a.value == 3)
        #expect(b.value == 3)
        #expect(aValues.values == [1, 2, 3])
        #expect(bValues.values == [0, 1, 2, 3])
    }

    @Test func twoWayOperatorTakesTheRightSideFirstAndHasNoFeedbackLoop() {
        let model = Property("model")
        let field = Property("field")
        let values = Recorder<String>()
        model.observeNext { values.append($0) }
        let binding = model <~> field
        #expect(model.value == "field")
        field.value = "typed"
        #expect(model.value == "typed")
        model.value = "loaded"
        #expect(field.value == "loaded")
        #expect(values.values == ["model", "field", "typed", "loaded"])
        binding.dispose()
        field.value = "after"
        #expect(model.value == "loaded")
    }

    @Test func bidirectionalBindingEndsWhenEitherSideGoes() {
        let a = Property(1)
        weak var weakB: Property<Int>?
        do {
            let b = Property(0)
            weakB = b
            a.bidirectionalBind(to: b)
            a.value = 4
            #expect(b.value == 4)
        }
        #expect(weakB == nil)
        #expect(a.observerCount == 0)
    }

    @Test func bidirectionalBindingDisposes() {
        let a = Property(1)
        let b = Property(1)
        let binding = a.bidirectionalBind(to: b)
        binding.dispose()
        a.value = 9
        #expect(b.value == 1)
        #expect(a.observerCount == 0)
        #expect(b.observerCount == 0)
    }

    @Test func disposeBagEndsObservationsOnDeinit() {
        let subject = PassthroughSubject<Int>()
        do {
            let bag = DisposeBag()
            subject.observeNext { _ in }.dispose(in: bag)
            bag += subject.observeNext { _ in }
            #expect(subject.observerCount == 2)
        }
        #expect(subject.observerCount == 0)
    }
}
