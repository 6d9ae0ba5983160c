#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// The target that BEACON_FUZZ_TARGET names; `json` without it.
let selectedTarget: FuzzTarget = {
    guard let name = getenv("BEACON_FUZZ_TARGET").map({ String(cString: $0) }) else { return .json }
    guard let target = FuzzTarget(rawValue: name) else {
        fatalError("BEACON_FUZZ_TARGET must be one of \(FuzzTarget.allCases.map(\.rawValue))")
    }
    return target
}()

/// One input of libFuzzer.
func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    selectedTarget.run(UnsafeRawBufferPointer(start: data, count: size))
    return 0
}

#if FUZZING
    /// libFuzzer's driver: SwiftPM gives the executable its own `main`, so libFuzzer's is not linked.
    @_silgen_name("LLVMFuzzerRunDriver")
    func runFuzzerDriver(
        _ argc: UnsafeMutablePointer<CInt>,
        _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>,
        _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt
    ) -> CInt
#endif

@main
enum Fuzz {
    static func main() {
        #if FUZZING
            var argc = CommandLine.argc
            var argv = CommandLine.unsafeArgv
            exit(runFuzzerDriver(&argc, &argv) { fuzzOneInput($0, $1) })
        #else
            replay()
        #endif
    }

    /// Without libFuzzer: runs every file of the corpus directories given as arguments through the target, the
    /// regression check `make test` makes of the checked-in corpus.
    static func replay() {
        var files = 0
        for directory in CommandLine.arguments.dropFirst() {
            guard let handle = opendir(directory) else { fatalError("cannot open \(directory)") }
            defer { closedir(handle) }
            while let entry = readdir(handle) {
                var name = entry.pointee.d_name
                let file = withUnsafeBytes(of: &name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
                guard !file.hasPrefix(".") else { continue }
                let bytes = read(directory + "/" + file)
                bytes.withUnsafeBytes { selectedTarget.run($0) }
                files += 1
            }
        }
        print("\(selectedTarget.rawValue): \(files) inputs replayed")
    }

    static func read(_ path: String) -> [UInt8] {
        guard let file = fopen(path, "rb") else { fatalError("cannot read \(path)") }
        defer { fclose(file) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = chunk.withUnsafeMutableBytes { fread($0.baseAddress, 1, $0.count, file) }
            if count == 0 { break }
            bytes.append(contentsOf: chunk[..<count])
        }
        return bytes
    }
}
