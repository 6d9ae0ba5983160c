import ArgumentParser
import BeaconBlockingClient
import BeaconProtocol

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// `beaconctl load PREFIX [FILE]`: stores the values of a dump below a prefix.
struct LoadCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "load",
        abstract: "Store the values of a JSON object, as dump prints it, below a prefix.",
        discussion: """
            FILE (default -, standard input) holds one JSON object of values by key relative to PREFIX ("" \
            for PREFIX itself), as dump prints it: `beaconctl dump app.editor > editor.json` and later \
            `beaconctl load app.editor editor.json` restore the subtree, `beaconctl load app.other \
            editor.json` copies it elsewhere. PREFIX "" loads keys as they are written (a dump of every key).

            All or nothing: when any key is invalid or reserved, or any value does not fit its schema, \
            nothing is stored and the command exits with status 1 and the error a set of that key would \
            give. Keys a lockdown file locks are skipped and named in a note on standard error; a value \
            equal to the one stored changes nothing (it counts as unchanged). Prints nothing; with --json \
            prints the reply of io.beacon.Settings.Load: \
            {"version":N,"changed":N,"unchanged":N,"locked":[KEY...]}. A FILE that cannot be read or is not \
            a JSON object exits with status 2.
            """
    )

    @OptionGroup var options: GlobalOptions

    @Argument(help: "The key the values are stored below, e.g. app.editor; \"\" for none.")
    var prefix: String

    @Argument(help: "The JSON file to read; - for standard input.", completion: .file())
    var file: String = "-"

    func run() throws {
        let name = file == "-" ? "standard input" : file
        let bytes = try LoadCommand.contents(of: file)
        let parsed: JSONValue
        do {
            // The limits of a reply: whatever dump printed is read back.
            parsed = try JSONValue(parsing: bytes, limits: BlockingVarlinkConnection.defaultLimits)
        } catch {
            throw CommandFailure(.usage, "cannot parse \(name): \(error)")
        }
        guard case .object(let values) = parsed else {
            throw CommandFailure(
                .usage, "\(name) is not a JSON object of values by key, as beaconctl dump prints it")
        }
        var parameters: [String: JSONValue] = ["values": .object(values)]
        if !prefix.isEmpty { parameters["prefix"] = .string(prefix) }
        let reply = try options.daemon().call(IOBeaconSettings.Load.method, parameters)
        options.finishSettingsCall(reply, lockedKeys: "not loaded")
    }

    /// The bytes of the file at `path`, or of standard input for `-`.
    static func contents(of path: String) throws -> [UInt8] {
        let descriptor: Int32
        if path == "-" {
            descriptor = 0
        } else {
            descriptor = open(path, O_RDONLY | O_CLOEXEC)
            guard descriptor >= 0 else {
                throw CommandFailure(.usage, "cannot open \(path): \(String(cString: strerror(errno)))")
            }
        }
        defer { if descriptor != 0 { close(descriptor) } }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                let name = path == "-" ? "standard input" : path
                throw CommandFailure(.usage, "cannot read \(name): \(String(cString: strerror(errno)))")
            }
            if count == 0 { return bytes }
            bytes.append(contentsOf: chunk[..<count])
        }
    }
}
