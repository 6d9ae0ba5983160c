/// One event of an observable sectioned array: the sections after a change, and the change.
///
/// Applying ``changeSet`` to the sections of the previous event (none before the first event)
/// gives ``sections``; see ``SectionedArrayChangeSet`` for the index convention.
public struct ObservableSectionedArrayEvent<Section, Item> {
    /// The sections after the change.
    public var sections: [ArraySection<Section, Item>]
    /// What changed since the previous event.
    public var changeSet: SectionedArrayChangeSet<Section, Item>

    public init(sections: [ArraySection<Section, Item>], changeSet: SectionedArrayChangeSet<Section, Item>) {
        self.sections = sections
        self.changeSet = changeSet
    }

    /// An event that replaces `oldCount` sections with `sections`.
    public static func reset(oldCount: Int = 0, to sections: [ArraySection<Section, Item>]) -> Self {
        Self(sections: sections, changeSet: .reset(oldCount: oldCount, to: sections))
    }
}

extension ObservableSectionedArrayEvent: Sendable where Section: Sendable, Item: Sendable {}

/// A list of sections, each with metadata and items, that tells its observers about every change
/// with the exact change set, for sections and for items.
///
/// Observing sends the current sections first (a reset from no sections), then one event per
/// change. Every event's change set, applied to the previous event's sections, gives the event's
/// sections (see ``SectionedArrayChangeSet`` for the index convention).
///
/// Threads and ordering are as for ``MutableObservableArray``: any thread may read and write,
/// writes are serialized, events reach each observer in write order with no lock held, and an
/// observer may read and write the sections. Indices out of range stop the program, as they do
/// for `Array`. When the sectioned array is deallocated its observers get ``Event/completed``.
///
/// Sendability: the sectioned array is `Sendable` when `Section` and `Item` are; otherwise it stays
/// within one isolation domain.
public final class MutableObservableSectionedArray<Section, Item>: SignalProtocol {
    public typealias Element = ObservableSectionedArrayEvent<Section, Item>
    public typealias ChangeSet = SectionedArrayChangeSet<Section, Item>

    // All state lives in `stream`, behind its locks.
    private let stream: ChangeStream<[ArraySection<Section, Item>], ObservableSectionedArrayEvent<Section, Item>>

    /// Creates a sectioned array holding `sections`.
    public init(_ sections: [ArraySection<Section, Item>] = []) {
        stream = ChangeStream(sections, owner: "MutableObservableSectionedArray") { sections in
            .reset(oldCount: 0, to: sections)
        }
    }

    deinit {
        stream.complete()
    }

    /// The current sections.
    public var sections: [ArraySection<Section, Item>] { stream.value }

    /// The number of sections.
    public var sectionCount: Int { sections.count }

    /// The number of observers currently registered.
    public var observerCount: Int { stream.observerCount }

    /// The item at `index`; setting it replaces the item (an update).
    public subscript(index: SectionedIndex) -> Item {
        get { sections[index.section].items[index.item] }
        set { replaceItem(at: index, with: newValue) }
    }

    /// Sends the current sections (as a reset from none) and then every change to `observer`.
    @discardableResult
    public func observe(
        with observer: @escaping (Event<ObservableSectionedArrayEvent<Section, Item>>) -> Void
    ) -> any Disposable {
        stream.observe(observer)
    }

    // MARK: Sections

    /// Adds `section` (with its items) at the end.
    public func appendSection(_ section: ArraySection<Section, Item>) {
        edit { sections in
            sections.append(section)
            return ChangeSet(sectionInserts: [.init(index: sections.count - 1, section: section)])
        }
    }

    /// Inserts `section` (with its items) at `index`.
    public func insertSection(_ section: ArraySection<Section, Item>, at index: Int) {
        edit { sections in
            precondition(
                index >= 0 && index <= sections.count, "MutableObservableSectionedArray: section index out of range")
            sections.insert(section, at: index)
            return ChangeSet(sectionInserts: [.init(index: index, section: section)])
        }
    }

    /// Removes and returns the section at `index`, with its items.
    @discardableResult
    public func removeSection(at index: Int) -> ArraySection<Section, Item> {
        stream.mutate { sections in
            precondition(
                index >= 0 && index < sections.count, "MutableObservableSectionedArray: section index out of range")
            let removed = sections.remove(at: index)
            return (Element(sections: sections, changeSet: ChangeSet(sectionDeletes: [index])), removed)
        }
    }

    /// Moves the section at `source`, with its items, so that it ends up at index `destination`.
    public func moveSection(from source: Int, to destination: Int) {
        edit { sections in
            precondition(
                source >= 0 && source < sections.count && destination >= 0 && destination < sections.count,
                "MutableObservableSectionedArray: section index out of range"
            )
            guard source != destination else { return nil }
            sections.insert(sections.remove(at: source), at: destination)
            return ChangeSet(sectionMoves: [.init(from: source, to: destination)])
        }
    }

    /// Replaces the metadata of the section at `index` (a section update).
    public func replaceSectionMetadata(at index: Int, with metadata: Section) {
        edit { sections in
            precondition(
                index >= 0 && index < sections.count, "MutableObservableSectionedArray: section index out of range")
            sections[index].metadata = metadata
            return ChangeSet(sectionUpdates: [.init(index: index, metadata: metadata)])
        }
    }

    /// Removes every section (one event; nothing when already empty).
    public func removeAll() {
        edit { sections in
            guard !sections.isEmpty else { return nil }
            let count = sections.count
            sections.removeAll()
            return ChangeSet(sectionDeletes: Array(0..<count))
        }
    }

    /// Replaces every section, as one reset event.
    public func replace(with sections: [ArraySection<Section, Item>]) {
        stream.write { current, _ in
            ((sections, Element.reset(oldCount: current.count, to: sections)), ())
        }
    }

    // MARK: Items

    /// Adds `item` at the end of the section at `section`.
    public func appendItem(_ item: Item, toSection section: Int) {
        edit { sections in
            precondition(
                section >= 0 && section < sections.count, "MutableObservableSectionedArray: section index out of range")
            sections[section].items.append(item)
            let index = SectionedIndex(section: section, item: sections[section].items.count - 1)
            return ChangeSet(itemInserts: [.init(index: index, item: item)])
        }
    }

    /// Inserts `item` at `index`.
    public func insertItem(_ item: Item, at index: SectionedIndex) {
        edit { sections in
            Self.check(index, in: sections, forInsert: true)
            sections[index.section].items.insert(item, at: index.item)
            return ChangeSet(itemInserts: [.init(index: index, item: item)])
        }
    }

    /// Removes and returns the item at `index`.
    @discardableResult
    public func removeItem(at index: SectionedIndex) -> Item {
        stream.mutate { sections in
            Self.check(index, in: sections, forInsert: false)
            let removed = sections[index.section].items.remove(at: index.item)
            return (Element(sections: sections, changeSet: ChangeSet(itemDeletes: [index])), removed)
        }
    }

    /// Moves the item at `source` so that it ends up at `destination`, as removing it and then
    /// inserting it at `destination` would; the sections may differ.
    public func moveItem(from source: SectionedIndex, to destination: SectionedIndex) {
        edit { sections in
            Self.check(source, in: sections, forInsert: false)
            guard source != destination else { return nil }
            let item = sections[source.section].items.remove(at: source.item)
            Self.check(destination, in: sections, forInsert: true)
            sections[destination.section].items.insert(item, at: destination.item)
            return ChangeSet(itemMoves: [.init(from: source, to: destination)])
        }
    }

    /// Replaces the item at `index` (an update).
    public func replaceItem(at index: SectionedIndex, with item: Item) {
        edit { sections in
            Self.check(index, in: sections, forInsert: false)
            sections[index.section].items[index.item] = item
            return ChangeSet(itemUpdates: [.init(index: index, item: item)])
        }
    }

    // MARK: Batches

    /// Runs `body` on a batch holding the current sections and delivers all its edits as one
    /// event (none when the batch changes nothing). Returns what `body` returns.
    ///
    /// Other writers wait until the batch ends; readers do not. `body` may read this sectioned
    /// array but must not write to it (that stops the program): edit the batch instead. When
    /// `body` throws, nothing changes.
    @discardableResult
    public func batchUpdate<Result>(_ body: (inout SectionedArrayBatch<Section, Item>) throws -> Result) rethrows
        -> Result
    {
        try stream.write { current, _ in
            var batch = SectionedArrayBatch(current)
            let result = try body(&batch)
            guard let change = batch.changeSet else { return (nil, result) }
            return ((batch.sections, Element(sections: batch.sections, changeSet: change)), result)
        }
    }

    // MARK: Internals

    private func edit(_ body: (inout [ArraySection<Section, Item>]) -> ChangeSet?) {
        stream.mutate { sections in
            guard let change = body(&sections) else { return (nil, ()) }
            return (Element(sections: sections, changeSet: change), ())
        }
    }

    private static func check(_ index: SectionedIndex, in sections: [ArraySection<Section, Item>], forInsert: Bool) {
        precondition(
            index.section >= 0 && index.section < sections.count,
            "MutableObservableSectionedArray: section index out of range"
        )
        let count = sections[index.section].items.count
        precondition(
            index.item >= 0 && (forInsert ? index.item <= count : index.item < count),
            "MutableObservableSectionedArray: item index out of range"
        )
    }
}

extension MutableObservableSectionedArray: Sendable where Section: Sendable, Item: Sendable {}
