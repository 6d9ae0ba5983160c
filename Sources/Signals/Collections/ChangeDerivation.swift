/// Building and reading change sets: the shared arithmetic of batches, filters and sections.
enum ChangeDerivation {
    /// Marks the positions of one longest strictly increasing subsequence of `values`.
    ///
    /// The elements of a batch that stay put are such a subsequence of their old indices in new
    /// order; every other survivor is reported as a move, so the moves are as few as possible.
    static func longestIncreasingSubsequence(_ values: [Int]) -> [Bool] {
        var keep = [Bool](repeating: false, count: values.count)
        guard !values.isEmpty else { return keep }
        // tails[k]: position of the smallest last value of an increasing run of length k + 1.
        var tails: [Int] = []
        var previous = [Int](repeating: -1, count: values.count)
        for position in values.indices {
            let value = values[position]
            var low = 0
            var high = tails.count
            while low < high {
                let middle = (low + high) / 2
                if values[tails[middle]] < value { low = middle + 1 } else { high = middle }
            }
            if low > 0 { previous[position] = tails[low - 1] }
            if low == tails.count { tails.append(position) } else { tails[low] = position }
        }
        var position = tails[tails.count - 1]
        while position >= 0 {
            keep[position] = true
            position = previous[position]
        }
        return keep
    }

    /// The change set from an old array of `oldCount` elements to `elements`, where `tags[j]` is
    /// the old index that the element at new index `j` came from (or -1 for a new element) and
    /// `dirty[j]` says that it was replaced.
    static func changeSet<Element>(
        oldCount: Int,
        tags: [Int],
        dirty: [Bool],
        elements: [Element]
    ) -> ArrayChangeSet<Element> {
        var change = ArrayChangeSet<Element>()
        var found = [Bool](repeating: false, count: oldCount)
        var survivorOld: [Int] = []
        var survivorNew: [Int] = []
        survivorOld.reserveCapacity(min(oldCount, tags.count))
        survivorNew.reserveCapacity(min(oldCount, tags.count))
        for (newIndex, tag) in tags.enumerated() {
            if tag < 0 {
                change.inserts.append(.init(index: newIndex, element: elements[newIndex]))
            } else {
                found[tag] = true
                survivorOld.append(tag)
                survivorNew.append(newIndex)
            }
        }
        for oldIndex in 0..<oldCount where !found[oldIndex] {
            change.deletes.append(oldIndex)
        }
        let keep = longestIncreasingSubsequence(survivorOld)
        for position in survivorOld.indices {
            let oldIndex = survivorOld[position]
            let newIndex = survivorNew[position]
            if !keep[position] {
                change.moves.append(.init(from: oldIndex, to: newIndex))
            }
            if dirty[newIndex] {
                change.updates.append(.init(index: oldIndex, element: elements[newIndex]))
            }
        }
        change.updates.sort { $0.index < $1.index }
        return change
    }

    /// For each old index, the new index of that element, or -1 when it was deleted.
    ///
    /// - Throws: ``ChangeSetError`` when the change set does not fit an array of `oldCount`.
    static func oldToNew<Element>(
        _ change: ArrayChangeSet<Element>,
        oldCount: Int
    ) throws(ChangeSetError) -> [Int] {
        let newCount = change.newCount(fromOldCount: oldCount)
        guard newCount >= 0 else {
            throw ChangeSetError(.indexOutOfRange, "\(change.deletes.count) deletes from \(oldCount) elements")
        }
        var mapping = [Int](repeating: -1, count: oldCount)
        var removed = [Bool](repeating: false, count: oldCount)
        var occupied = [Bool](repeating: false, count: newCount)
        for index in change.deletes {
            guard index >= 0 && index < oldCount, !removed[index] else {
                throw ChangeSetError(.conflictingIndices, "delete \(index) does not fit \(oldCount) elements")
            }
            removed[index] = true
        }
        for move in change.moves {
            guard move.from >= 0 && move.from < oldCount, !removed[move.from] else {
                throw ChangeSetError(.conflictingIndices, "move from \(move.from) does not fit \(oldCount) elements")
            }
            guard move.to >= 0 && move.to < newCount, !occupied[move.to] else {
                throw ChangeSetError(.conflictingIndices, "move to \(move.to) does not fit \(newCount) elements")
            }
            removed[move.from] = true
            occupied[move.to] = true
            mapping[move.from] = move.to
        }
        for insert in change.inserts {
            guard insert.index >= 0 && insert.index < newCount, !occupied[insert.index] else {
                throw ChangeSetError(.conflictingIndices, "insert at \(insert.index) does not fit \(newCount) elements")
            }
            occupied[insert.index] = true
        }
        for update in change.updates {
            guard update.index >= 0 && update.index < oldCount else {
                throw ChangeSetError(.indexOutOfRange, "update \(update.index) does not fit \(oldCount) elements")
            }
        }
        var newIndex = 0
        for oldIndex in 0..<oldCount where !removed[oldIndex] {
            while occupied[newIndex] { newIndex += 1 }
            mapping[oldIndex] = newIndex
            newIndex += 1
        }
        return mapping
    }

    /// The change set that `CollectionDifference` finds between two arrays: deletes and inserts.
    static func difference<Element: Equatable>(from old: [Element], to new: [Element]) -> ArrayChangeSet<Element> {
        changeSet(of: new.difference(from: old))
    }

    /// The change set that `CollectionDifference` finds between two arrays, with moves inferred.
    static func difference<Element: Hashable>(from old: [Element], to new: [Element]) -> ArrayChangeSet<Element> {
        changeSet(of: new.difference(from: old).inferringMoves())
    }

    /// `difference` in this module's form. Its removals are old offsets and its insertions new
    /// offsets, as in ``ArrayChangeSet``; an associated removal and insertion are a move.
    private static func changeSet<Element>(of difference: CollectionDifference<Element>) -> ArrayChangeSet<Element> {
        var change = ArrayChangeSet<Element>()
        for removal in difference.removals {
            guard case .remove(let offset, _, let associated) = removal else { continue }
            if let associated {
                change.moves.append(.init(from: offset, to: associated))
            } else {
                change.deletes.append(offset)
            }
        }
        for insertion in difference.insertions {
            guard case .insert(let offset, let element, let associated) = insertion, associated == nil else { continue }
            change.inserts.append(.init(index: offset, element: element))
        }
        change.moves.sort { $0.to < $1.to }
        return change
    }
}
