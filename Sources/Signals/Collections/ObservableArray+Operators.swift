/// Per-observer state of a collection operator, taken out while an event is worked on so that the
/// operator's closures run with no lock held.
final class OperatorState<State> {
    private let stored: Locked<State?>

    init() {
        stored = Locked(nil)
    }

    /// Takes the state out; nil before the first event (or while another thread works on one).
    func take() -> State? {
        stored.withLock { state in
            defer { state = nil }
            return state
        }
    }

    func store(_ state: State) {
        stored.withLock { $0 = state }
    }
}

extension OperatorState: Sendable where State: Sendable {}

extension SignalProtocol where Element: ObservableArrayEventProtocol {
    /// Transforms every element, keeping the change sets: inserts and updates carry transformed
    /// elements, and deletes and moves are unchanged.
    ///
    /// `transform` is called once for each inserted or updated element, not for the whole array
    /// on each change. Each observer keeps its own transformed array. When an incoming change set
    /// does not fit the previous array, the observer gets a reset instead.
    public func mapCollection<T>(_ transform: @escaping (Element.Item) -> T) -> Signal<ObservableArrayEvent<T>> {
        Signal { observer in
            let state = OperatorState<[T]>()
            return self.observe { event in
                switch event {
                case .completed:
                    observer(.completed)
                case .next(let source):
                    let previous = state.take() ?? []
                    let output = Self.mapStep(source, previous: previous, transform)
                    state.store(output.array)
                    observer(.next(output))
                }
            }
        }
    }

    private static func mapStep<T>(
        _ source: Element,
        previous: [T],
        _ transform: (Element.Item) -> T
    ) -> ObservableArrayEvent<T> {
        if source.changeSet.isReset {
            let array = source.array.map(transform)
            return .reset(oldCount: previous.count, to: array)
        }
        let change = source.changeSet.mapElements(transform)
        if let array = try? change.applied(to: previous), array.count == source.array.count {
            return ObservableArrayEvent(array: array, changeSet: change)
        }
        return .reset(oldCount: previous.count, to: source.array.map(transform))
    }

    /// Keeps the elements that satisfy `isIncluded`, with change sets in the filtered array's
    /// indices.
    ///
    /// An element inserted or updated into matching becomes an insert, one deleted or updated out
    /// of matching a delete, an update of an element that matches before and after an update, and
    /// a moved matching element a move. Events that change nothing in the filtered array are not
    /// sent. `isIncluded` is called once for each inserted or updated element (and for every
    /// element on a reset). When an incoming change set does not fit the previous array, the
    /// observer gets a reset instead.
    public func filterCollection(
        _ isIncluded: @escaping (Element.Item) -> Bool
    ) -> Signal<ObservableArrayEvent<Element.Item>> {
        Signal { observer in
            let state = OperatorState<FilterState<Element.Item>>()
            return self.observe { event in
                switch event {
                case .completed:
                    observer(.completed)
                case .next(let source):
                    let previous = state.take() ?? FilterState(mask: [], filtered: [])
                    let (next, output) = FilterState.step(previous, source.array, source.changeSet, isIncluded)
                    state.store(next)
                    if let output { observer(.next(output)) }
                }
            }
        }
    }

    /// Makes `target` hold the arrays this signal sends, passing each change set on to the
    /// target's observers.
    ///
    /// The first event, and any event that finds the target written to by someone else since the
    /// binding last wrote it, replaces the target's contents with a reset; the others are
    /// delivered with their own change sets. The binding holds `target` weakly; disposing the
    /// returned disposable ends it.
    @discardableResult
    public func bindCollection(to target: MutableObservableArray<Element.Item>) -> any Disposable {
        let version = OperatorState<UInt64>()
        return observe { [weak target] event in
            guard case .next(let source) = event, let target else { return }
            let expected = version.take()
            let written = target.receive(
                ObservableArrayEvent(array: source.array, changeSet: source.changeSet),
                ifAt: expected
            )
            version.store(written)
        }
    }
}

/// What a filtering observer remembers: which source elements match, and the filtered array.
struct FilterState<Item> {
    var mask: [Bool]
    var filtered: [Item]

    static func step(
        _ previous: FilterState,
        _ array: [Item],
        _ change: ArrayChangeSet<Item>,
        _ isIncluded: (Item) -> Bool
    ) -> (FilterState, ObservableArrayEvent<Item>?) {
        if !change.isReset, let result = try? incremental(previous, array, change, isIncluded) {
            return result
        }
        let mask = array.map(isIncluded)
        let filtered = select(array, mask)
        let next = FilterState(mask: mask, filtered: filtered)
        return (next, .reset(oldCount: previous.filtered.count, to: filtered))
    }

    private static func select(_ array: [Item], _ mask: [Bool]) -> [Item] {
        var filtered: [Item] = []
        for index in array.indices where mask[index] {
            filtered.append(array[index])
        }
        return filtered
    }

    private static func ranks(_ mask: [Bool]) -> [Int] {
        var ranks = [Int](repeating: 0, count: mask.count)
        var count = 0
        for index in mask.indices {
            ranks[index] = count
            if mask[index] { count += 1 }
        }
        return ranks
    }

    private static func incremental(
        _ previous: FilterState,
        _ array: [Item],
        _ change: ArrayChangeSet<Item>,
        _ isIncluded: (Item) -> Bool
    ) throws(ChangeSetError) -> (FilterState, ObservableArrayEvent<Item>?) {
        let oldMask = previous.mask
        let oldCount = oldMask.count
        let oldToNew = try ChangeDerivation.oldToNew(change, oldCount: oldCount)
        let newCount = array.count
        guard change.newCount(fromOldCount: oldCount) == newCount else {
            throw ChangeSetError(.indexOutOfRange, "change set does not lead to an array of \(newCount) elements")
        }
        var updated = [Bool](repeating: false, count: oldCount)
        for update in change.updates { updated[update.index] = true }

        var newToOld = [Int](repeating: -1, count: newCount)
        var newMask = [Bool](repeating: false, count: newCount)
        for oldIndex in 0..<oldCount {
            let newIndex = oldToNew[oldIndex]
            guard newIndex >= 0 else { continue }
            newToOld[newIndex] = oldIndex
            newMask[newIndex] = updated[oldIndex] ? isIncluded(array[newIndex]) : oldMask[oldIndex]
        }
        for insert in change.inserts {
            newMask[insert.index] = isIncluded(array[insert.index])
        }
        let oldRanks = ranks(oldMask)
        let newRanks = ranks(newMask)

        var filteredChange = ArrayChangeSet<Item>()
        for oldIndex in 0..<oldCount where oldMask[oldIndex] {
            let newIndex = oldToNew[oldIndex]
            if newIndex < 0 || !newMask[newIndex] {
                filteredChange.deletes.append(oldRanks[oldIndex])
            }
        }
        for newIndex in 0..<newCount where newMask[newIndex] {
            let oldIndex = newToOld[newIndex]
            if oldIndex < 0 || !oldMask[oldIndex] {
                filteredChange.inserts.append(.init(index: newRanks[newIndex], element: array[newIndex]))
            }
        }
        for move in change.moves where oldMask[move.from] && newMask[move.to] {
            filteredChange.moves.append(.init(from: oldRanks[move.from], to: newRanks[move.to]))
        }
        for update in change.updates {
            let newIndex = oldToNew[update.index]
            if newIndex >= 0 && oldMask[update.index] && newMask[newIndex] {
                filteredChange.updates.append(.init(index: oldRanks[update.index], element: array[newIndex]))
            }
        }
        filteredChange.moves.sort { $0.to < $1.to }
        filteredChange.updates.sort { $0.index < $1.index }

        let next = FilterState(mask: newMask, filtered: select(array, newMask))
        if filteredChange.isEmpty { return (next, nil) }
        return (next, ObservableArrayEvent(array: next.filtered, changeSet: filteredChange))
    }
}
