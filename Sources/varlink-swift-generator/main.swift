// varlink-swift-generator: Swift from `.varlink` files, for the VarlinkGenerator build plugin or by hand.
//
//     varlink-swift-generator [--access public|package|internal] [--namespace INTERFACE=NAME]...
//                             [--names-only | --extending MODULE] --output DIRECTORY FILE.varlink...
//
// Writes DIRECTORY/NAME.swift for each FILE/NAME.varlink. A file that does not parse is an error naming its line and
// column, as a compiler's is.
import Varlink
import VarlinkCodeGeneration

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

func fail(_ message: String, status: Int32 = 1) -> Never {
    let bytes = Array("varlink-swift-generator: \(message)\n".utf8)
    _ = bytes.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
    exit(status)
}

func readFile(_ path: String) -> String {
    guard let file = fopen(path, "rb") else { fail("\(path): \(String(cString: strerror(errno)))") }
    defer { fclose(file) }
    var bytes: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 65536)
    while true {
        let count = fread(&chunk, 1, chunk.count, file)
        if count > 0 { bytes += chunk[..<count] }
        if count < chunk.count { break }
    }
    guard ferror(file) == 0 else { fail("\(path): cannot read") }
    guard let text = String(validating: bytes, as: UTF8.self) else { fail("\(path): not UTF-8") }
    return text
}

func writeFile(_ path: String, _ text: String) {
    // Unchanged output is left alone, so that what depends on it is not rebuilt.
    if let file = fopen(path, "rb") {
        fclose(file)
        if readFile(path) == text { return }
    }
    guard let file = fopen(path, "wb") else { fail("\(path): \(String(cString: strerror(errno)))") }
    let bytes = Array(text.utf8)
    guard fwrite(bytes, 1, bytes.count, file) == bytes.count, fclose(file) == 0 else { fail("\(path): cannot write") }
}

var generator = SwiftGenerator()
var output: String?
var inputs: [String] = []
var arguments = CommandLine.arguments.dropFirst()
while let argument = arguments.popFirst() {
    switch argument {
    case "--access":
        guard let value = arguments.popFirst(), let access = SwiftGenerator.Access(rawValue: value) else {
            fail("--access takes public, package or internal", status: 2)
        }
        generator.access = access
    case "--namespace":
        guard let value = arguments.popFirst(), let equals = value.firstIndex(of: "=") else {
            fail("--namespace takes INTERFACE=NAME", status: 2)
        }
        generator.namespaces[String(value[..<equals])] = String(value[value.index(after: equals)...])
    case "--names-only":
        generator.output = .names
    case "--extending":
        guard let value = arguments.popFirst() else { fail("--extending takes the module of the names", status: 2) }
        generator.output = .extensions
        generator.imports.append(value)
    case "--output":
        guard let value = arguments.popFirst() else { fail("--output takes a directory", status: 2) }
        output = value
    case "--help", "-h":
        print("usage: varlink-swift-generator [--access public|package|internal] [--namespace INTERFACE=NAME]...")
        print("                               [--names-only | --extending MODULE]")
        print("                               --output DIRECTORY FILE.varlink...")
        exit(0)
    default:
        guard !argument.hasPrefix("-") else { fail("unknown option \(argument)", status: 2) }
        inputs.append(argument)
    }
}
guard let output, !inputs.isEmpty else { fail("give --output DIRECTORY and at least one .varlink file", status: 2) }

for input in inputs {
    let text = readFile(input)
    let interface: VarlinkInterface
    do {
        interface = try VarlinkInterface(parsing: text)
    } catch {
        // The compiler's format, so that an IDE shows it at the line.
        fail("\(input):\(error.line):\(error.column): error: \(error.reason)")
    }
    let file = String(input.split(separator: "/").last ?? Substring(input))
    let base = file.hasSuffix(".varlink") ? String(file.dropLast(".varlink".count)) : file
    writeFile(output + "/" + base + ".swift", generator.generate(interface, source: file))
}
