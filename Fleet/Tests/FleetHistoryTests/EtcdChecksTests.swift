import FleetHistory
import Testing

@Suite("checks against etcd's history")
struct EtcdChecksTests {
    @Test("a compare-and-set told VersionMismatch had in fact won")
    func refusedButApplied() throws {
        var r = Recording()
        r.op(1, .set("a"), 0, 10)
        let cas = r.op(2, .compareAndSet(expected: "a", value: "b"), 20, 30, .fail)
        r.read(1, "b", 40, 50)
        r.etcd("a", "b")
        let anomalies = r.all
        #expect(anomalies.map(\.kind) == [.notLinearizable, .refusedApplied])
        let refused = try #require(anomalies.last)
        #expect(refused.operations == [cas])
        #expect(refused.explanation.contains("was told it failed, but etcd's history has \"b\" at revision 2"))
    }

    @Test("a value applied twice (X, Y, X) is found")
    func appliedTwice() throws {
        var r = Recording()
        let x = r.op(1, .set("x"), 0, 10)
        r.op(2, .set("y"), 20, 30)
        r.etcd("x", "y", "x")
        let anomalies = r.anomalies(.appliedTwice)
        #expect(anomalies.count == 1)
        let anomaly = try #require(anomalies.first)
        #expect(anomaly.operations == [x])
        #expect(anomaly.explanation.contains("\"x\" appears 2 times in etcd's history: \"k\" at revisions 1 and 3"))
        // The second x overwrote y, written after x was acknowledged.
        #expect(r.anomalies(.realTimeOrder).count == 1)
    }

    @Test("an acknowledged write overwritten by a late retry of an earlier-acknowledged write is a lost update")
    func lostUpdate() throws {
        var r = Recording()
        let x = r.op(1, .set("x"), 0, 10)
        let y = r.op(2, .set("y"), 20, 30)
        r.etcd("y", "x")
        let anomalies = r.all
        #expect(anomalies.map(\.kind) == [.lostUpdate])
        let anomaly = try #require(anomalies.first)
        #expect(anomaly.operations == [x, y])
        #expect(anomaly.explanation.contains("etcd wrote \"x\" at revision 2, after \"y\" at revision 1"))
        // A later write that is unknown counts too; one that overlaps the first does not.
        var unknown = Recording()
        unknown.op(1, .set("x"), 0, 10)
        unknown.op(2, .set("y"), 20, nil, .unknown)
        unknown.etcd("y", "x")
        #expect(unknown.anomalies(.realTimeOrder).count == 1)
        var overlapping = Recording()
        overlapping.op(1, .set("x"), 0, 10)
        overlapping.op(2, .set("y"), 5, 30)
        overlapping.etcd("y", "x")
        #expect(overlapping.all == [])
    }

    @Test("an acknowledged write missing from etcd's history, or at another revision, is found")
    func acknowledgedMissing() {
        var r = Recording()
        r.op(1, .set("a"), 0, 10, revision: 1)
        r.op(1, .set("b"), 20, 30, revision: 3)
        r.op(1, .set("c"), 40, 50)
        r.op(2, .set("d"), 60, nil, .unknown)
        r.op(2, .compareAndSet(expected: "a", value: "e"), 60, 70, .fail)
        r.etcd("a", "b")
        let anomalies = r.anomalies(.acknowledgedMissing)
        #expect(anomalies.count == 2)
        #expect(anomalies.first?.explanation.contains("has \"b\" at revision 2, not at revision 3") == true)
        #expect(anomalies.last?.explanation.contains("never has \"c\"") == true)
    }

    @Test("watchers that see a subsequence of etcd's changes pass")
    func watchSubsequence() {
        var r = Recording()
        r.etcd("a", nil, "b", nil, "c")
        r.etcd("p", "q", key: "other")
        r.watch("kiosk-a", "a", nil, "b", nil, "c")
        r.watch("kiosk-a", "q", key: "other")
        r.watch("kiosk-b", nil, nil, "c")
        r.watch("kiosk-c", "b", "c")
        #expect(r.anomalies(.watchOrder) == [])
    }

    @Test("a watcher that went backwards is found")
    func watchBackwards() throws {
        var r = Recording()
        r.etcd("a", "b", "c", nil)
        r.watch("kiosk-a", "a", "c", "b", nil)
        let anomalies = r.anomalies(.watchOrder)
        #expect(anomalies.map(\.kind) == [.watchOutOfOrder])
        #expect(
            anomalies.first?.explanation
                == "\"kiosk-a\"'s event 3 for \"k\", \"b\" (etcd's revision 2), came after \"c\" (revision 3): it "
                + "went backwards")
        var repeated = Recording()
        repeated.etcd("a", "b")
        repeated.watch("kiosk-a", "a", "b", "b")
        #expect(repeated.anomalies(.watchOrder).map(\.kind) == [.watchOutOfOrder])
    }

    @Test("a watcher that saw a value, or a deletion, etcd never had is found")
    func watchUnknownChange() {
        var r = Recording()
        r.etcd("a", "b")
        r.watch("kiosk-a", "a", "z", "b", nil)
        let anomalies = r.anomalies(.watchOrder)
        #expect(anomalies.map(\.kind) == [.watchUnknownChange, .watchUnknownChange])
        #expect(anomalies.first?.explanation.contains("\"z\", is a change etcd's history does not have") == true)
        #expect(anomalies.last?.explanation.contains("a deletion, is a change") == true)
    }
}
