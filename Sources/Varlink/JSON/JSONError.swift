/// Why a JSON text was rejected, and where.
public struct JSONError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The class of a JSON parse failure.
    public struct Kind: Sendable, Hashable, CustomStringConvertible {
        private enum Code: Sendable, Hashable {
            case syntax, invalidUTF8, tooDeep, tooLarge, unexpectedEnd, trailingData, invalidNumber,
                invalidEscape, controlCharacter
        }
        private let code: Code
        private init(_ code: Code) { self.code = code }

        /// A byte that cannot start or continue a value here.
        public static let syntax = Kind(.syntax)
        /// Bytes that are not well-formed UTF-8, or a `\u` escape that leaves a lone surrogate.
        public static let invalidUTF8 = Kind(.invalidUTF8)
        /// Arrays and objects nested deeper than ``JSONLimits/maxDepth``.
        public static let tooDeep = Kind(.tooDeep)
        /// Input longer than ``JSONLimits/maxBytes``.
        public static let tooLarge = Kind(.tooLarge)
        /// The input ends inside a value.
        public static let unexpectedEnd = Kind(.unexpectedEnd)
        /// Bytes other than whitespace after the value.
        public static let trailingData = Kind(.trailingData)
        /// A malformed or out-of-range number (leading zeros, `1.`, `.5`, `-`, NaN, Infinity, overflow).
        public static let invalidNumber = Kind(.invalidNumber)
        /// A backslash escape JSON does not define, or a malformed `\u` escape.
        public static let invalidEscape = Kind(.invalidEscape)
        /// An unescaped control character (U+0000 to U+001F) inside a string.
        public static let controlCharacter = Kind(.controlCharacter)

        public var description: String {
            switch code {
            case .syntax: return "syntax"
            case .invalidUTF8: return "invalidUTF8"
            case .tooDeep: return "tooDeep"
            case .tooLarge: return "tooLarge"
            case .unexpectedEnd: return "unexpectedEnd"
            case .trailingData: return "trailingData"
            case .invalidNumber: return "invalidNumber"
            case .invalidEscape: return "invalidEscape"
            case .controlCharacter: return "controlCharacter"
            }
        }
    }

    /// The class of failure.
    public var kind: Kind
    /// The byte offset in the input where the problem was found.
    public var offset: Int
    /// A human-readable explanation.
    public var reason: String

    public init(kind: Kind, offset: Int, reason: String) {
        self.kind = kind
        self.offset = offset
        self.reason = reason
    }

    public var description: String {
        "JSON \(kind) error at byte \(offset): \(reason)"
    }
}
