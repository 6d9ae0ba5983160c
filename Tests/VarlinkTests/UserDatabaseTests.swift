import BeaconClient
import BeaconProtocol
import BeaconTestSupport
import Foundation
import Testing
import Varlink
import VarlinkServer

/// A client and a service generated from systemd's `io.systemd.UserDatabase` declarations, one calling the other
/// over a real socket: the generated error cases, optional parameters and `object` replies as systemd's interface
/// uses them.
@Suite("io.systemd.UserDatabase, generated")
struct UserDatabaseTests {
    /// Two users, looked up as systemd's userdb services do.
    final class Users: UserDatabase.Service {
        static let service = "io.example.Users"
        let users: [(uid: Int, name: String)] = [(0, "root"), (1000, "ada")]

        func getUserRecord(_ call: UserDatabase.GetUserRecord.Call) {
            let asked = call.parameters
            guard asked.service == Self.service else {
                call.fail(.badService)
                return
            }
            let found = users.filter { user in
                (asked.uid.map { $0 == user.uid } ?? true) && (asked.userName.map { $0 == user.name } ?? true)
            }
            guard let user = found.first else {
                // A uid and a name that are two different users' conflict; otherwise nothing matched.
                let either = users.contains { $0.uid == asked.uid } || users.contains { $0.name == asked.userName }
                call.fail(
                    asked.uid != nil && asked.userName != nil && either ? .conflictingRecordFound : .noRecordFound)
                return
            }
            call.reply(
                .init(record: ["userName": .string(user.name), "uid": .int(Int64(user.uid))], incomplete: false))
        }

        func getGroupRecord(_ call: UserDatabase.GetGroupRecord.Call) {
            call.fail(.noRecordFound)
        }

        func getMemberships(_ call: UserDatabase.GetMemberships.Call) {
            call.fail(.enumerationNotSupported)
        }
    }

    final class Server: VarlinkService {
        let users = Users()
        let interfaceDescriptions = [(name: UserDatabase.name, description: UserDatabase.description)]

        func handle(_ call: VarlinkCall, on connection: VarlinkConnection, client: Void) {
            if !UserDatabase.dispatch(call, to: users, responder: connection) {
                connection.reply(error: .methodNotFound(call.method))
            }
        }
    }

    @Test("lookups by uid and by name, the interface's errors, and a parameter of the wrong type")
    func lookups() async throws {
        let directory = try makeTemporaryDirectory("beacon-userdb")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/io.example.Users"
        let server = try await VarlinkServer.start(
            listener: .unixPath(path),
            info: VarlinkServiceInfo(vendor: "Beacon", product: "userdb test", version: "1", url: "https://varlink.org")
        ) { Server() }
        let client = try await BeaconClient.connect(to: BeaconAddress(socketPath: path))
        defer { client.close() }
        let userdb = UserDatabase.Client(client)
        do {
            let root = try await userdb.getUserRecord(uid: 0, service: Users.service)
            #expect(root.record["userName"] == "root")
            #expect(root.incomplete == false)
            let ada = try await userdb.getUserRecord(userName: "ada", service: Users.service)
            #expect(ada.record["uid"] == 1000)
            await #expect(throws: UserDatabase.Error.noRecordFound) {
                _ = try await userdb.getUserRecord(userName: "nobody", service: Users.service)
            }
            await #expect(throws: UserDatabase.Error.conflictingRecordFound) {
                _ = try await userdb.getUserRecord(uid: 0, userName: "ada", service: Users.service)
            }
            await #expect(throws: UserDatabase.Error.badService) {
                _ = try await userdb.getUserRecord(uid: 0, service: "io.example.Other")
            }
            // What the generated dispatch answers when a parameter is not of its type.
            await #expect {
                _ = try await client.call(
                    method: UserDatabase.GetUserRecord.method, parameters: ["uid": "zero", "service": "x"])
            } throws: { error in
                (error as? BeaconError)?.name == "org.varlink.service.InvalidParameter"
                    && (error as? BeaconError)?.parameters["parameter"] == "uid"
            }
            // The description served is the file's.
            let served = try await client.call(
                method: "org.varlink.service.GetInterfaceDescription",
                parameters: ["interface": "io.systemd.UserDatabase"])
            #expect(served["description"] == .string(UserDatabase.description))
        } catch {
            await server.shutdown()
            throw error
        }
        await server.shutdown()
    }
}
