import Configuration
import Foundation
import HTTPCore
import Bodies
import Locking
import Synchronization
import CacheVocabulary
import Yams

/// A configuration file (`--config FILE`, `LARDER_CONFIG`), YAML or JSON: each setting under
/// its flag's name without the dashes (`cache-dir: /var/cache/larder`), lists as sequences
/// (`weather-headers`), and pass-through routes under `routes`, keyed by prefix:
///
/// ```yaml
/// routes:
///   /api:
///     origin: http://origin:8000
///     strip-prefix: true            # or replace-prefix: /v2
///     set-fields: ["X-Api-Key: @/run/secrets/key"]
///     remove-fields: [Cookie]
///     via: true                     # the default
///     x-forwarded-for: false        # the default
/// ```
///
/// The file is read once (`BoundedFile`: at most 1 MiB) and composed with Yams, which keeps
/// where each key is, so a key Larder does not know, a value of the wrong shape or a bad
/// setting is refused with its line; its values are read below flags and environment variables.
public struct ConfigFile: Sendable {
    public let path: String
    /// The file's values for the settings reader: `larder.cache.dir` reads the file's `cache-dir`.
    let provider: any ConfigProvider
    /// The line of each key, by its path (`cache-dir`, `routes./api`, `routes./api.origin`).
    let lines: [String: Int]
    /// The routes given, in the file's order.
    let routes: [Route]
    /// The list settings' items (`weather-headers`), by file key, each with its line.
    let lists: [String: [ListItem]]
    /// The aggregates declared, in the file's order (`ConfigFile+Aggregates`).
    let aggregates: [Aggregate]
    /// What is wrong with the file's shape (a key Larder does not know, a value of the wrong
    /// shape, a key given twice), each with its line: reported with the settings' problems.
    let problems: [String]
    /// The value files the routes named, as read: the header lists read them on from here.
    let valueFiles: ValueFiles

    /// One route as written: its prefix, its origin (nil when missing, refused when resolved)
    /// and how its requests are rewritten.
    struct Route: Sendable {
        let prefix: String
        let origin: String?
        let rules: ForwardingRules
        let caching: RouteCaching
        let line: Int
    }

    /// The file key of a setting key (`cache.dir` → `cache-dir`, `weather.headers` → `weather-headers`).
    static func fileKey(_ key: String) -> String { key.replacingOccurrences(of: ".", with: "-") }

    /// Where a problem with `key` is: `FILE:LINE: key`.
    func place(_ key: String) -> String {
        "\(path):\(lines[key] ?? 1): \(QuotedText.of(key))"
    }

    /// Reads and checks the file's shape; a setting's value is checked when settings are resolved.
    /// On a thread of its own: a FIFO that sends nothing holds the read for seconds, and a
    /// large file's parse takes seconds too; on a task either would hold one of the few threads
    /// every task runs on (one per core), and with it every request waiting on that pool.
    /// The file is handed over under a lock: a continuation resumed before its task suspends
    /// orders the thread's writes by atomics ThreadSanitizer does not see, and it reported them.
    public static func load(path: String) async throws(ConfigurationError) -> ConfigFile {
        let loaded = Loaded()
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            Thread {
                let result = Result { () throws(ConfigurationError) in try loadHere(path: path) }
                loaded.result.withLock { $0 = result }
                continuation.resume()
            }.start()
        }
        return try loaded.result.withLock { $0! }.get()
    }

    private final class Loaded: Sendable {
        let result = Locked<Result<ConfigFile, ConfigurationError>?>(nil)
    }

    private static func loadHere(path: String) throws(ConfigurationError) -> ConfigFile {
        let text = try Self.text(path: path, bytes: BoundedFile.read(path))
        let shape = try shape(of: text, path: path)
        // The settings' values from the file as composed here, as the text they are written as
        // (a number or a boolean too; JSON is YAML): not swift-configuration's file provider,
        // which would read the file again, unbounded, and parse it again, in time quadratic in
        // its keys (a queue taken from the front of an array: 20,000 routes took 13.6 s). Nor its
        // ReloadingFileProvider: it swaps in each value it reads as the file changes, while a
        // reload here checks the whole file first and changes all of it or nothing
        // (LarderService's reload, on SIGHUP, POST /reload or the file watched).
        let values = Dictionary(uniqueKeysWithValues: shape.scalars.map { key, value in
            (AbsoluteConfigKey([key]), ConfigValue(.string(value), isSecret: false))
        })
        let provider = InMemoryProvider(name: path, values: values).mapKeys(Self.fileKeyOf)
        return ConfigFile(path: path, provider: provider, lines: shape.lines, routes: shape.routes, lists: shape.lists,
                          aggregates: shape.aggregates, problems: shape.problems, valueFiles: shape.valueFiles)
    }

    /// The file's text, read once and at most `BoundedFile.sizeLimit` bytes of it (1 MiB, the
    /// README says so: a configuration is a few kilobytes). A file that is not text at all
    /// (NUL bytes, not UTF-8) is refused before it is read as YAML, so that no problem quotes any of it.
    private static func text(path: String, bytes: Result<[UInt8], BoundedFile.Refusal>) throws(ConfigurationError) -> String {
        let data: [UInt8]
        switch bytes {
        case .success(let bytes): data = bytes
        case .failure(let refusal): throw ConfigurationError("\(path): \(refusal.reason)")
        }
        if data.contains(0) {
            throw ConfigurationError("\(path): not a YAML or JSON file: it holds NUL bytes (binary content is never quoted)")
        }
        guard let text = String(validating: data, as: UTF8.self) else {
            throw ConfigurationError("\(path): not a YAML or JSON file: it is not UTF-8 text (binary content is never quoted)")
        }
        // A byte order mark, as some editors save UTF-8, is not part of the file's YAML (Yams
        // reads a file of two lines or more that starts with one as not YAML).
        return text.hasPrefix("\u{FEFF}") ? String(text.dropFirst()) : text
    }

    /// The reader asks for `larder.cache.dir`; the file holds `cache-dir`.
    @Sendable private static func fileKeyOf(_ key: AbsoluteConfigKey) -> AbsoluteConfigKey {
        AbsoluteConfigKey([key.components.dropFirst().joined(separator: "-")])
    }

    /// The file as read: the keys' lines, the routes, the lists, the aggregates, the settings' text.
    struct Shape {
        var lines: [String: Int] = [:]
        var routes: [Route] = []
        var lists: [String: [ListItem]] = [:]
        var aggregates: [Aggregate] = []
        var scalars: [String: String] = [:]
        /// Every problem with the file's shape, each with its line.
        var problems: [String] = []
        var valueFiles = ValueFiles()
    }

    /// The file as read, with every problem of its shape; only a file that is not YAML at all
    /// (or not a mapping) is refused at once.
    static func shape(of text: String, path: String) throws(ConfigurationError) -> Shape {
        let (root, duplicates) = try composeKeepingDuplicates(text, path: path)
        guard let root else { return Shape(problems: duplicates) }
        guard case .mapping(let settings) = root else {
            throw ConfigurationError("\(path):\(root.mark?.line ?? 1): the file must be a mapping of settings (key: value)")
        }
        var lines: [String: Int] = [:]
        var routes: [Route] = []
        var lists: [String: [ListItem]] = [:]
        var aggregates: [Aggregate] = []
        var scalars: [String: String] = [:]
        var problems = duplicates
        var valueFiles = ValueFiles()
        let listKeys = Set(ServeSettings.declarations.filter { if case .list = $0.shape { true } else { false } }.map(\.fileKey))
        for (keyNode, value) in settings {
            let line = keyNode.mark?.line ?? 1
            guard let key = keyNode.string else {
                problems.append("\(path):\(line): a key must be a name")
                continue
            }
            lines[key] = line
            if key == "routes" {
                routes = Self.routes(value, path: path, lines: &lines, valueFiles: &valueFiles, problems: &problems)
            } else if key == "aggregates" {
                aggregates = Self.aggregates(value, path: path, lines: &lines, problems: &problems)
            } else if !ServeSettings.fileKeys.contains(key) {
                problems.append("\(path):\(line): \(QuotedText.unknownKey(key)): not a setting Larder knows")
            } else if listKeys.contains(key) {
                if let item = value.string {
                    lists[key] = [ListItem(text: item, line: line)]
                } else {
                    var reader = ValueReader(path: path, line: line, key: key)
                    lists[key] = reader.items(value)
                    problems += reader.problems
                }
            } else if let scalar = value.scalar {
                scalars[key] = scalar.string
            } else {
                problems.append("\(path):\(line): \(key): must be a single value, not a list or mapping")
            }
        }
        return Shape(lines: lines, routes: routes, lists: lists, aggregates: aggregates, scalars: scalars, problems: problems,
                     valueFiles: valueFiles)
    }

    /// A list setting's items, each problem at its item's line where the setting reads them
    /// one by one (`SettingDeclaration.readItems`), at the key's line where it reads them whole.
    func read(_ items: [ListItem], _ declaration: SettingDeclaration, files: inout ValueFiles,
              into settings: inout ServeSettings) -> [String] {
        guard let readItems = declaration.readItems else {
            return declaration.read(items.map(\.text).joined(separator: "\n"), &settings).map { ["\(place(declaration.fileKey)) \($0)"] } ?? []
        }
        return readItems(items.map(\.text), &files, &settings).map { "\(path):\(items[$0.index].line): \(QuotedText.of(declaration.fileKey)) \($0.problem)" }
    }

    /// `problems` with this file's in the order of their lines, after those of flags and
    /// environment variables (which have none), so a file's problems read from top to bottom
    /// whichever part of Larder found them. Each of the file's starts `FILE:LINE:`.
    func inLineOrder(_ problems: [String]) -> [String] {
        let prefix = path + ":"
        func line(_ problem: String) -> Int {
            guard problem.hasPrefix(prefix) else { return 0 }
            return Int(problem.dropFirst(prefix.count).prefix { $0.isNumber }) ?? 0
        }
        return problems.enumerated().sorted { (line($0.element), $0.offset) < (line($1.element), $1.offset) }.map(\.element)
    }

    /// `valueFiles` reads the value files of the routes' `set-fields`, each once across them all.
    private static func routes(_ node: Node, path: String, lines: inout [String: Int], valueFiles: inout ValueFiles,
                               problems: inout [String]) -> [Route] {
        guard case .mapping(let entries) = node else {
            problems.append("\(path):\(node.mark?.line ?? 1): routes: must be a mapping of prefixes to routes (/api: {origin: …})")
            return []
        }
        var routes: [Route] = []
        for (prefixNode, route) in entries {
            let line = prefixNode.mark?.line ?? 1
            guard let prefix = prefixNode.string else {
                problems.append("\(path):\(line): routes: a prefix must be a path")
                continue
            }
            lines["routes.\(prefix)"] = line
            guard case .mapping(let fields) = route else {
                problems.append("\(path):\(line): \(QuotedText.of("routes.\(prefix)")): must be a mapping (origin: …)")
                continue
            }
            var origin: String?
            var rules = ForwardingRules()
            var caching = RouteCaching()
            // The lines of strip-prefix and replace-prefix: each says what becomes of the prefix, so not both.
            var prefixRules: [(field: String, line: Int)] = []
            for (fieldNode, value) in fields {
                let fieldLine = fieldNode.mark?.line ?? line
                let field = fieldNode.string ?? ""
                let key = "routes.\(prefix).\(field)"
                lines[key] = fieldLine
                if field == "strip-prefix" || field == "replace-prefix" { prefixRules.append((field, fieldLine)) }
                var reader = ValueReader(path: path, line: fieldLine, key: key)
                defer { problems += reader.problems }
                /// A reader of one entry of this setting's mapping, whose problems are at the entry's line.
                func entry(_ node: Node) -> ValueReader { ValueReader(path: path, line: node.mark?.line ?? fieldLine, key: key) }
                switch field {
                case "origin":
                    if let text = value.string { origin = text } else { reader.problem("must be a URL") }
                case "strip-prefix":
                    if let strip = reader.flag(value), strip { rules.prefixReplacement = rules.prefixReplacement ?? "" }
                case "replace-prefix":
                    guard let text = value.string, text.hasPrefix("/"), TargetPath.normalized(text) == text else {
                        reader.problem("must be a path in normalised form, starting with /")
                        continue
                    }
                    rules.prefixReplacement = text
                case "set-fields":
                    guard let items = reader.items(value) else { continue }
                    let read = CredentialHeaders.read(items.map(\.text), files: &valueFiles)
                    rules.setFields = read.fields
                    for (index, failure) in read.problems {
                        reader.problem("must be 'Name: value' or 'Name: @/path': \(failure.reason)", line: items[index].line)
                    }
                case "remove-fields":
                    guard let names = reader.items(value) else { continue }
                    for bad in names where !FieldSyntax.isToken(bad.text.utf8) {
                        reader.problem("'\(QuotedText.of(bad.text))' is not a field name", line: bad.line)
                    }
                    rules.removeFields = names.map(\.text)
                case "via":
                    if let via = reader.flag(value) { rules.via = via }
                case "x-forwarded-for":
                    if let forwardedFor = reader.flag(value) { rules.forwardedFor = forwardedFor }
                case "max-request-body":
                    if let limit = reader.value(value.string, SettingValues.requestBodyLimit, "must be a size from 1B to 1GiB") {
                        rules.maxRequestBody = limit
                    }
                case "max-object-size":
                    if let limit = reader.value(value.string, SettingValues.objectSizeLimit, "must be a size from 1KiB to 1GiB") {
                        caching.maxObjectSize = limit
                    }
                case "lifetime":
                    guard case .mapping(let entries) = value else {
                        reader.problem("must map statuses to durations ({200: 10m, 404: 1m})")
                        continue
                    }
                    for (statusNode, lifetime) in entries {
                        var reader = entry(statusNode)
                        defer { problems += reader.problems }
                        guard let status = statusNode.string.flatMap(Int.init), (200...599).contains(status) else {
                            reader.problem("'\(QuotedText.of(statusNode.string ?? ""))' is not a status from 200 to 599")
                            continue
                        }
                        if let lifetime = reader.duration(lifetime.string) { caching.lifetimes[status] = lifetime }
                    }
                case "stale-while-revalidate":
                    if let window = reader.duration(value.string) { caching.staleWhileRevalidate = window }
                case "stale-if-error":
                    if let window = reader.duration(value.string) { caching.staleIfError = window }
                case "upstream-timeout":
                    if let timeout = reader.duration(value.string) {
                        if timeout > .zero { caching.timeout = timeout } else { reader.problem("must be above zero") }
                    }
                case "upstream-concurrency":
                    if let limit = reader.value(value.string, SettingValues.upstreamConcurrency, "must be a whole number from 1 to 1024") {
                        caching.concurrency = limit
                    }
                case "override":
                    for name in reader.items(value) ?? [] {
                        if let override = CacheOverrides.names.first(where: { $0.0 == name.text.lowercased() })?.1 {
                            caching.overrides.insert(override)
                        } else {
                            reader.problem("'\(QuotedText.of(name.text))' is not something Larder can ignore (no-cache, private, set-cookie)", line: name.line)
                        }
                    }
                case "client-refresh":
                    switch value.string?.lowercased() {
                    case "honour"?, "honor"?: caching.clientRefresh = .honour
                    case "ignore"?: caching.clientRefresh = .ignore
                    default:
                        if let interval = SettingValues.duration(value.string ?? ""), interval > .zero {
                            caching.clientRefresh = .limit(interval.seconds)
                        } else {
                            reader.problem("must be honour, ignore, or a duration above zero (at most one per key in it)")
                        }
                    }
                case "cache-key":
                    guard case .mapping(let options) = value else {
                        reader.problem("must be a mapping (ignore-query: [...], sort-query: true)")
                        continue
                    }
                    for (optionNode, option) in options {
                        var reader = entry(optionNode)
                        defer { problems += reader.problems }
                        switch optionNode.string {
                        case "ignore-query":
                            if let names = reader.items(option, "ignore-query must be a list of parameter names") { caching.ignoredQuery = names.map(\.text) }
                        case "sort-query":
                            if let sorts = reader.flag(option, "sort-query ") { caching.sortsQuery = sorts }
                        default:
                            reader.problem("'\(QuotedText.of(optionNode.string ?? ""))' is not a cache-key option (ignore-query, sort-query)")
                        }
                    }
                default:
                    reader.problem("not a route setting Larder knows")
                }
            }
            if prefixRules.count > 1, let first = prefixRules.first, let later = prefixRules.last {
                problems.append("\(path):\(later.line): \(QuotedText.of("routes.\(prefix).\(later.field)")): cannot go with \(first.field) "
                                + "(line \(first.line)): each says what becomes of the prefix; give strip-prefix or replace-prefix, not both")
            }
            routes.append(Route(prefix: prefix, origin: origin, rules: rules, caching: caching, line: line))
        }
        return routes
    }

    /// The routes as mounts, each problem with its line: an origin missing or not an http(s)
    /// URL, a prefix not a path, a prefix that can never match.
    func mounts(builtIn: [String], problems: inout [String]) -> [RouteMount] {
        var mounts: [RouteMount] = []
        var lines: [Int] = []
        for route in routes {
            guard let origin = route.origin else {
                problems.append("\(place("routes.\(route.prefix)")): needs an origin (an http:// or https:// URL)")
                continue
            }
            guard var mount = RouteMount(prefix: route.prefix, origin: origin) else {
                problems.append("\(place("routes.\(route.prefix)")): must be a path starting with / and an http:// or https:// origin, got '\(QuotedText.of(origin))'")
                continue
            }
            mount.rules = route.rules
            mount.caching = route.caching
            mounts.append(mount)
            lines.append(route.line)
        }
        for problem in RouteMount.unreachable(mounts, builtIn: builtIn) {
            problems.append("\(path):\(lines[problem.index]): \(QuotedText.of("routes.\(mounts[problem.index].prefix)")): \(problem.reason): a route that can never match is refused")
        }
        return mounts
    }

    static func line(of error: any Error) -> Int {
        guard let error = error as? YamlError else { return 1 }
        switch error {
        case .scanner(_, _, let mark, _), .parser(_, _, let mark, _), .composer(_, _, let mark, _): return mark.line
        default: return 1
        }
    }

    static func problem(of error: any Error) -> String {
        guard let error = error as? YamlError else { return "\(error)" }
        switch error {
        case .scanner(_, let problem, _, _), .parser(_, let problem, _, _), .composer(_, let problem, _, _): return problem
        default: return "\(error)".split(separator: "\n").first.map(String.init) ?? "\(error)"
        }
    }
}
