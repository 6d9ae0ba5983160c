/// The varlink interface descriptions (IDL) of the Beacon bus.
///
/// These texts are what `org.varlink.service.GetInterfaceDescription` returns, and they are the reference for
/// clients in any language. The daemon serves ``BeaconInterfaces/all``.
public enum BeaconInterfaces {
    /// Errors shared by every Beacon interface.
    public static let common = """
        # Errors shared by every Beacon interface, and the suspension of a connection's stream.
        #
        # Interface-specific errors live in their interface (io.beacon.Properties.KeyNotFound, ...).
        #
        # Delivery policies. A Watch or an Observe may say, in whileSuspended, what happens to its events
        # while its delivery is suspended: "drop" (lost; counted in Clients), "coalesce" (the latest of each
        # notification name and object, or of each key, kept, where for a key the latest value wins and old
        # keeps the earliest old value), "hold" (all kept, in order, within limits.maxQueuedBytes of the
        # stream and limits.maxBytesPerUid of its uid, which every stream's kept events count against;
        # from the first event that does not fit on, none is kept until delivery resumes, so the reply
        # then carries every event up to the gap and overflow counts those after it; the default) or
        # "deliverImmediately" (never suspended). Delivery is suspended while Suspend calls of the
        # connection are pending and, for a stream started with suspendWhileInactive true, while the session
        # is not active (lifecycle.state is not "active"). When it resumes, what was kept arrives at once in
        # one reply, in the order the events happened, before anything later. A notification posted with
        # deliverImmediately reaches suspended observers at once: what they kept comes first, in the same
        # reply, and they stay suspended.
        # The standard org.varlink.service errors (InterfaceNotFound, MethodNotFound, InvalidParameter,
        # ExpectedMore) are used with their standard meaning. A connection of a user the daemon does not serve
        # gets org.varlink.service.PermissionDenied, and one beyond limits.maxConnectionsPerUid gets
        # LimitExceeded (limit "maxConnectionsPerUid"), before the daemon closes it.
        interface io.beacon

        # The peer sent something that is not a valid varlink message: not UTF-8, not JSON, nested deeper
        # than the configured JSON depth, larger than the configured message size, not an object, or
        # without a "method". Also sent when a call arrives while a streamed call is still running on the
        # same connection (only oneway calls may be interleaved with a stream). The daemon closes the
        # connection after sending it.
        error ProtocolError (reason: string)

        # A limit of the daemon's configuration was reached. `limit` names the configuration key (for example
        # "maxPatterns", "maxValueSize"), `maximum` is its configured value.
        error LimitExceeded (limit: string, maximum: int)

        # Suspends the delivery of the Watch or Observe running on this connection (or of the one it starts
        # later), once more: calls nest like notify_suspend(3), and delivery resumes when each Suspend has had
        # its Resume. May be called with "oneway": true on the streaming connection. While suspended, the
        # stream's events are kept or lost by its whileSuspended policy; a stream with policy
        # deliverImmediately is never suspended.
        method Suspend() -> ()

        # Takes back one Suspend. The last one delivers what was kept, at once, in one reply, in the
        # order the events happened; no event is delivered twice. NotSuspended when no Suspend is pending.
        method Resume() -> ()

        # Resume without a pending Suspend.
        error NotSuspended ()

        # The changes of the event-loop tick the call was handled in could not be written to the store. The call
        # had no effect, and neither had any other call of that tick: none of their changes was kept or
        # published. The call may be retried.
        error StoreFailed (reason: string)
        """

    /// `io.beacon.Properties`: observable key-path properties.
    public static let properties = """
        # Observable key-path properties.
        #
        # A key is a path of dot-separated segments made of letters, digits, "_" and "-", for example
        # "power.battery.level". A pattern is a key whose segments may also be "*" (exactly one segment) or,
        # as the last segment only, "**" (one or more segments): "power.**" matches "power.ac" and
        # "power.battery.level" but not "power" itself; a lone "**" matches every key.
        #
        # A value is any JSON value, bounded in size and nesting by the daemon's configuration.
        # Every change (set or deletion) takes the next number of one daemon-wide version counter, so
        # versions order all changes of all keys.
        #
        # Keys below lifecycle, session, system, desktop and daemon are reserved: clients can read and watch them,
        # but Set and Unset fail with ReadOnly.
        #
        # Schemas (see io.beacon.Settings) give keys a type and a default, and lockdown files lock keys.
        # Every reply shows a key as clients see it: a key with no stored value but a default has that
        # value, with default true and version 0; a locked key shows the value its lock forces, else its
        # default, else its stored value, with locked naming the lockdown file. A stored key that a lock
        # shows at another value (forced, or its default) shows the version and origin (the daemon) of the
        # change event that the lock made, in Get, List and Watch alike. A Set of a value the
        # key's schema refuses fails with TypeMismatch, and a Set or Unset of a locked key with Locked.
        # ifVersion always compares with the stored value's version: a key that has only a default
        # counts as absent (0).
        interface io.beacon.Properties

        # The credentials of the connection that made a change (SO_PEERCRED). For a key of a subtree that
        # a provider serves (io.beacon.Providers), a change made on another machine names that machine, with
        # the credentials of the caller there.
        type Origin (
            uid: int,
            pid: int,
            # Process name from /proc/PID/comm; absent when it could not be read.
            command: ?string,
            machine: ?string
        )

        # The lockdown rule that locks a key.
        type Lock (
            # The lockdown file and the line of the rule.
            file: string,
            line: int,
            # True when the rule forces a value, false when it locks the key at its default (or, for a
            # key without a default, at its stored value).
            forced: bool
        )

        # A property as clients see it.
        type Property (
            key: string,
            value: object,
            # The version of the change that set the stored value; 0 when the key has no stored value.
            version: int,
            # Time of that change, in microseconds since the Unix epoch; 0 when there is none.
            modifiedUsec: int,
            # True when the property is removed when the connection that set it closes.
            ephemeral: bool,
            # Who set the stored value; the daemon for a default or a forced value.
            origin: Origin,
            # Present and true when value is the default of the key's schema (nothing is stored, or a
            # lock holds the key at its default).
            default: ?bool,
            # Present when a lockdown file locks the key.
            locked: ?Lock
        )

        # One change of one key, as delivered by Watch: a Set, an Unset, or a change of the key's default or
        # lock (a schema or lockdown file that changed, a registration that came or went; such changes have
        # the daemon as origin).
        type Change (
            key: string,
            # The value the key now shows; absent when it has none. An Unset of a key with a default
            # shows the default here, with deleted false and default true.
            value: ?object,
            # The previous value, only when Watch was called with old set to true; absent when the key did not
            # exist before, and in replayed and initial changes.
            old: ?object,
            version: int,
            # True when the key no longer has any value: deleted by Unset or by its ephemeral owner going
            # away, with no default to fall back to.
            deleted: bool,
            # Who made the change; absent when Watch was called with origin set to false.
            origin: ?Origin,
            # Present and true when value is the key's default.
            default: ?bool,
            # Present and true when a lockdown file locks the key (Get tells which).
            locked: ?bool
        )

        # Why a provided key's value may be out of date, and since when (io.beacon.Providers).
        type Unavailable (reason: string, sinceUsec: int)

        # Returns the property stored under a key, or its default or forced value when nothing is stored.
        # unavailable is present when the key lies in a provided subtree whose provider is gone or cannot
        # reach where the values live: the value is the last one known here.
        method Get(key: string) -> (property: Property, unavailable: ?Unavailable)

        # Stores a value under a key and returns the version of the change.
        #
        # ifVersion makes the call a compare-and-set: the value is stored only when the key's current
        # version equals ifVersion, where 0 means the key must not exist. Otherwise VersionMismatch.
        # ephemeral, default false, ties the property to this connection: when the connection closes, the
        # property is deleted, with a change event. A persistent Set is answered only after the value has
        # been committed to the store.
        # A Set of the value the key already stores, with the same ephemeral owner, changes nothing: no
        # new version, no change event. Its reply then carries the stored version and unchanged true.
        # Values are compared as the daemon stores them, as compact JSON text with an object's members
        # sorted by name: the order in which a client sends the members does not count, and replies and
        # events list them sorted.
        method Set(key: string, value: object, ifVersion: ?int, ephemeral: ?bool) -> (
            version: int,
            unchanged: ?bool
        )

        # Deletes a key's stored value and returns the version of the deletion. ifVersion works as in Set.
        # A key with a default falls back to it: watchers see the default. A key with no stored value
        # fails with KeyNotFound, even when it has a default (io.beacon.Settings.Reset does not).
        method Unset(key: string, ifVersion: ?int) -> (version: int)

        # Lists the properties whose key is prefix or lies below it, sorted by key, with the exact keys
        # that have only a default or a forced value. An absent or empty prefix lists every property.
        # version is the daemon's current version.
        method List(prefix: ?string) -> (properties: []Property, version: int)

        # Streams changes of the keys that match any of patterns. Requires "more": true.
        #
        # The first reply is sent as soon as the subscription is registered: no change after it is missed.
        # It carries version, the daemon's current version, and in changes:
        #   - with since: every key changed after that version, deletions included, each once with its
        #     latest state, in version order (a client that stored the last version it saw reconnects with
        #     since set to it and misses nothing). When since is older than the deletion history the daemon
        #     keeps, resync is true and changes holds every current value instead: the client then drops
        #     every key it knows that is not in it;
        #   - else with initial set to true: the current value of every matching key, in version order,
        #     defaults included (those with version 0 come first);
        #   - else nothing (an empty list).
        # Every later reply carries one or more changes in version order; version is then the version of
        # the last change. A client that reads too slowly gets changes of the same key coalesced into one
        # (the latest value wins, old keeps the earliest old value); overflow then counts the changes merged
        # away since its previous reply.
        # With origin set to false, no change carries its origin: for a client that reads only values.
        # whileSuspended and suspendWhileInactive are described in io.beacon.
        method Watch(
            patterns: []string,
            initial: ?bool,
            old: ?bool,
            origin: ?bool,
            since: ?int,
            whileSuspended: ?string,
            suspendWhileInactive: ?bool
        ) -> (
            changes: []Change,
            version: int,
            resync: ?bool,
            overflow: ?int
        )

        # No property is stored under key.
        error KeyNotFound (key: string)

        # ifVersion did not match: actual is the key's current version, 0 when the key does not exist.
        error VersionMismatch (key: string, expected: int, actual: int)

        # The key lies below a reserved prefix (lifecycle, session, system, desktop, daemon).
        error ReadOnly (key: string)

        # The key is not a valid key path, or is longer or deeper than the configured limits.
        error InvalidKey (key: string, reason: string)

        # The pattern is not a valid key pattern.
        error InvalidPattern (pattern: string, reason: string)

        # The encoded value is larger than the configured limit, both in bytes.
        error ValueTooLarge (key: string, size: int, limit: int)

        # The value does not conform to the key's schema. expected summarises the schema ("integer
        # 6...72", "one of \"a\", \"b\""); reason says what is wrong and where in the value.
        error TypeMismatch (key: string, expected: string, reason: string)

        # A lockdown file locks the key: file and line name the rule.
        error Locked (key: string, file: string, line: int)
        """

    /// `io.beacon.Notifications`: a notification bus with NotificationCenter semantics.
    public static let notifications = """
        # A notification bus.
        #
        # Notification names follow the key syntax of io.beacon.Properties ("app.document.saved"), and
        # Observe takes the same patterns. A notification reaches the observers connected when it is posted,
        # at most once, in the order each sender posted. Nothing is stored: state that a late observer
        # needs belongs in a property. Names below lifecycle, session, system, desktop and daemon are posted by the
        # daemon only.
        interface io.beacon.Notifications

        # The credentials of the connection that posted (SO_PEERCRED).
        type Origin (
            uid: int,
            pid: int,
            # Process name from /proc/PID/comm; absent when it could not be read.
            command: ?string
        )

        type Notification (
            name: string,
            # The poster's object string, when it gave one.
            object: ?string,
            userInfo: ?object,
            # Daemon-wide number of the notification, increasing by one per post.
            sequence: int,
            origin: Origin
        )

        # Posts a notification to the current observers and returns its sequence number. May be called
        # with "oneway": true, also on a connection that is running a streamed call. A userInfo larger than
        # the configured value size fails with io.beacon.LimitExceeded (limit "maxValueSize").
        # object names the sender's object: observers may ask for one object only. deliverImmediately
        # makes the notification reach suspended observers at once (see io.beacon).
        method Post(name: string, userInfo: ?object, object: ?string, deliverImmediately: ?bool) -> (sequence: int)

        # Streams the notifications whose name matches any of patterns. Requires "more": true.
        #
        # The first reply is sent as soon as the subscription is registered, with an empty list and
        # sequence, the sequence number of the last notification posted before it: every notification
        # after it is delivered. Every later reply carries one or more notifications in order; sequence is
        # then the one of the last. When the client reads too slowly, notifications beyond its queue are
        # dropped and overflow counts them in the next reply.
        # With object, only the notifications posted with that object are delivered. whileSuspended and
        # suspendWhileInactive are described in io.beacon.
        method Observe(
            patterns: []string,
            object: ?string,
            whileSuspended: ?string,
            suspendWhileInactive: ?bool
        ) -> (notifications: []Notification, sequence: int, overflow: ?int)

        # The name is not a valid name or lies below a reserved prefix.
        error InvalidName (name: string, reason: string)

        # The pattern is not a valid pattern.
        error InvalidPattern (pattern: string, reason: string)
        """

    /// `io.beacon.Settings`: schemas, defaults and lockdown.
    public static let settings = """
        # Schemas, defaults and lockdown for io.beacon.Properties.
        #
        # Schema files are JSON files (*.json) in the daemon's schema directories: $XDG_DATA_HOME/beacon/
        # schemas, then beacon/schemas in each of $XDG_DATA_DIRS (the configuration's settings.schemaDirs
        # replaces that list). A file declares keys or key patterns, each with a type in a subset of JSON
        # Schema (type, enum, const, minimum, maximum, exclusiveMinimum, exclusiveMaximum, minLength,
        # maxLength, items, minItems, maxItems, properties, required, additionalProperties) and, for exact
        # keys, a default, a summary and a description:
        #   {"keys": {"app.editor.font-size": {"type": "integer", "minimum": 6, "maximum": 72,
        #                                       "default": 12, "summary": "Font size"}}}
        # The first declaration of a key wins, in directory order, then files by name, then registrations
        # by age; an exact key wins over a pattern.
        #
        # Lockdown files are every file of the lockdown directory (settings.lockdownDir, by default
        # /etc/beacon/lockdown.d), one rule a line: "KEY-OR-PATTERN = JSON" forces a value, a lone
        # "KEY-OR-PATTERN" locks keys at their default (a key without one keeps its stored value,
        # read-only). Blank lines and lines starting with "#" are ignored. Later files by name win.
        #
        # Changes to both directories apply without a restart (inotify, and SIGHUP): watchers of every key
        # whose value, default or lock changed get a change. A bad file, or a bad part of one, is skipped
        # with a log line naming the file, the line and the problem, reported by Schemas and by
        # io.beacon.Daemon.Status; the rest still applies.
        interface io.beacon.Settings

        # A problem found in a schema or lockdown file; line 0 concerns the whole file.
        type Problem (file: string, line: int, problem: string)

        type SchemaKey (
            # The key or pattern.
            key: string,
            # A summary of its type, for example "integer 6...72".
            type: string,
            default: ?object,
            summary: ?string,
            line: int
        )

        type SchemaSource (
            # The file, or "client ID (COMMAND)" for a registration.
            source: string,
            registered: bool,
            keys: []SchemaKey
        )

        type LockRule (key: string, line: int, value: ?object)

        type LockdownSource (file: string, rules: []LockRule)

        type Lock (file: string, line: int, forced: bool)

        # Everything known of one key. value is what Get shows (absent when it shows nothing), set tells
        # whether a value is stored, version is the stored value's version (0 when none), storedValue is
        # the stored value when a lock shows another one. The schema part
        # (type, schema, pattern, defaultValue, summary, description, source, line) is present when a
        # schema declares the key; pattern is the declaration that matched.
        method Describe(key: string) -> (
            key: string,
            value: ?object,
            default: ?bool,
            set: bool,
            storedValue: ?object,
            version: int,
            ephemeral: bool,
            type: ?string,
            schema: ?object,
            pattern: ?string,
            defaultValue: ?object,
            summary: ?string,
            description: ?string,
            source: ?string,
            line: ?int,
            locked: ?Lock
        )

        # Removes the stored value of a key, which falls back to its default. Unlike
        # io.beacon.Properties.Unset, a key with nothing stored is not an error. With recursive, every key
        # below key (key itself included) is reset, except locked ones, which are listed in locked; without
        # it a locked key fails with io.beacon.Properties.Locked. reset lists the keys whose stored value
        # was removed; version is the daemon's version after the call.
        method Reset(key: string, recursive: ?bool) -> (version: int, reset: []string, locked: []string)

        # The schemas and lockdown rules in force, where each came from, and the problems found.
        method Schemas() -> (schemas: []SchemaSource, lockdown: []LockdownSource, problems: []Problem)

        # Registers schemas and defaults for the lifetime of this connection, in the schema file format:
        # {"keys": {KEY: SCHEMA}}. They rank after every schema file, and a key a file declares keeps the
        # file's declaration. A second Register on the connection replaces the first. When the
        # connection closes, its declarations go, and watchers see the defaults that go with them. Fails
        # with InvalidSchema, registering nothing, when any part is bad.
        method Register(schema: object) -> (keys: int)

        # The stored, persistent values of the keys at or below prefix (every key when absent), by key
        # relative to prefix ("" for prefix itself). Defaults, ephemeral values and the daemon's own keys
        # (below lifecycle, session, system, desktop and daemon) are left out, so that a whole dump loads back.
        method Dump(prefix: ?string) -> (values: object, version: int)

        # Stores values, by key relative to prefix, as Dump gives them: to restore a subtree or to move
        # it under another prefix. All or nothing: when any key is invalid or reserved or any value
        # fails its schema, nothing is stored and the error is the one Set would give. Locked keys are
        # skipped and listed; values already stored count as unchanged.
        method Load(prefix: ?string, values: object) -> (
            version: int,
            changed: int,
            unchanged: int,
            locked: []string
        )

        # A schema given to Register has problems.
        error InvalidSchema (problems: []string)
        """

    /// `io.beacon.Daemon`: the daemon's own state.
    public static let daemon = """
        # The state of the daemon.
        interface io.beacon.Daemon

        type DaemonStatus (
            # Software version of beacond.
            software: string,
            pid: int,
            uid: int,
            startedUsec: int,
            # The address the daemon listens on, for example "unix:/run/user/1000/beacon.sock".
            address: string,
            # Path of the SQLite store.
            store: string,
            # Connected clients and active Watch and Observe calls.
            clients: int,
            subscriptions: int,
            # Number of stored properties, the current property version and the last notification sequence.
            properties: int,
            version: int,
            sequence: int,
            # State of the lifecycle bridge to logind: "connected: SESSION-PATH", "disconnected: REASON",
            # "no session: REASON", "starting" or "disabled". The bridge reconnects by itself.
            lifecycle: ?string,
            # State of each bus the configured D-Bus bridge uses ("connected" or "disconnected: REASON");
            # absent when no bridge is configured.
            bridge: ?[string]string,
            # Present while the store fails to take writes (a full disk, say): why, and since when. Reads are
            # served meanwhile, and writes fail with io.beacon.StoreFailed until a commit succeeds again.
            storeError: ?StoreErrorState,
            # The schemas and lockdown rules in force, and the problems of their files.
            settings: ?SettingsState,
            # Each provided subtree (io.beacon.Providers), and each one the configuration's fleet.prefixes
            # expects: who provides it, and whether its writes work; absent when there are none.
            providers: ?[]ProviderState
        )

        type ProviderState (
            # The patterns, such as "fleet.**".
            subtrees: []string,
            # The provider's number, process id and command; absent when no provider is registered.
            provider: ?int,
            pid: ?int,
            command: ?string,
            # False while no provider is registered or the provider reports that it cannot reach where the
            # values live (beacon-fleet: no etcd quorum): writes fail with
            # io.beacon.Providers.ProviderUnavailable, and reads answer the last known values.
            available: bool,
            reason: ?string,
            sinceUsec: ?int
        )

        type SettingsState (
            schemaFiles: int,
            lockdownFiles: int,
            # Keys and patterns declared, files and registrations together.
            schemaKeys: int,
            locks: int,
            registrations: int,
            problems: []SettingsProblem
        )

        type SettingsProblem (file: string, line: int, problem: string)

        type StoreErrorState (
            reason: string,
            sinceUsec: int
        )

        type Client (
            # Connection number, unique for the daemon's lifetime.
            id: int,
            uid: int,
            pid: int,
            command: ?string,
            connectedUsec: int,
            # The streamed method running on the connection (io.beacon.Properties.Watch,
            # io.beacon.Notifications.Observe or io.beacon.Lifecycle.HoldSleep) and its patterns.
            stream: ?string,
            patterns: []string,
            # Bytes written to the connection and not yet taken by the peer.
            queuedBytes: int,
            # Ephemeral properties owned by the connection.
            ephemeral: int,
            # The stream's whileSuspended policy and whether it follows the session; whether its delivery is
            # suspended now (pending Suspend calls in suspensions); the events kept and the events dropped
            # while suspended.
            policy: ?string,
            followsSession: ?bool,
            suspended: ?bool,
            suspensions: int,
            held: ?int,
            dropped: ?int,
            # The object an Observe asked for.
            object: ?string
        )

        method Status() -> (status: DaemonStatus)

        # Lists the connected clients, ordered by id.
        method Clients() -> (clients: []Client)
        """

    /// `io.beacon.Lifecycle`: the session's lifecycle and sleep participation.
    public static let lifecycle = """
        # The session's lifecycle, as the daemon follows it through logind.
        #
        # The state is also published as properties (session.active, session.locked, session.idle,
        # system.sleeping, system.shuttingDown, and lifecycle.state: "active" when the session is active,
        # unlocked, not sleeping and not shutting down, else "inactive") and its transitions as
        # notifications, each posted once per transition and never for the state found at start-up:
        # lifecycle.didBecomeActive, lifecycle.willResignActive (userInfo reason: "locked", "sleep",
        # "sessionInactive" or "shutdown"), lifecycle.willSleep, lifecycle.didWake, lifecycle.willTerminate.
        interface io.beacon.Lifecycle

        # Returns the lifecycle as last read from logind. The flags and state are absent until the bridge
        # has read them once.
        method State() -> (
            state: ?string,
            sessionActive: ?bool,
            sessionLocked: ?bool,
            sessionIdle: ?bool,
            systemSleeping: ?bool,
            systemShuttingDown: ?bool,
            # The bridge to logind, as in io.beacon.Daemon.Status.
            bridge: string,
            # Whether the daemon holds its logind delay inhibitor for sleep right now.
            sleepInhibitor: bool,
            # Connections running HoldSleep.
            participants: int,
            # The sleep being prepared and how many participants have not released it yet; absent
            # when no sleep is being prepared.
            sleep: ?int,
            pending: ?int
        )

        # Takes part in sleep preparation. Requires "more": true; the participation lasts until the
        # connection closes. The machine does not suspend before every participant has released the
        # sleep it was told of, or the daemon's sleep timeout (capped by logind's InhibitDelayMaxSec) ran
        # out. Replies, each with the participant number of this call:
        #   - event "registered", at once;
        #   - event "willSleep" with sleep, the number of this sleep, and timeoutUsec, the time left to
        #     call Release;
        #   - event "didWake" with the sleep number, after the machine resumed.
        method HoldSleep(description: ?string) -> (
            event: string,
            participant: int,
            sleep: ?int,
            timeoutUsec: ?int
        )

        # The participant is ready for sleep. May be called with "oneway": true on the connection that
        # runs HoldSleep, or on any other connection. With sleep set, only that sleep is released (a late
        # answer to an earlier one is ignored).
        method Release(participant: int, sleep: ?int) -> ()

        # No HoldSleep call with this participant number is running.
        error NoSuchParticipant (participant: int)

        # The daemon does not follow the lifecycle (lifecycle.enabled is false).
        error Unavailable (reason: string)
        """

    /// `io.beacon.Providers`: subtrees of properties whose writes a client decides.
    public static let providers = """
        # Providers: a client that registers as the provider of a subtree of keys ("fleet.**") decides the
        # Sets and Unsets of its keys and publishes their values. beacon-fleet is one: it mirrors a subtree
        # to etcd. To every other client a provided key is a property like any other: Get, List and Watch
        # answer from the daemon at once, and a Set or Unset is forwarded to the provider and answered with
        # the provider's answer once it comes; later calls on the same connection wait for it.
        #
        # Versions. A provided key's versions are the daemon's, like any key's: the daemon gives one to each
        # change the provider publishes. The provider gives each change its own version as well
        # (providerVersion; for beacon-fleet the etcd revision that made it). A Set or Unset with ifVersion is
        # first checked by the daemon against the key's current version (VersionMismatch when it differs);
        # when it matches, the provider gets the providerVersion of the key's current value in
        # ifProviderVersion (0: the key must not exist) and decides the compare-and-set where the value
        # lives. So of many daemons sharing a subtree through providers, exactly one wins a race for a key.
        #
        # A published change older than the key's last one (a lower providerVersion) is ignored, and one of
        # the value the key already has changes nothing: watchers see only what changed.
        # Waiting for a provider. While a subtree has no provider, or its provider registered unavailable and
        # has not said it is available since (it is reading its source), a Set or Unset of its keys waits for
        # one, up to fleet.requestTimeoutMs, and then fails with ProviderUnavailable: it was not carried out.
        # When the provider's connection closes, the values stay, and the requests it had been sent and had not
        # answered go, unchanged and with the same write, to the next provider that registers the subtree; it
        # carries each out at most once and answers what became of it. When none does in time, their callers
        # get OutcomeUnknown.
        interface io.beacon.Providers

        # Who made a change: the caller on this machine, or, for a change published from elsewhere, the
        # caller on the machine named machine.
        type Origin (
            uid: int,
            pid: int,
            command: ?string,
            machine: ?string
        )

        # A Set or Unset forwarded to the provider.
        type Request (
            # Answer it with this id.
            id: int,
            # "Set" or "Unset".
            method: string,
            key: string,
            # The value of a Set.
            value: ?object,
            # Present when the caller gave ifVersion: the providerVersion of the key's current value, 0 when
            # it has none.
            ifProviderVersion: ?int,
            # The caller asked for an ephemeral Set: the value goes away when this daemon's client closes, or
            # when the provider's own presence ends. The daemon sends an Unset, with no caller, when the
            # client closes.
            ephemeral: ?bool,
            # False for an Unset that no caller waits for (the ephemeral owner went away).
            answered: bool,
            # Names the write for as long as it lives: a request sent again to the next provider has the same
            # write. A provider applies a write at most once, however often it gets it (beacon-fleet records
            # it in etcd in the transaction that carries it out).
            write: ?string,
            # An ephemeral Set with no caller that the daemon makes again for an owner still connected, after
            # the provider's resync found the key gone (its lease expired while no provider ran): create the
            # key only if it is absent (ifProviderVersion is 0).
            restore: ?bool,
            origin: Origin
        )

        # A change of a provided key.
        type Change (
            key: string,
            # The new value; absent for a deletion.
            value: ?object,
            providerVersion: int,
            # Where the change was made; the provider's own credentials when absent.
            origin: ?Origin
        )

        # Registers this connection as the provider of the subtrees in patterns, each a key followed by
        # ".**". Requires "more": true. The first reply carries provider, the number that Answer and
        # Publish name, and no requests; every later reply carries requests, in the order of the calls.
        # Publish with resync true right after registering: the daemon has not kept the providerVersions of
        # an earlier provider. With unavailable, the subtrees start unavailable for that reason (as after
        # SetAvailable false) until SetAvailable true: for a provider that must first read its source, so
        # that nobody reads the subtrees before it has published them.
        method Provide(patterns: []string, unavailable: ?string) -> (provider: int, requests: []Request)

        # Answers request id of provider, from any connection of the provider's user. With change, the
        # change is applied as Publish would and the caller gets the version it took (or the key's current
        # one when the change was older or equal); with error, the caller gets that error (a qualified
        # name such as io.beacon.Providers.ProviderUnavailable or io.beacon.Properties.VersionMismatch)
        # with errorParameters. For io.beacon.Properties.VersionMismatch the daemon replaces the parameters
        # with the caller's expected version and the key's current version here: publish the value that won
        # before answering so, and the caller sees the version to retry with.
        #
        # Compare-and-set across machines: clients give ifVersion in this daemon's versions. The daemon
        # checks it, then passes ifProviderVersion, the providerVersion of the value that version names.
        # The provider carries out the write only if its store still holds that providerVersion (etcd: a
        # Txn comparing mod_revision, or create_revision 0 for an absent key), so of several machines
        # writing the same value's successor at once, exactly one succeeds.
        method Answer(
            provider: int,
            id: int,
            change: ?Change,
            error: ?string,
            errorParameters: ?object
        ) -> ()

        # Applies changes of the provider's keys in order, and returns the daemon's version after them. With
        # resync, changes hold every key of the provider's subtrees: the others are deleted. A resync too large
        # for one message is given in parts, each with resync and all but the last with more; the keys that no
        # part named are deleted after the last part.
        #
        # With resync, providerVersion is the providerVersion the whole resync reflects (for beacon-fleet the
        # revision it read etcd at): a key it did not name was absent then, so a later change or Answer of such
        # a key that is no newer is ignored, like any change older than the key's last one.
        method Publish(
            provider: int,
            changes: []Change,
            resync: ?bool,
            more: ?bool,
            providerVersion: ?int
        ) -> (version: int)

        # Reports whether the provider can carry out writes. While it cannot, the daemon fails writes of its
        # subtrees at once with ProviderUnavailable(reason), Get answers the last known values with
        # unavailable set, and Status shows the reason and since when.
        method SetAvailable(provider: int, available: bool, reason: ?string) -> ()

        # No provider is connected for the key's subtree, or the provider cannot reach where the values live
        # (reason says which). The write was not carried out, and will not be. Reads still answer the last
        # values.
        error ProviderUnavailable (key: string, reason: string)

        # The write may have been carried out, or may still be: the provider was sent it and could not learn
        # in time what became of it (for beacon-fleet: etcd answered neither the write nor the mark that gives
        # it up). A read of the key tells; every other answer to a write is definite.
        error OutcomeUnknown (key: string, reason: string)

        # Another provider has a subtree that overlaps pattern.
        error ProviderConflict (pattern: string)

        # provider is not a registered provider of this user, or the key lies outside its subtrees, or the
        # request id is not pending.
        error NotProvider (provider: int, reason: string)
        """

    /// Every Beacon interface description, by name. `org.varlink.service` is described by the varlink layer.
    public static let all: [(name: String, description: String)] = [
        ("io.beacon", common),
        ("io.beacon.Properties", properties),
        ("io.beacon.Notifications", notifications),
        ("io.beacon.Settings", settings),
        ("io.beacon.Daemon", daemon),
        ("io.beacon.Lifecycle", lifecycle),
        ("io.beacon.Providers", providers),
    ]
}
