import Foundation
import PackagePlugin

/// Generates Swift from every `.varlink` file of a target, at build time, with `varlink-swift-generator`.
///
/// A `varlink-generator.json` beside the target's sources may set `"access"` (`"public"`, `"package"` or
/// `"internal"`; by default `public`), `"namespaces"` (an interface's Swift name, by interface name), `"namesOnly"`
/// (`true`: only the names of the interface, its methods and errors, and the methods' modes) and `"extending"`:
/// the name of a target this one depends on, whose `.varlink` files were generated with `"namesOnly"`; this target
/// then gets the rest, as extensions of those names (with the namespaces of that target's configuration), and needs
/// no `.varlink` file of its own.
@main
struct VarlinkGenerator: BuildToolPlugin {
    struct Configuration: Decodable {
        var access: String?
        var namespaces: [String: String]?
        var namesOnly: Bool?
        var extending: String?

        init(at url: URL) throws {
            guard FileManager.default.fileExists(atPath: url.path) else {
                self = Configuration()
                return
            }
            self = try JSONDecoder().decode(Configuration.self, from: try Data(contentsOf: url))
        }

        init() {}
    }

    struct PluginError: Error, CustomStringConvertible {
        var description: String
    }

    func createBuildCommands(context: PluginContext, target: Target) async throws -> [Command] {
        guard let target = target as? SourceModuleTarget else { return [] }
        let tool = try context.tool(named: "varlink-swift-generator")
        let configurationURL = target.directoryURL.appending(path: "varlink-generator.json")
        let configuration = try Configuration(at: configurationURL)
        var options: [String] = []
        var configurationInputs: [URL] = []
        if FileManager.default.fileExists(atPath: configurationURL.path) {
            configurationInputs.append(configurationURL)
        }
        if let access = configuration.access { options += ["--access", access] }
        var namespaces = configuration.namespaces ?? [:]
        var files = Array(target.sourceFiles(withSuffix: "varlink"))
        if let extending = configuration.extending {
            let named = target.dependencies.lazy.compactMap { dependency -> SourceModuleTarget? in
                guard case .target(let dependency) = dependency else { return nil }
                return dependency.name == extending ? dependency as? SourceModuleTarget : nil
            }
            guard let names = named.first else {
                throw PluginError(
                    description: "\(target.name) extends \(extending), which is not a target it depends on")
            }
            let namesURL = names.directoryURL.appending(path: "varlink-generator.json")
            let namesConfiguration = try Configuration(at: namesURL)
            guard namesConfiguration.namesOnly == true else {
                throw PluginError(description: "\(extending) does not generate names only: there is nothing to extend")
            }
            namespaces.merge(namesConfiguration.namespaces ?? [:]) { own, _ in own }
            configurationInputs.append(namesURL)
            files += names.sourceFiles(withSuffix: "varlink")
            options += ["--extending", names.moduleName]
        } else if configuration.namesOnly == true {
            options.append("--names-only")
        }
        for (interface, name) in namespaces.sorted(by: { $0.key < $1.key }) {
            options += ["--namespace", "\(interface)=\(name)"]
        }
        let output = context.pluginWorkDirectoryURL.appending(path: "GeneratedSources")
        return files.map { file in
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
