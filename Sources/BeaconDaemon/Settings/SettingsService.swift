import BeaconProtocol

/// The settings' state: what the schema and lockdown files said when last read, the schemas connections registered,
/// the overlay compiled from both, and the versions of the changes the overlay made to what keys show.
///
/// Serves `io.beacon.Settings`. The properties are reached through ``SettingsHost``: it applies a new overlay
/// (applying one publishes change events through the property table), and the methods read and write stored values
/// through it.
final class SettingsService {
    /// The properties; set by the bus.
    weak var host: (any SettingsHost)?
    /// Where schemas and lockdown files are read from; `nil` when there are none (in-process tests).
    var paths: SettingsPaths?
    /// What the schema and lockdown files said when last read.
    private(set) var files = SettingsLoader.Result()
    /// Schemas registered by clients, by connection, each with the order of its registration.
    private(set) var registrations: [Int: (order: Int, source: SettingsOverlay.SchemaSource)] = [:]
    private var registrationCount = 0
    /// The schemas and locks in force; a new one is put in force with ``install(_:)`` by the properties, which
    /// apply it.
    private(set) var overlay = SettingsOverlay.empty {
        didSet {
            hasSettings = !overlay.isEmpty
            epoch = overlay.epoch
        }
    }
    /// ``overlay``'s epoch, read by every Set of a key with a cached rule.
    private(set) var epoch: UInt32 = SettingsOverlay.empty.epoch
    /// Whether any schema or lock is in force: what the hot paths check, without touching ``overlay``.
    private(set) var hasSettings = false
    /// The version of the last change of each key that the settings made, for `since` replays
    /// (``recordChange(of:version:)``).
    private(set) var changeVersions: [String: Int64] = [:]

    /// Puts `overlay` in force.
    func install(_ overlay: SettingsOverlay) {
        self.overlay = overlay
    }

    /// The settings changed what `key` shows, at `version`.
    func recordChange(of key: String, version: Int64) {
        changeVersions[key] = version
    }

    /// Reads the files again (only those in `changed`, unless it is `nil`); false when there are no paths to read.
    func readFiles(changed: Set<String>? = nil, limits: DaemonLimits) -> Bool {
        guard let paths else { return false }
        files = SettingsLoader(paths: paths, keyLimits: limits.keyLimits, maxValueSize: limits.maxValueSize)
            .load(changed: changed, previous: files)
        return true
    }

    /// Registers `file` as the schema of connection `id` (replacing its earlier one, which keeps its place).
    func register(_ file: SchemaFile, of id: Int, command: String) {
        let order = registrations[id]?.order ?? registrationCount
        registrationCount += 1
        registrations[id] = (order, .init(name: "client \(id)\(command)", fromFile: false, file: file))
    }

    /// Forgets the schema connection `id` registered; false when it had none.
    func unregister(_ id: Int) -> Bool {
        registrations.removeValue(forKey: id) != nil
    }

    /// The overlay the files and the registrations make.
    func compile() -> SettingsOverlay {
        let registered = registrations.values.sorted { $0.order < $1.order }.map(\.source)
        return SettingsOverlay(
            schemaSources: files.schemas + registered, lockdownSources: files.lockdown, problems: files.problems)
    }

    /// Keeps ``changeVersions`` within `limit` (plus a tenth): beyond it the oldest go. Returns the newest version
    /// let go, from which replays resync; `nil` when none went.
    func pruneChangeVersions(limit: Int) -> Int64? {
        guard changeVersions.count > limit + max(1, limit / 10) else { return nil }
        let oldest = changeVersions.sorted { $0.value < $1.value }.prefix(changeVersions.count - limit)
        for (name, _) in oldest { changeVersions[name] = nil }
        return oldest.last?.value
    }
}
