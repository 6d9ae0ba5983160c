/// Lines of `Label: value`, the labels right-aligned so that their colons line up, as `status` and `describe`
/// print them.
enum LabelledLines {
    /// One line per (label, value) row, the label in bold. With `indentingContinuations`, a value of several lines
    /// continues under its first line; without, its newlines are kept as they are.
    static func render(
        _ rows: [(String, String)], on terminal: Terminal, indentingContinuations: Bool = false
    ) -> [String] {
        let width = rows.map(\.0.count).max() ?? 0
        let continuation = "\n" + String(repeating: " ", count: width + 2)
        var lines: [String] = []
        for (label, value) in rows {
            let padding = String(repeating: " ", count: width - label.count)
            var text = value
            if indentingContinuations {
                text = value.split(separator: "\n", omittingEmptySubsequences: false).joined(separator: continuation)
            }
            lines.append(padding + terminal.paint(label + ":", .bold) + " " + text)
        }
        return lines
    }
}
