/// An array that tells its observers about every change, with the exact change set.
///
/// Observing sends the current array first, as an ``ObservableArrayEvent`` whose change set is a
/// reset from an empty array, and then one event per change. Every event's change set, applied to
/// the previous event's array, gives the event's array (see ``ArrayChangeSet`` for the index
/// convention).
///
/// ```swift
/// let list = MutableObservableArray([1, 2, 3])
/// list.observeNext { event in print(event.array, event.changeSet) }
/// list.append(4)                   // inserts: [3: 4]
/// list.batchUpdate { batch in      // one event for all three edits
///     batch.remove(at: 0)
///     batch.move(from: 0, to: 2)
///     batch[0] = 30
/// }
/// ```
///
/// Threads: every method may be called from any thread. Writes are serialized; reads never wait
/// for a batch in progress. Events reach each observer in the order of the writes, with no lock
/// held, on the thread of a writer (not necessarily the one that made that change: when another
/// thread is already delivering, it delivers the new event too, and the write returns without
/// waiting). An observer may read and write the array; its writes are delivered after the
/// current event has reached every observer.
///
/// Indices out of range stop the program, as they do for `Array`. When the array is deallocated
/// its observers get ``Event/completed``.
///
/// The element type is called `Item` because `Element` names the event type of the signal.
///
/// Sendability: the array is `Sendable` when `Item` is; an array of non-`Sendable` items stays
/// within one isolation domain.
public final class MutableObservableArray<Item>: SignalProtocol {
    public typealias Element = ObservableArrayEvent<Item>

    // All state lives in `stream`, behind its locks.
    let stream: ChangeStream<[Item], ObservableArrayEvent<Item>>

    /// Creates an observable array holding `items`.
    public init(_ items: [Item] = []) {
        stream = ChangeStream(items, owner: "MutableObservableArray") { items in
            .reset(oldCount: 0, to: items)
        }
    }

    deinit {
        stream.complete()
    }

    /// The current elements.
    public var array: [Item] { stream.value }

    /// The number of elements.
    public var count: Int { array.count }

    /// Whether the array is empty.
    public var isEmpty: Bool { array.isEmpty }

    /// The number of observers currently registered.
    public var observerCount: Int { stream.observerCount }

    /// A read-only view of this array.
    public var readOnly: ObservableArray<Item> { ObservableArray(self) }

    /// The element at `index`; setting it replaces the element (an update).
    public subscript(index: Int) -> Item {
        get { array[index] }
        set { replace(at: index, with: newValue) }
    }

    /// Sends the current array (as a reset from an empty array) and then every change to
    /// `observer`.
    @discardableResult
    public func observe(with observer: @escaping (Event<ObservableArrayEvent<Item>>) -> Void) -> any Disposable {
        stream.observe(observer)
    }

    // MARK: Single edits

    /// Adds `item` at the end.
    public func append(_ item: Item) {
        edit { items in
            items.append(item)
            return ArrayChangeSet(inserts: [.init(index: items.count - 1, element: item)])
        }
    }

    /// Adds `items` at the end.
    public func append<S: Sequence>(contentsOf items: S) where S.Element == Item {
        insert(contentsOf: Array(items), at: nil)
    }

    /// Inserts `item` at `index`.
    public func insert(_ item: Item, at index: Int) {
        edit { items in
            precondition(index >= 0 && index <= items.count, "MutableObservableArray: insert index out of range")
            items.insert(item, at: index)
            return ArrayChangeSet(inserts: [.init(index: index, element: item)])
        }
    }

    /// Inserts `items` at `index`, in order.
    public func insert(contentsOf items: [Item], at index: Int) {
        insert(contentsOf: items, at: Optional(index))
    }

    private func insert(contentsOf newItems: [Item], at index: Int?) {
        guard !newItems.isEmpty else { return }
        edit { items in
            let index = index ?? items.count
            precondition(index >= 0 && index <= items.count, "MutableObservableArray: insert index out of range")
            items.insert(contentsOf: newItems, at: index)
            return ArrayChangeSet(
                inserts: newItems.enumerated().map { .init(index: index + $0.offset, element: $0.element) }
            )
        }
    }

    /// Removes and returns the element at `index`.
    @discardableResult
    public func remove(at index: Int) -> Item {
        stream.mutate { items in
            precondition(index >= 0 && index < items.count, "MutableObservableArray: remove index out of range")
            let removed = items.remove(at: index)
            let change = ArrayChangeSet<Item>(deletes: [index])
            return (ObservableArrayEvent(array: items, changeSet: change), removed)
        }
    }

    /// Removes and returns the last element, or returns nil when the array is empty.
    @discardableResult
    public func removeLast() -> Item? {
        stream.mutate { items in
            guard let removed = items.popLast() else { return (nil, nil) }
            let change = ArrayChangeSet<Item>(deletes: [items.count])
            return (ObservableArrayEvent(array: items, changeSet: change), removed)
        }
    }

    /// Removes every element (one event that deletes them all; nothing when already empty).
    public func removeAll() {
        edit { items in
            guard !items.isEmpty else { return nil }
            let count = items.count
            items.removeAll()
            return ArrayChangeSet(deletes: Array(0..<count))
        }
    }

    /// Moves the element at `source` so that it ends up at index `destination`, as removing it and
    /// inserting it at `destination` would.
    public func move(from source: Int, to destination: Int) {
        edit { items in
            precondition(source >= 0 && source < items.count, "MutableObservableArray: move source out of range")
            precondition(
                destination >= 0 && destination < items.count,
                "MutableObservableArray: move destination out of range"
            )
            guard source != destination else { return nil }
            items.insert(items.remove(at: source), at: destination)
            return ArrayChangeSet(moves: [.init(from: source, to: destination)])
        }
    }

    /// Replaces the element at `index` with `item` (an update).
    public func replace(at index: Int, with item: Item) {
        edit { items in
            precondition(index >= 0 && index < items.count, "MutableObservableArray: replace index out of range")
            items[index] = item
            return ArrayChangeSet(updates: [.init(index: index, element: item)])
        }
    }

    /// Replaces every element with `items`, as one reset event.
    public func replace(with items: [Item]) {
        stream.write { current, _ in
            let event = ObservableArrayEvent.reset(oldCount: current.count, to: items)
            return ((items, event), ())
        }
    }

    // MARK: Batches

    /// Runs `body` on a batch holding the current elements and delivers all its edits as one
    /// event (none when the batch changes nothing). Returns what `body` returns.
    ///
    /// Other writers wait until the batch ends; readers do not, and see the elements as they were
    /// before the batch until it ends. `body` may read this array but must not write to it (that
    /// stops the program): edit the batch instead. When `body` throws, nothing changes.
    @discardableResult
    public func batchUpdate<Result>(_ body: (inout ObservableArrayBatch<Item>) throws -> Result) rethrows -> Result {
        try stream.write { current, _ in
            var batch = ObservableArrayBatch(current)
            let result = try body(&batch)
            guard let change = batch.changeSet else { return (nil, result) }
            return ((batch.array, ObservableArrayEvent(array: batch.array, changeSet: change)), result)
        }
    }

    // MARK: Internals

    private func edit(_ body: (inout [Item]) -> ArrayChangeSet<Item>?) {
        stream.mutate { items in
            guard let change = body(&items) else { return (nil, ()) }
            return (ObservableArrayEvent(array: items, changeSet: change), ())
        }
    }

    /// Stores `event.array` and delivers `event.changeSet` when the array is still at `version`
    /// (so the change set fits it); otherwise replaces the contents with a reset. Returns the
    /// new version.
    func receive(_ event: ObservableArrayEvent<Item>, ifAt version: UInt64?) -> UInt64 {
        stream.write { current, currentVersion in
            let change: ArrayChangeSet<Item>
            if version == currentVersion && !event.changeSet.isReset {
                change = event.changeSet
            } else {
                change = .reset(oldCount: current.count, to: event.array)
            }
            return ((event.array, ObservableArrayEvent(array: event.array, changeSet: change)), currentVersion &+ 1)
        }
    }
}

extension MutableObservableArray: Sendable where Item: Sendable {}

extension MutableObservableArray where Item: Equatable {
    /// Replaces every element with `items`.
    ///
    /// With `performDiff` the event's change set is the difference between the old and the new
    /// elements as the standard library's `CollectionDifference` finds it: deletes and inserts (and
    /// moves, when `Item` is `Hashable`), no updates: an element that differs is a delete and an
    /// insert. Nothing is sent when the elements are equal. Without `performDiff` the event is a
    /// reset.
    public func replace(with items: [Item], performDiff: Bool) {
        replace(with: items, performDiff: performDiff) { ChangeDerivation.difference(from: $0, to: $1) }
    }

    func replace(
        with items: [Item],
        performDiff: Bool,
        difference: ([Item], [Item]) -> ArrayChangeSet<Item>
    ) {
        guard performDiff else {
            replace(with: items)
            return
        }
        stream.write { current, _ in
            let change = difference(current, items)
            if change.isEmpty { return (nil, ()) }
            return ((items, ObservableArrayEvent(array: items, changeSet: change)), ())
        }
    }
}

extension MutableObservableArray where Item: Hashable {
    /// Replaces every element with `items`.
    ///
    /// With `performDiff` the event's change set is the difference between the old and the new
    /// elements as the standard library's `CollectionDifference` finds it, with moves inferred
    /// (`inferringMoves()`): deletes, inserts and moves, no updates (an element that differs is a
    /// delete and an insert). Nothing is sent when the elements are equal. Without `performDiff`
    /// the event is a reset.
    public func replace(with items: [Item], performDiff: Bool) {
        replace(with: items, performDiff: performDiff) { ChangeDerivation.difference(from: $0, to: $1) }
    }
}

/// A read-only view of a ``MutableObservableArray``: observable, but only its owner can write.
/// Like the array, it is `Sendable` when `Item` is.
public struct ObservableArray<Item>: SignalProtocol {
    public typealias Element = ObservableArrayEvent<Item>

    private let base: MutableObservableArray<Item>

    public init(_ base: MutableObservableArray<Item>) {
        self.base = base
    }

    /// The current elements.
    public var array: [Item] { base.array }

    /// The number of elements.
    public var count: Int { base.count }

    /// The element at `index`.
    public subscript(index: Int) -> Item { base[index] }

    /// Sends the current array (as a reset from an empty array) and then every change to
    /// `observer`.
    @discardableResult
    public func observe(with observer: @escaping (Event<ObservableArrayEvent<Item>>) -> Void) -> any Disposable {
        base.observe(with: observer)
    }
}

extension ObservableArray: Sendable where Item: Sendable {}
