import BeaconTestSupport
import Foundation
import Testing

/// `Examples/FromTheMac`, a program written against macOS's Foundation, built on Linux with BeaconFoundation: two
/// copies find each other through a distributed notification and a shared defaults suite. `make test` builds the
/// example first and names it in `FROM_THE_MAC_PATH`.
@Suite("Examples/FromTheMac")
struct FromTheMacTests {
    static let program = BuiltProducts.example("FromTheMac", product: "FromTheMac", override: "FROM_THE_MAC_PATH")

    @Test(
        "two copies exchange a notification and see each other's defaults change",
        .enabled(if: program != nil, "Examples/FromTheMac is not built (make test builds it)"))
    func twoCopies() async throws {
        let program = try #require(Self.program)
        let daemon = try TestDaemon()
        var environment = ProcessInfo.processInfo.environment
        environment["BEACON_ADDRESS"] = daemon.address
        let alice = try ChildProcess(
            program, ["alice", "bob"], environment: environment, output: .capture, error: .capture)
        let bob = try ChildProcess(
            program, ["bob", "alice"], environment: environment, output: .capture, error: .capture)
        // Each copy gives up by itself after 30 s. Waited for without holding a thread of the test's pool.
        let deadline = ContinuousClock.now + .seconds(60)
        while (alice.isRunning || bob.isRunning) && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(alice.wait(within: .seconds(1)) == 0)
        #expect(bob.wait(within: .seconds(1)) == 0)
        let (aliceOutput, aliceError) = alice.readOutputAndError()
        let (bobOutput, bobError) = bob.readOutputAndError()
        let aliceSaid = String(decoding: aliceOutput, as: UTF8.self)
        let bobSaid = String(decoding: bobOutput, as: UTF8.self)
        #expect(aliceSaid.contains("bob says hello"), "\(aliceSaid)\(String(decoding: aliceError, as: UTF8.self))")
        #expect(aliceSaid.contains("sent with a date"), "\(aliceSaid)")
        #expect(aliceSaid.contains("alice and bob are both done"), "\(aliceSaid)")
        #expect(bobSaid.contains("alice says hello"), "\(bobSaid)\(String(decoding: bobError, as: UTF8.self))")
        #expect(bobSaid.contains("bob and alice are both done"), "\(bobSaid)")
        // The suite is the daemon's: another process sees what the copies stored.
        let list = try ChildProcess(
            try BuiltProducts.beaconctl(), ["list", "--address", daemon.address, "--json", "com.example.fromthemac"],
            output: .capture)
        #expect(list.wait(within: .seconds(10)) == 0)
        let listed = String(decoding: list.readOutput(), as: UTF8.self)
        #expect(listed.contains("com.example.fromthemac.count.alice"), "\(listed)")
        #expect(listed.contains("com.example.fromthemac.done.bob"), "\(listed)")
    }
}
