/// The edits of one ``MutableObservableArray/batchUpdate(_:)``: an array you change like any
/// other, whose changes are delivered as a single event when the batch ends.
///
/// The batch remembers where each element came from, so the change set it produces is exact
/// whatever the order of the edits: an element inserted and removed again in the same batch does
/// not appear, a replaced element is an update at its old index, and the elements that changed
/// places are reported as the fewest moves.
///
/// Indices passed to the batch's methods refer to the batch as it is at that moment, as with a
/// plain array; out-of-range indices stop the program, as they do for `Array`.
public struct ObservableArrayBatch<Item> {
    /// The elements as edited so far.
    public private(set) var array: [Item]
    // Per element: the old index it came from, or -1 when the batch inserted it.
    private var tags: [Int]
    // Per element: whether it was replaced.
    private var dirty: [Bool]
    private let oldCount: Int
    private var touched = false

    init(_ array: [Item]) {
        self.array = array
        oldCount = array.count
        tags = Array(0..<array.count)
        dirty = [Bool](repeating: false, count: array.count)
    }

    /// The number of elements.
    public var count: Int { array.count }

    /// Whether the batch holds no elements.
    public var isEmpty: Bool { array.isEmpty }

    /// The element at `index`; setting it replaces the element (an update).
    public subscript(index: Int) -> Item {
        get { array[index] }
        set { replace(at: index, with: newValue) }
    }

    /// Replaces the element at `index`.
    public mutating func replace(at index: Int, with item: Item) {
        array[index] = item
        dirty[index] = true
        touched = true
    }

    /// Adds `item` at the end.
    public mutating func append(_ item: Item) {
        insert(item, at: array.count)
    }

    /// Adds `items` at the end.
    public mutating func append<S: Sequence>(contentsOf items: S) where S.Element == Item {
        insert(contentsOf: Array(items), at: array.count)
    }

    /// Inserts `item` at `index`.
    public mutating func insert(_ item: Item, at index: Int) {
        array.insert(item, at: index)
        tags.insert(-1, at: index)
        dirty.insert(false, at: index)
        touched = true
    }

    /// Inserts `items` at `index`, in order.
    public mutating func insert(contentsOf items: [Item], at index: Int) {
        array.insert(contentsOf: items, at: index)
        tags.insert(contentsOf: repeatElement(-1, count: items.count), at: index)
        dirty.insert(contentsOf: repeatElement(false, count: items.count), at: index)
        touched = true
    }

    /// Removes and returns the element at `index`.
    @discardableResult
    public mutating func remove(at index: Int) -> Item {
        tags.remove(at: index)
        dirty.remove(at: index)
        touched = true
        return array.remove(at: index)
    }

    /// Removes every element.
    public mutating func removeAll() {
        array.removeAll()
        tags.removeAll()
        dirty.removeAll()
        touched = true
    }

    /// Removes the elements that satisfy `shouldBeRemoved`.
    public mutating func removeAll(where shouldBeRemoved: (Item) throws -> Bool) rethrows {
        var kept: [Item] = []
        var keptTags: [Int] = []
        var keptDirty: [Bool] = []
        for index in array.indices {
            if try shouldBeRemoved(array[index]) { continue }
            kept.append(array[index])
            keptTags.append(tags[index])
            keptDirty.append(dirty[index])
        }
        array = kept
        tags = keptTags
        dirty = keptDirty
        touched = true
    }

    /// Moves the element at `source` so that it ends up at index `destination`, as removing it and
    /// inserting it at `destination` would.
    public mutating func move(from source: Int, to destination: Int) {
        let item = array.remove(at: source)
        let tag = tags.remove(at: source)
        let flag = dirty.remove(at: source)
        array.insert(item, at: destination)
        tags.insert(tag, at: destination)
        dirty.insert(flag, at: destination)
        touched = true
    }

    /// The change set from the array the batch started with to its current contents, or nil when
    /// the batch made no edit.
    var changeSet: ArrayChangeSet<Item>? {
        guard touched else { return nil }
        let change = ChangeDerivation.changeSet(oldCount: oldCount, tags: tags, dirty: dirty, elements: array)
        return change.isEmpty ? nil : change
    }
}
