// A streaming client killed mid-stream: its generation is cancelled, the next requests are served, no
// sequence is left active, and the server's memory does not grow over many such kills.
'use strict';
const { describe, it, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { spawn } = require('node:child_process');
const fs = require('node:fs');
const { OPENAI_MODULE, makeTestModel, startScripted, metric, eventually } = require('./support.cjs');

// A separate node process streams an endless reply and prints each chunk; it is killed with SIGKILL once
// chunks arrive, so its socket closes the way a crashed client's does.
function killedStreamingClient(base) {
  const code = `
    const OpenAI = require(${JSON.stringify(OPENAI_MODULE)});
    const c = new OpenAI({ baseURL: '${base}/v1', apiKey: 'x', maxRetries: 0 });
    (async () => {
      const s = await c.chat.completions.create({ model: 'scripted', messages: [{ role: 'user', content: 'endless' }], stream: true });
      for await (const chunk of s) process.stdout.write('chunk\\n');
    })();`;
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['-e', code], { stdio: ['ignore', 'pipe', 'pipe'] });
    let seen = 0;
    let err = '';
    child.stderr.on('data', (d) => { err += d; });
    child.stdout.on('data', (d) => {
      seen += String(d).split('\n').length - 1;
      if (seen >= 5 && child.exitCode === null) child.kill('SIGKILL');
    });
    child.on('exit', (code, signal) => (signal === 'SIGKILL' ? resolve() : reject(new Error(`client ended on its own: ${code} ${err}`))));
  });
}

function rssKiB(pid) {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(status.match(/VmRSS:\s+(\d+)/)[1]);
}

describe('client disconnects', () => {
  let srv;
  let client;
  before(async () => {
    // Few HTTP threads: each thread's first connections grow its stack and malloc arena once, which with
    // many threads would look like growth; with four, the warm-up rounds touch them all.
    srv = await startScripted(makeTestModel(), [{ trigger: '', text: 'ok' }, { trigger: 'endless', text: 'tick ', repeat: 1000000 }],
      ['--http-threads', '4']);
    client = srv.client();
  });
  after(async () => { await srv.stop(); });

  async function killOnce(round) {
    await killedStreamingClient(srv.base);
    assert.ok(await eventually(async () => (await metric(srv.base, 'ds4_active_sequences')) === 0), 'generation cancelled');
    assert.equal(await metric(srv.base, 'ds4_requests_cancelled_total'), round);
    const r = await client.chat.completions.create({ model: 'scripted', messages: [{ role: 'user', content: 'hi' }] });
    assert.equal(r.choices[0].message.content, 'ok');
  }

  it('cancels the generation, serves the next requests, and does not grow', async () => {
    let round = 0;
    for (; round < 4; ) await killOnce(++round);  // warm up allocator arenas and thread stacks
    const before = rssKiB(srv.proc.pid);
    for (let i = 0; i < 12; i++) await killOnce(++round);
    const grown = rssKiB(srv.proc.pid) - before;
    console.log(`server RSS ${before} KiB -> ${before + grown} KiB after 12 killed clients`);
    assert.ok(grown < 8 * 1024, `RSS grew by ${grown} KiB`);
    assert.ok((await metric(srv.base, 'ds4_generation_tokens_total')) < 1e6, 'generations stopped early');
  });
});
