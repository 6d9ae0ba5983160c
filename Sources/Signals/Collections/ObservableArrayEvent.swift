/// One event of an observable array: the array after a change, and the change.
///
/// Applying ``changeSet`` to the array of the previous event (an empty array before the first
/// event) gives ``array``; see ``ArrayChangeSet`` for the index convention.
public struct ObservableArrayEvent<Item> {
    /// The array after the change.
    public var array: [Item]
    /// What changed since the previous event.
    public var changeSet: ArrayChangeSet<Item>

    public init(array: [Item], changeSet: ArrayChangeSet<Item>) {
        self.array = array
        self.changeSet = changeSet
    }

    /// An event that replaces an array of `oldCount` elements with `array`.
    public static func reset(oldCount: Int = 0, to array: [Item]) -> ObservableArrayEvent {
        ObservableArrayEvent(array: array, changeSet: .reset(oldCount: oldCount, to: array))
    }
}

extension ObservableArrayEvent: Sendable where Item: Sendable {}
extension ObservableArrayEvent: Equatable where Item: Equatable {}

/// The events of observable arrays, so that signals of them get the collection operators
/// (``SignalProtocol/mapCollection(_:)``, ``SignalProtocol/filterCollection(_:)``,
/// ``SignalProtocol/bindCollection(to:)``).
public protocol ObservableArrayEventProtocol<Item> {
    associatedtype Item
    /// The array after the change.
    var array: [Item] { get }
    /// What changed since the previous event.
    var changeSet: ArrayChangeSet<Item> { get }
}

extension ObservableArrayEvent: ObservableArrayEventProtocol {}
