import Testing

@testable import BeaconDaemon

/// ``DaemonStatus`` on its own: a report is scheduled only when a reporter listens, none is scheduled yet, and the
/// counts changed since the last report.
@Suite("DaemonStatus")
struct DaemonStatusTests {
    @Test("reports only changed counts, one at a time, and only to a reporter")
    func reports() {
        let status = DaemonStatus()
        let counts = DaemonStatus.Counts(clients: 1, subscriptions: 0, properties: 5)
        #expect(!status.scheduleReport(of: counts), "no reporter")
        var lines: [String] = []
        status.reporter = { lines.append($0) }
        #expect(status.scheduleReport(of: counts))
        #expect(!status.scheduleReport(of: counts), "one scheduled already")
        status.report(counts, line: "1 client")
        #expect(lines == ["1 client"])
        #expect(!status.scheduleReport(of: counts), "nothing changed since")
        var changed = counts
        changed.properties = 6
        #expect(status.scheduleReport(of: changed))
        status.report(changed, line: "6 properties")
        #expect(lines == ["1 client", "6 properties"])
    }
}
