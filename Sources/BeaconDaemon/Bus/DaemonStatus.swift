import VarlinkServer

/// What `io.beacon.Daemon.Status` and the service manager's status line report besides the counts: when the bus
/// started, whether the store takes writes, what its integrity check found, and the last status line reported.
final class DaemonStatus {
    struct Counts: Equatable {
        var clients = -1
        var subscriptions = -1
        var properties = -1
    }

    let startedUsec = WallClock.nowUsec()
    /// The last commit failed, since when and why: reported until a commit succeeds.
    var storeFailure: (sinceUsec: Int64, reason: String)?
    /// What the integrity check after the start found wrong with the store, and when.
    var storeDamage: (sinceUsec: Int64, reason: String)?
    /// Told the status line for the service manager; set by the daemon when a service manager listens.
    var reporter: ((String) -> Void)?
    private var reportedCounts = Counts()
    private var reportScheduled = false

    /// Whether a report of `counts` is to be scheduled now: a reporter listens, no report is scheduled yet, and the
    /// counts changed since the last one. True marks the report scheduled.
    func scheduleReport(of counts: Counts) -> Bool {
        guard reporter != nil, !reportScheduled, counts != reportedCounts else { return false }
        reportScheduled = true
        return true
    }

    /// The scheduled report is due: tells ``reporter`` `line`, the line of `counts`.
    func report(_ counts: Counts, line: String) {
        reportScheduled = false
        reportedCounts = counts
        reporter?(line)
    }
}
