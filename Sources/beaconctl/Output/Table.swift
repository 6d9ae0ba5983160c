/// A table printed with aligned columns, a header line, and cells that may carry a style.
///
/// On a terminal, rows wider than the screen are fitted by shortening the table's ``flexibleColumn`` (a value
/// column) with an ellipsis; elsewhere nothing is cut.
struct Table {
    struct Cell: ExpressibleByStringLiteral {
        var text: String
        var style: Terminal.Style?

        init(_ text: String, _ style: Terminal.Style? = nil) {
            self.text = text
            self.style = style
        }

        init(stringLiteral value: String) {
            self.init(value)
        }
    }

    var headers: [String]
    var rows: [[Cell]] = []
    /// The column shortened to fit the terminal's width.
    var flexibleColumn: Int?

    init(headers: [String], flexibleColumn: Int? = nil) {
        self.headers = headers
        self.flexibleColumn = flexibleColumn
    }

    mutating func append(_ row: [Cell]) {
        rows.append(row)
    }

    /// The table's lines, without trailing spaces.
    func render(on terminal: Terminal) -> [String] {
        var widths = headers.map(\.count)
        for row in rows {
            for (index, cell) in row.enumerated() where index < widths.count {
                widths[index] = max(widths[index], cell.text.count)
            }
        }
        var cut = Array(repeating: false, count: widths.count)
        if let screen = terminal.width, let flexible = flexibleColumn, flexible < widths.count {
            let total = widths.reduce(0, +) + 2 * (widths.count - 1)
            if total > screen {
                let minimum = max(headers[flexible].count, 8)
                widths[flexible] = max(minimum, widths[flexible] - (total - screen))
                cut[flexible] = true
            }
        }
        var lines: [String] = []
        lines.append(format(headers.map { Cell($0, .bold) }, widths: widths, cut: cut, on: terminal))
        for row in rows {
            lines.append(format(row, widths: widths, cut: cut, on: terminal))
        }
        return lines
    }

    private func format(_ row: [Cell], widths: [Int], cut: [Bool], on terminal: Terminal) -> String {
        var line = ""
        var pendingSpaces = 0
        for (index, width) in widths.enumerated() {
            var text = index < row.count ? row[index].text : ""
            if cut[index] && text.count > width {
                text = String(text.prefix(width - 1)) + "…"
            }
            if !text.isEmpty {
                line += String(repeating: " ", count: pendingSpaces)
                line += terminal.paint(text, index < row.count ? row[index].style : nil)
                pendingSpaces = 0
            }
            pendingSpaces += width - text.count + (index + 1 < widths.count ? 2 : 0)
        }
        return line
    }
}
