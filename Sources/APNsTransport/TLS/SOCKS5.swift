#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The SOCKS5 handshake (RFC 1928), with username/password authentication (RFC 1929), as
/// the bytes a client sends and the checks of the bytes it reads: no I/O here
/// (``ProxyTunnel`` sends and reads).
///
/// The exchange: the greeting (the methods offered), the proxy's choice, the credentials
/// and their verdict when the proxy chose username/password, the CONNECT request naming
/// the destination, and the reply, whose length depends on the address type it carries.
/// Every read is of an exact length, so not a byte of the tunnel after the reply is consumed.
enum SOCKS5 {
    /// Why the proxy cannot be used, in words for ``APNsCore/APNsTransportError/connectionFailed(_:)``.
    struct Refusal: Error, Equatable {
        let problem: String
        /// Whether every attempt meets it again (the proxy's rules forbid the destination,
        /// it is no SOCKS5 proxy, the credentials cannot be sent): not worth a retry.
        let isPermanent: Bool
        init(_ problem: String, permanent: Bool = false) {
            self.problem = problem
            self.isPermanent = permanent
        }
    }

    /// The authentication methods this client knows (RFC 1928 §3).
    enum Method: UInt8 {
        case noAuthentication = 0x00
        case usernamePassword = 0x02
    }

    /// The greeting (RFC 1928 §3): VER 5, the number of methods, the methods. Username and
    /// password are offered beside no authentication when there are credentials (the
    /// proxy chooses), no authentication alone otherwise.
    static func greeting(offeringPassword: Bool) -> [UInt8] {
        offeringPassword ? [5, 2, Method.noAuthentication.rawValue, Method.usernamePassword.rawValue] : [5, 1, Method.noAuthentication.rawValue]
    }

    /// The method the proxy chose, from its two-byte answer to the greeting (VER, METHOD).
    static func chosenMethod(_ answer: [UInt8], offeredPassword: Bool) throws(Refusal) -> Method {
        guard answer.count == 2, answer[0] == 5 else {
            throw Refusal("did not answer the SOCKS5 greeting as a SOCKS5 proxy (\(Hex.digits(answer.prefix(16))))")
        }
        switch answer[1] {
        case Method.noAuthentication.rawValue:
            return .noAuthentication
        case Method.usernamePassword.rawValue where offeredPassword:
            return .usernamePassword
        case 0xFF where !offeredPassword, Method.usernamePassword.rawValue:
            throw Refusal("requires authentication: set ProxyConfiguration's username and password")
        case 0xFF:
            throw Refusal("accepts none of the offered authentication methods (none, username/password)")
        default:
            throw Refusal("chose an authentication method that was not offered (0x\(Hex.digits([answer[1]])))")
        }
    }

    /// The username/password request (RFC 1929 §2): VER 1, ULEN, UNAME, PLEN, PASSWD. It
    /// holds the password: callers wipe it.
    static func authentication(username: String, password: String) throws(Refusal) -> [UInt8] {
        let user = Array(username.utf8)
        let secret = Array(password.utf8)
        guard (1...255).contains(user.count) else {
            throw Refusal("cannot take the user name: SOCKS5 user names are 1 to 255 bytes (RFC 1929), this one is \(user.count)")
        }
        guard secret.count <= 255 else {
            throw Refusal("cannot take the password: SOCKS5 passwords are at most 255 bytes (RFC 1929), this one is \(secret.count)")
        }
        return [1, UInt8(user.count)] + user + [UInt8(secret.count)] + secret
    }

    /// Checks the proxy's two-byte verdict on the credentials (VER, STATUS; 0 is success).
    static func checkAuthenticationAnswer(_ answer: [UInt8], username: String) throws(Refusal) {
        guard answer.count == 2 else { throw Refusal("closed the connection before answering the credentials") }
        guard answer[1] == 0 else {
            throw Refusal("refused the credentials of user '\(username)' (status \(answer[1]))")
        }
    }

    /// The CONNECT request (RFC 1928 §4): VER 5, CMD 1, RSV 0, the address (an IPv4 or IPv6
    /// literal as such, any other host as a domain name the proxy resolves), the port.
    static func connectRequest(host: String, port: Int) throws(Refusal) -> [UInt8] {
        guard (1...65535).contains(port) else { throw Refusal("cannot be asked for port \(port)") }
        var request: [UInt8] = [5, 1, 0]
        if let address = ipv4(host) {
            request += [1] + address
        } else if let address = ipv6(host) {
            request += [4] + address
        } else {
            let name = Array(host.utf8)
            guard (1...255).contains(name.count) else {
                throw Refusal("cannot be asked for the host '\(host.prefix(40))…': SOCKS5 host names are 1 to 255 bytes")
            }
            request += [3, UInt8(name.count)] + name
        }
        return request + [UInt8(port >> 8), UInt8(port & 0xFF)]
    }

    /// How many bytes of the reply to read first: VER, REP, RSV, ATYP and the address's
    /// first byte (a domain name's length).
    static let replyHeadLength = 5

    /// Checks the reply's first bytes (at least VER and REP; ``replyHeadLength`` unless
    /// the proxy closed early) and returns how many bytes of it remain: the rest of the
    /// bound address and its port.
    static func remainingReplyLength(afterHead head: [UInt8], destination: String) throws(Refusal) -> Int {
        guard head.count >= 2 else { throw Refusal("closed the connection before answering CONNECT \(destination)") }
        guard head[0] == 5 else {
            throw Refusal("answered CONNECT with something that is not a SOCKS5 reply (\(Hex.digits(head.prefix(16))))", permanent: true)
        }
        guard head[1] == 0 else {
            // The proxy's rules forbid the destination (as an HTTP proxy's 403), or it
            // cannot carry this request at all: every attempt meets the same answer.
            // Failures of the moment (the destination unreachable, refused, timed out)
            // may pass.
            throw Refusal("could not open the tunnel to \(destination): \(replyMeaning(head[1]))", permanent: [2, 7, 8].contains(head[1]))
        }
        guard head.count == replyHeadLength else { throw Refusal("closed the connection in the middle of its reply") }
        switch head[3] {
        case 1: return 4 - 1 + 2
        case 3: return Int(head[4]) + 2
        case 4: return 16 - 1 + 2
        default: throw Refusal("answered with an unknown address type \(head[3])", permanent: true)
        }
    }

    /// What a reply code means (RFC 1928 §6).
    static func replyMeaning(_ code: UInt8) -> String {
        switch code {
        case 1: "general SOCKS server failure (reply 1)"
        case 2: "connection not allowed by ruleset (reply 2)"
        case 3: "network unreachable (reply 3)"
        case 4: "host unreachable (reply 4)"
        case 5: "connection refused (reply 5)"
        case 6: "TTL expired (reply 6)"
        case 7: "command not supported (reply 7)"
        case 8: "address type not supported (reply 8)"
        default: "unassigned reply code \(code)"
        }
    }

    private static func ipv4(_ host: String) -> [UInt8]? {
        var address = in_addr()
        guard inet_pton(AF_INET, host, &address) == 1 else { return nil }
        return withUnsafeBytes(of: &address) { Array($0) }
    }

    private static func ipv6(_ host: String) -> [UInt8]? {
        var address = in6_addr()
        guard inet_pton(AF_INET6, TCPConnector.unbracketed(host), &address) == 1 else { return nil }
        return withUnsafeBytes(of: &address) { Array($0) }
    }
}
