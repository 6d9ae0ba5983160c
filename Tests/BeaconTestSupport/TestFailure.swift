/// A failure of the test scaffolding (the daemon did not start, a process or socket did not answer in time, ...).
public struct TestFailure: Error, CustomStringConvertible {
    public var description: String

    public init(_ description: String) {
        self.description = description
    }
}
