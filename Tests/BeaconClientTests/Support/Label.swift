import Signals
import Synchronization

/// A stand-in for a user-interface object: a text that bindings set, and every text it was given.
final class Label: BindingOwner, ReactiveExtensionProvider, Sendable {
    let bag = DisposeBag()
    let texts = Recorder<String>()

    var text: String { texts.values.last ?? "" }
}

extension Reactive where Base: Label {
    var text: BindingTarget<String> {
        BindingTarget(object: base) { label, text in label.texts.append(text) }
    }
}
