import Foundation
import Logging

/// One setting of `larder serve`, declared once (`ServeSettings.declarations`): its key, the
/// values it takes, its default, its help, and whether a reload applies it. Its flag, its
/// environment variable, its configuration file key, its `--help` line, its field in the
/// `settings in use` line and its place in the restart-only list all follow from it.
public struct SettingDeclaration {
    /// How a value is given on the command line.
    public enum Shape: Equatable {
        /// `--port 8080`.
        case value
        /// A flag given once per item (`--route A --route B`); its variable joins the items
        /// with `separator`, a file writes them as a sequence.
        case list(separator: String)
        /// A flag without a value (`--demo`); its variable and file key take true or false.
        case toggle
    }

    /// The default as documented: a value (`64MiB`), or what an unset setting means (`one per CPU`).
    public enum Default: Equatable {
        case value(String)
        case unset(String)
    }

    /// `cache.dir`: the configuration key every other name is made of.
    public let key: String
    public let shape: Shape
    public let `default`: Default
    /// What a value must be, as a problem says it (`a whole number from 0 to 65535`).
    public let expects: String
    /// One sentence for `--help`; the variable and the default are added to it.
    public let help: String
    /// The value's name in `--help` when it is not `<key>`.
    public let valueName: String?
    /// Made once at start (the listener, the tiers, logging…): a reload keeps the running value.
    public let needsRestart: Bool
    /// Whether the value given is a secret (never repeated in a problem or a log line).
    public let secret: Bool
    /// Stores the text given into settings, or says what is wrong with it (a problem's
    /// words after the setting's name: `must be …, got '…'`).
    let read: (String, inout ServeSettings) -> String?
    /// A list's items as a configuration file gives them, each problem with its item's index,
    /// so each is reported at the item's line, and its value files read through the file's
    /// `ValueFiles`; nil reads the items joined, as `read`.
    let readItems: (([String], inout ValueFiles, inout ServeSettings) -> [(index: Int, problem: String)])?
    /// Puts `running`'s value back into settings; true when the two differed.
    let keepRunning: (inout ServeSettings, ServeSettings) -> Bool
    /// The fields this setting adds to the `settings in use` line (none for a secret).
    let shown: (ServeSettings) -> Logger.Metadata

    /// `cache-dir`: the configuration file's key and the flag's name without its dashes.
    public var fileKey: String { key.replacingOccurrences(of: ".", with: "-") }

    /// `--cache-dir`; a list's flag is given once per item, so it is singular (`--route`).
    public var flag: String {
        if case .list = shape { return "--" + String(fileKey.dropLast()) }
        return "--" + fileKey
    }

    /// `LARDER_CACHE_DIR`: swift-configuration's environment name of the key `larder.cache.dir`.
    public var variable: String { "LARDER_" + key.uppercased().replacingOccurrences(of: ".", with: "_") }

    /// `cacheDir`: the name of the `serve` command's property that holds the flag.
    public var propertyName: String {
        let words = String(flag.dropFirst(2)).split(separator: "-")
        return words.enumerated().map { $0.offset == 0 ? String($0.element) : $0.element.capitalized }.joined()
    }

    /// The `--help` text: the sentence, then the variable and the default.
    public var helpText: String {
        let listing = switch shape {
        case .list(let separator): separator == "," ? ", a comma list" : ", one per line"
        default: ""
        }
        let defaultText = switch `default` {
        case .value(let value): ", default \(value)"
        case .unset(let meaning): meaning == "none" ? "" : ", default: \(meaning)"
        }
        return "\(help) (\(variable)\(listing)\(defaultText))."
    }

    init(key: String, shape: Shape = .value, default: Default, expects: String, help: String, valueName: String? = nil,
         needsRestart: Bool, secret: Bool = false, read: @escaping (String, inout ServeSettings) -> String?,
         readItems: (([String], inout ValueFiles, inout ServeSettings) -> [(index: Int, problem: String)])? = nil,
         keepRunning: @escaping (inout ServeSettings, ServeSettings) -> Bool, shown: @escaping (ServeSettings) -> Logger.Metadata) {
        self.key = key
        self.shape = shape
        self.default = `default`
        self.expects = expects
        self.help = help
        self.valueName = valueName
        self.needsRestart = needsRestart
        self.secret = secret
        self.read = read
        self.readItems = readItems
        self.keepRunning = keepRunning
        self.shown = shown
    }
}

extension SettingDeclaration {
    /// A setting stored at `path` when `parse` takes the text; `show` gives its field in the
    /// `settings in use` line (named after the key, `_s` added for seconds), nil for none.
    static func stored<Value: Equatable>(
        _ key: String, _ path: WritableKeyPath<ServeSettings, Value>, shape: Shape = .value, default: Default, expects: String,
        help: String, valueName: String? = nil, needsRestart: Bool = false, secret: Bool = false,
        parse: @escaping (String) -> Value?, show: ((ServeSettings) -> Logger.Metadata)? = nil
    ) -> SettingDeclaration {
        let name = key.replacingOccurrences(of: ".", with: "_")
        return SettingDeclaration(
            key: key, shape: shape, default: `default`, expects: expects, help: help, valueName: valueName,
            needsRestart: needsRestart, secret: secret,
            read: { text, settings in
                guard let value = parse(text) else { return "must be \(expects), got '\(QuotedText.of(text))'" }
                settings[keyPath: path] = value
                return nil
            },
            keepRunning: { settings, running in
                defer { settings[keyPath: path] = running[keyPath: path] }
                return settings[keyPath: path] != running[keyPath: path]
            },
            shown: show ?? { settings in [name: Self.shown(settings[keyPath: path])] })
    }

    /// A whole number within `range`.
    static func whole<Value: Equatable>(
        _ key: String, _ path: WritableKeyPath<ServeSettings, Value>, in range: ClosedRange<Int>, default: Default, help: String,
        needsRestart: Bool = false, wrap: @escaping (Int) -> Value, show: ((ServeSettings) -> Logger.Metadata)? = nil
    ) -> SettingDeclaration {
        stored(key, path, default: `default`, expects: "a whole number from \(range.lowerBound) to \(range.upperBound)", help: help,
               needsRestart: needsRestart, parse: { Int($0).flatMap { range.contains($0) ? wrap($0) : nil } }, show: show)
    }

    /// A size in bytes (`64MiB`), within `range` when there is one.
    static func size(_ key: String, _ path: WritableKeyPath<ServeSettings, Int>, in range: ClosedRange<Int>? = nil,
                     default: Default, help: String, needsRestart: Bool = false) -> SettingDeclaration {
        let expects = range.map { "a size from \(SettingValues.sizeText($0.lowerBound)) to \(SettingValues.sizeText($0.upperBound))" }
            ?? "a size (bytes, or with B, KiB, MiB, GiB)"
        return stored(key, path, default: `default`, expects: expects, help: help, needsRestart: needsRestart,
                      parse: { SettingValues.bytes($0).flatMap { range?.contains($0) ?? true ? $0 : nil } })
    }

    /// A duration (`90s`, `10m`) within `range`.
    static func duration(_ key: String, _ path: WritableKeyPath<ServeSettings, Duration>, in range: SettingValues.DurationRange = .any,
                         default: Default, help: String, needsRestart: Bool = false,
                         show: ((ServeSettings) -> Logger.Metadata)? = nil) -> SettingDeclaration {
        let name = key.replacingOccurrences(of: ".", with: "_") + "_s"
        return stored(key, path, default: `default`, expects: range.expects, help: help, needsRestart: needsRestart,
                      parse: { SettingValues.duration($0).flatMap { range.contains($0) ? $0 : nil } },
                      show: show ?? { settings in [name: .stringConvertible(settings[keyPath: path].seconds)] })
    }

    /// A value as the `settings in use` line shows it: text as text, numbers and flags as they are.
    private static func shown<Value>(_ value: Value) -> Logger.MetadataValue {
        switch value {
        case let text as String: .string(text)
        case let value as any CustomStringConvertible & Sendable: .stringConvertible(value)
        default: .string("\(value)")
        }
    }
}
