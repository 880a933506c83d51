import Testing
@testable import Larder

@Suite(.timeLimit(.minutes(1))) struct ServeSettingsTests {
    @Test func defaultsApplyWhenNothingIsGiven() throws {
        let settings = try ServeSettings.resolve(flags: [:], environment: [:])
        #expect(settings.host == "127.0.0.1")
        #expect(settings.port == 8080)
        #expect(settings.logFormat == .text)
    }

    @Test func environmentOverridesDefaultsAndFlagsOverrideEnvironment() throws {
        let environment = ["LARDER_HOST": "0.0.0.0", "LARDER_PORT": "9000", "LARDER_LOG_FORMAT": "json"]
        let fromEnvironment = try ServeSettings.resolve(flags: [:], environment: environment)
        #expect(fromEnvironment.host == "0.0.0.0")
        #expect(fromEnvironment.port == 9000)
        #expect(fromEnvironment.logFormat == .json)
        let fromFlags = try ServeSettings.resolve(flags: ["port": "9100"], environment: environment)
        #expect(fromFlags.port == 9100)
        #expect(fromFlags.host == "0.0.0.0")
    }

    @Test(arguments: [["port": "65536"], ["port": "-1"], ["port": "http"], ["host": ""], ["log.format": "xml"], ["log.level": "loud"]])
    func badValuesAreRejectedWithTheirName(_ flags: [String: String]) {
        #expect {
            try ServeSettings.resolve(flags: flags, environment: [:])
        } throws: { error in
            let message = (error as? ConfigurationError)?.message ?? ""
            return message.contains("--" + flags.keys.first!.replacingOccurrences(of: ".", with: "-"))
        }
    }
}
