import BeaconProtocol
import BeaconTestSupport
import Testing

@testable import BeaconDaemon

/// ``PatternIndex`` on its own, against a model: the list of (pattern, subscription) pairs inserted and not removed,
/// every one matched against every key.
@Suite("PatternIndex against a model")
struct PatternIndexTests {
    /// Segments that nest and sort apart only by the dot, and the wildcards.
    static let segments = ["a", "a0", "a-b", "b", "*"]
    static let keySegments = ["a", "a0", "a-b", "b"]

    static func randomPattern(using generator: inout SeededRandom) -> KeyPattern {
        let depth = Int.random(in: 1...3, using: &generator)
        var parts = (0..<depth).map { _ in segments.randomElement(using: &generator)! }
        if Bool.random(using: &generator) { parts.append("**") }
        return try! KeyPattern(parts.joined(separator: "."))
    }

    static func randomKey(using generator: inout SeededRandom) -> PropertyKey {
        let depth = Int.random(in: 1...4, using: &generator)
        return try! PropertyKey(
            (0..<depth).map { _ in keySegments.randomElement(using: &generator)! }.joined(separator: "."))
    }

    @Test("random inserts and removals: each key's matches are the model's, once per matching pattern")
    func randomOperations() throws {
        let inProcess = try InProcessBus()
        var clients: [InProcessBus.Client] = []
        for _ in 0..<4 { clients.append(try inProcess.connect()) }
        let busClients = Array(inProcess.bus.clients.values)
        try #require(busClients.count == 4)
        let subscriptions = busClients.map {
            Subscription(kind: .observe, patterns: [], client: $0, start: 0)
        }
        let index = PatternIndex<Subscription>()
        var model: [(pattern: KeyPattern, subscription: Subscription)] = []
        var generator = SeededRandom(seed: 0x9A77_E4)
        for round in 0..<300 {
            if model.isEmpty || Int.random(in: 0..<3, using: &generator) > 0 {
                let pattern = Self.randomPattern(using: &generator)
                let subscription = subscriptions.randomElement(using: &generator)!
                index.insert(pattern, for: subscription)
                model.append((pattern, subscription))
            } else {
                // Removes every insertion of the pair, as the index does.
                let (pattern, subscription) = model.randomElement(using: &generator)!
                index.remove(pattern, for: subscription)
                model.removeAll { $0.pattern == pattern && $0.subscription === subscription }
            }
            #expect(index.count == model.count, "round \(round)")
            for _ in 0..<10 {
                let key = Self.randomKey(using: &generator)
                var found: [ObjectIdentifier: Int] = [:]
                index.forEachMatch(key) { found[ObjectIdentifier($0), default: 0] += 1 }
                var expected: [ObjectIdentifier: Int] = [:]
                for entry in model where entry.pattern.matches(key) {
                    expected[ObjectIdentifier(entry.subscription), default: 0] += 1
                }
                #expect(found == expected, "key \(key), round \(round)")
            }
        }
        // Everything removed: nothing matches and no node is left to visit.
        for (pattern, subscription) in model { index.remove(pattern, for: subscription) }
        #expect(index.count == 0)
        var any = false
        index.forEachMatch(try PropertyKey("a.a0.b")) { _ in any = true }
        #expect(!any)
        // The clients' connections stay open to here: a subscription's client holds its connection unowned.
        withExtendedLifetime(clients) {}
    }
}
