import BeaconProtocol
import BeaconTestSupport
import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

extension VarlinkReply {
    /// A parameter, for assertions.
    subscript(_ name: String) -> JSONValue? { parameters[name] }
}

extension JSONValue {
    /// The object members, or an empty dictionary.
    var members: [String: JSONValue] { objectValue ?? [:] }
    /// The array elements, or an empty array.
    var elements: [JSONValue] { arrayValue ?? [] }
}

/// The test process's pid, as the daemon reports it in origins.
let testPID = Int64(getpid())
let testUID = Int64(getuid())

extension VarlinkTestClient {
    /// Sets a property and returns the change's version.
    @discardableResult
    func set(_ key: String, _ value: JSONValue, ephemeral: Bool = false) throws -> Int64 {
        var parameters: [String: JSONValue] = ["key": .string(key), "value": value]
        if ephemeral { parameters["ephemeral"] = true }
        let reply = try self.parameters("io.beacon.Properties.Set", parameters)
        guard let version = reply["version"]?.intValue else { throw TestFailure("Set returned no version") }
        return version
    }

    /// Collects stream replies until `count` changes (or notifications) arrived.
    func receiveItems(_ field: String, count: Int) throws -> [JSONValue] {
        var items: [JSONValue] = []
        while items.count < count {
            let reply = try receive()
            guard reply.error == nil, reply.continues else {
                throw TestFailure("unexpected stream reply \(reply)")
            }
            items.append(contentsOf: reply[field]?.elements ?? [])
        }
        return items
    }
}

extension TestDaemon {
    /// A new client connection.
    func connect() throws -> VarlinkTestClient {
        try VarlinkTestClient(path: socketPath)
    }
}

/// Runs a program to its end and returns its status, standard output and standard error.
func runProcess(_ executable: String, _ arguments: [String]) throws -> (status: Int32, output: String, errors: String) {
    let process = try ChildProcess(executable, arguments, output: .capture, error: .capture)
    let (output, errors) = process.readOutputAndError()
    let status = process.wait()
    return (status, String(decoding: output, as: UTF8.self), String(decoding: errors, as: UTF8.self))
}
