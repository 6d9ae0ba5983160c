import NIOCore
import NIOEmbedded
import Testing

@testable import BeaconFleet

/// ``PingAnsweringHandler`` on an embedded channel: the server's PINGs are acknowledged and go no further, every
/// other frame passes unchanged and in order, whole or split across reads.
@Suite("PINGs answered in front of swift-nio-http2")
struct PingAnsweringTests {
    /// An HTTP/2 frame: its 9-byte header and payload.
    func frame(type: UInt8, flags: UInt8 = 0, stream: UInt32 = 0, payload: [UInt8]) -> [UInt8] {
        let length = payload.count
        return [UInt8(length >> 16 & 0xFF), UInt8(length >> 8 & 0xFF), UInt8(length & 0xFF), type, flags]
            + [UInt8(stream >> 24 & 0xFF), UInt8(stream >> 16 & 0xFF), UInt8(stream >> 8 & 0xFF), UInt8(stream & 0xFF)]
            + payload
    }

    func channel() throws -> (EmbeddedChannel, PingAnsweringHandler) {
        let handler = PingAnsweringHandler()
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandler(handler)
        return (channel, handler)
    }

    /// Everything passed on to the next handler, as one byte array.
    func forwarded(_ channel: EmbeddedChannel) throws -> [UInt8] {
        var bytes: [UInt8] = []
        while var buffer = try channel.readInbound(as: ByteBuffer.self) {
            bytes += buffer.readBytes(length: buffer.readableBytes) ?? []
        }
        return bytes
    }

    /// Everything written towards the server, as one byte array.
    func written(_ channel: EmbeddedChannel) throws -> [UInt8] {
        var bytes: [UInt8] = []
        while var buffer = try channel.readOutbound(as: ByteBuffer.self) {
            bytes += buffer.readBytes(length: buffer.readableBytes) ?? []
        }
        return bytes
    }

    @Test("a PING is acknowledged with its own data and not passed on; the frames around it are, in order")
    func answersPing() throws {
        let (channel, handler) = try channel()
        let settings = frame(type: 0x4, payload: [0, 3, 0, 0, 0, 100])
        let opaque: [UInt8] = [2, 4, 16, 16, 9, 14, 7, 7]
        let ping = frame(type: 0x6, payload: opaque)
        let data = frame(type: 0x0, flags: 0x1, stream: 1, payload: Array("hello".utf8))
        try channel.writeInbound(ByteBuffer(bytes: settings + ping + data))
        #expect(try forwarded(channel) == settings + data)
        #expect(try written(channel) == frame(type: 0x6, flags: 0x1, payload: opaque))
        #expect(handler.answered == 1)
    }

    @Test("an acknowledgement of the client's own PING passes on for gRPC's keepalive")
    func passesAcks() throws {
        let (channel, handler) = try channel()
        let ack = frame(type: 0x6, flags: 0x1, payload: [1, 2, 3, 4, 5, 6, 7, 8])
        try channel.writeInbound(ByteBuffer(bytes: ack))
        #expect(try forwarded(channel) == ack)
        #expect(try written(channel).isEmpty)
        #expect(handler.answered == 0)
    }

    @Test("frames split across reads, a PING among them, come out whole and in order")
    func splitReads() throws {
        let (channel, handler) = try channel()
        let first = frame(type: 0x0, stream: 1, payload: Array(repeating: 7, count: 300))
        let ping = frame(type: 0x6, payload: [9, 9, 9, 9, 9, 9, 9, 9])
        let last = frame(type: 0x1, flags: 0x4, stream: 3, payload: Array(repeating: 1, count: 40))
        let stream = first + ping + last
        // Cut inside a header, inside a payload, and inside the PING.
        let cuts = [5, 200, 310, 315, stream.count]
        var start = 0
        for cut in cuts {
            try channel.writeInbound(ByteBuffer(bytes: stream[start..<cut]))
            start = cut
        }
        #expect(try forwarded(channel) == first + last)
        #expect(try written(channel) == frame(type: 0x6, flags: 0x1, payload: [9, 9, 9, 9, 9, 9, 9, 9]))
        #expect(handler.answered == 1)
    }

    @Test("a read with no PING is passed on as it is")
    func noPing() throws {
        let (channel, _) = try channel()
        let frames =
            frame(type: 0x1, flags: 0x4, stream: 1, payload: [0x88]) + frame(type: 0x8, payload: [0, 0, 1, 0])
        try channel.writeInbound(ByteBuffer(bytes: frames))
        #expect(try forwarded(channel) == frames)
        #expect(try written(channel).isEmpty)
    }
}
