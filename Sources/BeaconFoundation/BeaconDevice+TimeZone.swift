import BeaconClient
import Foundation
import Signals

extension BeaconDevice {
    /// `system.time.zone` as a `TimeZone`: `nil` while timedated is not on the bus, or for an identifier Foundation
    /// does not know.
    ///
    /// ```swift
    /// clock.reactive.timeZone <~ client.device.timeZone.map { $0 ?? .current }
    /// ```
    public var timeZone: Signal<TimeZone?> {
        timeZoneIdentifier.map { identifier in identifier.flatMap(TimeZone.init(identifier:)) }
    }
}
