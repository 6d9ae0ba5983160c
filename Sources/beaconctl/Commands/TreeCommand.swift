import ArgumentParser
import BeaconProtocol

/// `beaconctl tree [PREFIX]`: the key space as a tree.
struct TreeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tree",
        abstract: "Show properties as a tree of key segments.",
        discussion: """
            Each segment of a key is a level of the tree; a key that holds a value shows it after "=". With \
            --json prints the tree as nested objects: every node is {"value":V,"children":{SEGMENT:node}}, \
            "value" only where a property is stored, "children" only where keys lie below.
            """
    )

    @OptionGroup var options: GlobalOptions

    @Argument(help: "Only keys equal to or below this key.")
    var prefix: String?

    /// A node of the key tree.
    private final class Node {
        var value: JSONValue?
        var children: [String: Node] = [:]

        func child(_ segment: String) -> Node {
            if let node = children[segment] { return node }
            let node = Node()
            children[segment] = node
            return node
        }

        var json: JSONValue {
            var members: [String: JSONValue] = [:]
            if let value { members["value"] = value }
            if !children.isEmpty { members["children"] = .object(children.mapValues(\.json)) }
            return .object(members)
        }
    }

    func run() throws {
        var parameters: [String: JSONValue] = [:]
        if let prefix { parameters["prefix"] = .string(prefix) }
        let reply = try options.daemon().call(IOBeaconProperties.List.method, parameters)
        let root = Node()
        for property in reply["properties"]?.arrayValue ?? [] {
            guard let key = property["key"]?.stringValue else { continue }
            var node = root
            for segment in key.split(separator: ".") { node = node.child(String(segment)) }
            node.value = property["value"] ?? .null
        }
        var output = OutputBuffer.standardOutput()
        if options.json {
            output.line(JSONText.compact(root.json))
        } else {
            let terminal = Terminal.standardOutput()
            draw(root, indent: "", on: terminal, into: &output, topLevel: true)
        }
        output.flush()
    }

    private func draw(
        _ node: Node, indent: String, on terminal: Terminal, into output: inout OutputBuffer, topLevel: Bool
    ) {
        let names = node.children.keys.sorted()
        for (index, name) in names.enumerated() {
            let child = node.children[name]!
            let last = index == names.count - 1
            let branch = topLevel ? "" : (last ? "└─ " : "├─ ")
            var line = indent + branch + terminal.paint(name, child.value == nil ? .bold : .cyan)
            if let value = child.value { line += " = " + JSONText.compact(value) }
            output.line(line)
            let nextIndent = topLevel ? "" : indent + (last ? "   " : "│  ")
            draw(child, indent: nextIndent, on: terminal, into: &output, topLevel: false)
        }
    }
}
