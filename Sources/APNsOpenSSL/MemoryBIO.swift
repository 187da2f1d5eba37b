import COpenSSL

/// OpenSSL memory `BIO`s, which never outlive the call that makes them: the PEM readers
/// and writers of the handle types go through here.
package enum MemoryBIO {
    /// Runs `body` with a read-only memory BIO over `bytes` (freed afterwards), or returns
    /// `nil` when `bytes` is empty or too large for a BIO.
    package static func reading<R>(_ bytes: UnsafeRawBufferPointer, _ body: (OpaquePointer) -> R?) -> R? {
        guard let base = bytes.baseAddress, bytes.count > 0, bytes.count <= Int(Int32.max),
              let bio = capns_BIO_new_mem_buf(base, Int32(bytes.count))
        else { return nil }
        defer { BIO_free(bio) }
        return body(bio)
    }

    /// Runs `write` with an empty memory BIO and returns what it wrote as text.
    /// - Parameter call: The OpenSSL call `write` makes, for the error.
    package static func write(_ call: String, _ write: (OpaquePointer) -> Int32) throws(LibCryptoError) -> String {
        guard let bio = BIO_new(BIO_s_mem()) else { throw .current("BIO_new") }
        defer { BIO_free(bio) }
        guard write(bio) == 1 else { throw .current(call) }
        var data: UnsafeMutablePointer<CChar>?
        let length = capns_BIO_get_mem_data(bio, &data)
        guard let data, length > 0 else { throw .current("BIO_get_mem_data") }
        return String(decoding: UnsafeRawBufferPointer(start: data, count: length), as: UTF8.self)
    }
}
