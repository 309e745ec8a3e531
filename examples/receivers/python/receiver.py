"""A minimal herald webhook receiver on the Python standard library.

    HERALD_WEBHOOK_TOKEN=whsec_... PORT=8000 python3 receiver.py

The signature covers the raw body bytes: read exactly Content-Length bytes,
verify them, and only then decode the JSON.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

TOKEN = os.environ.get("HERALD_WEBHOOK_TOKEN", "").encode("utf-8")
PORT = int(os.environ.get("PORT", "8000"))
MAX_BODY_BYTES = 1 << 20


def verify(body: bytes, signature: str | None) -> bool:
    """Report whether signature is base64(HMAC-SHA256(TOKEN, body))."""
    if not signature:
        return False
    expected = base64.b64encode(hmac.new(TOKEN, body, hashlib.sha256).digest())
    given = signature.encode("ascii", "replace")
    # Lengths first, then a constant-time comparison of the bytes.
    return len(given) == len(expected) and hmac.compare_digest(given, expected)


class Receiver(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:
        try:
            length = int(self.headers.get("Content-Length", ""))
        except ValueError:
            return self.answer(411, b"Content-Length required\n")
        if length < 0 or length > MAX_BODY_BYTES:
            self.close_connection = True
            return self.answer(413, b"body too large\n")
        body = self.rfile.read(length)

        # self.headers.get matches header names case-insensitively.
        if not verify(body, self.headers.get("webhook-signature")):
            return self.answer(401, b"invalid signature\n")
        try:
            payload = json.loads(body)
        except ValueError:
            return self.answer(400, b"malformed payload\n")
        # Herald may deliver an event more than once: de-duplicate on
        # payload["id"], and queue slow work rather than doing it before
        # answering.
        print(payload.get("event"), payload.get("id"), flush=True)
        self.answer(204)

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
    if not TOKEN:
        sys.exit("set HERALD_WEBHOOK_TOKEN to the webhook's token")
    server = ThreadingHTTPServer(("127.0.0.1", PORT), Receiver)
    host, port = server.server_address[:2]  # PORT=0 picks a free port
    print(f"listening on {host}:{port}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
