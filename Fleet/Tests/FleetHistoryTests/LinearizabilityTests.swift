import FleetHistory
import Testing

@Suite("linearizability of each key")
struct LinearizabilityTests {
    @Test("a concurrent history with overlapping acknowledged writes and compare-and-sets passes every check")
    func concurrentHistory() {
        var r = Recording()
        r.op(1, .set("a"), 0, 10, revision: 1)
        r.op(2, .set("b"), 5, 15, revision: 2)
        r.read(3, "b", 12, 20)
        r.op(1, .compareAndSet(expected: "b", value: "c"), 16, 30, revision: 3)
        r.op(2, .compareAndSet(expected: "b", value: "d"), 17, 25, .fail)  // lost its compare to the one above
        r.read(3, "c", 28, 40)
        r.op(2, .unset, 35, 45, revision: 4)
        r.read(1, nil, 50, 55)
        r.op(3, .compareAndSet(expected: nil, value: "e"), 52, 60)
        r.read(1, "e", 61, 62)
        r.op(2, .unset, 70, 80)
        r.op(3, .unset, 75, 85, .fail)  // the key was already absent
        r.read(1, nil, 90, 95)
        r.etcd("a", "b", "c", nil, "e", nil)
        r.watch("kiosk-a", "a", "c", nil, "e")
        r.watch("kiosk-b", "b", nil, nil)
        #expect(r.all == [])
    }

    @Test("a stale read is not linearizable, and the anomaly names the read and the write that overwrote the value")
    func staleRead() throws {
        var r = Recording()
        let write = r.op(1, .set("a"), 0, 10)
        let overwrite = r.op(2, .set("b"), 20, 30)
        let read = r.read(3, "a", 40, 50)
        r.etcd("a", "b")
        let anomalies = r.all
        #expect(anomalies.map(\.kind) == [.notLinearizable])
        let anomaly = try #require(anomalies.first)
        #expect(anomaly.operations == [read, write, overwrite])
        #expect(
            anomaly.explanation
                == "\"k\": process 3 read \"a\" from \"k\" (ok, 0.000 ms to 0.000 ms) cannot be explained: \"a\" was "
                + "written only by process 1 set \"k\" to \"a\" (ok, 0.000 ms to 0.000 ms), and process 2 set \"k\" to "
                + "\"b\" (ok, 0.000 ms to 0.000 ms) overwrote it before this was invoked")
    }

    @Test("a value cannot come back while its writer is still in flight; the search names where it got stuck")
    func valueComesBack() throws {
        var r = Recording()
        r.op(1, .set("a"), 0, 100)
        r.op(2, .set("b"), 0, 100)
        r.read(3, "a", 10, 20)
        r.read(3, "b", 30, 40)
        #expect(r.anomalies(.linearizable) == [])
        let read = r.read(3, "a", 50, 60)
        let anomalies = r.anomalies(.linearizable)
        #expect(anomalies.map(\.kind) == [.notLinearizable])
        let anomaly = try #require(anomalies.first)
        #expect(anomaly.operations == [read])
        #expect(anomaly.explanation.contains("4 of the 5 operations that must take effect can be put in order"))
        #expect(anomaly.explanation.contains("no order lets process 3 read \"a\" from \"k\""))
        #expect(anomaly.explanation.contains("the key could then hold only \"b\""))
    }

    @Test("a read of a value written only after the read returned is not linearizable")
    func readFromTheFuture() throws {
        var r = Recording()
        let read = r.read(2, "a", 0, 4)
        let write = r.op(1, .set("a"), 5, 10)
        let anomalies = r.anomalies(.linearizable)
        #expect(anomalies.map(\.kind) == [.notLinearizable])
        #expect(anomalies.first?.operations == [read, write])
        #expect(anomalies.first?.explanation.contains("invoked after this returned") == true)
    }

    @Test("a read that overlaps a write may see its value")
    func overlappingRead() {
        var r = Recording()
        r.op(1, .set("a"), 0, 10)
        r.read(2, "a", 5, 8)  // overlaps the write: fine
        #expect(r.anomalies(.linearizable) == [])
        r.read(3, "a", 1, 3)  // inside the write's interval
        #expect(r.anomalies(.linearizable) == [])
    }

    @Test("a compare-and-set that succeeds against a value the key no longer holds is not linearizable")
    func compareAgainstOldValue() {
        var r = Recording()
        r.op(1, .set("a"), 0, 10)
        r.op(2, .set("b"), 20, 30)
        r.op(3, .compareAndSet(expected: "a", value: "c"), 40, 50)
        #expect(r.anomalies(.linearizable).map(\.kind) == [.notLinearizable])
    }

    @Test("an unknown write that applied late is accepted")
    func unknownAppliedLate() {
        var r = Recording()
        r.op(1, .set("a"), 0, 10, revision: 1)
        r.op(2, .set("b"), 20, nil, .unknown)
        r.op(3, .set("c"), 30, 40, revision: 2)
        r.read(1, "c", 45, 50)
        r.read(1, "b", 60, 70)
        r.read(3, "b", 200, 210)
        r.etcd("a", "c", "b")
        r.watch("kiosk-a", "a", "c", "b")
        #expect(r.all == [])
    }

    @Test("an unknown write that never applied is accepted, with or without etcd's history")
    func unknownNeverApplied() {
        var r = Recording()
        r.op(1, .set("a"), 0, 10)
        r.op(2, .set("b"), 20, nil, .unknown)
        r.read(1, "a", 30, 40)
        r.op(3, .set("c"), 50, 60)
        r.read(1, "c", 70, 80)
        #expect(r.anomalies(.linearizable) == [])
        r.etcd("a", "c")
        #expect(r.all == [])
    }

    @Test("a read of an unknown write's value that etcd never had is not linearizable")
    func readOfValueNeverApplied() {
        var r = Recording()
        r.op(1, .set("a"), 0, 10)
        r.op(2, .set("b"), 20, nil, .unknown)
        r.read(1, "b", 30, 40)
        // Without etcd's history the unknown write may have applied.
        #expect(r.anomalies(.linearizable) == [])
        r.etcd("a")
        #expect(r.anomalies(.linearizable).map(\.kind) == [.notLinearizable])
    }

    @Test("an unknown write is not forced: a read may see the value it would have overwritten")
    func unknownNotForced() {
        var r = Recording()
        r.op(1, .set("a"), 0, 10)
        r.op(2, .set("b"), 20, nil, .unknown)
        r.op(3, .compareAndSet(expected: "b", value: "c"), 25, nil, .unknown)
        r.read(1, "a", 30, 40)
        r.read(1, "a", 1_000, 1_010)
        #expect(r.anomalies(.linearizable) == [])
    }

    @Test("an unknown compare-and-set whose value was read took effect before that read")
    func unknownForcedByRead() {
        var r = Recording()
        r.op(1, .set("a"), 0, 10)
        r.op(2, .compareAndSet(expected: "a", value: "b"), 20, nil, .unknown)
        r.read(1, "b", 30, 40)
        r.op(3, .set("c"), 50, 60)
        r.read(1, "c", 70, 80)
        #expect(r.anomalies(.linearizable) == [])

        var early = Recording()
        early.op(1, .set("a"), 0, 10)
        early.read(1, "b", 12, 15)  // before the compare-and-set was even invoked
        early.op(2, .compareAndSet(expected: "a", value: "b"), 20, nil, .unknown)
        #expect(early.anomalies(.linearizable).map(\.kind) == [.notLinearizable])

        var lostCompare = Recording()
        lostCompare.op(1, .set("a"), 0, 10)
        lostCompare.op(3, .set("c"), 11, 15)
        lostCompare.op(2, .compareAndSet(expected: "a", value: "b"), 20, nil, .unknown)
        lostCompare.read(1, "b", 30, 40)  // the key held "c", not "a", once the compare-and-set was invoked
        #expect(lostCompare.anomalies(.linearizable).map(\.kind) == [.notLinearizable])
    }

    @Test("an unknown unset stays possible across quiet periods, but cannot be undone")
    func unknownUnsetAcrossSegments() {
        var r = Recording()
        r.op(1, .set("a"), 0, 10)
        r.op(2, .unset, 15, nil, .unknown)
        r.read(1, "a", 20, 30)
        r.op(1, .set("b"), 40, 50)
        r.read(3, "b", 60, 70)
        r.read(3, nil, 80, 90)  // the unset took effect here
        r.op(1, .set("c"), 100, 110)
        r.read(3, "c", 120, 130)
        #expect(r.anomalies(.linearizable) == [])
        r.read(3, nil, 140, 150)  // one unset cannot delete twice
        #expect(r.anomalies(.linearizable).map(\.kind) == [.notLinearizable])

        var twice = Recording()
        twice.op(1, .set("a"), 0, 10)
        twice.op(2, .unset, 15, nil, .unknown)
        twice.read(1, nil, 20, 30)
        twice.read(1, "a", 40, 50)  // the deletion cannot be taken back
        #expect(twice.anomalies(.linearizable).map(\.kind) == [.notLinearizable])
    }

    @Test("several unknown unsets can each take effect once")
    func severalUnknownUnsets() {
        var r = Recording()
        r.op(2, .unset, 5, nil, .unknown)
        r.op(3, .unset, 6, nil, .unknown)
        for (index, value) in ["a", "b", "c"].enumerated() {
            let start = UInt64(index) * 100 + 10
            r.op(1, .set(value), start, start + 10)
            r.read(1, value, start + 20, start + 30)
            if index < 2 { r.read(1, nil, start + 40, start + 50) }
        }
        #expect(r.anomalies(.linearizable) == [])
        r.read(1, nil, 400, 410)
        #expect(r.anomalies(.linearizable).map(\.kind) == [.notLinearizable])
    }

    @Test("an initial value is where each key starts")
    func initialValue() {
        var r = Recording()
        r.read(1, "zero", 0, 10)
        #expect(r.anomalies(.linearizable).map(\.kind) == [.notLinearizable])
        r.history.initialValues["k"] = "zero"
        #expect(r.anomalies(.linearizable) == [])
    }

    @Test("keys are checked on their own")
    func keysApart() {
        var r = Recording()
        r.op(1, .set("a"), 0, 10, key: "x")
        r.op(2, .set("b"), 0, 10, key: "y")
        r.read(1, "b", 20, 30, key: "y")
        r.read(1, "b", 20, 30, key: "x")
        let anomalies = r.anomalies(.linearizable)
        #expect(anomalies.map(\.kind) == [.notLinearizable])
        #expect(anomalies.map(\.key) == ["x"])
    }

    @Test("a search that runs out of steps reports the key undecided")
    func undecided() {
        var r = Recording()
        for process in 0..<6 { r.op(process, .set("v\(process)"), 0, 100) }
        r.read(7, "v3", 50, 150)
        #expect(r.anomalies(.linearizable) == [])
        let anomalies = r.anomalies(.linearizable, stepBudget: 5)
        #expect(anomalies.map(\.kind) == [.undecided])
        #expect(anomalies.first?.explanation.contains("gave up after 6 steps") == true)
    }
}
