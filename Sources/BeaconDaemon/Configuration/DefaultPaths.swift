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

    private static func home(_ environment: [String: String]) -> String {
        if let home = environment["HOME"], home.hasPrefix("/") { return home }
        return POSIX.homeDirectory()
    }
}
