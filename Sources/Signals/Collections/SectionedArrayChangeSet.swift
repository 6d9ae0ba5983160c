/// A section of a sectioned array: its metadata (a title, a key, anything) and its items.
public struct ArraySection<Section, Item> {
    /// What describes the section.
    public var metadata: Section
    /// The section's items.
    public var items: [Item]

    public init(metadata: Section, items: [Item] = []) {
        self.metadata = metadata
        self.items = items
    }
}

extension ArraySection: Sendable where Section: Sendable, Item: Sendable {}
extension ArraySection: Equatable where Section: Equatable, Item: Equatable {}
extension ArraySection: Hashable where Section: Hashable, Item: Hashable {}

/// The position of an item in a sectioned array: a section index and an item index within it.
public struct SectionedIndex: Hashable, Comparable, Sendable, CustomStringConvertible {
    public var section: Int
    public var item: Int

    public init(section: Int, item: Int) {
        self.section = section
        self.item = item
    }

    public static func < (lhs: SectionedIndex, rhs: SectionedIndex) -> Bool {
        (lhs.section, lhs.item) < (rhs.section, rhs.item)
    }

    public var description: String { "[\(section), \(item)]" }
}

/// What changed between two versions of a sectioned array, at the level of sections and of items.
///
/// ## Index convention
///
/// As for ``ArrayChangeSet``, one step from an *old* to a *new* sectioned array, all at once:
///
/// - Sections: ``sectionDeletes``, ``sectionUpdates`` and ``SectionMove/from`` index the old
///   sections; ``sectionInserts`` and ``SectionMove/to`` the new sections. An inserted section
///   carries its items. A moved section takes its items along. A section update replaces the
///   metadata only.
/// - Items: ``itemDeletes``, ``itemUpdates`` and ``ItemMove/from`` are old positions (old section
///   index, old item index); ``itemInserts`` and ``ItemMove/to`` are new positions (new section
///   index, new item index). Items may move between sections. No item change names a deleted
///   section by an old position or an inserted section by a new position: the items of deleted
///   sections go with them, and those of inserted sections come with them.
/// - Within each section, the rules of ``ArrayChangeSet`` hold: the items that are neither
///   deleted nor moved keep their relative order and fill the positions no insert and no move
///   names; an item may be both moved and updated (the update names its old position).
///
/// ``apply(to:)`` replays a change set with exactly these rules. When ``isReset`` is true the
/// change set deletes every old section and inserts every new one.
public struct SectionedArrayChangeSet<Section, Item> {
    /// A section that moves from an old index to a new index, with its items.
    public struct SectionMove: Hashable, Sendable {
        public var from: Int
        public var to: Int

        public init(from: Int, to: Int) {
            self.from = from
            self.to = to
        }
    }

    /// An item that moves from an old position to a new position.
    public struct ItemMove: Hashable, Sendable {
        public var from: SectionedIndex
        public var to: SectionedIndex

        public init(from: SectionedIndex, to: SectionedIndex) {
            self.from = from
            self.to = to
        }
    }

    /// A section placed at an index: inserted with its items.
    public struct IndexedSection {
        public var index: Int
        public var section: ArraySection<Section, Item>

        public init(index: Int, section: ArraySection<Section, Item>) {
            self.index = index
            self.section = section
        }
    }

    /// New metadata for the section at an old index.
    public struct IndexedMetadata {
        public var index: Int
        public var metadata: Section

        public init(index: Int, metadata: Section) {
            self.index = index
            self.metadata = metadata
        }
    }

    /// An item placed at a position: the value of an insert or an update.
    public struct IndexedItem {
        public var index: SectionedIndex
        public var item: Item

        public init(index: SectionedIndex, item: Item) {
            self.index = index
            self.item = item
        }
    }

    /// Old indices of the removed sections, ascending.
    public var sectionDeletes: [Int]
    /// New indices and contents of the inserted sections, ascending by index.
    public var sectionInserts: [IndexedSection]
    /// Old indices and new metadata of the sections whose metadata changed, ascending by index.
    public var sectionUpdates: [IndexedMetadata]
    /// Moved sections, ascending by destination.
    public var sectionMoves: [SectionMove]
    /// Old positions of the removed items, ascending.
    public var itemDeletes: [SectionedIndex]
    /// New positions and values of the inserted items, ascending by position.
    public var itemInserts: [IndexedItem]
    /// Old positions and new values of the replaced items, ascending by position.
    public var itemUpdates: [IndexedItem]
    /// Moved items, ascending by destination.
    public var itemMoves: [ItemMove]
    /// Whether this change set replaces everything (see the type's documentation).
    public var isReset: Bool

    public init(
        sectionDeletes: [Int] = [],
        sectionInserts: [IndexedSection] = [],
        sectionUpdates: [IndexedMetadata] = [],
        sectionMoves: [SectionMove] = [],
        itemDeletes: [SectionedIndex] = [],
        itemInserts: [IndexedItem] = [],
        itemUpdates: [IndexedItem] = [],
        itemMoves: [ItemMove] = [],
        isReset: Bool = false
    ) {
        self.sectionDeletes = sectionDeletes
        self.sectionInserts = sectionInserts
        self.sectionUpdates = sectionUpdates
        self.sectionMoves = sectionMoves
        self.itemDeletes = itemDeletes
        self.itemInserts = itemInserts
        self.itemUpdates = itemUpdates
        self.itemMoves = itemMoves
        self.isReset = isReset
    }

    /// A reset from `oldCount` sections to `newSections`.
    public static func reset(
        oldCount: Int,
        to newSections: [ArraySection<Section, Item>]
    ) -> SectionedArrayChangeSet {
        SectionedArrayChangeSet(
            sectionDeletes: Array(0..<oldCount),
            sectionInserts: newSections.enumerated().map { IndexedSection(index: $0.offset, section: $0.element) },
            isReset: true
        )
    }

    /// Whether the change set changes nothing.
    public var isEmpty: Bool {
        sectionDeletes.isEmpty && sectionInserts.isEmpty && sectionUpdates.isEmpty && sectionMoves.isEmpty
            && itemDeletes.isEmpty && itemInserts.isEmpty && itemUpdates.isEmpty && itemMoves.isEmpty && !isReset
    }
}

extension SectionedArrayChangeSet: Sendable where Section: Sendable, Item: Sendable {}
extension SectionedArrayChangeSet.IndexedSection: Sendable where Section: Sendable, Item: Sendable {}
extension SectionedArrayChangeSet.IndexedMetadata: Sendable where Section: Sendable {}
extension SectionedArrayChangeSet.IndexedItem: Sendable where Item: Sendable {}
extension SectionedArrayChangeSet: Equatable where Section: Equatable, Item: Equatable {}
extension SectionedArrayChangeSet.IndexedSection: Equatable where Section: Equatable, Item: Equatable {}
extension SectionedArrayChangeSet.IndexedMetadata: Equatable where Section: Equatable {}
extension SectionedArrayChangeSet.IndexedItem: Equatable where Item: Equatable {}

extension SectionedArrayChangeSet: CustomStringConvertible {
    public var description: String {
        var parts: [String] = []
        if isReset { parts.append("reset") }
        if !sectionDeletes.isEmpty { parts.append("sectionDeletes: \(sectionDeletes)") }
        if !sectionInserts.isEmpty {
            parts.append(
                "sectionInserts: \(sectionInserts.map { "\($0.index): \($0.section.metadata) \($0.section.items)" })")
        }
        if !sectionUpdates.isEmpty {
            parts.append("sectionUpdates: \(sectionUpdates.map { "\($0.index): \($0.metadata)" })")
        }
        if !sectionMoves.isEmpty { parts.append("sectionMoves: \(sectionMoves.map { "\($0.from)->\($0.to)" })") }
        if !itemDeletes.isEmpty { parts.append("itemDeletes: \(itemDeletes)") }
        if !itemInserts.isEmpty { parts.append("itemInserts: \(itemInserts.map { "\($0.index): \($0.item)" })") }
        if !itemUpdates.isEmpty { parts.append("itemUpdates: \(itemUpdates.map { "\($0.index): \($0.item)" })") }
        if !itemMoves.isEmpty { parts.append("itemMoves: \(itemMoves.map { "\($0.from)->\($0.to)" })") }
        return "SectionedArrayChangeSet(\(parts.joined(separator: ", ")))"
    }
}

extension SectionedArrayChangeSet {
    /// Replays the change set on `sections`, which must be the old sectioned array it was made for.
    ///
    /// Follows the index convention in the type's documentation.
    ///
    /// - Throws: ``ChangeSetError`` when the change set does not fit `sections`, which are then
    ///   left as they were.
    public func apply(to sections: inout [ArraySection<Section, Item>]) throws(ChangeSetError) {
        sections = try applied(to: sections)
    }

    /// The sections that result from replaying the change set on `sections` (see ``apply(to:)``).
    public func applied(
        to sections: [ArraySection<Section, Item>]
    ) throws(ChangeSetError) -> [ArraySection<Section, Item>] {
        let oldCount = sections.count
        var deletedSection = [Bool](repeating: false, count: oldCount)
        for index in sectionDeletes where index >= 0 && index < oldCount {
            deletedSection[index] = true
        }
        func checkOld(_ path: SectionedIndex, _ what: String) throws(ChangeSetError) {
            guard path.section >= 0 && path.section < oldCount else {
                throw ChangeSetError(.indexOutOfRange, "\(what) \(path): no such old section")
            }
            guard !deletedSection[path.section] else {
                throw ChangeSetError(.conflictingIndices, "\(what) \(path) is in a deleted section")
            }
        }

        var work = sections
        for update in sectionUpdates {
            guard update.index >= 0 && update.index < oldCount else {
                throw ChangeSetError(.indexOutOfRange, "section update \(update.index): no such old section")
            }
            guard !deletedSection[update.index] else {
                throw ChangeSetError(.conflictingIndices, "section update \(update.index) of a deleted section")
            }
            work[update.index].metadata = update.metadata
        }

        // Item deletes, updates and move sources, section by old section.
        var removals = [[Int]](repeating: [], count: oldCount)
        var updates = [[ArrayChangeSet<Item>.Indexed]](repeating: [], count: oldCount)
        for path in itemDeletes {
            try checkOld(path, "item delete")
            removals[path.section].append(path.item)
        }
        for update in itemUpdates {
            try checkOld(update.index, "item update")
            updates[update.index.section].append(.init(index: update.index.item, element: update.item))
        }
        var moved: [Item] = []
        moved.reserveCapacity(itemMoves.count)
        for move in itemMoves {
            try checkOld(move.from, "item move from")
            removals[move.from.section].append(move.from.item)
        }
        for section in 0..<oldCount where !removals[section].isEmpty || !updates[section].isEmpty {
            let items = try ArrayChangeSet(updates: updates[section]).applied(to: work[section].items)
            work[section].items = items
        }
        for move in itemMoves {
            guard move.from.item >= 0 && move.from.item < work[move.from.section].items.count else {
                throw ChangeSetError(.indexOutOfRange, "item move from \(move.from): no such old item")
            }
            moved.append(work[move.from.section].items[move.from.item])
        }
        for section in 0..<oldCount where !removals[section].isEmpty {
            removals[section].sort()
            let items = try ArrayChangeSet<Item>(deletes: removals[section]).applied(to: work[section].items)
            work[section].items = items
        }

        // Sections.
        let sectionChange = ArrayChangeSet<ArraySection<Section, Item>>(
            deletes: sectionDeletes,
            inserts: sectionInserts.map { .init(index: $0.index, element: $0.section) },
            moves: sectionMoves.map { .init(from: $0.from, to: $0.to) }
        )
        var result = try sectionChange.applied(to: work)
        let newCount = result.count
        var insertedSection = [Bool](repeating: false, count: newCount)
        for insert in sectionInserts { insertedSection[insert.index] = true }

        // Item inserts and move destinations, section by new section.
        var placements = [[ArrayChangeSet<Item>.Indexed]](repeating: [], count: newCount)
        func place(_ path: SectionedIndex, _ item: Item, _ what: String) throws(ChangeSetError) {
            guard path.section >= 0 && path.section < newCount else {
                throw ChangeSetError(.indexOutOfRange, "\(what) \(path): no such new section")
            }
            guard !insertedSection[path.section] else {
                throw ChangeSetError(.conflictingIndices, "\(what) \(path) is in an inserted section")
            }
            placements[path.section].append(.init(index: path.item, element: item))
        }
        for insert in itemInserts {
            try place(insert.index, insert.item, "item insert")
        }
        for (move, item) in zip(itemMoves, moved) {
            try place(move.to, item, "item move to")
        }
        for section in 0..<newCount where !placements[section].isEmpty {
            placements[section].sort { $0.index < $1.index }
            let items = try ArrayChangeSet(inserts: placements[section]).applied(to: result[section].items)
            result[section].items = items
        }
        return result
    }
}
