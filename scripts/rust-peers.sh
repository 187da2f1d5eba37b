#!/usr/bin/env bash
# Builds the test suite's Rust programs (the independent HTTP/2 peers on Rust's h2 crate,
# rustls and ring) with cargo, offline, from the crates Debian packages
# (/usr/share/cargo/registry; scripts/bootstrap.sh --test installs them).
#   scripts/rust-peers.sh          builds every program (a directory of Tests/ holding
#                                  Cargo.toml and main.rs)
#   scripts/rust-peers.sh DIR...   builds those
# Each program's sources are copied into .build/apns-rust-programs/<name>/ (so cargo's
# lock file stays out of the tree) when they changed, and built there in release; the
# executables are in .build/apns-rust-programs/target/release/. A fresh build takes
# about a minute on 2 cores, an unchanged one well under a second. scripts/test.sh runs it
# before the tests, so that the build does not compete with them for the cores; the
# tests run it again (TestTools.RustProgram), which finds everything up to date.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="$root/.build/apns-rust-programs"
mkdir -p "$out/cargo-home"
config="$out/cargo-home/config.toml"
wanted='[source.crates-io]
replace-with = "debian"

[source.debian]
directory = "/usr/share/cargo/registry"

[net]
offline = true'
[[ -f "$config" && "$(cat "$config")" == "$wanted" ]] || printf '%s\n' "$wanted" > "$config"

# Debian's cargo and rustc, the ones scripts/bootstrap.sh installs beside the crates, even
# when another toolchain (rustup's) comes first on PATH: the build is then the same as on
# a fresh machine. Without them, whatever cargo is on PATH.
if [[ -x /usr/bin/cargo && -x /usr/bin/rustc ]]; then
    cargo=/usr/bin/cargo rustc=/usr/bin/rustc
else
    cargo="$(command -v cargo || true)" rustc="$(command -v rustc || true)"
    [[ -n "$cargo" ]] || { echo "rust-peers: cargo is not installed (scripts/bootstrap.sh --test installs it)" >&2; exit 1; }
fi

if (($# == 0)); then
    mapfile -t programs < <(find "$root/Tests" -name Cargo.toml -printf '%h\n' | sort)
else
    programs=("$@")
fi
for program in "${programs[@]}"; do
    name="$(basename "$program")"
    mkdir -p "$out/$name"
    for file in Cargo.toml main.rs; do
        # Copied only when changed, so that cargo's check of modification times holds.
        cmp -s "$program/$file" "$out/$name/$file" || cp "$program/$file" "$out/$name/$file"
    done
    # The lock file is made again each time (offline, from the registry): a lock file
    # from one cargo may be unreadable by an older one.
    rm -f "$out/$name/Cargo.lock"
    CARGO_HOME="$out/cargo-home" CARGO_TARGET_DIR="$out/target" RUSTC="$rustc" \
        timeout 900 "$cargo" build --release --offline --quiet --manifest-path "$out/$name/Cargo.toml"
done
