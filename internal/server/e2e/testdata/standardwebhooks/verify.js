// Verifies herald deliveries with the official Standard Webhooks verifiers:
// npm standardwebhooks and svix. Reads a JSON array of
// {secret, headers, body} from the file named by argv[2] and prints, for
// each, {standardwebhooks, svix}: true when that library accepted it.
"use strict";
const fs = require("fs");
const { Webhook } = require("standardwebhooks");
const svix = require("svix");

const cases = JSON.parse(fs.readFileSync(process.argv[2], "utf8"));
const verdict = (f) => {
  try {
    f();
    return true;
  } catch (e) {
    return false;
  }
};
const out = cases.map((c) => ({
  standardwebhooks: verdict(() => new Webhook(c.secret).verify(c.body, c.headers)),
  svix: verdict(() => new svix.Webhook(c.secret).verify(c.body, c.headers)),
}));
process.stdout.write(JSON.stringify(out));
