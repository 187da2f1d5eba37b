#!/usr/bin/env bash
# Builds the test suite's independent peers: programs on other HTTP/2, TLS and ECDSA
# implementations that the tests run against the SDK's client and mock server.
#   Go    a directory holding main.go: Go's standard library only (golang-go)
#   Rust  a directory holding Cargo.toml and main.rs: Rust's h2, rustls and ring, from
#         the crates Debian packages (cargo, librust-*-dev), offline
#   Java  a directory holding one .java file: Netty's HTTP/2 from Debian's jars
#         (openjdk-17-jdk-headless, libnetty-java)
# scripts/bootstrap.sh --test installs all of these.
#
#   scripts/peers.sh                  builds every peer under Tests/
#   scripts/peers.sh DIR...           builds those
#   scripts/peers.sh --command DIR    builds one and prints the command that runs it,
#                                     one argument per line (TestTools.PeerProgram)
#
# Everything goes to .build/apns-peers/ (ignored by git) and is built again only when
# its sources changed (Go's and cargo's own caches, and javac when the source is newer).
# scripts/test.sh runs this before the tests, so that no compiler competes with them for
# the cores (tests that measure how soon a request fails were slowed by seconds); the
# tests run it again, and find everything up to date.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="$root/.build/apns-peers"
netty_jars="$(printf '/usr/share/java/netty-%s.jar:' common buffer transport resolver handler codec codec-http codec-http2)"
netty_jars="${netty_jars%:}"

print=0
if [[ "${1:-}" == "--command" ]]; then print=1; shift; fi
if (($# == 0)); then
    mapfile -t programs < <(find "$root/Tests" \( -name main.go -o -name Cargo.toml -o -name '*.java' \) -printf '%h\n' | sort -u)
else
    programs=("$@")
fi

build_go() {
    local dir="$1" name; name="$(basename "$dir")"
    mkdir -p "$out/go" "$out/go-cache" "$out/go-path"
    GOCACHE="$out/go-cache" GOPATH="$out/go-path" GO111MODULE=off GOFLAGS= \
        timeout 600 go build -o "$out/go/$name" "$dir/main.go"
    command=("$out/go/$name")
}

build_rust() {
    local dir="$1" name; name="$(basename "$dir")"
    # Debian's cargo and rustc, the ones bootstrap installs beside the crates, even when
    # another toolchain (rustup's) comes first on PATH: the build here is the one a
    # fresh machine makes.
    local cargo=cargo rustc=rustc
    if [[ -x /usr/bin/cargo && -x /usr/bin/rustc ]]; then cargo=/usr/bin/cargo rustc=/usr/bin/rustc; fi
    mkdir -p "$out/cargo-home" "$out/rust/$name"
    local config="$out/cargo-home/config.toml"
    local wanted='[source.crates-io]
replace-with = "debian"

[source.debian]
directory = "/usr/share/cargo/registry"

[net]
offline = true'
    [[ -f "$config" && "$(cat "$config")" == "$wanted" ]] || printf '%s\n' "$wanted" > "$config"
    local file
    for file in Cargo.toml main.rs; do
        # Copied only when changed (cargo's lock file stays out of the tree, and its check
        # of modification times holds); the lock file is made afresh, offline, since one
        # cargo's may be unreadable by an older one.
        cmp -s "$dir/$file" "$out/rust/$name/$file" || cp "$dir/$file" "$out/rust/$name/$file"
    done
    rm -f "$out/rust/$name/Cargo.lock"
    CARGO_HOME="$out/cargo-home" CARGO_TARGET_DIR="$out/rust-target" RUSTC="$rustc" \
        timeout 900 "$cargo" build --release --offline --quiet --manifest-path "$out/rust/$name/Cargo.toml"
    local binary
    binary="$(sed -n 's/^name = "\(.*\)"$/\1/p' "$dir/Cargo.toml" | head -1)"
    command=("$out/rust-target/release/$binary")
}

build_java() {
    local dir="$1" name source class
    name="$(basename "$dir")"
    source="$(find "$dir" -maxdepth 1 -name '*.java' | head -1)"
    class="$(basename "$source" .java)"
    mkdir -p "$out/java/$name"
    if [[ ! "$out/java/$name/$class.class" -nt "$source" ]]; then
        timeout 300 javac -nowarn -d "$out/java/$name" -cp "$netty_jars" "$source"
    fi
    # C1 only and the serial collector: a JVM that starts with less work on a busy 2-core
    # machine (the peers are small; their speed is not what is measured).
    command=("$(command -v java)" -XX:TieredStopAtLevel=1 -XX:+UseSerialGC -cp "$netty_jars:$out/java/$name" "$class")
}

for program in "${programs[@]}"; do
    program="$(cd "$program" && pwd)"
    if [[ -f "$program/main.go" ]]; then build_go "$program"
    elif [[ -f "$program/Cargo.toml" ]]; then build_rust "$program"
    elif compgen -G "$program/*.java" >/dev/null; then build_java "$program"
    else echo "peers: $program holds no main.go, Cargo.toml or .java file" >&2; exit 1
    fi
    if ((print)); then printf '%s\n' "${command[@]}"; fi
done
