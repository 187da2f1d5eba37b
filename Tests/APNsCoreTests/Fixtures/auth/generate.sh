#!/bin/sh
# Regenerates the key fixtures with the openssl CLI (OpenSSL 3) and the token made by
# another JOSE implementation (Python joserfc on cryptography). Not run by the tests:
# the files are committed so the tests do not depend on Python. These keys exist only
# for tests: they are not secret and APNs has never seen them.
set -eu
cd "$(dirname "$0")"
# The kind of key Apple issues: PKCS#8 PEM, EC P-256 ("prime256v1").
openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out p256.p8
openssl pkey -in p256.p8 -pubout -out p256.pub.pem
openssl pkey -in p256.p8 -outform DER -out p256.p8.der
# The same curve in SEC 1 form ("BEGIN EC PRIVATE KEY"), accepted too.
openssl ec -in p256.p8 -out p256.sec1.pem 2>/dev/null
# Keys APNs would not accept.
openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-384 -out p384.p8
openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:secp256k1 -out secp256k1.p8
openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out rsa2048.p8
openssl genpkey -algorithm ED25519 -out ed25519.p8
openssl pkcs8 -topk8 -in p256.p8 -v2 aes-256-cbc -passout pass:fixture -out p256.encrypted.p8
openssl ec -in p256.p8 -aes256 -passout pass:fixture -out p256.encrypted.sec1.pem 2>/dev/null
printf -- '-----BEGIN PRIVATE KEY-----\nbm90IGEga2V5IGF0IGFsbCwganVzdCB0ZXh0\n-----END PRIVATE KEY-----\n' > garbage.p8
# A token signed by joserfc, with its public key.
python3 external_token.py
# RFC 7515 Appendix A.3: the example public key as PEM, checked against its signature.
python3 rfc7515_a3.py
