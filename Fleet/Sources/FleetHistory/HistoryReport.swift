/// Every check's result on one history, with counts of what the history holds.
public struct HistoryReport: Sendable {
    /// The operation kinds in the order the report lists them.
    public static let operationKinds = ["set", "unset", "cas", "read"]

    /// For each operation kind (`set`, `unset`, `cas`, `read`), how many operations had each outcome.
    public var operationCounts: [String: [Outcome: Int]]
    public var etcdChangeCount: Int
    public var watchEventCount: Int
    public var observerCount: Int
    public var keyCount: Int
    /// Every anomaly found, check by check in the order of `HistoryCheck.allCases`.
    public var anomalies: [Anomaly]

    /// Runs every check on `history`.
    public init(history: History, options: CheckOptions = CheckOptions()) {
        operationCounts = [:]
        for operation in history.operations {
            operationCounts[operation.kind.name, default: [:]][operation.outcome, default: 0] += 1
        }
        etcdChangeCount = history.etcdChanges.count
        watchEventCount = history.watchEvents.count
        observerCount = Set(history.watchEvents.map(\.observer)).count
        keyCount = history.keys.count
        anomalies = history.anomalies(options: options)
    }

    /// How many anomalies of `kind` were found.
    public func count(of kind: AnomalyKind) -> Int {
        anomalies.count { $0.kind == kind }
    }

    /// Whether no check found anything.
    public var isClean: Bool { anomalies.isEmpty }

    /// Two Markdown tables: operations by kind and outcome, then anomalies by check and kind; a line of totals
    /// before them.
    public var table: String {
        var lines = [
            "\(keyCount) keys, \(etcdChangeCount) etcd changes, \(watchEventCount) watch events from "
                + "\(observerCount) watchers", "",
            "| operation | ok | fail | unknown | total |",
            "| --- | ---: | ---: | ---: | ---: |",
        ]
        var totals: [Outcome: Int] = [:]
        for kind in Self.operationKinds {
            let counts = operationCounts[kind, default: [:]]
            totals.merge(counts, uniquingKeysWith: +)
            lines.append(Self.row(kind, counts))
        }
        lines.append(Self.row("all", totals))
        lines += ["", "| check | anomaly | count |", "| --- | --- | ---: |"]
        for kind in AnomalyKind.allCases {
            lines.append("| \(kind.check.rawValue) | \(kind.rawValue) | \(count(of: kind)) |")
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// Up to `limit` anomalies of each kind found, in words, under a heading per kind.
    public func examples(limit: Int = 5) -> String {
        var lines: [String] = []
        for kind in AnomalyKind.allCases {
            let found = anomalies.filter { $0.kind == kind }
            guard !found.isEmpty else { continue }
            let shown = found.count > limit ? " (\(limit) of \(found.count))" : ""
            lines += ["", "\(kind.rawValue)\(shown):"]
            lines += found.prefix(limit).map { "- \($0.explanation)" }
        }
        return lines.joined(separator: "\n") + (lines.isEmpty ? "" : "\n")
    }

    private static func row(_ name: String, _ counts: [Outcome: Int]) -> String {
        let cells = Outcome.allCases.map { counts[$0, default: 0] }
        return "| \(name) | " + (cells + [cells.reduce(0, +)]).map(String.init).joined(separator: " | ") + " |"
    }
}
