import BeaconTestSupport
import Testing

/// The child-process helper the fixtures start busctl, dbus-daemon and python-dbusmock with.
struct ChildProcessTests {
    /// A child that writes far more to standard error than a socket buffer holds before it writes anything to
    /// standard output: reading standard output to its end first would wait for the child forever, and the child
    /// for the reader.
    @Test func readsBothStreamsWhateverOrderTheyFillIn() throws {
        let script = "head -c 1000000 /dev/zero | tr '\\0' e >&2; printf out; head -c 300000 /dev/zero | tr '\\0' o"
        let process = try ChildProcess("/bin/sh", ["-c", script], output: .capture, error: .capture)
        let (output, error) = process.readOutputAndError()
        #expect(process.wait() == 0)
        #expect(error.count == 1_000_000)
        #expect(error.allSatisfy { $0 == UInt8(ascii: "e") })
        #expect(output.count == 300_003)
        #expect(output.prefix(3) == [UInt8]("out".utf8)[...])
        #expect(output.dropFirst(3).allSatisfy { $0 == UInt8(ascii: "o") })
    }

    @Test func readsTheOneStreamThatIsCaptured() throws {
        let process = try ChildProcess("/bin/sh", ["-c", "printf 'only this'; echo gone >&2"], output: .capture)
        let (output, error) = process.readOutputAndError()
        #expect(process.wait() == 0)
        #expect(String(decoding: output, as: UTF8.self) == "only this")
        #expect(error.isEmpty)
    }
}
