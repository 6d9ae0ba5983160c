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

/// Runs a program to its end; standard error goes through a file so that neither output can fill up.
func runProcess(_ executable: String, _ arguments: [String]) throws -> (status: Int32, output: String, errors: String) {
    let directory = try makeTemporaryDirectory("beacond-test")
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let errorPath = directory + "/stderr"
    _ = FileManager.default.createFile(atPath: errorPath, contents: nil)
    let process = try ChildProcess(executable, arguments, output: .capture, error: .file(errorPath))
    let data = process.readOutput()
    let status = process.wait()
    let errors = (try? String(contentsOfFile: errorPath, encoding: .utf8)) ?? ""
    return (status, String(decoding: data, as: UTF8.self), errors)
}
