import BeaconProtocol
import Logging
import VarlinkServer

/// `io.beacon.Properties`: the properties and their versions (``PropertyTable``), shown through the settings in force.
///
/// Owns the table and its methods (Get, Set, Unset, List, Watch); writes and queues change events in the tick's
/// ``BusTransaction``, which the bus commits and fans out. Reads the settings' overlay from ``SettingsService``, applies
/// a new one to what keys show (``apply(_:quietly:)``), and hands provided keys' writes to the ``ProviderRegistry``.
final class PropertiesService {
    /// The properties and their versions.
    let table: PropertyTable
    /// The tick's writes and events.
    let transaction: BusTransaction
    /// The transaction's fan-out, where change events are queued (held here too: a Set reaches it without a second
    /// load).
    let fanOut: FanOut
    /// The schemas and locks in force, read on every Set while any exists.
    let settings: SettingsService
    /// Subtrees whose writes a client decides.
    let providers: ProviderRegistry
    var limits: DaemonLimits
    let logger: Logger

    init(
        table: PropertyTable, transaction: BusTransaction, settings: SettingsService, providers: ProviderRegistry,
        limits: DaemonLimits, logger: Logger
    ) {
        self.table = table
        self.transaction = transaction
        self.fanOut = transaction.fanOut
        self.settings = settings
        self.providers = providers
        self.limits = limits
        self.logger = logger
    }

    /// Whether any schema or lock is in force: what the hot paths check, without touching the overlay.
    var hasSettings: Bool { settings.hasSettings }
    /// The schemas and locks in force.
    var overlay: SettingsOverlay { settings.overlay }

    // MARK: Changes

    /// Stores a value and queues its change event; returns the change's version. `index` is the key's entry in
    /// the table, if it has one.
    func store(
        key: PropertyKey,
        value: [UInt8],
        at index: [String: PropertyTable.Entry].Index?,
        ephemeralOwner: Int?,
        origin: Origin,
        rule: SettingsOverlay.Rule = .unknown
    ) -> Int64 {
        let change = table.set(
            key: key, value: value, at: index, ephemeralOwner: ephemeralOwner, origin: origin,
            now: WallClock.nowUsec())
        let version = change.version
        publish(change, rule: rule)
        transaction.requestEndOfTick()
        return version
    }

    /// Stores `value` unless the key holds it already (with no ephemeral owner); returns the change's version, `nil`
    /// when nothing changed.
    func storeUnlessHeld(_ key: PropertyKey, value: [UInt8], origin: Origin) throws(VarlinkError) -> Int64? {
        let index = try table.index(forKey: key.rawValue)
        if let index, table.entries.values[index].holds(value, ownedBy: nil) { return nil }
        return store(key: key, value: value, at: index, ephemeralOwner: nil, origin: origin)
    }

    /// Deletes a property and queues its change event; returns the deletion's version, `nil` when it had no value.
    @discardableResult
    func delete(_ name: String, origin: Origin) throws(VarlinkError) -> Int64? {
        // The table deletes what it holds in memory: a key not read since the start is read first.
        guard try table.index(forKey: name) != nil,
            let change = table.delete(name, origin: origin, now: WallClock.nowUsec())
        else { return nil }
        publish(change)
        transaction.requestEndOfTick()
        return change.version
    }

    /// Deletes the ephemeral properties of connection `owner`, which closed.
    func deleteEphemeral(of owner: Int, origin: Origin) {
        let changes = table.deleteEphemeral(of: owner, origin: origin, now: WallClock.nowUsec())
        guard !changes.isEmpty else { return }
        for change in changes { publish(change) }
        transaction.requestEndOfTick()
    }

    /// Sets a reserved property on the daemon's own behalf (for example the lifecycle bridge); `nil` deletes it.
    func setSystemProperty(_ name: String, _ value: JSONValue?) {
        guard let key = try? PropertyKey(name) else {
            logger.error("invalid system property key", metadata: ["key": "\(name)"])
            return
        }
        do {
            if let value {
                var encoded: [UInt8] = []
                value.encode(into: &encoded)
                let index = try table.index(forKey: name)
                if let index, table.entries.values[index].value == encoded { return }
                _ = store(key: key, value: encoded, at: index, ephemeralOwner: nil, origin: .daemon)
            } else {
                try delete(name, origin: .daemon)
            }
        } catch {
            logger.error("cannot read a system property", metadata: ["key": "\(name)", "error": "\(error)"])
        }
    }

    // MARK: Encoding

    func encodeProperty(_ key: String, _ entry: PropertyTable.Entry, into buffer: inout [UInt8]) {
        guard !hasSettings else { return encodeStoredProperty(key, entry, into: &buffer) }
        JSONWriter.appendASCII("{\"key\":", to: &buffer)
        JSONWriter.appendString(key, to: &buffer)
        JSONWriter.appendASCII(",\"value\":", to: &buffer)
        buffer.append(contentsOf: entry.value)
        JSONWriter.appendASCII(",\"version\":", to: &buffer)
        JSONWriter.appendInt(entry.version, to: &buffer)
        JSONWriter.appendASCII(",\"modifiedUsec\":", to: &buffer)
        JSONWriter.appendInt(entry.modifiedUsec, to: &buffer)
        if entry.ephemeralOwner != nil {
            JSONWriter.appendASCII(",\"ephemeral\":true,\"origin\":", to: &buffer)
        } else {
            JSONWriter.appendASCII(",\"ephemeral\":false,\"origin\":", to: &buffer)
        }
        entry.origin.encode(into: &buffer)
        buffer.append(UInt8(ascii: "}"))
    }
}
