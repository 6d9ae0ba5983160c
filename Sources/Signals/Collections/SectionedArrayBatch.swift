/// The edits of one ``MutableObservableSectionedArray/batchUpdate(_:)``: sections you change like
/// plain arrays, whose changes are delivered as a single event when the batch ends.
///
/// The batch remembers where each section and each item came from, so the change set is exact
/// whatever the order of the edits, with the fewest moves. Indices refer to the batch as it is at
/// that moment; out-of-range indices stop the program, as they do for `Array`.
public struct SectionedArrayBatch<Section, Item> {
    struct ItemTag {
        // The old position, or section -1 when the batch inserted the item.
        var section: Int
        var item: Int
        var dirty: Bool

        static var inserted: ItemTag { ItemTag(section: -1, item: -1, dirty: false) }
    }

    /// The sections as edited so far.
    public private(set) var sections: [ArraySection<Section, Item>]
    private var sectionTags: [Int]
    private var sectionDirty: [Bool]
    private var itemTags: [[ItemTag]]
    private let old: [ArraySection<Section, Item>]
    private var touched = false

    init(_ sections: [ArraySection<Section, Item>]) {
        self.sections = sections
        old = sections
        sectionTags = Array(sections.indices)
        sectionDirty = [Bool](repeating: false, count: sections.count)
        itemTags = sections.enumerated().map { section, content in
            content.items.indices.map { ItemTag(section: section, item: $0, dirty: false) }
        }
    }

    /// The number of sections.
    public var sectionCount: Int { sections.count }

    /// The item at `index`; setting it replaces the item (an update).
    public subscript(index: SectionedIndex) -> Item {
        get { sections[index.section].items[index.item] }
        set { replaceItem(at: index, with: newValue) }
    }

    // MARK: Sections

    /// Adds `section` (with its items) at the end.
    public mutating func appendSection(_ section: ArraySection<Section, Item>) {
        insertSection(section, at: sections.count)
    }

    /// Inserts `section` (with its items) at `index`.
    public mutating func insertSection(_ section: ArraySection<Section, Item>, at index: Int) {
        sections.insert(section, at: index)
        sectionTags.insert(-1, at: index)
        sectionDirty.insert(false, at: index)
        itemTags.insert(Array(repeating: .inserted, count: section.items.count), at: index)
        touched = true
    }

    /// Removes and returns the section at `index`, with its items.
    @discardableResult
    public mutating func removeSection(at index: Int) -> ArraySection<Section, Item> {
        sectionTags.remove(at: index)
        sectionDirty.remove(at: index)
        itemTags.remove(at: index)
        touched = true
        return sections.remove(at: index)
    }

    /// Moves the section at `source`, with its items, so that it ends up at index `destination`.
    public mutating func moveSection(from source: Int, to destination: Int) {
        sections.insert(sections.remove(at: source), at: destination)
        sectionTags.insert(sectionTags.remove(at: source), at: destination)
        sectionDirty.insert(sectionDirty.remove(at: source), at: destination)
        itemTags.insert(itemTags.remove(at: source), at: destination)
        touched = true
    }

    /// Replaces the metadata of the section at `index` (a section update).
    public mutating func replaceSectionMetadata(at index: Int, with metadata: Section) {
        sections[index].metadata = metadata
        sectionDirty[index] = true
        touched = true
    }

    /// Removes every section.
    public mutating func removeAll() {
        sections.removeAll()
        sectionTags.removeAll()
        sectionDirty.removeAll()
        itemTags.removeAll()
        touched = true
    }

    // MARK: Items

    /// Adds `item` at the end of the section at `section`.
    public mutating func appendItem(_ item: Item, toSection section: Int) {
        insertItem(item, at: SectionedIndex(section: section, item: sections[section].items.count))
    }

    /// Inserts `item` at `index`.
    public mutating func insertItem(_ item: Item, at index: SectionedIndex) {
        sections[index.section].items.insert(item, at: index.item)
        itemTags[index.section].insert(.inserted, at: index.item)
        touched = true
    }

    /// Removes and returns the item at `index`.
    @discardableResult
    public mutating func removeItem(at index: SectionedIndex) -> Item {
        itemTags[index.section].remove(at: index.item)
        touched = true
        return sections[index.section].items.remove(at: index.item)
    }

    /// Moves the item at `source` so that it ends up at `destination`, as removing it and then
    /// inserting it at `destination` would; the sections may differ.
    public mutating func moveItem(from source: SectionedIndex, to destination: SectionedIndex) {
        let item = sections[source.section].items.remove(at: source.item)
        let tag = itemTags[source.section].remove(at: source.item)
        sections[destination.section].items.insert(item, at: destination.item)
        itemTags[destination.section].insert(tag, at: destination.item)
        touched = true
    }

    /// Replaces the item at `index` (an update).
    public mutating func replaceItem(at index: SectionedIndex, with item: Item) {
        sections[index.section].items[index.item] = item
        itemTags[index.section][index.item].dirty = true
        touched = true
    }

    // MARK: Change set

    /// The change set from the sections the batch started with to its current contents, or nil
    /// when the batch made no edit.
    var changeSet: SectionedArrayChangeSet<Section, Item>? {
        guard touched else { return nil }
        typealias Change = SectionedArrayChangeSet<Section, Item>
        let sectionChange = ChangeDerivation.changeSet(
            oldCount: old.count,
            tags: sectionTags,
            dirty: sectionDirty,
            elements: sections
        )
        var change = Change(
            sectionDeletes: sectionChange.deletes,
            sectionInserts: sectionChange.inserts.map { .init(index: $0.index, section: $0.element) },
            sectionUpdates: sectionChange.updates.map { .init(index: $0.index, metadata: $0.element.metadata) },
            sectionMoves: sectionChange.moves.map { .init(from: $0.from, to: $0.to) }
        )

        var survives = [Bool](repeating: false, count: old.count)
        for tag in sectionTags where tag >= 0 { survives[tag] = true }
        var found = old.map { [Bool](repeating: false, count: $0.items.count) }

        for (newSection, sectionTag) in sectionTags.enumerated() where sectionTag >= 0 {
            let items = sections[newSection].items
            var sameOld: [Int] = []
            var samePosition: [Int] = []
            for (position, tag) in itemTags[newSection].enumerated() {
                let newIndex = SectionedIndex(section: newSection, item: position)
                guard tag.section >= 0 && survives[tag.section] else {
                    change.itemInserts.append(.init(index: newIndex, item: items[position]))
                    continue
                }
                let oldIndex = SectionedIndex(section: tag.section, item: tag.item)
                found[tag.section][tag.item] = true
                if tag.section == sectionTag {
                    sameOld.append(tag.item)
                    samePosition.append(position)
                } else {
                    change.itemMoves.append(.init(from: oldIndex, to: newIndex))
                }
                if tag.dirty {
                    change.itemUpdates.append(.init(index: oldIndex, item: items[position]))
                }
            }
            let keep = ChangeDerivation.longestIncreasingSubsequence(sameOld)
            for index in sameOld.indices where !keep[index] {
                change.itemMoves.append(
                    .init(
                        from: SectionedIndex(section: sectionTag, item: sameOld[index]),
                        to: SectionedIndex(section: newSection, item: samePosition[index])
                    )
                )
            }
        }
        for section in old.indices where survives[section] {
            for item in found[section].indices where !found[section][item] {
                change.itemDeletes.append(SectionedIndex(section: section, item: item))
            }
        }
        change.itemUpdates.sort { $0.index < $1.index }
        change.itemMoves.sort { $0.to < $1.to }
        return change.isEmpty ? nil : change
    }
}
