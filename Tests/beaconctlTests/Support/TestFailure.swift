/// A failure of the test scaffolding (the daemon did not start, a process did not answer in time, ...).
struct TestFailure: Error, CustomStringConvertible {
    var description: String

    init(_ description: String) {
        self.description = description
    }
}
