import EtcdAPI
import Foundation
import GRPCCore
import GRPCNIOTransportHTTP2
import Synchronization

/// The etcd v3 calls beacon-fleet makes, over one gRPC client that balances across the configured endpoints
/// (round robin over the ready ones, so that a member going away costs no more than its own calls).
package final class EtcdConnection: Sendable {
    let grpc: GRPCClient<HTTP2ClientTransport.Posix>
    private let kv: Etcdserverpb_KV.Client<HTTP2ClientTransport.Posix>
    private let watcher: Etcdserverpb_Watch.Client<HTTP2ClientTransport.Posix>
    private let leases: Etcdserverpb_Lease.Client<HTTP2ClientTransport.Posix>
    private let auth: Etcdserverpb_Auth.Client<HTTP2ClientTransport.Posix>
    private let timeout: Duration
    private let credentials: (user: String, password: String)?
    /// The authentication token, once etcd gave one.
    private let token = Mutex<String?>(nil)

    package init(configuration: FleetConfiguration) throws {
        let pairs = configuration.endpoints.map { (host: $0.host, port: $0.port) }
        let target: any ResolvableTarget
        if configuration.endpoints.allSatisfy({ Self.isIPv4($0.host) }) {
            target = .ipv4(pairs: pairs)
        } else if configuration.endpoints.allSatisfy({ $0.host.contains(":") }) {
            target = .ipv6(pairs: pairs)
        } else if configuration.endpoints.count == 1 {
            target = .dns(host: pairs[0].host, port: pairs[0].port)
        } else {
            throw EtcdError.configuration("several etcd endpoints must all be IP addresses (one name may be given)")
        }
        let security: HTTP2ClientTransport.Posix.TransportSecurity
        if let files = configuration.tls {
            let configure: (inout HTTP2ClientTransport.Posix.TransportSecurity.TLS) -> Void = { tls in
                if let ca = files.caFile { tls.trustRoots = .certificates([.file(path: ca, format: .pem)]) }
            }
            if let cert = files.certFile, let key = files.keyFile {
                security = .mTLS(
                    certificateChain: [.file(path: cert, format: .pem)], privateKey: .file(path: key, format: .pem),
                    configure: configure)
            } else {
                security = .tls(configure: configure)
            }
        } else {
            security = .plaintext
        }
        let transport = try HTTP2ClientTransport.Posix(
            target: target, transportSecurity: security,
            config: .defaults { config in
                // A partition that does not close the connection is noticed within seconds. etcd sends GOAWAY
                // ("too many pings") to clients that ping more often than its --grpc-keepalive-min-time, 5 s by
                // default, which ends every stream on the connection.
                config.connection.keepalive = .init(time: .seconds(10), timeout: .seconds(5), allowWithoutCalls: true)
                config.backoff = .init(initial: .milliseconds(100), max: .seconds(2), multiplier: 1.6, jitter: 0.2)
                // etcd's server PINGs about once per write; answered here, they no longer count towards
                // swift-nio-http2's limit of 200 in 30 s, which closed busy connections (PingAnsweringHandler).
                config.channelDebuggingCallbacks.onCreateTCPConnection = { PingAnsweringHandler.install(on: $0) }
            },
            serviceConfig: ServiceConfig(loadBalancingConfig: [.roundRobin]))
        grpc = GRPCClient(transport: transport)
        kv = Etcdserverpb_KV.Client(wrapping: grpc)
        watcher = Etcdserverpb_Watch.Client(wrapping: grpc)
        leases = Etcdserverpb_Lease.Client(wrapping: grpc)
        auth = Etcdserverpb_Auth.Client(wrapping: grpc)
        timeout = configuration.requestTimeout
        if let user = configuration.user, let file = configuration.passwordFile {
            guard let password = try? String(contentsOfFile: file, encoding: .utf8) else {
                throw EtcdError.configuration("cannot read the password file \(file)")
            }
            credentials = (user, password.trimmingCharacters(in: .newlines))
        } else {
            credentials = nil
        }
    }

    /// Runs the client's connections until ``close()``.
    package func run() async throws { try await grpc.runConnections() }

    package func close() { grpc.beginGracefulShutdown() }

    private var options: CallOptions {
        var options = CallOptions.defaults
        options.timeout = timeout
        return options
    }

    /// The metadata of every call: the authentication token, once there is one.
    private func metadata(_ extra: Metadata = [:]) async throws -> Metadata {
        guard let credentials else { return extra }
        var metadata = extra
        let current: String
        if let known = token.withLock({ $0 }) {
            current = known
        } else {
            var request = Etcdserverpb_AuthenticateRequest()
            request.name = credentials.user
            request.password = credentials.password
            current = try await auth.authenticate(request, options: options).token
            token.withLock { $0 = current }
        }
        metadata.addString(current, forKey: "token")
        return metadata
    }

    /// Runs `call`, authenticating again once when etcd says the token expired.
    private func authenticated<T: Sendable>(_ call: (Metadata) async throws -> T) async throws -> T {
        do {
            return try await call(try await metadata())
        } catch let error as RPCError where error.code == .unauthenticated && credentials != nil {
            token.withLock { $0 = nil }
            return try await call(try await metadata())
        }
    }

    /// The largest response accepted from etcd, as etcd's own client does: a page of a Range, or a watch
    /// response, holds many values of up to beacond's value limit each. (gRPC's default is 4 MiB.)
    static let maxResponseBytes = 256 << 20

    /// `options` accepting responses of up to ``maxResponseBytes``. grpc-swift-nio-transport 2.9.2 limits the
    /// messages a call receives by its `maxRequestMessageBytes`, so both are raised; etcd refuses a request
    /// larger than its own limit (--max-request-bytes, 1.5 MiB by default) whatever this says.
    static func acceptingLargeResponses(_ options: CallOptions) -> CallOptions {
        var options = options
        options.maxResponseMessageBytes = maxResponseBytes
        options.maxRequestMessageBytes = maxResponseBytes
        return options
    }

    /// Every key from `start` to `end`, read in pages of `pageSize` keys, all at the revision of the first page (a
    /// linearizable read). Returns the keys and that revision.
    func range(
        from start: [UInt8], to end: [UInt8], pageSize: Int64 = 256
    ) async throws -> (kvs: [Mvccpb_KeyValue], revision: Int64) {
        var request = Etcdserverpb_RangeRequest()
        request.key = Data(start)
        request.rangeEnd = Data(end)
        request.limit = pageSize
        let options = Self.acceptingLargeResponses(self.options)
        var kvs: [Mvccpb_KeyValue] = []
        while true {
            let page = try await authenticated { metadata in
                try await kv.range(request, metadata: metadata, options: options)
            }
            if request.revision == 0 { request.revision = page.header.revision }
            kvs.append(contentsOf: page.kvs)
            guard page.more, let last = page.kvs.last else { return (kvs, request.revision) }
            request.key = last.key + [0]
        }
    }

    /// One linearizable read of at most one key from `prefix` on, given `timeout`: it succeeds only while the
    /// cluster has a quorum.
    func readLinearizably(prefix: [UInt8], timeout: Duration) async throws {
        var request = Etcdserverpb_RangeRequest()
        request.key = Data(prefix)
        request.limit = 1
        request.keysOnly = true
        var options = CallOptions.defaults
        options.timeout = timeout
        _ = try await authenticated { metadata in try await kv.range(request, metadata: metadata, options: options) }
    }

    /// One transaction, given `timeout` to complete.
    package func txn(_ request: Etcdserverpb_TxnRequest, timeout: Duration) async throws -> Etcdserverpb_TxnResponse {
        var options = CallOptions.defaults
        options.timeout = timeout
        return try await authenticated { metadata in try await kv.txn(request, metadata: metadata, options: options) }
    }

    package func grantLease(ttl: Int) async throws -> Int64 {
        var request = Etcdserverpb_LeaseGrantRequest()
        request.ttl = Int64(ttl)
        let response = try await authenticated { metadata in
            try await leases.leaseGrant(request, metadata: metadata, options: options)
        }
        guard response.error.isEmpty else { throw EtcdError.refused(response.error) }
        return response.id
    }

    /// The seconds lease `id` has left; 0 or less when it is gone.
    func leaseTimeToLive(_ id: Int64) async throws -> Int64 {
        var request = Etcdserverpb_LeaseTimeToLiveRequest()
        request.id = id
        return try await authenticated { metadata in
            try await leases.leaseTimeToLive(request, metadata: metadata, options: options)
        }.ttl
    }

    func revokeLease(_ id: Int64) async throws {
        var request = Etcdserverpb_LeaseRevokeRequest()
        request.id = id
        _ = try await authenticated { metadata in
            try await leases.leaseRevoke(request, metadata: metadata, options: options)
        }
    }

    /// Keeps lease `id` alive, renewing it every `interval` and calling `renewed` after each renewal etcd confirms,
    /// until the task is cancelled; returns when etcd says the lease is gone, and throws when the stream fails.
    func keepAlive(
        _ id: Int64, every interval: Duration, renewed: @escaping @Sendable () async -> Void
    ) async throws {
        let request = Etcdserverpb_LeaseKeepAliveRequest.with { $0.id = id }
        try await forgettingTokenOnFailure {
            try await leases.leaseKeepAlive(
                metadata: try await metadata(["hasleader": "true"]),
                requestProducer: { writer in
                    while !Task.isCancelled {
                        try await writer.write(request)
                        try await Task.sleep(for: interval)
                    }
                },
                onResponse: { response in
                    for try await message in response.messages {
                        guard message.ttl > 0 else { return }
                        await renewed()
                    }
                })
        }
    }

    /// Runs a stream's `call`. When it fails, the token is forgotten, so that the next attempt logs in again: a
    /// stream gives no sign that its token was refused that can be told from other failures (a watch that etcd
    /// does not permit is cancelled with a reason in words), and a restarted etcd has forgotten every token.
    private func forgettingTokenOnFailure(_ call: () async throws -> Void) async throws {
        do {
            try await call()
        } catch {
            if credentials != nil { token.withLock { $0 = nil } }
            throw error
        }
    }

    /// Watches every key from `start` to `end`, from `revision`, passing each response to `handle` until it returns
    /// false; throws when the stream fails. The stream requires a leader: etcd ends it when its member loses one.
    package func watch(
        from start: [UInt8], to end: [UInt8], revision: Int64,
        handle: @escaping @Sendable (Etcdserverpb_WatchResponse) async throws -> Bool
    ) async throws {
        var create = Etcdserverpb_WatchCreateRequest()
        create.key = Data(start)
        create.rangeEnd = Data(end)
        create.startRevision = revision
        let request = Etcdserverpb_WatchRequest.with { $0.requestUnion = .createRequest(create) }
        let options = Self.acceptingLargeResponses(.defaults)
        try await forgettingTokenOnFailure {
            try await watcher.watch(
                metadata: try await metadata(["hasleader": "true"]),
                options: options,
                requestProducer: { writer in
                    try await writer.write(request)
                    // The request side stays open: etcd ends a watch stream whose client stops sending.
                    while !Task.isCancelled { try await Task.sleep(for: .seconds(3600)) }
                },
                onResponse: { response in
                    for try await message in response.messages {
                        guard try await handle(message) else { return }
                    }
                    throw EtcdError.refused("etcd ended the watch stream")
                })
        }
    }

    /// The end of the range of every key that starts with `prefix`.
    package static func prefixEnd(_ prefix: [UInt8]) -> [UInt8] {
        var end = prefix
        while let last = end.last {
            if last < 0xFF {
                end[end.count - 1] = last + 1
                return end
            }
            end.removeLast()
        }
        return [0]
    }

    static func isIPv4(_ host: String) -> Bool {
        let parts = host.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4 && parts.allSatisfy { UInt8($0) != nil }
    }
}

/// A failure of etcd that is not a gRPC status.
enum EtcdError: Error, CustomStringConvertible {
    case configuration(String)
    case refused(String)

    var description: String {
        switch self {
        case .configuration(let text): "configuration: \(text)"
        case .refused(let text): text
        }
    }
}
