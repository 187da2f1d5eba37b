/// A libcrypto call failed; carries the call and OpenSSL's error queue as text (built by
/// ``EVPKey``, the one type that talks to OpenSSL).
struct LibCryptoError: Error, CustomStringConvertible {
    var description: String
}
