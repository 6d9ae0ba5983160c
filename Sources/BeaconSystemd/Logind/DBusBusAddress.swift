/// Which D-Bus bus a connection goes to.
public enum DBusBusAddress: Sendable, Hashable, CustomStringConvertible {
    /// The system bus: `$DBUS_SYSTEM_BUS_ADDRESS`, else `unix:path=/run/dbus/system_bus_socket`.
    case system
    /// The user's session bus: `$DBUS_SESSION_BUS_ADDRESS`, else `$XDG_RUNTIME_DIR/bus`.
    case session
    /// An explicit D-Bus address such as `unix:path=/run/example/bus`.
    case address(String)

    public var description: String {
        switch self {
        case .system: return "system bus"
        case .session: return "session bus"
        case .address(let address): return "bus at \(address)"
        }
    }
}

/// The state of one bus connection as the bridges report it.
public enum DBusConnectionState: Sendable, Hashable, CustomStringConvertible {
    case connected
    /// Not connected; `reason` says why (for the log and `Daemon.Status`). A new attempt follows by itself.
    case disconnected(reason: String)

    public var description: String {
        switch self {
        case .connected: return "connected"
        case .disconnected(let reason): return "disconnected: \(reason)"
        }
    }
}

/// A failure reported by sd-bus or by a peer on the bus.
public struct DBusError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A D-Bus error name (`org.freedesktop.DBus.Error.ServiceUnknown`), or `System.Error.<ERRNO>` for a local failure.
    public var name: String
    /// Human-readable text.
    public var message: String

    public init(name: String, message: String) {
        self.name = name
        self.message = message
    }

    /// An error from a negative errno returned by sd-bus.
    init(errno code: Int32, _ what: String) {
        self.name = "System.Error.\(code)"
        self.message = "\(what): \(SDBusErrno.text(code))"
    }

    public var description: String { "\(name): \(message)" }
}

/// A mapping or configuration value that cannot be used.
public struct DBusConfigurationError: Error, Sendable, Hashable, CustomStringConvertible {
    public var message: String

    public init(_ message: String) {
        self.message = message
    }

    public var description: String { message }
}
