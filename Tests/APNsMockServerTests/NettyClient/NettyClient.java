// An APNs provider written on Netty's HTTP/2 codec (the stack of Pushy, the Java APNs
// client) with the JDK's TLS and ES256 (SunEC): a client that shares no code with
// nghttp2, curl, OpenSSL, Python's h2, Go or Rust's h2, used by NettyClientTests to check
// the mock server against it. Compiled by scripts/peers.sh against Debian's Netty jars.
//
// It signs one provider token, then sends N requests over one connection with up to
// CONC in flight, each on a child stream channel of Netty's Http2MultiplexHandler, of
// the shape its index sets (the same as GoClient's; see IndependentProvider.swift).
// What Netty does differently: its own HPACK encoder and flow controller, and its
// stream bookkeeping refuses locally to open a stream over the server's
// SETTINGS_MAX_CONCURRENT_STREAMS; such a request (never sent) and one the server
// refuses (RST_STREAM REFUSED_STREAM) are sent again, as Pushy does. The first request
// goes alone: its accepted token raises the server's limit of one stream (as APNs).
//
// Odd indices send an apns-id of their own; even ones send none. One JSON line per
// request goes to OUT: index, status, reason, apns_id, sent_id, proto, refused, error.
// Usage: java -cp <netty jars>:<classes> NettyClient PORT CA KEY KEYID TEAMID N CONC OUT

import io.netty.bootstrap.Bootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.channel.nio.NioEventLoopGroup;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioSocketChannel;
import io.netty.handler.codec.http2.DefaultHttp2DataFrame;
import io.netty.handler.codec.http2.DefaultHttp2Headers;
import io.netty.handler.codec.http2.DefaultHttp2HeadersFrame;
import io.netty.handler.codec.http2.Http2DataFrame;
import io.netty.handler.codec.http2.Http2Error;
import io.netty.handler.codec.http2.Http2FrameCodecBuilder;
import io.netty.handler.codec.http2.Http2Headers;
import io.netty.handler.codec.http2.Http2HeadersFrame;
import io.netty.handler.codec.http2.Http2MultiplexHandler;
import io.netty.handler.codec.http2.Http2ResetFrame;
import io.netty.handler.codec.http2.Http2StreamChannel;
import io.netty.handler.codec.http2.Http2StreamChannelBootstrap;
import io.netty.handler.ssl.SslHandler;
import java.io.FileWriter;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyFactory;
import java.security.KeyStore;
import java.security.cert.CertificateFactory;
import java.security.PrivateKey;
import java.security.Signature;
import java.security.spec.PKCS8EncodedKeySpec;
import java.util.Base64;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLEngine;
import javax.net.ssl.SSLParameters;
import javax.net.ssl.TrustManagerFactory;

public class NettyClient {
    /// The protocol the TLS handshake agreed on (ALPN), as Go names it.
    static volatile String protocol = "none";

    static String b64(byte[] data) {
        return Base64.getUrlEncoder().withoutPadding().encodeToString(data);
    }

    // An ES256 provider token as Apple describes it: the signature as r || s (the JDK's
    // IEEE P1363 form), 32 bytes each.
    static String providerToken(PrivateKey key, String keyID, String teamID) throws Exception {
        String header = "{\"alg\":\"ES256\",\"kid\":\"" + keyID + "\"}";
        String claims = "{\"iss\":\"" + teamID + "\",\"iat\":" + (System.currentTimeMillis() / 1000) + "}";
        String signingInput = b64(header.getBytes(StandardCharsets.UTF_8)) + "." + b64(claims.getBytes(StandardCharsets.UTF_8));
        Signature signer = Signature.getInstance("SHA256withECDSAinP1363Format");
        signer.initSign(key);
        signer.update(signingInput.getBytes(StandardCharsets.US_ASCII));
        return signingInput + "." + b64(signer.sign());
    }

    static String quote(String text) {
        return "\"" + text.replace("\\", "\\\\").replace("\"", "\\\"") + "\"";
    }

    /// One request's exchange on its own child stream channel.
    static final class Exchange extends SimpleChannelInboundHandler<Object> {
        final CompletableFuture<String> done = new CompletableFuture<>();
        int status = 0;
        String apnsID = "";
        final StringBuilder body = new StringBuilder();
        boolean refused = false;

        @Override
        protected void channelRead0(ChannelHandlerContext context, Object frame) {
            if (frame instanceof Http2HeadersFrame headers) {
                CharSequence code = headers.headers().status();
                if (code != null) status = Integer.parseInt(code.toString());
                CharSequence id = headers.headers().get("apns-id");
                if (id != null) apnsID = id.toString();
                if (headers.isEndStream()) done.complete(null);
            } else if (frame instanceof Http2DataFrame data) {
                body.append(data.content().toString(StandardCharsets.UTF_8));
                if (data.isEndStream()) done.complete(null);
            } else if (frame instanceof Http2ResetFrame reset) {
                refused = reset.errorCode() == Http2Error.REFUSED_STREAM.code();
                done.complete("reset " + reset.errorCode());
            }
        }

        @Override
        public void channelInactive(ChannelHandlerContext context) {
            done.complete("the stream closed without an answer");
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext context, Throwable cause) {
            done.complete("exception: " + cause);
            context.close();
        }
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 8) {
            System.err.println("usage: NettyClient PORT CA KEY KEYID TEAMID N CONC OUT");
            System.exit(2);
        }
        int port = Integer.parseInt(args[0]);
        int count = Integer.parseInt(args[5]);
        int concurrency = Integer.parseInt(args[6]);
        String pem = Files.readString(Path.of(args[2]));
        Matcher block = Pattern.compile("-----BEGIN PRIVATE KEY-----(.*?)-----END PRIVATE KEY-----", Pattern.DOTALL).matcher(pem);
        if (!block.find()) {
            System.err.println("no PKCS#8 key in " + args[2]);
            System.exit(2);
        }
        byte[] der = Base64.getMimeDecoder().decode(block.group(1));
        PrivateKey key = KeyFactory.getInstance("EC").generatePrivate(new PKCS8EncodedKeySpec(der));
        String authorization = "bearer " + providerToken(key, args[3], args[4]);

        // The JDK's own TLS with ALPN "h2", set on the engine (the JDK's API, as Netty's
        // JDK provider of this version does not offer ALPN), trusting the test CA only.
        KeyStore roots = KeyStore.getInstance(KeyStore.getDefaultType());
        roots.load(null, null);
        try (var input = Files.newInputStream(Path.of(args[1]))) {
            roots.setCertificateEntry("ca", CertificateFactory.getInstance("X.509").generateCertificate(input));
        }
        TrustManagerFactory trust = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
        trust.init(roots);
        SSLContext tlsContext = SSLContext.getInstance("TLS");
        tlsContext.init(null, trust.getTrustManagers(), null);
        EventLoopGroup group = new NioEventLoopGroup(1);
        PrintWriter out = new PrintWriter(new FileWriter(args[7]));
        int exit = 0;
        try {
            Channel connection = new Bootstrap()
                .group(group)
                .channel(NioSocketChannel.class)
                .handler(new ChannelInitializer<SocketChannel>() {
                    @Override
                    protected void initChannel(SocketChannel channel) {
                        SSLEngine engine = tlsContext.createSSLEngine("localhost", port);
                        engine.setUseClientMode(true);
                        SSLParameters parameters = engine.getSSLParameters();
                        parameters.setApplicationProtocols(new String[] {"h2"});
                        parameters.setEndpointIdentificationAlgorithm("HTTPS");
                        engine.setSSLParameters(parameters);
                        channel.pipeline().addLast(new SslHandler(engine));
                        channel.pipeline().addLast(Http2FrameCodecBuilder.forClient().build());
                        channel.pipeline().addLast(new Http2MultiplexHandler(new SimpleChannelInboundHandler<Object>() {
                            @Override
                            protected void channelRead0(ChannelHandlerContext context, Object message) {}
                        }));
                    }
                })
                .connect("127.0.0.1", port).sync().channel();
            SslHandler tls = connection.pipeline().get(SslHandler.class);
            tls.handshakeFuture().sync();
            String agreed = tls.engine().getApplicationProtocol();
            protocol = "h2".equals(agreed) ? "HTTP/2.0" : "ALPN " + agreed;

            byte[] valid = "{\"aps\":{\"alert\":{\"title\":\"Netty\",\"body\":\"Hello\"},\"sound\":\"default\"}}".getBytes(StandardCharsets.UTF_8);
            String filler = "x".repeat(4097 - "{\"aps\":{\"alert\":\"\"}}".length());
            byte[] large = ("{\"aps\":{\"alert\":\"" + filler + "\"}}").getBytes(StandardCharsets.UTF_8);
            Semaphore slots = new Semaphore(concurrency);
            CompletableFuture<?>[] all = new CompletableFuture<?>[count];
            for (int i = 0; i < count; i++) {
                if (i == 1) all[0].get(30, TimeUnit.SECONDS);
                slots.acquire();
                final int index = i;
                all[i] = CompletableFuture.runAsync(() -> {
                    try {
                        out.println(exchange(connection, index, port, authorization, valid, large));
                    } finally {
                        slots.release();
                    }
                });
            }
            CompletableFuture.allOf(all).get(120, TimeUnit.SECONDS);
            connection.close().sync();
        } catch (Exception error) {
            System.err.println("NettyClient: " + error);
            exit = 1;
        } finally {
            out.close();
            group.shutdownGracefully(0, 1, TimeUnit.SECONDS);
        }
        System.exit(exit);
    }

    static String exchange(Channel connection, int i, int port, String authorization, byte[] valid, byte[] large) {
        String token = String.format("%064x", i + 1);
        byte[] body = valid;
        String topic = "com.example.app", priority = "10";
        switch (i % 10) {
            case 3 -> token = "g" + token.substring(1);
            case 5 -> topic = "";
            case 7 -> body = large;
            case 8 -> priority = "7";
            default -> {}
        }
        String sentID = i % 2 == 1 ? String.format("%08x-0000-4000-8000-%012x", i, i) : "";
        int refused = 0;
        String error = null;
        Exchange exchange = null;
        for (int attempt = 0; attempt < 50; attempt++) {
            Http2Headers headers = new DefaultHttp2Headers()
                .method("POST").scheme("https").authority("localhost:" + port).path("/3/device/" + token);
            headers.add("authorization", authorization);
            headers.add("apns-push-type", "alert");
            headers.add("apns-priority", priority);
            if (!topic.isEmpty()) headers.add("apns-topic", topic);
            if (!sentID.isEmpty()) headers.add("apns-id", sentID);
            Exchange current = new Exchange();
            exchange = current;
            try {
                Http2StreamChannel stream = new Http2StreamChannelBootstrap(connection).handler(exchange).open().sync().getNow();
                stream.write(new DefaultHttp2HeadersFrame(headers, false));
                ByteBuf content = Unpooled.wrappedBuffer(body);
                stream.writeAndFlush(new DefaultHttp2DataFrame(content, true)).addListener(written -> {
                    // Netty refuses locally a stream over the server's limit: never sent.
                    if (!written.isSuccess()) current.done.complete("not sent: " + written.cause());
                });
                error = exchange.done.get(20, TimeUnit.SECONDS);
            } catch (Exception failure) {
                error = "exception: " + failure;
            }
            boolean notSent = error != null && error.startsWith("not sent") && error.contains("Maximum active streams");
            if (exchange.refused || notSent) {
                refused++;
                error = null;
                try { Thread.sleep(2); } catch (InterruptedException interrupted) { break; }
                continue;
            }
            break;
        }
        StringBuilder line = new StringBuilder("{\"index\":" + i + ",\"sent_id\":" + quote(sentID) + ",\"refused\":" + refused);
        if (error != null) {
            line.append(",\"error\":").append(quote(error));
        } else {
            line.append(",\"status\":").append(exchange.status)
                .append(",\"proto\":").append(quote(protocol))
                .append(",\"apns_id\":").append(quote(exchange.apnsID));
            String text = exchange.body.toString();
            if (!text.isEmpty()) {
                Matcher reason = Pattern.compile("\"reason\"\\s*:\\s*\"([^\"]*)\"").matcher(text);
                if (reason.find()) line.append(",\"reason\":").append(quote(reason.group(1)));
                else line.append(",\"error\":").append(quote("body has no reason: " + text));
            }
        }
        return line.append("}").toString();
    }
}
