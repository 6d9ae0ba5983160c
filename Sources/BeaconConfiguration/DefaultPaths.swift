#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// The default locations of the socket, the store and the configuration file.
public enum DefaultPaths {
    /// `$XDG_RUNTIME_DIR/beacon.sock`, else `/tmp/beacon-UID/beacon.sock`.
    public static func socket(environment: [String: String]) -> String {
        if let runtime = environment["XDG_RUNTIME_DIR"], runtime.hasPrefix("/") {
            return runtime + "/beacon.sock"
        }
        return "/tmp/beacon-\(getuid())/beacon.sock"
    }

    /// `$XDG_STATE_HOME/beacon/store.sqlite`, else `~/.local/state/beacon/store.sqlite`.
    public static func store(environment: [String: String]) -> String {
        if let state = environment["XDG_STATE_HOME"], state.hasPrefix("/") {
            return state + "/beacon/store.sqlite"
        }
        return home(environment) + "/.local/state/beacon/store.sqlite"
    }

    /// `$XDG_CONFIG_HOME/beacon/beacond.json`, else `~/.config/beacon/beacond.json`.
    public static func configFile(environment: [String: String]) -> String {
        if let config = environment["XDG_CONFIG_HOME"], config.hasPrefix("/") {
            return config + "/beacon/beacond.json"
        }
        return home(environment) + "/.config/beacon/beacond.json"
    }

    /// `$XDG_DATA_HOME/beacon/schemas` (else `~/.local/share/beacon/schemas`), then `beacon/schemas` in each of
    /// `$XDG_DATA_DIRS` (else `/usr/local/share` and `/usr/share`).
    public static func schemaDirectories(environment: [String: String]) -> [String] {
        dataFiles("beacon/schemas", environment: environment)
    }

    /// `name` in `$XDG_DATA_HOME` (else `~/.local/share`), then in each of `$XDG_DATA_DIRS` (else `/usr/local/share`
    /// and `/usr/share`): strongest first.
    public static func dataFiles(_ name: String, environment: [String: String]) -> [String] {
        var paths: [String] = []
        if let data = environment["XDG_DATA_HOME"], data.hasPrefix("/") {
            paths.append(data + "/" + name)
        } else {
            paths.append(home(environment) + "/.local/share/" + name)
        }
        let shared = environment["XDG_DATA_DIRS"].flatMap { $0.isEmpty ? nil : $0 } ?? "/usr/local/share:/usr/share"
        for directory in shared.split(separator: ":") where directory.hasPrefix("/") {
            var directory = String(directory)
            while directory.count > 1, directory.hasSuffix("/") { directory.removeLast() }
            paths.append(directory + "/" + name)
        }
        return paths
    }

    private static func home(_ environment: [String: String]) -> String {
        if let home = environment["HOME"], home.hasPrefix("/") { return home }
        return POSIX.homeDirectory()
    }
}
