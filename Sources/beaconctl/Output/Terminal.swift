#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// What the standard output is connected to: whether to colour, and how wide a line may be.
///
/// Colour is used only when standard output is a terminal, `NO_COLOR` is unset or empty, and `TERM` is not
/// `dumb`. The width is known only on a terminal; elsewhere lines are never cut.
struct Terminal {
    /// Whether ANSI colours and styles are written.
    var colors: Bool
    /// The terminal's width in columns, `nil` when standard output is not a terminal.
    var width: Int?

    /// The settings for standard output (file descriptor 1).
    static func standardOutput() -> Terminal {
        terminal(for: 1)
    }

    /// The settings for standard error (file descriptor 2).
    static func standardError() -> Terminal {
        terminal(for: 2)
    }

    private static func terminal(for descriptor: Int32) -> Terminal {
        guard isatty(descriptor) == 1 else { return Terminal(colors: false, width: nil) }
        let noColor = getenv("NO_COLOR").map { $0.pointee != 0 } ?? false
        let dumb = getenv("TERM").map { String(cString: $0) == "dumb" } ?? false
        var size = winsize()
        let width: Int? =
            ioctl(descriptor, UInt(TIOCGWINSZ), &size) == 0 && size.ws_col > 0 ? Int(size.ws_col) : nil
        return Terminal(colors: !noColor && !dumb, width: width)
    }

    /// A text style: an SGR sequence.
    enum Style: String {
        case bold = "1"
        case dim = "2"
        case red = "31"
        case green = "32"
        case yellow = "33"
        case blue = "34"
        case magenta = "35"
        case cyan = "36"
        case boldRed = "1;31"
        case boldCyan = "1;36"
    }

    /// `text` in `style` when colours are on, else `text` unchanged.
    func paint(_ text: String, _ style: Style?) -> String {
        guard colors, let style, !text.isEmpty else { return text }
        return "\u{1B}[" + style.rawValue + "m" + text + "\u{1B}[0m"
    }
}
