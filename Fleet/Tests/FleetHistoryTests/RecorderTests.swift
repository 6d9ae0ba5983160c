import FleetHistory
import Foundation
import Testing

@Suite("recording, the file format and the report")
struct RecorderTests {
    @Test("many tasks record at once; every operation keeps its own interval and outcome")
    func concurrentRecording() async {
        let recorder = HistoryRecorder()
        await withTaskGroup(of: Void.self) { group in
            for process in 0..<8 {
                group.addTask {
                    for index in 0..<50 {
                        let handle = recorder.invoke(
                            process: process, key: "k\(index % 3)", .set("p\(process)-\(index)"))
                        recorder.complete(handle, index % 10 == 0 ? .unknown : .ok, revision: Int64(index))
                    }
                }
            }
        }
        let history = recorder.history
        #expect(history.operations.count == 400)
        #expect(Set(history.operations.map(\.id)) == Set(0..<400))
        for operation in history.operations {
            #expect(
                operation.outcome == .unknown ? operation.completed == nil : operation.completed! >= operation.invoked)
        }
        for process in 0..<8 {
            let own = history.operations.filter { $0.process == process }
            #expect(own.map(\.kind.writtenValue) == (0..<50).map { "p\(process)-\($0)" })
        }
    }

    @Test("a recorded history survives the trip through a file")
    func roundTrip() throws {
        let recorder = HistoryRecorder(initialValues: ["fleet.b": "zero"])
        let set = recorder.invoke(process: 1, key: "fleet.a", .set("a1"), at: 100)
        let cas = recorder.invoke(process: 2, key: "fleet.a", .compareAndSet(expected: nil, value: "a2"), at: 110)
        let delete = recorder.invoke(process: 3, key: "fleet.a", .compareAndSet(expected: "a1", value: nil), at: 120)
        let read = recorder.invoke(process: 4, key: "fleet.a", .read, at: 130)
        let absent = recorder.invoke(process: 5, key: "fleet.b", .read, at: 131)
        _ = recorder.invoke(process: 6, key: "fleet.b", .unset, at: 140)
        recorder.complete(set, .ok, revision: 7, at: 200)
        recorder.complete(cas, .fail, at: 210)
        recorder.complete(delete, .unknown, at: 220)
        recorder.complete(read, .ok, readValue: "a1", at: 230)
        recorder.complete(absent, .ok, readValue: nil, at: 231)
        recorder.recordChange(revision: 7, key: "fleet.a", value: "a1")
        recorder.recordChange(revision: 8, key: "fleet.a", value: nil)
        recorder.recordWatchEvent(observer: "kiosk-a", key: "fleet.a", value: "a1")
        recorder.recordWatchEvent(observer: "kiosk-a", key: "fleet.a", value: nil)

        let path = FileManager.default.temporaryDirectory.appendingPathComponent("history-\(UUID()).jsonl").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        try recorder.write(to: path)
        let loaded = try HistoryRecorder.load(from: path)
        #expect(loaded == recorder.history)
        #expect(loaded.operations[2].completed == nil)
        #expect(loaded.operations[5].outcome == .unknown)

        let lines = String(decoding: recorder.history.jsonLines(), as: UTF8.self).split(separator: "\n")
        #expect(lines.first == #"{"key":"fleet.b","type":"initial","value":"zero"}"#)
        #expect(
            lines[1]
                == #"{"completed":200,"id":0,"invoked":100,"key":"fleet.a","kind":"set","outcome":"ok","process":1,"#
                + #""revision":7,"type":"op","value":"a1"}"#)
        #expect(lines.contains(#"{"key":"fleet.a","revision":8,"type":"etcd"}"#))
        #expect(lines.last == #"{"key":"fleet.a","observer":"kiosk-a","type":"watch"}"#)
    }

    @Test("a malformed line is reported with its number")
    func malformed() {
        let text = """
            {"type":"etcd","revision":1,"key":"k","value":"a"}

            {"type":"op","key":"k","kind":"set","value":"b","invoked":1,"outcome":"ok","process":1}
            """
        #expect(throws: HistoryFormatError.self) { try History(jsonLines: Data(text.utf8)) }
        do {
            _ = try History(jsonLines: Data(text.utf8))
        } catch {
            #expect(error.description == "line 3: a record of type \"op\" needs id")
        }
        #expect(throws: HistoryFormatError.self) { try History(jsonLines: Data("not json\n".utf8)) }
    }

    @Test("the report counts operations and anomalies and shows examples")
    func report() {
        var r = Recording()
        r.op(1, .set("a"), 0, 10)
        r.op(2, .compareAndSet(expected: "a", value: "b"), 20, 30, .fail)
        r.op(3, .unset, 20, nil, .unknown)
        r.read(1, "b", 40, 50)
        r.etcd("a", "b")
        r.watch("kiosk-a", "a", "c")
        let report = HistoryReport(history: r.history)
        #expect(!report.isClean)
        #expect(report.count(of: .refusedApplied) == 1)
        #expect(
            report.table == """
                1 keys, 2 etcd changes, 2 watch events from 1 watchers

                | operation | ok | fail | unknown | total |
                | --- | ---: | ---: | ---: | ---: |
                | set | 1 | 0 | 0 | 1 |
                | unset | 0 | 0 | 1 | 1 |
                | cas | 0 | 1 | 0 | 1 |
                | read | 1 | 0 | 0 | 1 |
                | all | 2 | 1 | 1 | 4 |

                | check | anomaly | count |
                | --- | --- | ---: |
                | linearizable | not linearizable | 1 |
                | linearizable | undecided | 0 |
                | applied-twice | applied twice | 0 |
                | acknowledged-missing | acknowledged but missing | 0 |
                | refused-applied | refused but applied | 1 |
                | real-time order | lost update | 0 |
                | watch order | watch out of order | 0 |
                | watch order | watch saw unknown change | 1 |

                """)
        let examples = report.examples(limit: 5)
        #expect(examples.contains("\nrefused but applied:\n- process 2 compare-and-set \"k\" from \"a\" to \"b\""))
        #expect(HistoryReport(history: RandomHistory().make(seed: 7)).examples() == "")
    }
}
