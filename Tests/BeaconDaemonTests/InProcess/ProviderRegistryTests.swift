import BeaconProtocol
import NIOCore
import Testing

@testable import BeaconDaemon

#if canImport(Glibc)
    import Glibc
#endif

/// The providers' service (``ProviderRegistry``) in process, on the bus it reaches through ``ProvidersHost``: a Set
/// of a provided key goes to its provider and is answered with the provider's change; a provider that goes leaves
/// its subtree orphaned and the write it had not answered waits for the next one, which gets it unchanged; a write
/// that waits too long is refused; Status names the subtrees.
@Suite("ProviderRegistry as a service")
struct ProviderRegistryTests {
    static func call(_ method: String, _ parameters: JSONValue, more: Bool = false) -> JSONValue {
        Call.method("io.beacon.Providers." + method, parameters, more: more)
    }

    /// The requests sent to a provider since the last read.
    static func requests(_ provider: InProcessBus.Client) throws -> [JSONValue] {
        try provider.items("requests")
    }

    @Test("a provided Set goes to the provider, whose answer applies the change and answers the caller")
    func forwardAndAnswer() throws {
        let bus = try InProcessBus()
        let provider = try bus.connect()
        // The provider answers from another connection of its user: its own runs the Provide stream.
        let control = try bus.connect()
        let caller = try bus.connect()
        try provider.send(Self.call("Provide", ["patterns": ["team.**"]], more: true))
        bus.endTick()
        let id = try #require(try provider.messages().first?.parameters?["provider"]?.intValue)
        #expect(bus.bus.providers.hasClaims)

        try caller.send(Call.set("team.lead", "ada"))
        bus.endTick()
        #expect(try caller.messages().isEmpty, "the caller waits for the provider")
        let request = try #require(try Self.requests(provider).first)
        #expect(request["method"] == "Set" && request["key"] == "team.lead" && request["value"] == "ada")
        #expect(request["answered"] == true)

        try control.send(
            Self.call(
                "Answer",
                [
                    "provider": .int(id), "id": request["id"]!,
                    "change": ["key": "team.lead", "value": "ada", "providerVersion": 7],
                ]))
        bus.endTick()
        #expect(try control.messages().first?.errorName == nil)
        let reply = try #require(try caller.messages().first)
        let version = try #require(reply.parameters?["version"]?.intValue)
        #expect(try bus.bus.version(of: "team.lead") == version)
        #expect(bus.bus.providers.providerVersions["team.lead"] == 7)
    }

    @Test("a provider that goes orphans its subtree; its unanswered write goes to the next provider unchanged")
    func handOver() throws {
        let bus = try InProcessBus()
        let first = try bus.connect()
        let caller = try bus.connect()
        try first.send(Self.call("Provide", ["patterns": ["team.**"]], more: true))
        bus.endTick()
        _ = try first.messages()
        try caller.send(Call.set("team.size", 4))
        bus.endTick()
        let sent = try #require(try Self.requests(first).first)

        try first.channel.close().wait()
        bus.endTick()
        #expect(bus.bus.providers.unavailability(of: "team.size") != nil)
        #expect(bus.bus.providers.queue.waiting.count == 1)
        let status = bus.bus.providers.providerStatus()
        #expect(status.first?["available"] == false)

        let second = try bus.connect()
        try second.send(Self.call("Provide", ["patterns": ["team.**"]], more: true))
        bus.endTick()
        let again = try #require(try Self.requests(second).first)
        #expect(again["key"] == "team.size" && again["value"] == 4)
        #expect(again["write"] == sent["write"], "the same write, so that the provider applies it at most once")
        #expect(bus.bus.providers.queue.waiting.isEmpty)
    }

    @Test("a write that no provider takes within the limit is refused, and not stored here")
    func waitLimit() throws {
        let bus = try InProcessBus()
        let caller = try bus.connect()
        bus.bus.providers.queue.limit = .milliseconds(20)
        bus.bus.providers.expectProviders(of: ["fleet"])
        let sent = NIODeadline.now()
        try caller.send(Call.set("fleet.a", 1))
        bus.endTick()
        // The limit is measured on the monotonic clock: run the loop's timers as time passes, for at most 10 s.
        var reply: JSONValue?
        while reply == nil && NIODeadline.now() < sent + .seconds(10) {
            bus.loop.advanceTime(to: NIODeadline.now())
            bus.endTick()
            reply = try caller.messages().first
            if reply == nil { usleep(2000) }
        }
        #expect(NIODeadline.now() >= sent + .milliseconds(20))
        #expect(reply?.errorName == "io.beacon.Providers.ProviderUnavailable")
        #expect(try bus.bus.version(of: "fleet.a") == nil, "not stored here")
    }
}
