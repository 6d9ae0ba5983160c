/// What changed between two versions of an array: deleted, inserted, updated and moved elements.
///
/// ## Index convention
///
/// A change set describes one step from an *old* array to a *new* array, all at once (not as a
/// sequence of edits that shift each other's indices):
///
/// - ``deletes`` and ``Move/from`` index the **old** array;
/// - ``inserts`` and ``Move/to`` index the **new** array;
/// - ``updates`` index the **old** array: the element at that old index is replaced by the given
///   value; it stays where it is, or goes where a move with the same ``Move/from`` takes it.
///
/// An old index appears at most once among deletes and move sources, and is never both deleted
/// and updated. A new index appears at most once among inserts and move destinations. The
/// elements that are neither deleted nor moved keep their relative order and fill the new indices
/// that no insert and no move names, in order. This is the convention of `CollectionDifference`
/// (removals by old offset, insertions by new offset) and of batch updates in list views (delete,
/// reload and move-from by old index; insert and move-to by new index).
///
/// ``apply(to:)`` replays a change set on a plain array with exactly these rules.
///
/// ## Resets
///
/// When ``isReset`` is true the change set replaces the whole array: it deletes every element of
/// the old array and inserts every element of the new one. The first event an observer of an
/// observable array receives is a reset whose old array is empty, so a consumer that starts from
/// an empty array and applies every change set it receives always holds the current array.
///
/// Inserted and updated elements travel with the change set, so a consumer that only receives
/// change sets (over a connection, say) can mirror the array without seeing it whole.
public struct ArrayChangeSet<Element> {
    /// An element placed at an index: the value of an insert or an update.
    public struct Indexed {
        public var index: Int
        public var element: Element

        public init(index: Int, element: Element) {
            self.index = index
            self.element = element
        }
    }

    /// An element that moves from an old index to a new index, keeping its value (unless an
    /// update names the same old index).
    public struct Move: Hashable, Sendable {
        /// The index in the old array.
        public var from: Int
        /// The index in the new array.
        public var to: Int

        public init(from: Int, to: Int) {
            self.from = from
            self.to = to
        }
    }

    /// Old indices of the removed elements, ascending.
    public var deletes: [Int]
    /// New indices and values of the inserted elements, ascending by index.
    public var inserts: [Indexed]
    /// Old indices and new values of the replaced elements, ascending by index.
    public var updates: [Indexed]
    /// Moved elements, ascending by destination.
    public var moves: [Move]
    /// Whether this change set replaces the whole array (see the type's documentation).
    public var isReset: Bool

    /// Creates a change set. Indices follow the convention in the type's documentation.
    public init(
        deletes: [Int] = [],
        inserts: [Indexed] = [],
        updates: [Indexed] = [],
        moves: [Move] = [],
        isReset: Bool = false
    ) {
        self.deletes = deletes
        self.inserts = inserts
        self.updates = updates
        self.moves = moves
        self.isReset = isReset
    }

    /// A reset from an array of `oldCount` elements to `newElements`.
    public static func reset(oldCount: Int, to newElements: [Element]) -> ArrayChangeSet {
        ArrayChangeSet(
            deletes: Array(0..<oldCount),
            inserts: newElements.enumerated().map { Indexed(index: $0.offset, element: $0.element) },
            isReset: true
        )
    }

    /// Whether the change set changes nothing.
    public var isEmpty: Bool {
        deletes.isEmpty && inserts.isEmpty && updates.isEmpty && moves.isEmpty && !isReset
    }

    /// The number of elements the new array has, given the old count.
    public func newCount(fromOldCount oldCount: Int) -> Int {
        oldCount - deletes.count + inserts.count
    }

    /// The change set with every carried element transformed; indices are unchanged.
    public func mapElements<T>(_ transform: (Element) throws -> T) rethrows -> ArrayChangeSet<T> {
        ArrayChangeSet<T>(
            deletes: deletes,
            inserts: try inserts.map { .init(index: $0.index, element: try transform($0.element)) },
            updates: try updates.map { .init(index: $0.index, element: try transform($0.element)) },
            moves: moves.map { .init(from: $0.from, to: $0.to) },
            isReset: isReset
        )
    }
}

extension ArrayChangeSet: Sendable where Element: Sendable {}
extension ArrayChangeSet: Equatable where Element: Equatable {}
extension ArrayChangeSet: Hashable where Element: Hashable {}
extension ArrayChangeSet.Indexed: Sendable where Element: Sendable {}
extension ArrayChangeSet.Indexed: Equatable where Element: Equatable {}
extension ArrayChangeSet.Indexed: Hashable where Element: Hashable {}

extension ArrayChangeSet: CustomStringConvertible {
    public var description: String {
        var parts: [String] = []
        if isReset { parts.append("reset") }
        if !deletes.isEmpty { parts.append("deletes: \(deletes)") }
        if !inserts.isEmpty { parts.append("inserts: \(inserts.map { "\($0.index): \($0.element)" })") }
        if !updates.isEmpty { parts.append("updates: \(updates.map { "\($0.index): \($0.element)" })") }
        if !moves.isEmpty { parts.append("moves: \(moves.map { "\($0.from)->\($0.to)" })") }
        return "ArrayChangeSet(\(parts.joined(separator: ", ")))"
    }
}

extension ArrayChangeSet {
    /// Replays the change set on `array`, which must be the old array it was made for.
    ///
    /// Follows the index convention in the type's documentation. Runs in time linear in the
    /// array's length plus the number of changes.
    ///
    /// - Throws: ``ChangeSetError`` with code ``ChangeSetError/Code/indexOutOfRange`` or
    ///   ``ChangeSetError/Code/conflictingIndices`` when the change set does not fit `array`;
    ///   `array` is then left as it was.
    public func apply(to array: inout [Element]) throws(ChangeSetError) {
        array = try applied(to: array)
    }

    /// The array that results from replaying the change set on `array` (see ``apply(to:)``).
    public func applied(to array: [Element]) throws(ChangeSetError) -> [Element] {
        let oldCount = array.count
        let newCount = newCount(fromOldCount: oldCount)
        guard newCount >= 0 else {
            throw ChangeSetError(
                .indexOutOfRange,
                "\(deletes.count) deletes from an array of \(oldCount) elements"
            )
        }
        // 0: kept, 1: deleted, 2: moved away, 3: updated.
        var oldMarks = [UInt8](repeating: 0, count: oldCount)
        for index in deletes {
            try Self.mark(&oldMarks, index, as: 1, what: "delete")
        }
        for move in moves {
            try Self.mark(&oldMarks, move.from, as: 2, what: "move source")
        }
        var source = array
        for update in updates {
            guard update.index >= 0 && update.index < oldCount else {
                throw ChangeSetError(.indexOutOfRange, "update \(update.index) in an array of \(oldCount) elements")
            }
            guard oldMarks[update.index] != 1 && oldMarks[update.index] != 3 else {
                throw ChangeSetError(.conflictingIndices, "update \(update.index) of a deleted or updated element")
            }
            if oldMarks[update.index] == 0 { oldMarks[update.index] = 3 }
            source[update.index] = update.element
        }

        // Placed elements, by new index.
        var placed: [(index: Int, element: Element)] = []
        placed.reserveCapacity(inserts.count + moves.count)
        for insert in inserts { placed.append((insert.index, insert.element)) }
        for move in moves { placed.append((move.to, source[move.from])) }
        if !Self.isAscending(placed) { placed.sort { $0.index < $1.index } }
        var previous = -1
        for item in placed {
            guard item.index >= 0 && item.index < newCount else {
                throw ChangeSetError(
                    .indexOutOfRange,
                    "insert or move to \(item.index) in a new array of \(newCount) elements"
                )
            }
            guard item.index != previous else {
                throw ChangeSetError(.conflictingIndices, "two elements placed at new index \(item.index)")
            }
            previous = item.index
        }

        // Every placed index is in range and distinct, so the counts add up: whenever no placed
        // element belongs at a new index, a kept old element is left to fill it.
        var result: [Element] = []
        result.reserveCapacity(newCount)
        var next = 0
        var old = 0
        for newIndex in 0..<newCount {
            if next < placed.count && placed[next].index == newIndex {
                result.append(placed[next].element)
                next += 1
                continue
            }
            while oldMarks[old] == 1 || oldMarks[old] == 2 { old += 1 }
            result.append(source[old])
            old += 1
        }
        return result
    }

    private static func mark(_ marks: inout [UInt8], _ index: Int, as value: UInt8, what: String) throws(ChangeSetError)
    {
        guard index >= 0 && index < marks.count else {
            throw ChangeSetError(.indexOutOfRange, "\(what) \(index) in an array of \(marks.count) elements")
        }
        guard marks[index] == 0 else {
            throw ChangeSetError(.conflictingIndices, "\(what) \(index) names an element already deleted or moved")
        }
        marks[index] = value
    }

    private static func isAscending(_ placed: [(index: Int, element: Element)]) -> Bool {
        var previous = Int.min
        for item in placed {
            if item.index < previous { return false }
            previous = item.index
        }
        return true
    }
}
