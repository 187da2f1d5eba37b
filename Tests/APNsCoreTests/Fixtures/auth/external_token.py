# Writes external-es256.jwt: an APNs provider token signed by joserfc (not our code),
# its public key external-es256.pub.pem, and the values it carries.
import json
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives import serialization
from joserfc import jwt
from joserfc.jwk import ECKey

private = ec.generate_private_key(ec.SECP256R1())
pem = private.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                            serialization.NoEncryption())
key = ECKey.import_key(pem)
header = {"alg": "ES256", "kid": "ABC123DEFG"}
claims = {"iss": "DEF123GHIJ", "iat": 1437179036}
token = jwt.encode(header, claims, key)
open("external-es256.jwt", "w").write(token + "\n")
open("external-es256.pub.pem", "wb").write(private.public_key().public_bytes(
    serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
json.dump({"kid": "ABC123DEFG", "iss": "DEF123GHIJ", "iat": 1437179036},
          open("external-es256.json", "w"))
