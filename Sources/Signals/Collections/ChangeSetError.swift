/// A change set that does not fit the array (or sectioned array) it is applied to.
public struct ChangeSetError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What kind of mismatch was found.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Value: Hashable, Sendable {
            case indexOutOfRange
            case conflictingIndices
        }
        private let value: Value

        /// An index lies outside the old or the new collection.
        public static let indexOutOfRange = Code(value: .indexOutOfRange)
        /// Two changes name the same element or the same position, or one changes an element
        /// that another deletes.
        public static let conflictingIndices = Code(value: .conflictingIndices)

        public var description: String {
            switch value {
            case .indexOutOfRange: "indexOutOfRange"
            case .conflictingIndices: "conflictingIndices"
            }
        }
    }

    /// The kind of mismatch.
    public var code: Code
    /// Which change did not fit, and why.
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "ChangeSetError.\(code): \(message)" }
}
