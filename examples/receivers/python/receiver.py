"""A minimal herald webhook receiver on the Python standard library.

    HERALD_WEBHOOK_TOKEN=whsec_... PORT=8000 python3 receiver.py

While the webhook's token is being rotated, also set
HERALD_WEBHOOK_NEXT_TOKEN to the next token: a delivery signed with either
is accepted (see "Rotating the token" in docs/receiving.md).

For a webhook signed with ed25519 (signatureScheme
standard-webhooks-ed25519), set HERALD_WEBHOOK_TOKEN to its public key,
whpk_... (and HERALD_WEBHOOK_NEXT_TOKEN to the next one during a rotation):
the receiver then holds no secret, and verifies the v1a signatures with the
cryptography package (pip install cryptography, or Debian's
python3-cryptography); see "Verifying without the secret".

The signature covers the raw body bytes: read them exactly (Content-Length
bytes, or a chunked body's chunks joined), verify them, and only then decode
the JSON.

Each license's events carry a sequence. Deliveries can arrive out of order
(a failed attempt is retried while newer events go through), so the
receiver keeps the sequence of the last event it applied to each resource
and skips an older or repeated one, printing it as stale (see "Applying
events in order" in docs/receiving.md). A real receiver keeps that number
beside the row it mirrors, in its own database.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import re
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

TOKEN = os.environ.get("HERALD_WEBHOOK_TOKEN", "").encode("utf-8")
NEXT_TOKEN = os.environ.get("HERALD_WEBHOOK_NEXT_TOKEN", "").encode("utf-8")
# Every token a delivery may be signed with: during a rotation, two.
TOKENS = [t for t in (TOKEN, NEXT_TOKEN) if t]
PORT = int(os.environ.get("PORT", "8000"))
MAX_BODY_BYTES = 1 << 20
# The ed25519 public keys, when the tokens are whpk_ keys (set in main).
PUBLIC_KEYS: list | None = None
# By resource id (a license's or an activation's): the sequence of the last
# event applied to it.
APPLIED: dict[str, int] = {}
APPLIED_LOCK = threading.Lock()
CHUNK_SIZE = re.compile(rb"([0-9A-Fa-f]{1,8})[ \t]*(?:;[^\r\n]*)?\r?\n\Z")


def verify(body: bytes, signature: str | None, token: bytes) -> bool:
    """Report whether signature is base64(HMAC-SHA256(token, body))."""
    if not signature:
        return False
    expected = base64.b64encode(hmac.new(token, body, hashlib.sha256).digest())
    given = signature.encode("ascii", "replace")
    # Lengths first, then a constant-time comparison of the bytes.
    return len(given) == len(expected) and hmac.compare_digest(given, expected)


def apply_if_newer(payload: dict) -> bool:
    """Record and report whether payload should be applied: it concerns no
    license (no sequence), or it is numbered higher than the last event
    applied to its resource. A gap is fine: data is the whole resource, and
    the events in between, when they come, are older."""
    sequence = payload.get("sequence")
    if not isinstance(sequence, int):
        return True
    data = payload.get("data")
    resource = data.get("id") if isinstance(data, dict) else None
    with APPLIED_LOCK:
        if sequence <= APPLIED.get(resource, 0):
            return False
        APPLIED[resource] = sequence
        return True


def public_keys(tokens: list[bytes]) -> list | None:
    """Return the ed25519 public keys the tokens are, when all are whpk_
    keys ("whpk_" and the base64 of 32 bytes); None for HMAC tokens."""
    if not tokens or not all(t.startswith(b"whpk_") for t in tokens):
        return None
    # Imported only here: an HMAC receiver needs nothing beyond the
    # standard library.
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    return [Ed25519PublicKey.from_public_bytes(base64.b64decode(t[len(b"whpk_"):], validate=True)) for t in tokens]


def verify_ed25519(body: bytes, headers, keys: list) -> bool:
    """Report whether any v1a signature of the webhook-signature header is
    the ed25519 signature, under any of keys, of webhook-id,
    webhook-timestamp and the raw body joined by dots, with a timestamp
    within 5 minutes of now (replay protection)."""
    from cryptography.exceptions import InvalidSignature

    msg_id = headers.get("webhook-id")
    timestamp = headers.get("webhook-timestamp") or ""
    signatures = headers.get("webhook-signature") or ""
    if not msg_id or not timestamp.isdigit() or abs(time.time() - int(timestamp)) > 5 * 60:
        return False
    signed = f"{msg_id}.{timestamp}.".encode("utf-8") + body
    for sig in signatures.split(" "):
        if not sig.startswith("v1a,"):
            continue
        try:
            raw = base64.b64decode(sig[len("v1a,"):], validate=True)
        except ValueError:
            continue
        for key in keys:
            try:
                key.verify(raw, signed)
                return True
            except InvalidSignature:
                pass
    return False


def verify_any(body: bytes, signature: str | None, tokens: list[bytes]) -> bool:
    """Report whether signature verifies under any of tokens."""
    # Every token is tried, so the time taken does not tell which matched.
    results = [verify(body, signature, token) for token in tokens]
    return any(results)


class BodyError(Exception):
    """A request whose body cannot be read, with the answer to give."""

    def __init__(self, status: int, text: bytes) -> None:
        super().__init__(text)
        self.status, self.text = status, text


class Receiver(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:
        try:
            body = self.read_body()
        except BodyError as e:
            # The rest of the body is unread: this connection is done.
            self.close_connection = True
            return self.answer(e.status, e.text)

        # self.headers.get matches header names case-insensitively.
        if PUBLIC_KEYS is not None:
            verified = verify_ed25519(body, self.headers, PUBLIC_KEYS)
        else:
            verified = verify_any(body, self.headers.get("webhook-signature"), TOKENS)
        if not verified:
            return self.answer(401, b"invalid signature\n")
        try:
            payload = json.loads(body)
        except ValueError:
            return self.answer(400, b"malformed payload\n")
        # Herald may deliver an event more than once, and a retried one
        # after newer ones: apply an event only over older state. A stale
        # one is still answered 2xx, or herald would retry it. Queue slow
        # work rather than doing it before answering.
        if not isinstance(payload, dict):
            return self.answer(400, b"malformed payload\n")
        if not apply_if_newer(payload):
            print(payload.get("event"), payload.get("id"), "stale", flush=True)
            return self.answer(204)
        print(payload.get("event"), payload.get("id"), flush=True)
        self.answer(204)

    def read_body(self) -> bytes:
        """Return the raw body: Content-Length bytes, or the chunks of a
        chunked body joined (http.server decodes neither)."""
        coding = self.headers.get("Transfer-Encoding")
        if coding is not None:
            if "Content-Length" in self.headers:
                # Both framings: which one a proxy in front used is unknown.
                raise BodyError(400, b"both Transfer-Encoding and Content-Length\n")
            if coding.strip().lower() != "chunked":
                raise BodyError(501, b"Transfer-Encoding not supported\n")
            return self.read_chunked()
        try:
            length = int(self.headers.get("Content-Length", ""))
        except ValueError:
            raise BodyError(411, b"Content-Length required\n")
        if length < 0 or length > MAX_BODY_BYTES:
            raise BodyError(413, b"body too large\n")
        body = self.rfile.read(length)
        if len(body) != length:
            raise BodyError(400, b"body cut short\n")
        return body

    def read_chunked(self) -> bytes:
        """Read a chunked body: each chunk is a hex size line (maybe with
        ;extensions), that many bytes and CRLF; a zero size ends it, then
        trailer lines up to an empty one."""
        chunks, total = [], 0
        while True:
            line = self.rfile.readline(1024)
            # Hex digits only: int(…, 16) would also take "0x", "_" and "+".
            m = CHUNK_SIZE.match(line)
            if not m:
                raise BodyError(400, b"malformed chunk size\n")
            size = int(m.group(1), 16)
            if size == 0:
                break
            total += size
            if total > MAX_BODY_BYTES:
                raise BodyError(413, b"body too large\n")
            chunk = self.rfile.read(size)
            if len(chunk) != size or self.rfile.read(2) != b"\r\n":
                raise BodyError(400, b"malformed chunk\n")
            chunks.append(chunk)
        while True:  # trailers, which this receiver does not use
            line = self.rfile.readline(1024)
            if not line.endswith(b"\n"):
                raise BodyError(400, b"malformed trailer\n")
            if line in (b"\r\n", b"\n"):
                break
        return b"".join(chunks)

    def answer(self, status: int, text: bytes = b"") -> None:
        self.send_response(status)
        if text:
            self.send_header("Content-Type", "text/plain; charset=utf-8")
        if status != 204:
            self.send_header("Content-Length", str(len(text)))
        self.end_headers()
        self.wfile.write(text)

    def log_message(self, format: str, *args) -> None:
        pass  # one line per delivery, printed by do_POST, is enough


def main() -> None:
    global PUBLIC_KEYS
    if not TOKEN:
        sys.exit("set HERALD_WEBHOOK_TOKEN to the webhook's token")
    try:
        PUBLIC_KEYS = public_keys(TOKENS)
    except ValueError as e:
        sys.exit(f"HERALD_WEBHOOK_TOKEN: not a whpk_ public key of 32 bytes: {e}")
    server = ThreadingHTTPServer(("127.0.0.1", PORT), Receiver)
    host, port = server.server_address[:2]  # PORT=0 picks a free port
    print(f"listening on {host}:{port}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
