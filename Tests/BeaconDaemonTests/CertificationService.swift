import BeaconDaemon
import BeaconProtocol
import Foundation
import NIOCore

/// A test-only `org.varlink.certification` service on the daemon's varlink layer.
///
/// Each client walks Start, Test01 … Test10, Test11, End, passing on what the previous call returned. Every call is
/// checked against what the certification protocol prescribes: a call out of order or with other parameters than
/// expected is answered with `CertificationError` and the client id is forgotten; an unknown client id gets
/// `ClientIdError`. Test10 streams ten replies with `continues`, one per event-loop tick; Test11 must be `oneway`.
final class CertificationService: VarlinkService {
    static let interface = "org.varlink.certification"

    let interfaceDescriptions: [(name: String, description: String)]
    /// The method each known client id must call next.
    private(set) var nextMethod: [String: String] = [:]
    private var eventLoop: (any EventLoop)?

    /// `description` is the IDL text of `org.varlink.certification`.
    init(description: String) {
        interfaceDescriptions = [(Self.interface, description)]
    }

    func attached(to server: VarlinkServerContext) {
        eventLoop = server.eventLoop
    }

    // MARK: The values passed from one call to the next

    static let fourValues: [String: JSONValue] = [
        "bool": false, "int": 2, "float": .double(Double.pi), "string": "a lot of string",
    ]
    static let map: JSONValue = ["foo": "Foo", "bar": "Bar"]
    static let set: JSONValue = ["one": [:], "two": [:], "three": [:]]
    static let myType: JSONValue = [
        "object": ["method": "org.varlink.certification.Test09", "parameters": ["map": map]],
        "enum": "two",
        "struct": ["first": 1, "second": "2"],
        "array": ["one", "two", "three"],
        "dictionary": map,
        "stringset": set,
        "nullable": nil,
        "nullable_array_struct": nil,
        "interface": [
            "foo": [nil, ["foo": "foo", "bar": "bar"], nil, ["one": "foo", "two": "bar"]],
            "anon": ["foo": true, "bar": false],
        ],
    ]
    static let streamed: [JSONValue] = (1...10).map { .string("Reply number \($0)") }

    /// One step of the protocol: the parameters the method must receive (besides `client_id`), its reply and the
    /// method that must follow.
    struct Step {
        var wants: [String: JSONValue]
        var reply: [String: JSONValue]
        var next: String?
    }

    static let steps: [String: Step] = [
        "Test01": Step(wants: [:], reply: ["bool": true], next: "Test02"),
        "Test02": Step(wants: ["bool": true], reply: ["int": 1], next: "Test03"),
        "Test03": Step(wants: ["int": 1], reply: ["float": 1.0], next: "Test04"),
        "Test04": Step(wants: ["float": 1.0], reply: ["string": "ping"], next: "Test05"),
        "Test05": Step(wants: ["string": "ping"], reply: fourValues, next: "Test06"),
        "Test06": Step(wants: fourValues, reply: ["struct": .object(fourValues)], next: "Test07"),
        "Test07": Step(wants: ["struct": .object(fourValues)], reply: ["map": map], next: "Test08"),
        "Test08": Step(wants: ["map": map], reply: ["set": set], next: "Test09"),
        "Test09": Step(wants: ["set": set], reply: ["mytype": myType], next: "Test10"),
        // The reply is the stream of `streamed`.
        "Test10": Step(wants: ["mytype": myType], reply: [:], next: "Test11"),
        // Oneway: no reply.
        "Test11": Step(wants: ["last_more_replies": .array(streamed)], reply: [:], next: "End"),
        "End": Step(wants: [:], reply: ["all_ok": true], next: nil),
    ]

    // MARK: Calls

    func handle(_ call: VarlinkCall, on connection: VarlinkConnection, client: Void) {
        let method = String(call.member)
        if method == "Start" {
            guard call.parameters.isEmpty, !call.more, !call.oneway else {
                fail(connection, wants: ["method": .string(call.method)], got: call)
                return
            }
            let id = (0..<16).map { _ in String(UInt8.random(in: 0...255), radix: 16).leftPadded(to: 2) }.joined()
            nextMethod[id] = "Test01"
            connection.reply(["client_id": .string(id)])
            return
        }
        guard case .string(let id)? = call.parameters["client_id"], let expected = nextMethod[id] else {
            connection.reply(error: VarlinkError(name: Self.interface + ".ClientIdError"))
            return
        }
        // A deviation ends the client's run: it must start again.
        nextMethod[id] = nil
        guard method == expected, let step = Self.steps[method] else {
            fail(connection, wants: ["method": .string(Self.interface + "." + expected)], got: call)
            return
        }
        var parameters = call.parameters
        parameters["client_id"] = nil
        guard Self.same(.object(parameters), .object(step.wants)) else {
            var wants = step.wants
            wants["client_id"] = .string(id)
            fail(connection, wants: ["method": .string(call.method), "parameters": .object(wants)], got: call)
            return
        }
        switch method {
        case "Test10":
            guard call.more else {
                connection.reply(error: .expectedMore())
                return
            }
            stream(Self.streamed[...], to: connection)
        case "Test11":
            guard call.oneway else {
                fail(connection, wants: ["method": .string(call.method), "oneway": true], got: call)
                return
            }
        default:
            connection.reply(step.reply)
        }
        nextMethod[id] = step.next
    }

    /// Sends the first value with `continues` now and each further one in a later event-loop tick, as a
    /// subscription would; the last one ends the stream.
    private func stream(_ values: ArraySlice<JSONValue>, to connection: VarlinkConnection) {
        guard let first = values.first, !connection.isClosed else { return }
        let rest = values.dropFirst()
        connection.reply(["string": first], continues: !rest.isEmpty)
        guard !rest.isEmpty, let eventLoop else { return }
        connection.beginStream()
        eventLoop.assumeIsolated().execute { [self] in
            stream(rest, to: connection)
        }
    }

    private func fail(_ connection: VarlinkConnection, wants: [String: JSONValue], got call: VarlinkCall) {
        var got: [String: JSONValue] = ["method": .string(call.method)]
        if !call.parameters.isEmpty { got["parameters"] = .object(call.parameters) }
        if call.more { got["more"] = true }
        if call.oneway { got["oneway"] = true }
        connection.reply(
            error: VarlinkError(
                name: Self.interface + ".CertificationError",
                parameters: ["wants": .object(wants), "got": .object(got)]
            )
        )
    }

    /// Equality of JSON values as the protocol means it: numbers compare by value (`1` equals `1.0`) and an absent
    /// member equals `null` (an optional field may be left out).
    static func same(_ left: JSONValue, _ right: JSONValue) -> Bool {
        switch (left, right) {
        case (.object(let a), .object(let b)):
            return Set(a.keys).union(b.keys).allSatisfy { same(a[$0] ?? .null, b[$0] ?? .null) }
        case (.array(let a), .array(let b)):
            return a.count == b.count && zip(a, b).allSatisfy { same($0, $1) }
        case (.int, _), (.double, _):
            guard let a = left.doubleValue, let b = right.doubleValue else { return false }
            return a == b
        default:
            return left == right
        }
    }
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String {
        String(repeating: "0", count: max(0, width - count)) + self
    }
}
