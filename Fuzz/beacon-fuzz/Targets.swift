import BeaconDaemon
import BeaconProtocol

/// The parsers a client or a file reaches, each with the properties a run checks besides not crashing.
enum FuzzTarget: String, CaseIterable {
    case json
    case callView = "call-view"
    case framing, idl, configuration, settings
    case schemaText = "schema-text"

    func run(_ bytes: UnsafeRawBufferPointer) {
        switch self {
        case .json: Self.json(bytes)
        case .callView: Self.callView(bytes)
        case .framing: Self.framing(bytes)
        case .idl: Self.idl(bytes)
        case .configuration: Self.configuration(bytes)
        case .settings: Self.settings(bytes)
        case .schemaText: Self.schemaText(bytes)
        }
    }

    /// What parses encodes to text that parses to the same value. The scan the store reads its values with
    /// (``JSONValue/isCompactEncoding(_:limits:)``) calls compact only the bytes that encoding the parsed value
    /// writes again, never what does not parse, and does not fail on what parses.
    static func json(_ bytes: UnsafeRawBufferPointer) {
        let compact = Result { () throws(JSONError) in try JSONValue.isCompactEncoding(bytes, limits: .default) }
        guard let value = try? JSONValue(parsing: bytes) else {
            if case .success(true) = compact { fatalError("isCompactEncoding accepted what does not parse") }
            return
        }
        var encoded: [UInt8] = []
        value.encode(into: &encoded)
        switch compact {
        case .failure: fatalError("isCompactEncoding rejected JSON that parses")
        case .success(true) where !encoded.elementsEqual(bytes): fatalError("isCompactEncoding accepted other bytes")
        case .success: break
        }
        guard let again = try? JSONValue(parsing: encoded) else { fatalError("encoded JSON does not parse") }
        if !Self.same(value, again) { fatalError("JSON round trip changed the value") }
    }

    /// A call read in place says what the same call parsed into values says.
    static func callView(_ bytes: UnsafeRawBufferPointer) {
        let limits = JSONLimits(maxDepth: 64, maxBytes: 1 << 20)
        let parsed = try? VarlinkCall(parsing: bytes, limits: limits)
        guard let view = VarlinkCallView(parsing: bytes, limits: limits) else { return }
        guard let parsed else { return }
        if view.method != parsed.method || view.more != parsed.more || view.oneway != parsed.oneway {
            fatalError("the call view and the parsed call disagree")
        }
        for name in ["key", "value", "patterns", "since", "name", "userInfo"] as [StaticString] {
            let inPlace = view.parameter(name)?.jsonValue
            if let inPlace, let value = parsed.parameters[name.description], !Self.same(inPlace, value) {
                fatalError("parameter \(name) differs")
            }
        }
    }

    /// Frames cut from bytes that arrive in pieces are the NUL-separated parts of the bytes, whatever the pieces.
    static func framing(_ bytes: UnsafeRawBufferPointer) {
        guard let first = bytes.first else { return }
        let maxFrameSize = Int(first) * 4
        let input = Array(bytes.dropFirst())
        var splitter = VarlinkFrameSplitter(maxFrameSize: maxFrameSize)
        var frames: [[UInt8]] = []
        var offset = 0
        var step = 1
        while offset < input.count {
            let end = min(input.count, offset + step)
            input[offset..<end].withUnsafeBytes { splitter.append($0) }
            offset = end
            step = step % 7 + 1
            do {
                while let frame = try splitter.nextFrame() { frames.append(frame) }
            } catch {
                return
            }
        }
        let expected = input.split(separator: 0, omittingEmptySubsequences: false).dropLast().map(Array.init)
        if frames != expected { fatalError("the splitter's frames differ from the NUL-separated parts") }
    }

    static func idl(_ bytes: UnsafeRawBufferPointer) {
        _ = try? VarlinkInterface(parsing: String(decoding: bytes, as: UTF8.self))
    }

    static func configuration(_ bytes: UnsafeRawBufferPointer) {
        _ = try? DaemonConfiguration.fromFile(Array(bytes))
    }

    /// The same bytes as a schema file and as a lockdown file: every problem has a line within the file, and every
    /// rule or entry it keeps is on one.
    static func settings(_ bytes: UnsafeRawBufferPointer) {
        let text = Array(bytes)
        let lines = text.reduce(1) { $0 + ($1 == 0x0A ? 1 : 0) }
        let schema = SchemaFile.parse(text)
        let lockdown = LockdownFile.parse(text)
        for problem in schema.problems + lockdown.problems where !(0...lines).contains(problem.line) {
            fatalError("a problem on line \(problem.line) of a file of \(lines) lines")
        }
        for line in schema.entries.map(\.line) + lockdown.rules.map(\.line) where !(1...lines).contains(line) {
            fatalError("an entry on line \(line) of a file of \(lines) lines")
        }
    }

    /// A schema, a NUL, a value: checking the value's text and checking the parsed value agree, for text that is
    /// JSON.
    static func schemaText(_ bytes: UnsafeRawBufferPointer) {
        guard let split = bytes.firstIndex(of: 0) else { return }
        guard let schemaValue = try? JSONValue(parsing: UnsafeRawBufferPointer(rebasing: bytes[..<split])),
            let schema = try? JSONSchema(schemaValue)
        else { return }
        let text = Array(bytes[(split + 1)...])
        // The walk is for text that parses (the bus checks values first).
        guard let value = try? JSONValue(parsing: text) else { return }
        if schema.violation(ofValidJSON: text) != schema.violation(of: value) {
            fatalError("the text and the parsed value disagree")
        }
    }

    /// Equal values, with numbers compared by value (an integer and the same double are one number).
    static func same(_ left: JSONValue, _ right: JSONValue) -> Bool {
        switch (left, right) {
        case (.object(let a), .object(let b)):
            return a.count == b.count && a.allSatisfy { key, value in b[key].map { same(value, $0) } ?? false }
        case (.array(let a), .array(let b)):
            return a.count == b.count && zip(a, b).allSatisfy { same($0, $1) }
        case (.int(let a), .double(let b)), (.double(let b), .int(let a)):
            return Double(a) == b
        case (.double(let a), .double(let b)):
            return a == b || (a.isNaN && b.isNaN)
        default:
            return left == right
        }
    }
}
