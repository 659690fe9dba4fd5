// One lockbench worker on node-redlock v5 over ioredis.
//
// Usage: node nodeworker.js SOCK LOCK_KEY COUNTER_KEY M TTL_MS OUT_FILE
//            RETRY_DELAY_MS RETRY_JITTER_MS
//
// Connects, prints "ready <ns>", starts when stdin reaches EOF, then does
// M cycles of: acquire (retryCount -1: retry without end), a non-atomic
// GET/SET increment of the counter, release. Writes three native int64
// stamps per cycle to OUT_FILE: acquire returned, release began, release
// returned.
//
// Stamps come from process.hrtime.bigint(): libuv's uv_hrtime(), which on
// Linux reads clock_gettime(CLOCK_MONOTONIC) and returns it unshifted, so
// it compares with the C and Python stamps. The parent checks this on
// every run: the "ready" stamp must fall between its own stamps taken
// before the spawn and after reading the line.
"use strict";

const fs = require("fs");
const Redis = require("ioredis");
const Redlock = require("redlock").default;

const now = () => process.hrtime.bigint();

async function main() {
  const [sock, key, counter, mArg, ttlArg, out, delay, jitter] =
    process.argv.slice(2);
  const m = Number(mArg);
  const ttl = Number(ttlArg);
  const client = new Redis({ path: sock, maxRetriesPerRequest: 1 });
  await client.ping();
  const redlock = new Redlock([client], {
    retryCount: -1,
    retryDelay: Number(delay),
    retryJitter: Number(jitter),
  });
  const stamps = new BigInt64Array(3 * m);

  process.stdout.write(`ready ${now()}\n`);
  await new Promise((resolve) => {
    process.stdin.on("data", () => {});
    process.stdin.on("end", resolve); // EOF is the start signal
  });
  for (let i = 0; i < m; i++) {
    const lock = await redlock.acquire([key], ttl);
    stamps[3 * i] = now();
    const v = Number((await client.get(counter)) || 0);
    await client.set(counter, String(v + 1));
    stamps[3 * i + 1] = now();
    await lock.release();
    stamps[3 * i + 2] = now();
  }
  fs.writeFileSync(out, Buffer.from(stamps.buffer));
  client.disconnect();
}

main().catch((err) => {
  process.stderr.write(`nodeworker: ${err && err.stack ? err.stack : err}\n`);
  process.exit(1);
});
