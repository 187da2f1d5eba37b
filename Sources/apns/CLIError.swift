/// A failure the tool reports on one line of standard error before exiting with
/// ``status``: 1 for a run-time failure, 2 for a usage error.
struct CLIError: Error, CustomStringConvertible {
    /// What went wrong and what to do about it, on one line.
    var message: String
    /// The exit status.
    var status: Int32

    /// A run-time failure (exit status 1).
    init(_ message: String) {
        self.message = message
        self.status = 1
    }

    /// A usage error (exit status 2): a flag value the tool cannot use.
    static func usage(_ message: String) -> CLIError {
        var error = CLIError(message)
        error.status = 2
        return error
    }

    var description: String { message }
}
