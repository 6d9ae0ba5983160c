/// The varlink interface descriptions (IDL) of the Beacon bus: the `.varlink` files beside this one, from which the
/// build generates their Swift (`IOBeaconProperties`, ...).
///
/// These texts are what `org.varlink.service.GetInterfaceDescription` returns, and they are the reference for
/// clients in any language. The daemon serves ``BeaconInterfaces/all``.
public enum BeaconInterfaces {
    /// Errors shared by every Beacon interface.
    public static let common = IOBeacon.description

    /// `io.beacon.Properties`: observable key-path properties.
    public static let properties = IOBeaconProperties.description

    /// `io.beacon.Notifications`: a notification bus with NotificationCenter semantics.
    public static let notifications = IOBeaconNotifications.description

    /// `io.beacon.Settings`: schemas, defaults and lockdown.
    public static let settings = IOBeaconSettings.description

    /// `io.beacon.Daemon`: the daemon's own state.
    public static let daemon = IOBeaconDaemon.description

    /// `io.beacon.Lifecycle`: the session's lifecycle and sleep participation.
    public static let lifecycle = IOBeaconLifecycle.description

    /// `io.beacon.Providers`: subtrees of properties whose writes a client decides.
    public static let providers = IOBeaconProviders.description

    /// Every Beacon interface description, by name. `org.varlink.service` is described by the varlink layer.
    public static let all: [(name: String, description: String)] = [
        (IOBeacon.name, common),
        (IOBeaconProperties.name, properties),
        (IOBeaconNotifications.name, notifications),
        (IOBeaconSettings.name, settings),
        (IOBeaconDaemon.name, daemon),
        (IOBeaconLifecycle.name, lifecycle),
        (IOBeaconProviders.name, providers),
    ]
}
