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
# about 30 s on 2 cores, an unchanged one well under a second. scripts/test.sh runs it
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
    CARGO_HOME="$out/cargo-home" CARGO_TARGET_DIR="$out/target" \
        timeout 900 cargo build --release --offline --quiet --manifest-path "$out/$name/Cargo.toml"
done
