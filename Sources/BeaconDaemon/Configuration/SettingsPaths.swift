import BeaconConfiguration

/// Where schemas and lockdown files are read from (the configuration's `settings` section).
public struct SettingsPaths: Sendable, Equatable {
    /// Directories of schema files (`*.json`), strongest first.
    public var schemaDirectories: [String]
    /// The administrator's lockdown files.
    public var lockdownDirectory: String
    /// Whether changes to these directories are followed with inotify (SIGHUP reloads them either way).
    public var watch: Bool

    public init(schemaDirectories: [String], lockdownDirectory: String, watch: Bool = true) {
        self.schemaDirectories = schemaDirectories
        self.lockdownDirectory = lockdownDirectory
        self.watch = watch
    }

    /// `settings.schemaDirs`, else `$XDG_DATA_HOME/beacon/schemas` (`~/.local/share/beacon/schemas`) and then
    /// `beacon/schemas` in each of `$XDG_DATA_DIRS` (`/usr/local/share:/usr/share`); `settings.lockdownDir`, else
    /// `/etc/beacon/lockdown.d`; `settings.watch`, default true.
    init(reader: ConfigurationReader, environment: [String: String]) throws {
        if let directories = reader.stringArray(forKey: "settings.schemaDirs") {
            guard directories.allSatisfy({ $0.hasPrefix("/") }) else {
                throw ConfigurationError(key: "settings.schemaDirs", reason: "expected absolute paths")
            }
            schemaDirectories = directories
        } else {
            schemaDirectories = DefaultPaths.schemaDirectories(environment: environment)
        }
        lockdownDirectory = reader.string(forKey: "settings.lockdownDir", default: "/etc/beacon/lockdown.d")
        guard lockdownDirectory.hasPrefix("/") else {
            throw ConfigurationError(key: "settings.lockdownDir", reason: "expected an absolute path")
        }
        watch = reader.bool(forKey: "settings.watch", default: true)
    }
}
