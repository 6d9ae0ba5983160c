extension MutableObservableArray: BindableProtocol {
    /// Makes this array hold the arrays `signal` sends, passing each change set on to this array's
    /// observers (see ``SignalProtocol/bindCollection(to:)``), so that
    /// `list <~ source.filterCollection { … }` keeps fine-grained changes.
    @discardableResult
    public func bind(signal: Signal<ObservableArrayEvent<Item>>) -> any Disposable {
        signal.bindCollection(to: self)
    }
}
