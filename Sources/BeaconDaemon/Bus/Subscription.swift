import BeaconProtocol
import VarlinkServer

/// The bus's state of one connection.
package final class BusClient {
    unowned let connection: VarlinkConnection
    let origin: Origin
    /// Bytes charged to the connection's uid for its subscription.
    var chargedBytes = 0
    /// The Watch or Observe running on the connection.
    var subscription: Subscription?
    /// How many `io.beacon.Suspend` calls the connection made that no `Resume` answered yet.
    var suspensions = 0

    init(connection: VarlinkConnection) {
        self.connection = connection
        let credentials = connection.credentials
        origin = Origin(uid: credentials.uid, pid: credentials.pid, command: credentials.command)
    }
}

/// A running Watch or Observe call.
final class Subscription {
    enum Kind: Hashable {
        /// `old`: changes carry their previous value; `origin`: changes carry who made them.
        case watch(old: Bool, origin: Bool)
        case observe
    }

    let kind: Kind
    let patterns: [KeyPattern]
    unowned let client: BusClient
    /// The version (Watch) or sequence (Observe) reported in the first reply: only later events are delivered.
    let start: Int64

    /// The tick in which ``selection`` was filled.
    var tick = 0
    /// Indices of this tick's events that go to this subscriber, in order.
    var selection: [Int32] = []

    /// Adds the events at `positions` (not empty, and not before those selected so far) to this tick's
    /// ``selection``, starting a new selection (and recording the subscription in `touched`) the first time it is
    /// selected in `tick`. Positions already selected are not added again.
    func select(_ positions: Range<Int32>, tick: Int, touched: inout [Subscription]) {
        if self.tick != tick {
            self.tick = tick
            selection.removeAll(keepingCapacity: true)
            touched.append(self)
        }
        var lower = positions.lowerBound
        if let last = selection.last, last >= lower { lower = last + 1 }
        if lower < positions.upperBound {
            selection.append(contentsOf: lower..<positions.upperBound)
        }
    }

    /// What the subscriber is owed and was not sent: kept while suspended or slow.
    var outbox = Outbox()

    /// What happens to events while delivery is suspended.
    let policy: DeliveryPolicy
    /// Delivery is suspended while the session is not active, besides while the client suspends it.
    let followsSession: Bool
    /// Observe only: the notifications posted with this object, or all when `nil`.
    let object: String?

    init(
        kind: Kind, patterns: [KeyPattern], client: BusClient, start: Int64, policy: DeliveryPolicy = .hold,
        followsSession: Bool = false, object: String? = nil
    ) {
        self.kind = kind
        self.patterns = patterns
        self.client = client
        self.start = start
        self.policy = policy
        self.followsSession = followsSession
        self.object = object
    }

    var includesOld: Bool {
        if case .watch(let old, _) = kind { return old }
        return false
    }

    var methodName: String {
        switch kind {
        case .watch: IOBeaconProperties.Watch.method
        case .observe: IOBeaconNotifications.Observe.method
        }
    }
}

/// The selection of events one stream reply is made of; equal selections share one encoded buffer.
struct SelectionKey: Hashable {
    var kind: Subscription.Kind
    /// The indices of the selected events; empty for all the events of the tick of that kind.
    var indices: [Int32]
}
