import ArgumentParser
import BeaconProtocol

/// `beaconctl reset [-r] KEY`: removes stored values, so that keys fall back to their defaults.
struct ResetCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "reset",
        abstract: "Remove a key's stored value, so that it shows its default again.",
        discussion: """
            Unlike unset, a key with nothing stored is not an error. With --recursive every key at or below \
            KEY is reset, except the ones a lockdown file locks: those are kept, and named in a note on \
            standard error. Without it a locked KEY exits with status 1 \
            (io.beacon.Properties.Locked, naming the lockdown file and line). Prints nothing; with --json \
            prints {"version":N,"reset":[KEY...],"locked":[KEY...]}: the keys whose stored value was removed \
            and the locked keys that were kept.
            """
    )

    @OptionGroup var options: GlobalOptions

    @Flag(name: .shortAndLong, help: "Also reset every key below KEY, skipping locked ones.")
    var recursive = false

    @Argument(help: "The property's key, e.g. app.editor.font-size, or with --recursive a prefix.")
    var key: String

    func run() throws {
        var parameters: [String: JSONValue] = ["key": .string(key)]
        if recursive { parameters["recursive"] = true }
        let reply = try options.daemon().call(IOBeaconSettings.Reset.method, parameters)
        options.finishSettingsCall(reply, lockedKeys: "not reset")
    }
}
