/// Frames serialized by a connection, by type.
struct HTTP2FrameCounts: Sendable, Equatable {
    var headers = 0
    var data = 0
    var other = 0
    var total: Int { headers + data + other }
}
