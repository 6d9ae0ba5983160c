import Foundation
import PackagePlugin

/// Generates Swift from every `.varlink` file of a target, at build time, with `varlink-swift-generator`.
///
/// A `varlink-generator.json` beside the target's sources may set `"access"` (`"public"`, `"package"` or
/// `"internal"`; by default `public`), `"namespaces"` (an interface's Swift name, by interface name) and
/// `"namesOnly"` (`true`: only the names of the interface, its methods and errors, and the methods' modes).
@main
struct VarlinkGenerator: BuildToolPlugin {
    struct Configuration: Decodable {
        var access: String?
        var namespaces: [String: String]?
        var namesOnly: Bool?
    }

    func createBuildCommands(context: PluginContext, target: Target) async throws -> [Command] {
        guard let target = target as? SourceModuleTarget else { return [] }
        let tool = try context.tool(named: "varlink-swift-generator")
        let configurationURL = target.directoryURL.appending(path: "varlink-generator.json")
        var options: [String] = []
        var configurationInputs: [URL] = []
        if FileManager.default.fileExists(atPath: configurationURL.path) {
            let configuration = try JSONDecoder().decode(
                Configuration.self, from: try Data(contentsOf: configurationURL))
            if let access = configuration.access { options += ["--access", access] }
            if configuration.namesOnly == true { options.append("--names-only") }
            for (interface, name) in (configuration.namespaces ?? [:]).sorted(by: { $0.key < $1.key }) {
                options += ["--namespace", "\(interface)=\(name)"]
            }
            configurationInputs.append(configurationURL)
        }
        let output = context.pluginWorkDirectoryURL.appending(path: "GeneratedSources")
        return target.sourceFiles(withSuffix: "varlink").map { file in
            let base = file.url.deletingPathExtension().lastPathComponent
            return .buildCommand(
                displayName: "Generating Swift from \(file.url.lastPathComponent)",
                executable: tool.url,
                arguments: options + ["--output", output.path, file.url.path],
                inputFiles: [file.url] + configurationInputs,
                outputFiles: [output.appending(path: base + ".swift")]
            )
        }
    }
}
