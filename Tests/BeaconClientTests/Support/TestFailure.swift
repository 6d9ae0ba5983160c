/// A failure of the test scaffolding (the daemon did not start, an event did not come in time, ...).
struct TestFailure: Error, CustomStringConvertible {
    var description: String

    init(_ description: String) {
        self.description = description
    }
}
