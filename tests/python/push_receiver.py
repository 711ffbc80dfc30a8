"""A loopback Web Push service for the browser tests: it stands where a phone's push service
would, holds one subscription's keys, and decrypts what Hearth posts as the phone would
(RFC 8291 message encryption over RFC 8188 aes128gcm), independently of Hearth's Rust code.
It also checks the VAPID header (RFC 8292): an ES256 JWT for this origin, signed by the key
in `k`.

    push_receiver.py OUT_FILE

Prints the subscription as `PushSubscription.toJSON()` would give it, on one line, then
serves until killed. Each POST is written to OUT_FILE as one JSON line:
{"payload": <the decrypted JSON>, "vapid": true|false, "ttl", "encoding"}.
"""

import base64
import hashlib
import hmac
import http.server
import json
import os
import sys

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature
from cryptography.hazmat.primitives.ciphers.aead import AESGCM


def b64u(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def unb64u(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def hkdf(salt, ikm, info, length):
    """RFC 5869 with SHA-256, one block or two."""
    prk = hmac.new(salt, ikm, hashlib.sha256).digest()
    out, block, counter = b"", b"", 1
    while len(out) < length:
        block = hmac.new(prk, block + info + bytes([counter]), hashlib.sha256).digest()
        out += block
        counter += 1
    return out[:length]


PRIVATE = ec.generate_private_key(ec.SECP256R1())
UA_PUBLIC = PRIVATE.public_key().public_bytes(serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)
AUTH = os.urandom(16)


def decrypt(body):
    """RFC 8291 section 3.4 and RFC 8188 section 2: one record, padding delimiter 0x02."""
    salt, record_size, id_length = body[:16], int.from_bytes(body[16:20], "big"), body[20]
    as_public = body[21:21 + id_length]
    ciphertext = body[21 + id_length:]
    if len(ciphertext) > record_size:
        raise ValueError("more than one record")
    shared = PRIVATE.exchange(ec.ECDH(), ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), as_public))
    ikm = hkdf(AUTH, shared, b"WebPush: info\x00" + UA_PUBLIC + as_public, 32)
    cek = hkdf(salt, ikm, b"Content-Encoding: aes128gcm\x00", 16)
    nonce = hkdf(salt, ikm, b"Content-Encoding: nonce\x00", 12)
    plain = AESGCM(cek).decrypt(nonce, ciphertext, None).rstrip(b"\x00")
    if not plain.endswith(b"\x02"):
        raise ValueError("the last record does not end in the 0x02 delimiter")
    return json.loads(plain[:-1])


def vapid_ok(header, origin):
    """`vapid t=<jwt>, k=<key>`: the JWT is ES256 over the key, for this origin."""
    if not header or not header.startswith("vapid "):
        return False
    fields = dict(part.strip().split("=", 1) for part in header[len("vapid "):].split(","))
    jwt, key = fields.get("t", ""), fields.get("k", "")
    head, claims, signature = jwt.split(".")
    if json.loads(unb64u(head)).get("alg") != "ES256" or json.loads(unb64u(claims)).get("aud") != origin:
        return False
    raw = unb64u(signature)
    public = ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), unb64u(key))
    try:
        public.verify(encode_dss_signature(int.from_bytes(raw[:32], "big"), int.from_bytes(raw[32:], "big")),
                      f"{head}.{claims}".encode(), ec.ECDSA(hashes.SHA256()))
        return True
    except InvalidSignature:
        return False


class Push(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("content-length", "0")))
        origin = f"http://127.0.0.1:{self.server.server_address[1]}"
        record = {"vapid": vapid_ok(self.headers.get("authorization"), origin), "ttl": self.headers.get("ttl"),
                  "encoding": self.headers.get("content-encoding")}
        try:
            record["payload"] = decrypt(body)
        except Exception as error:  # what failed is the test's finding, not a crash
            record["error"] = repr(error)
        with open(sys.argv[1], "a", encoding="utf-8") as out:
            out.write(json.dumps(record) + "\n")
        self.send_response(201)
        self.end_headers()

    def log_message(self, *args):
        pass


def main():
    server = http.server.HTTPServer(("127.0.0.1", 0), Push)
    endpoint = f"http://127.0.0.1:{server.server_address[1]}/push/subscription-1"
    print(json.dumps({"endpoint": endpoint, "expirationTime": None,
                      "keys": {"p256dh": b64u(UA_PUBLIC), "auth": b64u(AUTH)}}), flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
