/// A failure of the test scaffolding (daemon did not start, socket did not answer in time, ...).
struct TestFailure: Error, CustomStringConvertible {
    var description: String

    init(_ description: String) {
        self.description = description
    }
}
