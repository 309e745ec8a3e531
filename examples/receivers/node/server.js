// A minimal herald webhook receiver on node:http, with no dependencies.
//
//   HERALD_WEBHOOK_TOKEN=whsec_... PORT=8000 node server.js
//
// While the webhook's token is being rotated, also set
// HERALD_WEBHOOK_NEXT_TOKEN to the next token: a delivery signed with either
// is accepted (see "Rotating the token" in docs/receiving.md).
//
// For a webhook signed with ed25519 (signatureScheme
// standard-webhooks-ed25519), set HERALD_WEBHOOK_TOKEN to its public key,
// whpk_... (and HERALD_WEBHOOK_NEXT_TOKEN to the next one during a
// rotation): the receiver then holds no secret, and verifies the v1a
// signatures with node:crypto alone (see "Verifying without the secret").
//
// The signature covers the raw body bytes, so the body is kept as Buffers
// until it is verified: no setEncoding, no string concatenation, no JSON
// parsing before the hash.
//
// Each license's events carry a sequence. Deliveries can arrive out of
// order (a failed attempt is retried while newer events go through), so the
// receiver keeps the sequence of the last event it applied to each resource
// and skips an older or repeated one, printing it as stale (see "Applying
// events in order" in docs/receiving.md). A real receiver keeps that number
// beside the row it mirrors, in its own database.
'use strict';

const crypto = require('node:crypto');
const http = require('node:http');

// An ed25519 public key in DER (SPKI) is this fixed prefix and its 32 bytes.
const ed25519SPKIPrefix = Buffer.from('302a300506032b6570032100', 'hex');

const token = process.env.HERALD_WEBHOOK_TOKEN;
if (!token) {
  console.error('set HERALD_WEBHOOK_TOKEN to the webhook\'s token');
  process.exit(1);
}
// Every token a delivery may be signed with: during a rotation, two.
const tokens = [token, process.env.HERALD_WEBHOOK_NEXT_TOKEN].filter(Boolean);
// whpk_ tokens are an ed25519 webhook's public keys.
const publicKeys = tokens.every((t) => t.startsWith('whpk_')) ? tokens.map(publicKey) : null;
const port = Number(process.env.PORT ?? 8000);
const maxBodyBytes = 1 << 20;
// By resource id (a license's or an activation's): the sequence of the last
// event applied to it.
const applied = new Map();

// isNewer reports whether payload should be applied: it concerns no
// license (no sequence), or it is numbered higher than the last event
// applied to its resource. A gap is fine: data is the whole resource, and
// the events in between, when they come, are older.
function isNewer(payload) {
  if (typeof payload.sequence !== 'number') return true;
  return payload.sequence > (applied.get(payload.data?.id) ?? 0);
}

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

// publicKey reads a whpk_ key: "whpk_" and the base64 of 32 bytes.
function publicKey(text) {
  const raw = Buffer.from(text.slice('whpk_'.length), 'base64');
  if (raw.length !== 32) throw new Error(`${text} is not a whpk_ key of 32 bytes`);
  return crypto.createPublicKey({ key: Buffer.concat([ed25519SPKIPrefix, raw]), format: 'der', type: 'spki' });
}

// verifyEd25519 reports whether any v1a signature of the webhook-signature
// header is the ed25519 signature, under any of keys, of webhook-id,
// webhook-timestamp and the raw body joined by dots, with a timestamp
// within 5 minutes of now (replay protection).
function verifyEd25519(body, headers, keys) {
  const id = headers['webhook-id'];
  const timestamp = headers['webhook-timestamp'];
  const signatures = headers['webhook-signature'];
  if (!id || !/^[0-9]+$/.test(timestamp ?? '') || typeof signatures !== 'string') return false;
  if (Math.abs(Date.now() / 1000 - Number(timestamp)) > 5 * 60) return false;
  const signed = Buffer.concat([Buffer.from(`${id}.${timestamp}.`), body]);
  return signatures.split(' ').some((s) => s.startsWith('v1a,') &&
    keys.some((key) => crypto.verify(null, signed, key, Buffer.from(s.slice(4), 'base64'))));
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
    const verified = publicKeys
      ? verifyEd25519(body, req.headers, publicKeys)
      : verifyAny(body, req.headers['webhook-signature'], tokens);
    if (!verified) {
      return answer(res, 401, 'invalid signature\n');
    }
    let payload;
    try {
      payload = JSON.parse(body.toString('utf8'));
    } catch {
      return answer(res, 400, 'malformed payload\n');
    }
    // Herald may deliver an event more than once, and a retried one after
    // newer ones: apply an event only over older state. A stale one is
    // still answered 2xx, or herald would retry it. Queue slow work rather
    // than doing it before answering.
    if (!isNewer(payload)) {
      console.log(`${payload.event} ${payload.id} stale`);
      return answer(res, 204);
    }
    if (typeof payload.sequence === 'number') applied.set(payload.data.id, payload.sequence);
    console.log(`${payload.event} ${payload.id}`);
    answer(res, 204);
  });
});

server.listen(port, '127.0.0.1', () => {
  const bound = server.address(); // PORT=0 picks a free port
  console.log(`listening on ${bound.address}:${bound.port}`);
});
