import Foundation
import Testing

/// The mock server against a provider on Python's `h2` that frames its requests every way
/// RFC 9113 lets a client (`PythonClient/client.py`; `python3-h2` and `python3-jwt` from
/// `scripts/bootstrap.sh --test`): the body in one DATA frame, padded, split over three,
/// followed by trailers or by an empty DATA frame carrying END_STREAM, HEADERS with the
/// PRIORITY flag and a PRIORITY frame, a PING and a WINDOW_UPDATE between HEADERS and
/// body. Every framing meets every shape of ``IndependentProvider``, and each request must
/// get Apple's answer for its shape: a body read wrong (padding kept, a part lost, the
/// trailers taken for the end) would not parse as the payload, or not be whole.
@Suite("A provider on Python's h2 that frames requests every way")
struct PythonFramingClientTests {
    @Test("1,400 requests, 100 in flight, in seven framings: each answered once, as Apple documents its shape")
    func answersAsAppleInEveryFraming() async throws {
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("PythonClient/client.py").path
        let run = try await IndependentProvider.run(["python3", script], keyID: "PYTHONKEY1", count: 1_400, concurrency: 100)
        print("python client: 1,400 requests, \(run.description)")
    }
}
