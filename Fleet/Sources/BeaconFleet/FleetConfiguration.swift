import BeaconConfiguration
import BeaconProtocol

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Everything beacon-fleet is configured with: the `fleet` section of beacond's configuration file, `BEACON_FLEET_*`
/// variables and `--fleet-*` flags (strongest first), read as beacond reads its own keys.
public struct FleetConfiguration: Sendable {
    /// An etcd endpoint.
    public struct Endpoint: Sendable, Hashable, CustomStringConvertible {
        public var host: String
        public var port: Int
        public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
    }

    /// Files for TLS to etcd; all `nil` for plain TCP.
    public struct TLSFiles: Sendable, Hashable {
        /// PEM certificates that sign etcd's server certificates; the system's roots when `nil`.
        public var caFile: String?
        /// A client certificate and its key, for etcd's `--client-cert-auth`.
        public var certFile: String?
        public var keyFile: String?
    }

    /// beacond's address (`unix:PATH`), the same key as beacond's.
    public var address: String
    /// The roots of the mirrored subtrees: `fleet` for every key under `fleet.`.
    public var prefixes: [String]
    public var endpoints: [Endpoint]
    /// Whether to use TLS (an `https://` endpoint or any `fleet.tls.*` file).
    public var tls: TLSFiles?
    /// etcd's key for a Beacon key is this prefix followed by the key: `/beacon/fleet.mode`.
    public var etcdPrefix: String
    /// The time to live of the lease that carries this machine's ephemeral keys.
    public var leaseTTL: Int
    /// How long one etcd request may take before the write fails with ProviderUnavailable.
    public var requestTimeout: Duration
    /// The name other machines see in the origin of this machine's changes; the host name by default.
    public var machine: String
    /// etcd authentication: a user and a file holding its password.
    public var user: String?
    public var passwordFile: String?
    public var logLevel: String

    /// Every key beacon-fleet reads, and so every flag it takes (`--fleet-endpoints` for `fleet.endpoints`).
    public static let keys = [
        "address", "log.level", "fleet.prefixes", "fleet.endpoints", "fleet.tls.caFile", "fleet.tls.certFile",
        "fleet.tls.keyFile", "fleet.etcdPrefix", "fleet.leaseTtlSeconds", "fleet.requestTimeoutMs", "fleet.machine",
        "fleet.user", "fleet.passwordFile",
    ]

    /// Reads the configuration from flags, environment and file.
    public static func load(arguments: [String], environment: [String: String]) throws -> FleetConfiguration {
        let (reader, _) = try ConfigurationReader.load(arguments: arguments, environment: environment)
        try reader.checkFlags(knownKeys: keys)
        let configuration = try FleetConfiguration(reader: reader, environment: environment)
        assert(reader.keysRead(notIn: keys).isEmpty, "keys missing from FleetConfiguration.keys")
        return configuration
    }

    init(reader: ConfigurationReader, environment: [String: String]) throws {
        address = reader.string(forKey: "address") ?? "unix:" + DefaultPaths.socket(environment: environment)
        prefixes = reader.stringArray(forKey: "fleet.prefixes") ?? []
        guard !prefixes.isEmpty else {
            throw ConfigurationError(key: "fleet.prefixes", reason: "no subtree to mirror; name at least one root")
        }
        for prefix in prefixes {
            do {
                _ = try PropertyKey(prefix)
            } catch {
                throw ConfigurationError(key: "fleet.prefixes", reason: "\"\(prefix)\" is not a key: \(error.reason)")
            }
        }
        var secure = false
        // Endpoints hold colons, so a single text (a variable, one flag, a string in the file) is split at commas.
        let listed =
            reader.string(forKey: "fleet.endpoints").map { $0.split(separator: ",").map(String.init) }
            ?? reader.stringArray(forKey: "fleet.endpoints") ?? ["127.0.0.1:2379"]
        endpoints = try listed.map { text in
            let (endpoint, https) = try Self.endpoint(text)
            secure = secure || https
            return endpoint
        }
        guard !endpoints.isEmpty else { throw ConfigurationError(key: "fleet.endpoints", reason: "empty") }
        let files = TLSFiles(
            caFile: reader.string(forKey: "fleet.tls.caFile"), certFile: reader.string(forKey: "fleet.tls.certFile"),
            keyFile: reader.string(forKey: "fleet.tls.keyFile"))
        guard (files.certFile == nil) == (files.keyFile == nil) else {
            throw ConfigurationError(key: "fleet.tls", reason: "certFile and keyFile go together")
        }
        tls = secure || files != TLSFiles() ? files : nil
        etcdPrefix = reader.string(forKey: "fleet.etcdPrefix", default: "/beacon/")
        guard !etcdPrefix.isEmpty else { throw ConfigurationError(key: "fleet.etcdPrefix", reason: "empty") }
        leaseTTL = try reader.positiveInt(forKey: "fleet.leaseTtlSeconds", default: 10)
        guard leaseTTL >= 2 else { throw ConfigurationError(key: "fleet.leaseTtlSeconds", reason: "at least 2") }
        requestTimeout = .milliseconds(try reader.positiveInt(forKey: "fleet.requestTimeoutMs", default: 5000))
        machine = reader.string(forKey: "fleet.machine").flatMap { $0.isEmpty ? nil : $0 } ?? Self.hostName()
        user = reader.string(forKey: "fleet.user").flatMap { $0.isEmpty ? nil : $0 }
        passwordFile = reader.string(forKey: "fleet.passwordFile").flatMap { $0.isEmpty ? nil : $0 }
        guard user == nil || passwordFile != nil else {
            throw ConfigurationError(key: "fleet.passwordFile", reason: "fleet.user needs a password file")
        }
        logLevel = reader.string(forKey: "log.level", default: "info")
    }

    /// `HOST:PORT`, `[V6]:PORT`, or either after `http://` or `https://`.
    static func endpoint(_ text: String) throws -> (Endpoint, https: Bool) {
        var rest = Substring(text)
        var https = false
        if rest.hasPrefix("https://") {
            https = true
            rest = rest.dropFirst(8)
        } else if rest.hasPrefix("http://") {
            rest = rest.dropFirst(7)
        }
        while rest.hasSuffix("/") { rest = rest.dropLast() }
        let host: Substring
        let port: Substring
        if rest.hasPrefix("["), let close = rest.firstIndex(of: "]") {
            host = rest[rest.index(after: rest.startIndex)..<close]
            let after = rest[rest.index(after: close)...]
            port = after.hasPrefix(":") ? after.dropFirst() : "2379"
        } else if let colon = rest.lastIndex(of: ":") {
            host = rest[..<colon]
            port = rest[rest.index(after: colon)...]
        } else {
            host = rest
            port = "2379"
        }
        guard !host.isEmpty, let number = Int(port), (1...65535).contains(number) else {
            throw ConfigurationError(key: "fleet.endpoints", reason: "\"\(text)\" is not HOST:PORT")
        }
        return (Endpoint(host: String(host), port: number), https)
    }

    static func hostName() -> String {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count - 1) == 0 else { return "localhost" }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
