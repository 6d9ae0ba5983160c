/// Something wrong in a schema or lockdown file: the part it concerns was skipped, the rest still applies.
public struct SettingsFileProblem: Sendable, Hashable, CustomStringConvertible {
    /// The 1-based line; 0 when the problem concerns the whole file or the input had no lines (a value a client
    /// registered).
    public var line: Int
    /// What is wrong.
    public var problem: String

    public init(line: Int, problem: String) {
        self.line = line
        self.problem = problem
    }

    /// `line 3: problem`, or the problem alone for line 0.
    public var description: String { line > 0 ? "line \(line): \(problem)" : problem }
}

/// The 1-based line of byte offsets in a text, by binary search over the starts of its lines.
struct LineTable {
    /// The offset where each line starts; line 1 starts at 0.
    private let starts: [Int]

    init(_ text: [UInt8]) {
        var starts = [0]
        for (offset, byte) in text.enumerated() where byte == 0x0A { starts.append(offset + 1) }
        self.starts = starts
    }

    /// The line holding `offset`; an offset at or past the end is on the last line.
    func line(of offset: Int) -> Int {
        // The number of line starts at or before `offset`.
        var low = 0
        var high = starts.count
        while low < high {
            let middle = (low + high) / 2
            if starts[middle] <= offset {
                low = middle + 1
            } else {
                high = middle
            }
        }
        return max(low, 1)
    }
}
