import Signals
import Testing

// The example from README.md, kept compiling and true.
private final class ReadmeViewModel {
    let name = Property("")
    let refresh = PassthroughSubject<Void>()
}

private final class ReadmeLabel: ReactiveExtensionProvider, BindingOwner {
    let bag = DisposeBag()
    var text = ""
}

extension Reactive where Base: ReadmeLabel {
    fileprivate var text: BindingTarget<String> {
        BindingTarget(object: base) { label, text in label.text = text }
    }
}

@Suite("README example")
struct ReadmeExampleTests {
    @Test("the binding in the README updates the label and ends with it")
    func readmeExample() {
        let model = ReadmeViewModel()
        var label: ReadmeLabel? = ReadmeLabel()
        weak let weakLabel = label
        label!.reactive.text <~ model.name.map { "Hello, \($0)" }
        var refreshes = 0
        model.refresh ~> { refreshes += 1 }
        model.name.value = "Ada"
        #expect(label?.text == "Hello, Ada")
        model.refresh.send()
        #expect(refreshes == 1)

        label = nil
        #expect(weakLabel == nil)
        #expect(model.name.observerCount == 0)
    }
}
