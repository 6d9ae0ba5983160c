import BeaconProtocol
import BeaconTestSupport
import Testing

@testable import BeaconClient

#if canImport(Glibc)
    import Glibc
#endif

@Suite("address resolution, errors and backoff")
struct AddressAndErrorTests {
    @Test("BEACON_ADDRESS wins, then XDG_RUNTIME_DIR, then /tmp/beacon-UID")
    func defaultAddress() throws {
        #expect(
            try BeaconAddress.default(environment: ["BEACON_ADDRESS": "unix:/x/y.sock", "XDG_RUNTIME_DIR": "/run/u"])
                .socketPath == "/x/y.sock")
        #expect(
            try BeaconAddress.default(environment: ["XDG_RUNTIME_DIR": "/run/u"]).socketPath == "/run/u/beacon.sock")
        #expect(
            try BeaconAddress.default(environment: ["XDG_RUNTIME_DIR": "relative"]).socketPath
                == "/tmp/beacon-\(getuid())/beacon.sock")
        #expect(try BeaconAddress.default(environment: [:]).description == "unix:/tmp/beacon-\(getuid())/beacon.sock")
    }

    @Test("an address that is not unix:PATH is refused", arguments: ["", "unix:", "tcp:1.2.3.4", "/run/x.sock"])
    func invalidAddress(_ text: String) {
        #expect { try BeaconAddress(text) } throws: { ($0 as? BeaconError)?.code == .invalidAddress }
    }

    @Test(
        "the blocking module's parsing refuses the same addresses with its own error",
        arguments: ["", "unix:", "tcp:1.2.3.4", "/run/x.sock"])
    func invalidAddressBlocking(_ text: String) throws {
        #expect { try BeaconAddress(parsing: text) } throws: {
            ($0 as? BlockingVarlinkError)?.code == .invalidAddress
        }
        if !text.isEmpty {
            #expect { try BeaconAddress.fromEnvironment(["BEACON_ADDRESS": text]) } throws: {
                ($0 as? BlockingVarlinkError)?.code == .invalidAddress
            }
        }
        #expect(try BeaconAddress(parsing: "unix:/run/x.sock").socketPath == "/run/x.sock")
    }

    @Test("varlink errors keep their name and parameters and get a code")
    func remoteErrors() {
        let error = BeaconError(
            VarlinkError(name: "io.beacon.Properties.VersionMismatch", parameters: ["key": "a", "actual": 4]))
        #expect(error.code == .versionMismatch)
        #expect(error.name == "io.beacon.Properties.VersionMismatch")
        #expect(error.key == "a")
        #expect(error.isRemote)
        let other = BeaconError(VarlinkError(name: "org.example.Strange"))
        #expect(other.code == .otherRemote && other.name == "org.example.Strange")
        #expect(!BeaconError.connectionClosed.isRemote)
    }

    @Test("backoff grows by the multiplier up to the maximum")
    func backoff() {
        let policy = BeaconClient.ReconnectPolicy(
            initialDelay: .milliseconds(10), maximumDelay: .milliseconds(70), multiplier: 2)
        #expect(policy.delay(forAttempt: 0) == .milliseconds(10))
        #expect(policy.delay(forAttempt: 1) == .milliseconds(20))
        #expect(policy.delay(forAttempt: 2) == .milliseconds(40))
        #expect(policy.delay(forAttempt: 3) == .milliseconds(70))
        #expect(policy.delay(forAttempt: 1000) == .milliseconds(70))
    }

    @Test("values of any Codable type go through JSON; a value of the wrong type is a decodingFailed error")
    func coding() throws {
        struct Point: Codable, Equatable {
            var x: Int
            var y: Int
        }
        let json = try ValueCoding.encode(Point(x: 1, y: 2), key: "p")
        #expect(json == ["x": 1, "y": 2])
        #expect(try ValueCoding.decode(Point.self, from: json, key: "p", version: 1) == Point(x: 1, y: 2))
        #expect {
            _ = try ValueCoding.decode(Point.self, from: "text", key: "p", version: 7)
        } throws: { error in
            let error = error as? BeaconError
            return error?.code == .decodingFailed && error?.key == "p" && error?.parameters["version"] == 7
        }
    }

    @Test("connecting to a socket nobody listens on fails with notConnected once the wait is over")
    func notConnected() async throws {
        let address = BeaconAddress(socketPath: "/tmp/beacon-client-test-nobody-\(getpid()).sock")
        await #expect {
            _ = try await BeaconClient.connect(to: address, options: BeaconClient.Options(connectTimeout: .zero))
        } throws: { ($0 as? BeaconError)?.code == .notConnected }
        await #expect {
            _ = try await BeaconClient.connect(
                to: address, options: BeaconClient.Options(connectTimeout: .milliseconds(300)))
        } throws: { ($0 as? BeaconError)?.code == .notConnected }
    }

    @Test("connect waits for a daemon that starts after it was called")
    func waitsForTheDaemon() async throws {
        let directory = try makeTemporaryDirectory("beacon-client-wait")
        let address = BeaconAddress(socketPath: directory + "/run/beacon.sock")
        let connecting = Task {
            try await BeaconClient.connect(to: address, options: BeaconClient.Options(connectTimeout: .seconds(20)))
        }
        let daemon = try TestDaemon(directory: directory)
        let client = try await connecting.value
        defer { client.close() }
        #expect(try await client.daemonStatus().pid == Int64(daemon.pid))
    }
}
