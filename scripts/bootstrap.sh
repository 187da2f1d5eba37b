#!/usr/bin/env bash
# Installs what swift-apns needs on a Debian machine, and nothing that is already there.
#   scripts/bootstrap.sh          build dependencies (libssl-dev, libnghttp2-dev, pkg-config)
#   scripts/bootstrap.sh --test   plus the outside tools the tests check against
#                                 (openssl, curl, nghttp2-client for nghttp and h2load, tinyproxy
#                                 and microsocks for HTTP and SOCKS5 proxies,
#                                 python3-jwt and python3-cryptography to sign provider tokens,
#                                 python3-h2 for an HTTP/2 server independent of ours,
#                                 golang-go for Go's HTTP/2 server, a third one,
#                                 cargo and Debian's Rust crates for h2/rustls/ring, a fourth,
#                                 a JDK and Netty for Pushy's HTTP/2 stack, a fifth)
set -euo pipefail

packages=(libssl-dev libnghttp2-dev pkg-config)
if [[ "${1:-}" == "--test" ]]; then
    packages+=(openssl curl nghttp2-client tinyproxy microsocks python3-jwt python3-cryptography python3-h2 golang-go
        cargo librust-h2-dev librust-tokio-dev librust-tokio-rustls-dev librust-rustls-pemfile-dev
        librust-ring-dev librust-base64-dev librust-serde-json-dev librust-http-dev librust-bytes-dev
        librust-futures-util-dev openjdk-17-jdk-headless libnetty-java)
fi

missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if ((${#missing[@]})); then
    sudo=""
    if [[ $(id -u) -ne 0 ]]; then sudo="sudo"; fi
    echo "bootstrap: installing ${missing[*]}" >&2
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi

if ! command -v swift >/dev/null 2>&1; then
    echo "bootstrap: the Swift toolchain (6.2 or later) is not on PATH; install it from swift.org" >&2
    exit 1
fi
