import Foundation
import Logging

/// A small file beside beacond's socket that names this machine's lease of ephemeral keys and the beacond it was
/// granted for, so that a beacon-fleet started after this one (a restart, a crash) keeps the keys of clients still
/// connected to that beacond, instead of letting them expire.
struct LeaseNote: Sendable {
    struct Contents: Codable, Equatable {
        var lease: Int64
        /// beacond's pid and start time.
        var daemon: String
    }

    let path: String

    /// The note for `configuration`'s machine, in the directory of beacond's socket; `nil` for an address without
    /// a path.
    init?(configuration: FleetConfiguration) {
        guard configuration.address.hasPrefix("unix:") else { return nil }
        let socket = URL(fileURLWithPath: String(configuration.address.dropFirst(5)))
        let name = configuration.machine.map { $0.isLetter || $0.isNumber || $0 == "-" ? $0 : "_" }
        path = socket.deletingLastPathComponent().appendingPathComponent("beacon-fleet-\(String(name)).lease").path
    }

    func read() -> Contents? {
        guard let data = FileManager.default.contents(atPath: path) else { return nil }
        return try? JSONDecoder().decode(Contents.self, from: data)
    }

    func write(_ contents: Contents, logger: Logger) {
        do {
            try JSONEncoder().encode(contents).write(to: URL(fileURLWithPath: path), options: .atomic)
        } catch {
            logger.notice("cannot note the lease for a later start: \(error)", metadata: ["path": "\(path)"])
        }
    }

    func remove() { try? FileManager.default.removeItem(atPath: path) }
}
