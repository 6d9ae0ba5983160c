import NIOCore
import Varlink
import VarlinkServer

/// `org.varlink.certification` on a ``VarlinkServer``: each call goes to the generated
/// `Certification.dispatch(_:to:responder:)`, which decodes it for ``CertificationService`` and answers on the
/// connection.
final class CertificationServer: VarlinkService {
    let service = CertificationService()
    let interfaceDescriptions = [(name: Certification.name, description: Certification.description)]

    func attached(to server: VarlinkServerContext) {
        service.eventLoop = server.eventLoop
    }

    func handle(_ call: VarlinkCall, on connection: VarlinkConnection, client: Void) {
        if !Certification.dispatch(call, to: service, responder: connection) {
            connection.reply(error: .methodNotFound(call.method))
        }
    }
}

/// The certification's server side, written against the generated `Certification.Service`.
///
/// Each client walks Start, Test01 … Test10, Test11, End, passing on what the previous call returned. Every call is
/// checked against what the certification protocol prescribes: a call out of order or with other parameters than
/// expected is answered with `CertificationError` and the client id is forgotten; an unknown client id gets
/// `ClientIdError`. Test10 streams ten replies with `continues`, one per event-loop tick; Test11 must be `oneway`.
final class CertificationService: Certification.Service {
    /// The method each known client id must call next.
    private(set) var nextMethod: [String: String] = [:]
    var eventLoop: (any EventLoop)?

    // MARK: The values passed from one call to the next

    static let fourValues: [String: JSONValue] = [
        "bool": false, "int": 2, "float": .double(Double.pi), "string": "a lot of string",
    ]
    static let map = ["foo": "Foo", "bar": "Bar"]
    static let set: Set<String> = ["one", "two", "three"]
    static let myType = Certification.MyType(
        object: ["method": "org.varlink.certification.Test09", "parameters": ["map": map.varlinkValue]],
        enum: .two,
        struct: .init(first: 1, second: "2"),
        array: ["one", "two", "three"],
        dictionary: map,
        stringset: set,
        interface: .init(
            foo: [nil, ["foo": .foo, "bar": .bar], nil, ["one": .foo, "two": .bar]], anon: .init(foo: true, bar: false))
    )
    static let streamed = (1...10).map { "Reply number \($0)" }

    /// What each method must receive besides `client_id`, and the method that must follow.
    static let steps: [String: (wants: [String: JSONValue], next: String?)] = [
        "Test01": ([:], "Test02"),
        "Test02": (["bool": true], "Test03"),
        "Test03": (["int": 1], "Test04"),
        "Test04": (["float": 1.0], "Test05"),
        "Test05": (["string": "ping"], "Test06"),
        "Test06": (fourValues, "Test07"),
        "Test07": (["struct": .object(fourValues)], "Test08"),
        "Test08": (["map": map.varlinkValue], "Test09"),
        "Test09": (["set": set.varlinkValue], "Test10"),
        "Test10": (["mytype": myType.varlinkValue], "Test11"),
        "Test11": (["last_more_replies": streamed.varlinkValue], "End"),
        "End": ([:], nil),
    ]

    // MARK: Calls

    func start(_ call: Certification.Start.Call) {
        guard !call.more, !call.oneway else {
            fail(call, "Start", wants: ["method": .string(Certification.Start.method)])
            return
        }
        let id = (0..<16).map { _ in String(UInt8.random(in: 0...255), radix: 16).leftPadded(to: 2) }.joined()
        nextMethod[id] = "Test01"
        call.reply(.init(clientId: id))
    }

    func test01(_ call: Certification.Test01.Call) {
        guard admit(call, "Test01", call.parameters.clientId) else { return }
        call.reply(.init(bool: true))
    }

    func test02(_ call: Certification.Test02.Call) {
        guard admit(call, "Test02", call.parameters.clientId) else { return }
        call.reply(.init(int: 1))
    }

    func test03(_ call: Certification.Test03.Call) {
        guard admit(call, "Test03", call.parameters.clientId) else { return }
        call.reply(.init(float: 1.0))
    }

    func test04(_ call: Certification.Test04.Call) {
        guard admit(call, "Test04", call.parameters.clientId) else { return }
        call.reply(.init(string: "ping"))
    }

    func test05(_ call: Certification.Test05.Call) {
        guard admit(call, "Test05", call.parameters.clientId) else { return }
        call.reply(.init(bool: false, int: 2, float: Double.pi, string: "a lot of string"))
    }

    func test06(_ call: Certification.Test06.Call) {
        guard admit(call, "Test06", call.parameters.clientId) else { return }
        call.reply(.init(struct: .init(bool: false, int: 2, float: Double.pi, string: "a lot of string")))
    }

    func test07(_ call: Certification.Test07.Call) {
        guard admit(call, "Test07", call.parameters.clientId) else { return }
        call.reply(.init(map: Self.map))
    }

    func test08(_ call: Certification.Test08.Call) {
        guard admit(call, "Test08", call.parameters.clientId) else { return }
        call.reply(.init(set: Self.set))
    }

    func test09(_ call: Certification.Test09.Call) {
        guard admit(call, "Test09", call.parameters.clientId) else { return }
        call.reply(.init(mytype: Self.myType))
    }

    func test10(_ call: Certification.Test10.Call) {
        guard admit(call, "Test10", call.parameters.clientId) else { return }
        stream(Self.streamed[...], to: call)
    }

    func test11(_ call: Certification.Test11.Call) {
        guard call.oneway else {
            nextMethod[call.parameters.clientId] = nil
            fail(call, "Test11", wants: ["method": .string(Certification.Test11.method), "oneway": true])
            return
        }
        _ = admit(call, "Test11", call.parameters.clientId)
    }

    func end(_ call: Certification.End.Call) {
        guard admit(call, "End", call.parameters.clientId) else { return }
        call.reply(.init(allOk: true))
    }

    // MARK: Checks

    /// Whether `call` is the one its client must make next, with the values expected; otherwise answers it with
    /// the interface's error and forgets the client. Either way the client moves on.
    private func admit<Parameters, Reply>(
        _ call: VarlinkMethodCall<Parameters, Reply, Certification.Error>, _ method: String, _ id: String
    ) -> Bool {
        guard let expected = nextMethod[id] else {
            call.fail(.clientIdError)
            return false
        }
        // A deviation ends the client's run: it must start again.
        nextMethod[id] = nil
        guard method == expected, let step = Self.steps[method] else {
            fail(call, method, wants: ["method": .string(Certification.name + "." + expected)])
            return false
        }
        var parameters = call.parameters.varlinkMembers
        parameters["client_id"] = nil
        guard Self.same(.object(parameters), .object(step.wants)) else {
            var wants = step.wants
            wants["client_id"] = .string(id)
            fail(
                call, method,
                wants: ["method": .string(Certification.name + "." + method), "parameters": .object(wants)])
            return false
        }
        nextMethod[id] = step.next
        return true
    }

    /// Sends the first value with `continues` now and each further one in a later event-loop tick, as a
    /// subscription would; the last one ends the stream.
    private func stream(_ values: ArraySlice<String>, to call: Certification.Test10.Call) {
        guard let first = values.first else { return }
        let rest = values.dropFirst()
        call.reply(.init(string: first), continues: !rest.isEmpty)
        guard !rest.isEmpty, let eventLoop, (call.responder as? VarlinkConnection)?.isClosed == false else { return }
        eventLoop.assumeIsolated().execute { [self] in
            stream(rest, to: call)
        }
    }

    private func fail<Parameters, Reply>(
        _ call: VarlinkMethodCall<Parameters, Reply, Certification.Error>, _ method: String,
        wants: [String: JSONValue]
    ) {
        var got: [String: JSONValue] = ["method": .string(Certification.name + "." + method)]
        let parameters = call.parameters.varlinkMembers
        if !parameters.isEmpty { got["parameters"] = .object(parameters) }
        if call.more { got["more"] = true }
        if call.oneway { got["oneway"] = true }
        call.fail(.certificationError(.init(wants: .object(wants), got: .object(got))))
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
