// Load (bounded, loopback only): 32 concurrent streaming clients share a fixed number of requests against
// `ds4 serve` on the tiny model. No request fails, no sequence is left active or queued, and the p50/p99
// latencies are printed (never asserted).
'use strict';
const { describe, it, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { makeTestModel, startServe, metric, collectChat } = require('./support.cjs');

const CLIENTS = 32;
const REQUESTS = 96;

function percentile(sorted, p) {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

describe('load', () => {
  let srv;
  before(async () => {
    srv = await startServe(makeTestModel(), ['--name', 'tiny', '--parallel', '2', '--max-queue', '64']);
  });
  after(async () => { await srv.stop(); });

  it(`${CLIENTS} streaming clients, ${REQUESTS} requests`, async () => {
    let next = 0;
    const latency = [];
    const ttft = [];
    const failures = [];
    async function worker(id) {
      const client = srv.client();
      while (next < REQUESTS) {
        const n = next++;
        const t0 = performance.now();
        try {
          const stream = await client.chat.completions.create({
            model: 'tiny', messages: [{ role: 'user', content: `request ${n} from client ${id}` }],
            max_tokens: 16, seed: n, stream: true, stream_options: { include_usage: true },
          });
          let first = null;
          const s = await collectChat((async function* () {
            for await (const c of stream) {
              if (first === null && c.choices[0]?.delta?.content !== undefined) first = performance.now();
              yield c;
            }
          })());
          if (!s.finish || !s.usage) throw new Error(`incomplete stream: ${JSON.stringify(s)}`);
          latency.push(performance.now() - t0);
          ttft.push((first ?? performance.now()) - t0);
        } catch (e) {
          failures.push(`${n}: ${e.message}`);
        }
      }
    }
    await Promise.all(Array.from({ length: CLIENTS }, (_, i) => worker(i)));
    latency.sort((a, b) => a - b);
    ttft.sort((a, b) => a - b);
    console.log(`load: ${REQUESTS} requests, ${CLIENTS} clients: latency p50 ${percentile(latency, 50).toFixed(1)} ms, ` +
      `p99 ${percentile(latency, 99).toFixed(1)} ms; first chunk p50 ${percentile(ttft, 50).toFixed(1)} ms, ` +
      `p99 ${percentile(ttft, 99).toFixed(1)} ms`);
    assert.deepEqual(failures, []);
    assert.equal(latency.length, REQUESTS);
    assert.equal(await metric(srv.base, 'ds4_active_sequences'), 0);
    assert.equal(await metric(srv.base, 'ds4_queue_depth'), 0);
    assert.equal(await metric(srv.base, 'ds4_requests_total{route="/v1/chat/completions",status="200"}'), REQUESTS);
  });
});
