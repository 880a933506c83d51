import Caching
import Testing
@testable import Admin
import Routes

/// Admin bodies say one thing once: `{"all":true,"all":false}` purged everything, while the
/// reverse order was refused.
@Suite struct AdminBodyTests {
    @Test(arguments: [#"{"all":true,"all":false}"#, #"{"all":false,"all":true}"#, #"{"tags":["a"],"tags":["b"]}"#,
                      #"{"all":true,"tags":["a"]}"#, #"{"a\u006cl":true,"all":true}"#, #"{"all":1}"#, #"{"tags":[]}"#,
                      #"{"tags":[""]}"#, "{}", "[]", #"{"all":true"#, #"{"all" true}"#, "", #"{"all":true} x"#])
    func aBodyThatDoesNotSayOneThingOnceIsRefused(_ body: String) {
        #expect(AdminAPI.selection(Array(body.utf8)) == nil)
    }

    @Test func theTwoBodiesAreRead() {
        #expect(AdminAPI.selection(Array(#" { "all" : true } "#.utf8)) == .all)
        #expect(AdminAPI.selection(Array(#"{"tags":["red","b,\"lue\"}"]}"#.utf8)) == .tags(["red", "b,\"lue\"}"]))
    }

    /// The names the one JSON reader reports: the top level's, in order, repeats included.
    @Test(arguments: [(#"{"a":1,"b":[1,{"c":"}"}],"d":"x\"y"}"#, ["a", "b", "d"]), (#"{"\u0041":null}"#, ["A"]), ("{ }", []),
                      (#"{"all":true,"x":{"all":1},"a\u006cl":false}"#, ["all", "x", "all"])])
    func memberNamesAreReadInOrderWithNestedValuesSkipped(_ body: String, _ names: [String]) {
        #expect((try? JSONValue.readingNames(Array(body.utf8)))?.names == names)
    }
}
