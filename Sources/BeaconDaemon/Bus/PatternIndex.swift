import BeaconProtocol

/// Subscriptions (or groups of them, ``ParkedSubscriptions``) indexed by the literal prefix of their patterns, so
/// that finding the subscribers of a key visits only the patterns whose prefix lies on the key's path.
final class PatternIndex<Subscriber: AnyObject> {
    private final class Node {
        var children: [Substring: Node] = [:]
        var entries: [(pattern: KeyPattern, subscription: Subscriber)] = []
    }

    private let root = Node()
    private(set) var count = 0
    var isEmpty: Bool { count == 0 }

    func insert(_ pattern: KeyPattern, for subscription: Subscriber) {
        var node = root
        for segment in pattern.literalPrefix {
            if let child = node.children[segment] {
                node = child
            } else {
                let child = Node()
                node.children[segment] = child
                node = child
            }
        }
        node.entries.append((pattern, subscription))
        count += 1
    }

    func remove(_ pattern: KeyPattern, for subscription: Subscriber) {
        var path: [(Node, Substring)] = []
        var node = root
        for segment in pattern.literalPrefix {
            guard let child = node.children[segment] else { return }
            path.append((node, segment))
            node = child
        }
        let before = node.entries.count
        node.entries.removeAll { $0.subscription === subscription && $0.pattern == pattern }
        count -= before - node.entries.count
        // Drop nodes that no longer lead anywhere.
        while let (parent, segment) = path.last, node.entries.isEmpty, node.children.isEmpty {
            parent.children[segment] = nil
            node = parent
            path.removeLast()
        }
    }

    /// Calls `body` for every subscription with a pattern matching `key` (once per matching pattern).
    func forEachMatch(_ key: PropertyKey, _ body: (Subscriber) -> Void) {
        var node = root
        for entry in node.entries where entry.pattern.matches(key) {
            body(entry.subscription)
        }
        let name = key.rawValue
        let utf8 = name.utf8
        var start = utf8.startIndex
        while true {
            let end = utf8[start...].firstIndex(of: UInt8(ascii: ".")) ?? utf8.endIndex
            guard let child = node.children[name[start..<end]] else { return }
            node = child
            for entry in node.entries where entry.pattern.matches(key) {
                body(entry.subscription)
            }
            guard end != utf8.endIndex else { return }
            start = utf8.index(after: end)
        }
    }
}
