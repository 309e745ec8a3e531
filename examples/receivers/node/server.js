// A minimal herald webhook receiver on node:http, with no dependencies.
//
//   HERALD_WEBHOOK_TOKEN=whsec_... PORT=8000 node server.js
//
// While the webhook's token is being rotated, also set
// HERALD_WEBHOOK_NEXT_TOKEN to the next token: a delivery signed with either
// is accepted (see "Rotating the token" in docs/receiving.md).
//
// The signature covers the raw body bytes, so the body is kept as Buffers
// until it is verified: no setEncoding, no string concatenation, no JSON
// parsing before the hash.
'use strict';

const crypto = require('node:crypto');
const http = require('node:http');

const token = process.env.HERALD_WEBHOOK_TOKEN;
if (!token) {
  console.error('set HERALD_WEBHOOK_TOKEN to the webhook\'s token');
  process.exit(1);
}
// Every token a delivery may be signed with: during a rotation, two.
const tokens = [token, process.env.HERALD_WEBHOOK_NEXT_TOKEN].filter(Boolean);
const port = Number(process.env.PORT ?? 8000);
const maxBodyBytes = 1 << 20;

// verify reports whether signature (the header's base64 text) is
// base64(HMAC-SHA256(token, body)), comparing in constant time.
function verify(body, signature, token) {
  if (typeof signature !== 'string') return false;
  const expected = Buffer.from(
    crypto.createHmac('sha256', token).update(body).digest('base64'));
  const given = Buffer.from(signature);
  // timingSafeEqual throws on different lengths, so check them first.
  return given.length === expected.length && crypto.timingSafeEqual(given, expected);
}

// verifyAny reports whether signature verifies under any of tokens. Every
// token is tried, so the time taken does not tell which one matched.
function verifyAny(body, signature, tokens) {
  return tokens.map((token) => verify(body, signature, token)).includes(true);
}

function answer(res, status, text) {
  res.writeHead(status, text ? { 'content-type': 'text/plain; charset=utf-8' } : {});
  res.end(text);
}

const server = http.createServer((req, res) => {
  const chunks = [];
  let size = 0;
  req.on('data', (chunk) => {
    size += chunk.length;
    if (size <= maxBodyBytes) chunks.push(chunk);
  });
  req.on('end', () => {
    if (size > maxBodyBytes) return answer(res, 413, 'body too large\n');
    const body = Buffer.concat(chunks);
    // Node lower-cases incoming header names, whatever casing was sent.
    if (!verifyAny(body, req.headers['webhook-signature'], tokens)) {
      return answer(res, 401, 'invalid signature\n');
    }
    let payload;
    try {
      payload = JSON.parse(body.toString('utf8'));
    } catch {
      return answer(res, 400, 'malformed payload\n');
    }
    // Herald may deliver an event more than once: de-duplicate on
    // payload.id, and queue slow work rather than doing it before answering.
    console.log(`${payload.event} ${payload.id}`);
    answer(res, 204);
  });
});

server.listen(port, '127.0.0.1', () => {
  const bound = server.address(); // PORT=0 picks a free port
  console.log(`listening on ${bound.address}:${bound.port}`);
});
