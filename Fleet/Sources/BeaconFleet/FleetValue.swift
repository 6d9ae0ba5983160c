import BeaconClient
import BeaconProtocol
import EtcdAPI
import Foundation

/// How a Beacon value is kept in etcd: `{"value": VALUE, "origin": {"uid", "pid", "command", "machine"}, "write":
/// ID}` under the configured prefix followed by the key. `write` tells a retried write that its first attempt was
/// applied.
struct FleetValue {
    var value: JSONValue
    var origin: [String: JSONValue]?
    var write: String?

    /// The largest value beacond takes by default (`limits.maxValueSize`); larger values in etcd are skipped.
    static let maxValueSize = 65_536

    var encoded: Data {
        var members: [String: JSONValue] = ["value": value]
        if let origin { members["origin"] = .object(origin) }
        if let write { members["write"] = .string(write) }
        var bytes: [UInt8] = []
        JSONValue.object(members).encode(into: &bytes)
        return Data(bytes)
    }

    /// The value stored in etcd, or why it cannot be one.
    init(decoding data: Data) throws(FleetValueError) {
        let document: JSONValue
        do {
            document = try JSONValue(parsing: [UInt8](data))
        } catch {
            throw FleetValueError("not JSON: \(error)")
        }
        guard case .object(let members) = document, let value = members["value"] else {
            throw FleetValueError("not an object with a value member")
        }
        // The value's compact text is no longer than the stored document; only a large document is measured.
        if data.count > Self.maxValueSize {
            var size: [UInt8] = []
            value.encode(into: &size)
            guard size.count <= Self.maxValueSize else {
                throw FleetValueError("the value takes \(size.count) bytes, more than \(Self.maxValueSize)")
            }
        }
        self.value = value
        if case .object(let origin)? = members["origin"] { self.origin = origin }
        write = members["write"]?.stringValue
    }

    init(value: JSONValue, origin: [String: JSONValue]?, write: String? = nil) {
        self.value = value
        self.origin = origin
        self.write = write
    }
}

struct FleetValueError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// The mapping between Beacon keys and etcd keys.
struct FleetKeys: Sendable {
    /// etcd's key prefix, such as `/beacon/`.
    let prefix: [UInt8]
    /// The mirrored roots, such as `fleet`.
    let roots: [String]

    /// The end of the mirrored range: every key under ``prefix`` that a Beacon key can make sorts before it.
    var rangeEnd: [UInt8] { FleetWriter.mirroredRangeEnd(prefix) }

    func etcdKey(_ key: String) -> Data { Data(prefix + Array(key.utf8)) }

    /// The Beacon key of an etcd key, when it is a valid key under one of the roots.
    func beaconKey(_ etcdKey: Data) -> String? {
        guard etcdKey.count > prefix.count, etcdKey.starts(with: prefix) else { return nil }
        guard let key = String(bytes: etcdKey.dropFirst(prefix.count), encoding: .utf8) else { return nil }
        guard roots.contains(where: { key.hasPrefix($0 + ".") }), (try? PropertyKey(key)) != nil else { return nil }
        return key
    }

    /// The change an etcd key-value makes, or why it cannot be mirrored; `nil` for a key outside the roots.
    func change(of kv: Mvccpb_KeyValue, deleted: Bool) -> Result<ProvidedChange, FleetValueError>? {
        guard let key = beaconKey(kv.key) else { return nil }
        if deleted { return .success(ProvidedChange(key: key, value: nil, providerVersion: kv.modRevision)) }
        do {
            let stored = try FleetValue(decoding: kv.value)
            return .success(
                ProvidedChange(key: key, value: stored.value, providerVersion: kv.modRevision, origin: stored.origin))
        } catch {
            return .failure(FleetValueError("\(key): \(error)"))
        }
    }
}
