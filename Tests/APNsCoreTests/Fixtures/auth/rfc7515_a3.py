# RFC 7515 Appendix A.3 (JWS using ECDSA P-256 SHA-256): converts the example's public
# JWK to PEM (rfc7515-a3.pub.pem) and checks the example signature with cryptography.
import base64
from cryptography.hazmat.primitives.asymmetric import ec, utils
from cryptography.hazmat.primitives import hashes, serialization
def b64u(s): return base64.urlsafe_b64decode(s + "=" * (-len(s) % 4))
x = int.from_bytes(b64u("f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU"), "big")
y = int.from_bytes(b64u("x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"), "big")
pub = ec.EllipticCurvePublicNumbers(x, y, ec.SECP256R1()).public_key()
jws = open("rfc7515-a3.jws").read().strip()
h, p, s = jws.split(".")
sig = b64u(s)
pub.verify(utils.encode_dss_signature(int.from_bytes(sig[:32], "big"), int.from_bytes(sig[32:], "big")),
           (h + "." + p).encode(), ec.ECDSA(hashes.SHA256()))
open("rfc7515-a3.pub.pem", "wb").write(pub.public_bytes(serialization.Encoding.PEM,
    serialization.PublicFormat.SubjectPublicKeyInfo))
print("RFC 7515 A.3 signature verifies")
