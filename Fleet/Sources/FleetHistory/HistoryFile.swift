import Foundation

/// One line of a history file, any type; see `History.jsonLines()`.
private struct Record: Codable {
    var type: String
    var id: Int?
    var process: Int?
    var key: String?
    var kind: String?
    var expected: String?
    var value: String?
    var invoked: UInt64?
    var completed: UInt64?
    var outcome: String?
    var revision: Int64?
    var observer: String?

    init(type: String, key: String, value: String?) {
        self.type = type
        self.key = key
        self.value = value
    }
}

/// A history file that cannot be read: the line (counted from 1) and what is wrong with it.
public struct HistoryFormatError: Error, CustomStringConvertible {
    public var line: Int
    public var reason: String
    public var description: String { "line \(line): \(reason)" }
}

extension History {
    /// The history as JSON Lines, the format of a history file: one JSON object a line, its `"type"` member saying
    /// what the line records. A member that is absent or null means nil. Blank lines are skipped. Lines are written in
    /// this order: initial values, operations (in the order recorded), etcd's changes, watch events.
    ///
    /// - `{"type": "op", "id": 7, "process": 2, "key": "fleet.a", "kind": "set", "value": "v7", "invoked": 1250000,
    ///   "completed": 1900000, "outcome": "ok", "revision": 41}`: an operation. `id` is unique in the history.
    ///   `kind` is `set` (`value` is the value written), `unset`, `cas` (`expected` is the value the key must hold,
    ///   absent: the key must be absent; `value` is the value written, absent: delete) or `read` (`value` is the value
    ///   read, absent: the key was absent). `invoked` and `completed` are monotonic nanoseconds; `completed` is absent
    ///   when the outcome is unknown. `outcome` is `ok`, `fail` or `unknown`. `revision`, optional, is the etcd
    ///   revision an acknowledged write was committed at.
    /// - `{"type": "etcd", "revision": 41, "key": "fleet.a", "value": "v7"}`: a change in etcd's history; no `value`
    ///   is a deletion. These lines are in revision order.
    /// - `{"type": "watch", "observer": "kiosk-b", "key": "fleet.a", "value": "v7"}`: an event a watcher received; no
    ///   `value` is a deletion. A watcher's lines are in the order it received the events.
    /// - `{"type": "initial", "key": "fleet.a", "value": "v0"}`: the key's value before the first operation
    ///   (optional; a key starts absent otherwise).
    public func jsonLines() -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        var records: [Record] = initialValues.sorted { $0.key < $1.key }.map {
            Record(type: "initial", key: $0.key, value: $0.value)
        }
        for operation in operations {
            var record = Record(type: "op", key: operation.key, value: nil)
            record.id = operation.id
            record.process = operation.process
            record.kind = operation.kind.name
            switch operation.kind {
            case .set(let value): record.value = value
            case .compareAndSet(let expected, let value):
                record.expected = expected
                record.value = value
            case .read: record.value = operation.readValue
            case .unset: break
            }
            record.invoked = operation.invoked
            record.completed = operation.completed
            record.outcome = operation.outcome.rawValue
            record.revision = operation.revision
            records.append(record)
        }
        for change in etcdChanges {
            var record = Record(type: "etcd", key: change.key, value: change.value)
            record.revision = change.revision
            records.append(record)
        }
        for event in watchEvents {
            var record = Record(type: "watch", key: event.key, value: event.value)
            record.observer = event.observer
            records.append(record)
        }
        var data = Data()
        for record in records {
            // Encoding a structure of strings and integers cannot fail.
            data.append(try! encoder.encode(record))
            data.append(0x0A)
        }
        return data
    }

    /// Reads a history written by `jsonLines()`.
    public init(jsonLines data: Data) throws(HistoryFormatError) {
        self.init()
        let decoder = JSONDecoder()
        for (index, line) in data.split(separator: 0x0A, omittingEmptySubsequences: false).enumerated() {
            if line.allSatisfy({ $0 == 0x20 || $0 == 0x09 || $0 == 0x0D }) { continue }
            let record: Record
            do {
                record = try decoder.decode(Record.self, from: Data(line))
            } catch {
                throw HistoryFormatError(line: index + 1, reason: "not a record: \(error)")
            }
            func require<T>(_ value: T?, _ name: String) throws(HistoryFormatError) -> T {
                guard let value else {
                    throw HistoryFormatError(
                        line: index + 1, reason: "a record of type \(quoted(record.type)) needs \(name)")
                }
                return value
            }
            let key = try require(record.key, "key")
            switch record.type {
            case "op":
                let kind: OperationKind
                switch try require(record.kind, "kind") {
                case "set": kind = .set(try require(record.value, "value"))
                case "unset": kind = .unset
                case "cas": kind = .compareAndSet(expected: record.expected, value: record.value)
                case "read": kind = .read
                case let other: throw HistoryFormatError(line: index + 1, reason: "unknown kind \(quoted(other))")
                }
                let outcomeName = try require(record.outcome, "outcome")
                guard let outcome = Outcome(rawValue: outcomeName) else {
                    throw HistoryFormatError(line: index + 1, reason: "unknown outcome \(quoted(outcomeName))")
                }
                operations.append(
                    Operation(
                        id: try require(record.id, "id"), process: try require(record.process, "process"), key: key,
                        kind: kind, invoked: try require(record.invoked, "invoked"), completed: record.completed,
                        outcome: outcome, readValue: kind == .read ? record.value : nil, revision: record.revision))
            case "etcd":
                etcdChanges.append(
                    EtcdChange(revision: try require(record.revision, "revision"), key: key, value: record.value))
            case "watch":
                watchEvents.append(
                    WatchEvent(observer: try require(record.observer, "observer"), key: key, value: record.value))
            case "initial":
                initialValues[key] = try require(record.value, "value")
            case let other:
                throw HistoryFormatError(line: index + 1, reason: "unknown type \(quoted(other))")
            }
        }
    }

    /// Reads a history file written by `write(to:)`.
    public init(contentsOf path: String) throws {
        try self.init(jsonLines: Data(contentsOf: URL(fileURLWithPath: path)))
    }

    /// Writes the history as JSON Lines, replacing the file.
    public func write(to path: String) throws {
        try jsonLines().write(to: URL(fileURLWithPath: path), options: .atomic)
    }
}
