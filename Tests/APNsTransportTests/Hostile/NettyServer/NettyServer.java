// An APNs-like server on Netty's HTTP/2 codec (the stack of Pushy, the Java APNs client,
// and of its mock server) with the JDK's TLS and ECDSA (SunEC): an implementation that
// shares no code with nghttp2, OpenSSL, Python's h2, Go or Rust's h2, used by
// NettyServerTests to check the client against a fifth independent server. Compiled by
// scripts/peers.sh against Debian's Netty jars.
//
// What it does that the other servers do not:
//   - Netty's close, every RESTART_EVERY requests: the next generation listens on the
//     same port (SO_REUSEPORT) and every connection of the current one is closed
//     (Channel.close through Netty's Http2ConnectionHandler). Netty sends GOAWAY with the
//     last stream it knows; in this version it then closed the connection without
//     waiting for streams whose answer the handler had not yet written (the delayed
//     ones), and a close with the client's later requests unread ends in a reset that
//     can discard answers not yet sent. So requests are read and never answered: each
//     connection closed so is written down as dropped, and the client must fail those
//     requests as ones that may have reached APNs.
//   - The JDK's TLS (JSSE): TLS 1.3 first, ALPN set on the engine, client certificates
//     checked against the test CA by the JDK's PKIX validator.
//   - Netty's flow control and HPACK encoder for the answers, and a stream limit of
//     MAX_STREAMS.
//   - Provider tokens verified with SunEC against the public key the test gives (ES256
//     over the first two parts, the signature as r || s), and each request checked as
//     APNs would (method, path, topic, push type, apns-id, a JSON body with "aps" within
//     4 KB).
//
// Usage: java -cp <netty jars>:<classes> NettyServer CERT KEY RECORD SEED CLIENT_CA|""
//        PUBLIC_KEY|"" RESTART_EVERY MAX_STREAMS
// Prints "PORT <n>" once listening. Writes one JSON line per request it read to RECORD
// (seq, conn, gen, token, apns_id, fate, auth, problems). Runs until it is killed.

import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.channel.group.ChannelGroup;
import io.netty.channel.group.DefaultChannelGroup;
import io.netty.channel.nio.NioEventLoopGroup;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioChannelOption;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.handler.codec.http2.DefaultHttp2DataFrame;
import io.netty.handler.codec.http2.DefaultHttp2Headers;
import io.netty.handler.codec.http2.DefaultHttp2HeadersFrame;
import io.netty.handler.codec.http2.Http2DataFrame;
import io.netty.handler.codec.http2.Http2FrameCodecBuilder;
import io.netty.handler.codec.http2.Http2Headers;
import io.netty.handler.codec.http2.Http2HeadersFrame;
import io.netty.handler.codec.http2.Http2MultiplexHandler;
import io.netty.handler.codec.http2.Http2Settings;
import io.netty.handler.ssl.SslHandler;
import io.netty.util.concurrent.GlobalEventExecutor;
import java.io.FileWriter;
import java.io.IOException;
import java.io.InputStream;
import java.io.Writer;
import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyFactory;
import java.security.KeyStore;
import java.security.PrivateKey;
import java.security.PublicKey;
import java.security.Signature;
import java.security.cert.Certificate;
import java.security.cert.CertificateFactory;
import java.security.spec.PKCS8EncodedKeySpec;
import java.security.spec.X509EncodedKeySpec;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLEngine;
import javax.net.ssl.SSLParameters;
import javax.net.ssl.TrustManagerFactory;

public class NettyServer {
    static Writer record;
    static final AtomicLong sequence = new AtomicLong();
    static final AtomicLong connections = new AtomicLong();
    static final Map<Channel, Long> connectionIDs = new java.util.concurrent.ConcurrentHashMap<>();
    static final Map<String, Integer> attempts = new HashMap<>();
    static long seed;
    static PublicKey signingKey;
    static final Pattern TOKEN_PATH = Pattern.compile("^/3/device/([0-9a-f]{64})$");
    static final Pattern UUID_FORM = Pattern.compile("^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$");

    // The fates a request may meet, with their weights (as the Go and Rust servers'); a
    // request is answered 200 on its fifth attempt or later, so every notification ends.
    static final String[] FATES = {"ok", "delay_ok", "BadDeviceToken", "Unregistered", "TooManyRequests", "ServiceUnavailable", "InternalServerError"};
    static final double[] WEIGHTS = {70, 8, 4, 4, 5, 4, 3};
    static final int[] STATUSES = {200, 200, 400, 410, 429, 503, 500};

    static long mix(long x) {
        x += 0x9E3779B97F4A7C15L;
        x = (x ^ (x >>> 30)) * 0xBF58476D1CE4E5B9L;
        x = (x ^ (x >>> 27)) * 0x94D049BB133111EBL;
        return x ^ (x >>> 31);
    }

    static int fateOf(String token, int attempt) {
        long h = seed;
        for (int i = 0; i < token.length(); i++) h = mix(h ^ token.charAt(i));
        h = mix(h ^ attempt);
        double total = 0;
        for (double w : WEIGHTS) total += w;
        double r = (double) (h >>> 11) / (double) (1L << 53) * total;
        for (int i = 0; i < FATES.length; i++) {
            if (r < WEIGHTS[i]) return i;
            r -= WEIGHTS[i];
        }
        return 0;
    }

    static String quote(String text) {
        StringBuilder out = new StringBuilder("\"");
        for (char c : text.toCharArray()) {
            if (c == '"' || c == '\\') out.append('\\').append(c);
            else if (c < 0x20) out.append(String.format("\\u%04x", (int) c));
            else out.append(c);
        }
        return out.append('"').toString();
    }

    static synchronized void write(String json) {
        try {
            record.write(json + "\n");
            record.flush();
        } catch (IOException ignored) {
        }
    }

    static byte[] pemBlock(String pem, String kind) {
        Matcher block = Pattern.compile("-----BEGIN " + kind + "-----(.*?)-----END " + kind + "-----", Pattern.DOTALL).matcher(pem);
        if (!block.find()) throw new IllegalArgumentException("no " + kind + " in PEM");
        return Base64.getMimeDecoder().decode(block.group(1));
    }

    // The problems SunEC and a plain reading find with a provider token, or none.
    static List<String> checkProviderToken(String header) {
        List<String> problems = new ArrayList<>();
        if (signingKey == null) return problems;
        if (!header.startsWith("bearer ")) {
            problems.add("authorization does not start with 'bearer '");
            return problems;
        }
        String[] parts = header.substring(7).split("\\.", -1);
        if (parts.length != 3) {
            problems.add("the token has " + parts.length + " parts, not 3");
            return problems;
        }
        Base64.Decoder decoder = Base64.getUrlDecoder();
        try {
            String head = new String(decoder.decode(parts[0]), StandardCharsets.UTF_8).replace(" ", "");
            String claims = new String(decoder.decode(parts[1]), StandardCharsets.UTF_8).replace(" ", "");
            if (!head.contains("\"alg\":\"ES256\"") || !head.contains("\"kid\":\"ABC123DEFG\"")) problems.add("header " + head);
            if (!claims.contains("\"iss\":\"DEF123GHIJ\"")) problems.add("claims " + claims);
            Matcher iat = Pattern.compile("\"iat\":(\\d+)").matcher(claims);
            long now = System.currentTimeMillis() / 1000;
            if (!iat.find() || now - Long.parseLong(iat.group(1)) > 3600 || Long.parseLong(iat.group(1)) - now > 60) {
                problems.add("iat missing or not within the hour: " + claims);
            }
            byte[] signature = decoder.decode(parts[2]);
            Signature verifier = Signature.getInstance("SHA256withECDSAinP1363Format");
            verifier.initVerify(signingKey);
            verifier.update((parts[0] + "." + parts[1]).getBytes(StandardCharsets.US_ASCII));
            if (signature.length != 64 || !verifier.verify(signature)) problems.add("the ES256 signature does not verify");
        } catch (Exception error) {
            problems.add("token: " + error);
        }
        return problems;
    }

    /// One request on its own child stream channel.
    static final class Exchange extends SimpleChannelInboundHandler<Object> {
        final long connection;
        final int generation;
        /// The connection's requests read and not yet answered on the wire.
        final java.util.concurrent.atomic.AtomicInteger unanswered;
        Http2Headers headers;
        final ByteBuf body = Unpooled.buffer();

        Exchange(long connection, int generation, java.util.concurrent.atomic.AtomicInteger unanswered) {
            this.connection = connection;
            this.generation = generation;
            this.unanswered = unanswered;
        }

        @Override
        protected void channelRead0(ChannelHandlerContext context, Object frame) {
            boolean ended = false;
            if (frame instanceof Http2HeadersFrame headersFrame) {
                if (headers == null) headers = headersFrame.headers();
                ended = headersFrame.isEndStream();
            } else if (frame instanceof Http2DataFrame data) {
                if (body.readableBytes() <= 8192) body.writeBytes(data.content());
                ended = data.isEndStream();
            }
            if (ended) answer(context);
        }

        @Override
        public void channelInactive(ChannelHandlerContext context) {
            body.release();
        }

        void answer(ChannelHandlerContext context) {
            List<String> problems = new ArrayList<>();
            String method = String.valueOf(headers.method());
            if (!method.equals("POST")) problems.add("method " + method);
            String path = String.valueOf(headers.path());
            Matcher match = TOKEN_PATH.matcher(path);
            String token = "";
            if (match.matches()) token = match.group(1); else problems.add("path " + path);
            CharSequence topic = headers.get("apns-topic");
            if (topic == null || !topic.toString().equals("com.example.app")) problems.add("apns-topic " + topic);
            CharSequence pushType = headers.get("apns-push-type");
            if (pushType == null || !pushType.toString().equals("alert")) problems.add("apns-push-type " + pushType);
            CharSequence id = headers.get("apns-id");
            String apnsID = id == null ? "" : id.toString();
            if (!apnsID.isEmpty() && !UUID_FORM.matcher(apnsID).matches()) problems.add("apns-id " + apnsID);
            String text = body.toString(StandardCharsets.UTF_8);
            if (body.readableBytes() > 4096) problems.add("body of " + body.readableBytes() + " bytes");
            else if (!text.startsWith("{\"aps\":{") || !text.endsWith("}")) problems.add("body is not an aps dictionary: " + text);
            CharSequence length = headers.get("content-length");
            if (length != null && !length.toString().equals(String.valueOf(body.readableBytes()))) {
                problems.add("content-length " + length + " for " + body.readableBytes() + " bytes");
            }
            CharSequence authorization = headers.get("authorization");
            if (authorization != null) problems.addAll(checkProviderToken(authorization.toString()));

            int attempt;
            synchronized (attempts) {
                attempt = attempts.merge(token, 1, Integer::sum);
            }
            int fate = attempt >= 5 ? 0 : fateOf(token, attempt);
            if (apnsID.isEmpty()) apnsID = "00000000-0000-4000-8000-000000000000";
            StringBuilder listed = new StringBuilder("[");
            for (String problem : problems) listed.append(listed.length() > 1 ? "," : "").append(quote(problem));
            write("{\"seq\":" + sequence.incrementAndGet() + ",\"conn\":" + connection + ",\"gen\":" + generation
                + ",\"token\":" + quote(token) + ",\"apns_id\":" + quote(apnsID) + ",\"fate\":" + quote(FATES[fate])
                + ",\"auth\":" + (authorization != null) + ",\"problems\":" + listed + "]}");
            String answeredID = apnsID;
            unanswered.incrementAndGet();
            io.netty.util.concurrent.GenericFutureListener<io.netty.util.concurrent.Future<? super Void>> written = done -> {
                if (done.isSuccess()) unanswered.decrementAndGet();
            };
            Runnable send = () -> {
                Http2Headers response = new DefaultHttp2Headers().status(String.valueOf(STATUSES[fate])).add("apns-id", answeredID);
                if (STATUSES[fate] == 200) {
                    context.writeAndFlush(new DefaultHttp2HeadersFrame(response, true)).addListener(written);
                    return;
                }
                response.add("content-type", "application/json");
                String reason = FATES[fate].equals("Unregistered")
                    ? "{\"reason\":\"Unregistered\",\"timestamp\":" + System.currentTimeMillis() + "}"
                    : "{\"reason\":\"" + FATES[fate] + "\"}";
                context.write(new DefaultHttp2HeadersFrame(response, false));
                context.writeAndFlush(new DefaultHttp2DataFrame(Unpooled.copiedBuffer(reason, StandardCharsets.UTF_8), true)).addListener(written);
            };
            if (FATES[fate].equals("delay_ok")) {
                context.executor().schedule(send, Math.floorMod(mix(seed ^ sequence.get()), 40L), TimeUnit.MILLISECONDS);
            } else {
                send.run();
            }
        }
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 8) {
            System.err.println("usage: NettyServer CERT KEY RECORD SEED CLIENT_CA PUBLIC_KEY RESTART_EVERY MAX_STREAMS");
            System.exit(2);
        }
        CertificateFactory x509 = CertificateFactory.getInstance("X.509");
        List<Certificate> chain = new ArrayList<>();
        try (InputStream input = Files.newInputStream(Path.of(args[0]))) {
            chain.addAll(x509.generateCertificates(input));
        }
        PrivateKey key = KeyFactory.getInstance("EC").generatePrivate(new PKCS8EncodedKeySpec(pemBlock(Files.readString(Path.of(args[1])), "PRIVATE KEY")));
        KeyStore identity = KeyStore.getInstance("PKCS12");
        identity.load(null, null);
        identity.setKeyEntry("server", key, new char[0], chain.toArray(new Certificate[0]));
        KeyManagerFactory keys = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
        keys.init(identity, new char[0]);
        TrustManagerFactory trust = null;
        if (!args[4].isEmpty()) {
            KeyStore roots = KeyStore.getInstance("PKCS12");
            roots.load(null, null);
            try (InputStream input = Files.newInputStream(Path.of(args[4]))) {
                roots.setCertificateEntry("ca", x509.generateCertificate(input));
            }
            trust = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
            trust.init(roots);
        }
        SSLContext tls = SSLContext.getInstance("TLS");
        tls.init(keys.getKeyManagers(), trust == null ? null : trust.getTrustManagers(), null);
        boolean requireClientCertificate = trust != null;
        if (!args[5].isEmpty()) {
            signingKey = KeyFactory.getInstance("EC").generatePublic(new X509EncodedKeySpec(pemBlock(Files.readString(Path.of(args[5])), "PUBLIC KEY")));
        }
        record = new FileWriter(args[2]);
        seed = Long.parseLong(args[3]);
        long restartEvery = Long.parseLong(args[6]);
        int maxStreams = Integer.parseInt(args[7]);

        EventLoopGroup boss = new NioEventLoopGroup(1);
        EventLoopGroup workers = new NioEventLoopGroup(2);
        int port = 0;
        int generation = 0;
        Channel listener = null;
        ChannelGroup current = null;
        long next = restartEvery;
        while (true) {
            if (listener == null || (restartEvery > 0 && sequence.get() >= next)) {
                if (listener != null) next += restartEvery;
                generation++;
                int thisGeneration = generation;
                ChannelGroup group = new DefaultChannelGroup(GlobalEventExecutor.INSTANCE);
                Channel bound = new ServerBootstrap()
                    .group(boss, workers)
                    .channel(NioServerSocketChannel.class)
                    .option(NioChannelOption.of(StandardSocketOptions.SO_REUSEPORT), true)
                    .childHandler(new ChannelInitializer<SocketChannel>() {
                        @Override
                        protected void initChannel(SocketChannel channel) {
                            group.add(channel);
                            long connection = connections.incrementAndGet();
                            connectionIDs.put(channel, connection);
                            java.util.concurrent.atomic.AtomicInteger unanswered = new java.util.concurrent.atomic.AtomicInteger();
                            SSLEngine engine = tls.createSSLEngine();
                            engine.setUseClientMode(false);
                            SSLParameters parameters = engine.getSSLParameters();
                            parameters.setApplicationProtocols(new String[] {"h2"});
                            parameters.setNeedClientAuth(requireClientCertificate);
                            engine.setSSLParameters(parameters);
                            io.netty.handler.codec.http2.Http2FrameCodec codec = Http2FrameCodecBuilder.forServer()
                                .initialSettings(Http2Settings.defaultSettings().maxConcurrentStreams(maxStreams))
                                .gracefulShutdownTimeoutMillis(10_000)
                                .build();
                            // A connection that ends with requests read and their answers not
                            // yet written is written down as dropped: those may have been
                            // delivered and were not answered.
                            channel.pipeline().addLast(new io.netty.channel.ChannelInboundHandlerAdapter() {
                                @Override
                                public void channelInactive(ChannelHandlerContext ctx) throws Exception {
                                    int open = unanswered.get();
                                    if (open > 0) {
                                        NettyServer.write("{\"conn\":" + connection + ",\"gen\":" + thisGeneration
                                            + ",\"fate\":\"connection_dropped\",\"open\":" + open + "}");
                                    }
                                    super.channelInactive(ctx);
                                }
                            });
                            channel.pipeline().addLast(new SslHandler(engine));
                            channel.pipeline().addLast(codec);
                            channel.pipeline().addLast(new Http2MultiplexHandler(new ChannelInitializer<Channel>() {
                                @Override
                                protected void initChannel(Channel stream) {
                                    stream.pipeline().addLast(new Exchange(connection, thisGeneration, unanswered));
                                }
                            }));
                        }
                    })
                    .bind(new InetSocketAddress("127.0.0.1", port)).sync().channel();
                if (port == 0) {
                    port = ((InetSocketAddress) bound.localAddress()).getPort();
                    System.out.println("PORT " + port);
                    System.out.flush();
                }
                if (listener != null) {
                    // The current generation stops listening, and each of its connections
                    // closes gracefully: Netty sends GOAWAY, lets the streams it knows finish.
                    listener.close();
                    // Closed while the client may still be sending (its requests after the
                    // GOAWAY), a connection ends with a reset that discards what Netty wrote
                    // and the kernel had not sent yet: answers may be lost. Each such
                    // connection is written down as dropped.
                    for (Channel channel : current) {
                        Long id = connectionIDs.get(channel);
                        if (id != null) write("{\"conn\":" + id + ",\"gen\":" + (generation - 1) + ",\"fate\":\"connection_dropped\",\"at\":\"close\"}");
                    }
                    current.close();
                    write("{\"seq\":" + sequence.get() + ",\"fate\":\"shutdown_started\",\"gen\":" + (generation - 1) + "}");
                }
                listener = bound;
                current = group;
            }
            Thread.sleep(2);
        }
    }
}
