/// The version of Beacon's software: what `beacond` reports in `GetInfo` and `Status`, what `beaconctl --version`
/// prints, and what the Debian package is built as.
public enum BeaconVersion {
    public static let current = "0.1.0"
}
