import Caching
import Foundation
import HTTPCore
import Testing
@testable import Routes
@testable import Settings
import Bodies

/// The fields of Larder's own JSON answers, written as bytes, say what the field list did.
@Suite struct JSONRenderingTests {
    @Test func renderedFieldsAreTheFieldLinesOfTheirValues() throws {
        let settings = try ServeSettings.resolve(flags: ["demo": "true"], environment: [:])
        let body = Array("{\"t\":1}".utf8)
        for (audience, lifetime, cacheControl) in [
            (BuiltInRoute.Audience.shared, 60, "public, max-age=60, stale-while-revalidate=\(Int(settings.staleWhileRevalidate.seconds)), "
                + "stale-if-error=\(Int(settings.staleIfError.seconds))"),
            (.caller, 0, "private, max-age=0"), (.caller, 2_147_483_648, "private, max-age=2147483648"),
        ] {
            for (seconds, etag) in [(784_111_777.9, nil), (0, "\"given\""), (253_402_300_799, "W/\"x\"")] as [(Double, String?)] {
                let date = Date(timeIntervalSince1970: seconds)
                let rendered = RenderedResponse(json: body, date: date, cacheControl: BuiltInRoute.cacheControl(audience, settings: settings),
                                                lifetime: lifetime, etag: etag)
                let expectedETag = etag ?? RenderedResponse.etag(of: body)
                let validators = RenderedFields([("Cache-Control", cacheControl), ("Date", HTTPDate.format(date)), ("ETag", expectedETag)])
                #expect(rendered.notModifiedFields == validators)
                #expect(rendered.fields == validators.appending("Content-Type", "application/json"))
                #expect(rendered.fields.hasDate && rendered.notModifiedFields.hasDate)
                #expect(rendered.etag == expectedETag && rendered.body == .bytes(body) && rendered.status == 200)
            }
        }
        #expect(HTTPDate.format(Date(timeIntervalSince1970: 784_111_777)) == "Sun, 06 Nov 1994 08:49:37 GMT")
    }
}
