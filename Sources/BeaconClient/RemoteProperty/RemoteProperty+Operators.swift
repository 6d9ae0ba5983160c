import Signals

/// Keeps a local property and a remote key equal, in both directions, with compare-and-set; see
/// ``RemoteProperty/bidirectionalBind(to:)``. With a remote property on either side, the local property first takes
/// the daemon's value: what the daemon stores is the state other programs see.
///
/// ```swift
/// model.title <~> client.property("doc.title", as: String.self, default: "")
/// ```
@discardableResult
public func <~> <Value>(local: Property<Value>, remote: RemoteProperty<Value>) -> any Disposable {
    remote.bidirectionalBind(to: local)
}

/// `remote <~> local`: the same as `local <~> remote`.
@discardableResult
public func <~> <Value>(remote: RemoteProperty<Value>, local: Property<Value>) -> any Disposable {
    remote.bidirectionalBind(to: local)
}
