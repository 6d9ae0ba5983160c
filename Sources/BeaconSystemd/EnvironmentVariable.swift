#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

enum EnvironmentVariable {
    static func value(of name: String) -> String? {
        guard let raw = getenv(name) else {
            return nil
        }
        return String(cString: raw)
    }
}
