#if canImport(Glibc)
import Glibc
#endif

/// The proxy variables of the environment, read once when the client is made and handed to
/// libcurl with every transfer. Left to itself libcurl reads them on every transfer (five
/// `getenv`s walking the environment, gate path built-in-miss); the variables are read as
/// libcurl reads them, so the same ones apply.
public struct ProxySettings: Sendable, Equatable {
    /// The proxy for `http` URLs: `http_proxy` (lower case only, as in libcurl, since CGI sets
    /// `HTTP_PROXY` from a request's `Proxy` field), else `all_proxy` or `ALL_PROXY`; empty for none.
    public var http: String
    /// The proxy for `https` URLs: `https_proxy` or `HTTPS_PROXY`, else `all_proxy` or
    /// `ALL_PROXY`; empty for none.
    public var https: String
    /// Hosts reached without a proxy: `no_proxy` or `NO_PROXY`, in libcurl's syntax.
    public var noProxy: String

    public init(http: String = "", https: String = "", noProxy: String = "") {
        self.http = http
        self.https = https
        self.noProxy = noProxy
    }

    /// The settings the variables give; an empty variable counts as unset, as in libcurl.
    public init(environment variable: (String) -> String?) {
        func first(_ names: String...) -> String {
            for name in names {
                if let value = variable(name), !value.isEmpty { return value }
            }
            return ""
        }
        let all = first("all_proxy", "ALL_PROXY")
        let http = first("http_proxy")
        let https = first("https_proxy", "HTTPS_PROXY")
        self.init(http: http.isEmpty ? all : http, https: https.isEmpty ? all : https, noProxy: first("no_proxy", "NO_PROXY"))
    }

    /// The process's environment, now.
    public static func fromEnvironment() -> ProxySettings {
        ProxySettings { name in getenv(name).map { String(cString: $0) } }
    }

    /// The proxy for a URL whose scheme is `schemeLength` bytes and a colon (`WebScheme`).
    func proxy(schemeLength: Int) -> String { schemeLength == 6 ? https : http }
}
