import Foundation

/// A payload given as a file, as `send --payload-file` and `broadcast --payload-file` read it.
enum PayloadFile {
    /// The JSON text of `path` (`-`: what `standardInput()` returns), without a leading
    /// UTF-8 byte order mark: some editors write one at the start of a file, JSON parsers
    /// may ignore it (RFC 8259, section 8.1), and APNs' body must not have it.
    static func jsonBytes(at path: String, standardInput: () -> [UInt8]) throws(CLIError) -> [UInt8] {
        let bytes: [UInt8]
        if path == "-" {
            bytes = standardInput()
        } else {
            guard let data = FileManager.default.contents(atPath: path) else {
                throw CLIError("cannot read the payload file \(path): check the path and its permissions")
            }
            bytes = Array(data)
        }
        return bytes.starts(with: [0xEF, 0xBB, 0xBF]) ? Array(bytes.dropFirst(3)) : bytes
    }
}
