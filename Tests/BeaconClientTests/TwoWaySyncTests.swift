import BeaconProtocol
import Testing

@testable import BeaconClient

@Suite("two-way binding state machine")
struct TwoWaySyncTests {
    private func snapshot(_ json: JSONValue?, _ version: Int64) -> RemoteSnapshot {
        RemoteSnapshot(json: json, keyVersion: json == nil ? 0 : version, version: version)
    }

    @Test("the remote value wins at the start")
    func remoteFirst() {
        var sync = TwoWaySync()
        #expect(sync.localChanged("local").isEmpty)
        #expect(sync.remoteChanged(snapshot("remote", 5)) == [.setLocal("remote")])
        // The echo of setting the local value is recognised.
        #expect(sync.localChanged("remote").isEmpty)
    }

    @Test("a state of a later epoch (the daemon's store was replaced) wins whatever its version; an older one not")
    func laterEpoch() {
        var sync = TwoWaySync()
        _ = sync.remoteChanged(snapshot("old store", 20))
        #expect(sync.remoteChanged(snapshot("stale", 19)).isEmpty)
        var replaced = snapshot("new store", 2)
        replaced.epoch = 1
        #expect(sync.remoteChanged(replaced) == [.setLocal("new store")])
        #expect(sync.remoteChanged(snapshot("old store again", 21)).isEmpty)
        // A local change is written against the new store's version.
        #expect(sync.localChanged("local") == [.write("local", ifVersion: 2)])
    }

    @Test("a write answered by the daemon before its store was replaced does not become the new store's state")
    func writeAcrossEpochs() {
        var sync = TwoWaySync()
        _ = sync.remoteChanged(snapshot("old store", 20))
        #expect(sync.localChanged("local") == [.write("local", ifVersion: 20)])
        var replaced = snapshot("new store", 2)
        replaced.epoch = 1
        // The write is in flight: the new state waits for its answer.
        #expect(sync.remoteChanged(replaced).isEmpty)
        // Its answer, from the old store, names a version of that store: the new store's state stays and wins.
        #expect(sync.writeSucceeded(version: 21) == [.setLocal("new store")])
        #expect(sync.remote == replaced)
    }

    @Test("equal values at the start are not set again")
    func equalAtStart() {
        var sync = TwoWaySync()
        #expect(sync.localChanged("same").isEmpty)
        #expect(sync.remoteChanged(snapshot("same", 5)).isEmpty)
    }

    @Test("a local change is written with the version it replaces, and its echo is ignored")
    func localWrite() {
        var sync = TwoWaySync()
        _ = sync.remoteChanged(snapshot("a", 5))
        #expect(sync.localChanged("b") == [.write("b", ifVersion: 5)])
        #expect(sync.writeSucceeded(version: 6).isEmpty)
        // The watch then reports our own change: nothing to do.
        #expect(sync.remoteChanged(snapshot("b", 6)).isEmpty)
        #expect(sync.localChanged("c") == [.write("c", ifVersion: 6)])
    }

    @Test("the echo may arrive before the reply")
    func echoBeforeReply() {
        var sync = TwoWaySync()
        _ = sync.remoteChanged(snapshot("a", 5))
        #expect(sync.localChanged("b") == [.write("b", ifVersion: 5)])
        #expect(sync.remoteChanged(snapshot("b", 6)).isEmpty)
        #expect(sync.writeSucceeded(version: 6).isEmpty)
        #expect(sync.localChanged("c") == [.write("c", ifVersion: 6)])
    }

    @Test("local changes during a write are merged into one pending write")
    func pendingWrites() {
        var sync = TwoWaySync()
        _ = sync.remoteChanged(snapshot("a", 5))
        #expect(sync.localChanged("b") == [.write("b", ifVersion: 5)])
        #expect(sync.localChanged("c").isEmpty)
        #expect(sync.localChanged("d").isEmpty)
        #expect(sync.writeSucceeded(version: 6) == [.write("d", ifVersion: 6)])
        #expect(sync.writeSucceeded(version: 7).isEmpty)
        #expect(sync.remote?.json == "d")
    }

    @Test("a change made during our write, when another client wrote after it, is refused and not written over theirs")
    func pendingAfterForeign() {
        var sync = TwoWaySync()
        _ = sync.remoteChanged(snapshot("a", 5))
        #expect(sync.localChanged("mine") == [.write("mine", ifVersion: 5)])
        // Made while "mine" was in flight: it replaces "mine".
        #expect(sync.localChanged("mine again").isEmpty)
        // Another client wrote after "mine", and the watch says so before the reply arrives.
        #expect(sync.remoteChanged(snapshot("mine", 6)).isEmpty)
        #expect(sync.remoteChanged(snapshot("theirs", 7)).isEmpty)
        // The pending change names the version it replaces (our write's, 6), so the daemon refuses it.
        #expect(sync.writeSucceeded(version: 6) == [.write("mine again", ifVersion: 6)])
        #expect(
            sync.writeFailed(mismatch: true) == [
                .conflict(attempted: "mine again", expectedVersion: 6), .setLocal("theirs"),
            ])
    }

    @Test("a lost compare-and-set is reported and the remote value wins")
    func conflict() {
        var sync = TwoWaySync()
        _ = sync.remoteChanged(snapshot("a", 5))
        #expect(sync.localChanged("mine") == [.write("mine", ifVersion: 5)])
        // Another client's change arrives while the write is in flight.
        #expect(sync.remoteChanged(snapshot("theirs", 6)).isEmpty)
        #expect(
            sync.writeFailed(mismatch: true) == [
                .conflict(attempted: "mine", expectedVersion: 5), .setLocal("theirs"),
            ])
        #expect(sync.localChanged("theirs").isEmpty)
    }

    @Test("a remote change after our write reaches the local value once the write is done")
    func foreignAfterOwn() {
        var sync = TwoWaySync()
        _ = sync.remoteChanged(snapshot("a", 5))
        _ = sync.localChanged("b")
        #expect(sync.remoteChanged(snapshot("b", 6)).isEmpty)
        #expect(sync.remoteChanged(snapshot("c", 7)).isEmpty)
        #expect(sync.writeSucceeded(version: 6) == [.setLocal("c")])
    }

    @Test("stale and repeated remote states are ignored")
    func staleRemote() {
        var sync = TwoWaySync()
        #expect(sync.remoteChanged(snapshot("a", 5)) == [.setLocal("a")])
        #expect(sync.remoteChanged(snapshot("old", 4)).isEmpty)
        #expect(sync.remoteChanged(snapshot("a", 5)).isEmpty)
    }

    @Test("deletion: a missing key is written with ifVersion 0, a local nil is an Unset")
    func missingKey() {
        var sync = TwoWaySync()
        #expect(sync.remoteChanged(snapshot(nil, 9)) == [.setLocal(nil)])
        #expect(sync.localChanged("x") == [.write("x", ifVersion: 0)])
        #expect(sync.writeSucceeded(version: 10).isEmpty)
        #expect(sync.localChanged(nil) == [.write(nil, ifVersion: 10)])
        #expect(sync.writeSucceeded(version: 11).isEmpty)
        #expect(sync.remote?.keyVersion == 0)
    }

    @Test("two bound replicas converge without writing back and forth")
    func twoReplicas() {
        // Replica A writes; B receives the change and must not write it back.
        var a = TwoWaySync()
        var b = TwoWaySync()
        _ = a.remoteChanged(snapshot("start", 1))
        _ = b.remoteChanged(snapshot("start", 1))
        #expect(a.localChanged("fromA") == [.write("fromA", ifVersion: 1)])
        #expect(a.writeSucceeded(version: 2).isEmpty)
        #expect(b.remoteChanged(snapshot("fromA", 2)) == [.setLocal("fromA")])
        #expect(b.localChanged("fromA").isEmpty)
        #expect(a.remoteChanged(snapshot("fromA", 2)).isEmpty)
    }
}
