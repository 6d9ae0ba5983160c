import BeaconClient
import Dispatch
import Observation
import Signals

#if canImport(Glibc)
    import Glibc
#endif

/// The app's settings, as the rest of the app reads them. Changed on `queue` only.
@Observable
final class EditorSettings: @unchecked Sendable {
    var fontSize = 12
    var theme = "light"
    /// Whether the session is away (locked, switched, asleep).
    var away = false
}

/// Writes a line to standard output at once, also into a pipe.
@Sendable func say(_ line: String) {
    let bytes = Array((line + "\n").utf8)
    _ = bytes.withUnsafeBytes { write(1, $0.baseAddress, $0.count) }
}

let queue = DispatchQueue(label: "settings-mirror")
let settings = EditorSettings()
let client = try await BeaconClient.connect(options: BeaconClient.Options(suspendsWhileSessionInactive: true))

// Defaults for every program of the session, for as long as this one runs.
try await client.register(schema: [
    "app.editor.font-size": ["type": "integer", "minimum": 6, "maximum": 72, "default": 12],
    "app.editor.theme": ["enum": ["light", "dark"], "default": "light"],
])

// The remote keys drive the model; live once each has delivered its current value.
let fontSize = try await client.setting("app.editor.font-size", as: Int.self).observeNextLive { size in
    queue.async { settings.fontSize = size }
}
let theme = try await client.setting("app.editor.theme", as: String.self).observeNextLive { theme in
    queue.async { settings.theme = theme }
}
let resigning = try await client.lifecycle.willResignActive.observeNextLive { reason in
    queue.async { settings.away = true }
    say("away (\(reason.rawValue)): changes wait until the session is back")
}
let returning = try await client.lifecycle.didBecomeActive.observeNextLive {
    queue.async { settings.away = false }
    say("back")
}

/// Prints the model each time Observation reports a change of it.
@Sendable func follow() {
    withObservationTracking {
        say("font size \(settings.fontSize), theme \(settings.theme)\(settings.away ? ", away" : "")")
    } onChange: {
        queue.async { follow() }
    }
}
queue.sync { follow() }

// Runs until interrupted.
let bag = CompositeDisposable([fontSize, theme, resigning, returning])
while !Task.isCancelled { try await Task.sleep(for: .seconds(3600)) }
bag.dispose()
