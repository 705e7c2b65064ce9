// Every error of the issue through the openai client (or raw fetch where the client cannot send the bytes),
// each followed by a valid request that succeeds: malformed JSON, wrong field types, fields that matter,
// unknown model, prompt plus max_tokens over the context, an oversize body (413), a full queue (503 with
// Retry-After) and invalid logits (500 naming them).
'use strict';
const { describe, it, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { makeTestModel, startServe, startScripted, apiError, eventually, metric } = require('./support.cjs');

const messages = [{ role: 'user', content: 'hi' }];

function assertShape(body, status, code, param) {
  assert.ok(body.error, JSON.stringify(body));
  assert.equal(typeof body.error.message, 'string');
  assert.ok(body.error.message.length > 0);
  assert.equal(typeof body.error.type, 'string');
  assert.ok('param' in body.error && 'code' in body.error);
  assert.equal(body.error.code, code);
  if (param !== undefined) assert.equal(body.error.param, param);
}

describe('errors from ds4 serve', () => {
  let srv;
  let client;
  before(async () => {
    srv = await startServe(makeTestModel(), ['--name', 'tiny', '--ctx', '512', '--max-body-bytes', '65536']);
    client = srv.client();
  });
  after(async () => { await srv.stop(); });

  async function succeeds() {
    const r = await client.chat.completions.create({ model: 'tiny', messages, max_tokens: 3, seed: 1 });
    assert.equal(r.object, 'chat.completion');
  }

  it('malformed JSON is a 400', async () => {
    for (const body of ['{', 'nope', '{"model": "tiny", "messages": [}']) {
      const res = await fetch(`${srv.base}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
      assert.equal(res.status, 400);
      assertShape(await res.json(), 400, 'invalid_json');
      await succeeds();
    }
  });

  it('wrong field types are a 400 naming the field', async () => {
    let e = await apiError(client.chat.completions.create({ model: 'tiny', messages, temperature: 'hot' }));
    assert.equal(e.status, 400);
    assert.equal(e.param, 'temperature');
    assert.equal(e.code, 'invalid_type');
    await succeeds();
    e = await apiError(client.chat.completions.create({ model: 'tiny', messages: 'hi' }));
    assert.equal(e.status, 400);
    assert.equal(e.param, 'messages');
    await succeeds();
  });

  it('fields that matter are refused, not ignored', async () => {
    let e = await apiError(client.chat.completions.create({ model: 'tiny', messages, n: 2 }));
    assert.equal(e.status, 400);
    assert.equal(e.param, 'n');
    await succeeds();
    e = await apiError(client.chat.completions.create({ model: 'tiny', messages, response_format: { type: 'json_object' } }));
    assert.equal(e.status, 400);
    assert.equal(e.param, 'response_format');
    await succeeds();
  });

  it('an unknown model is a 404', async () => {
    const e = await apiError(client.chat.completions.create({ model: 'gpt-9', messages }));
    assert.equal(e.status, 404);
    assert.equal(e.code, 'model_not_found');
    await succeeds();
  });

  it('prompt plus max_tokens over the context is a 400', async () => {
    let e = await apiError(client.chat.completions.create({ model: 'tiny', messages, max_tokens: 600 }));
    assert.equal(e.status, 400);
    assert.equal(e.code, 'context_length_exceeded');
    assert.match(e.message, /512/);
    await succeeds();
    e = await apiError(client.chat.completions.create({ model: 'tiny', messages: [{ role: 'user', content: 'word '.repeat(600) }] }));
    assert.equal(e.status, 400);
    assert.equal(e.code, 'context_length_exceeded');
    await succeeds();
  });

  it('an oversize body is a 413', async () => {
    const e = await apiError(client.chat.completions.create({ model: 'tiny', messages: [{ role: 'user', content: 'x'.repeat(70000) }] }));
    assert.equal(e.status, 413);
    assert.equal(e.code, 'request_too_large');
    await succeeds();
  });
});

describe('errors from the scheduler and the model', () => {
  let srv;
  let client;
  before(async () => {
    srv = await startScripted(makeTestModel(), [
      { trigger: '', text: 'ok' },
      { trigger: 'long', text: 'tick ', repeat: 1000000 },
      { trigger: 'nan', text: 'abc', nan_at: 0 },
    ], ['--parallel', '1', '--max-queue', '1']);
    client = srv.client();
  });
  after(async () => { await srv.stop(); });

  it('a full queue is a 503 with Retry-After', async () => {
    // One endless stream runs, one waits in the queue, the third is refused.
    const controllers = [new AbortController(), new AbortController()];
    const running = await client.chat.completions.create(
      { model: 'scripted', messages: [{ role: 'user', content: 'long one' }], stream: true }, { signal: controllers[0].signal });
    const it0 = running[Symbol.asyncIterator]();
    await it0.next();  // the first is generating
    const queued = client.chat.completions.create(
      { model: 'scripted', messages: [{ role: 'user', content: 'long two' }], stream: true }, { signal: controllers[1].signal });
    queued.catch(() => {});
    assert.ok(await eventually(async () => (await metric(srv.base, 'ds4_queue_depth')) === 1));
    const e = await apiError(client.chat.completions.create({ model: 'scripted', messages }));
    assert.equal(e.status, 503);
    assert.equal(e.code, 'server_overloaded');
    assert.ok(Number(e.headers['retry-after']) >= 1);
    controllers.forEach((c) => c.abort());
    assert.ok(await eventually(async () => (await metric(srv.base, 'ds4_active_sequences')) === 0 &&
      (await metric(srv.base, 'ds4_queue_depth')) === 0));
    const r = await client.chat.completions.create({ model: 'scripted', messages });
    assert.equal(r.choices[0].message.content, 'ok');
  });

  it('invalid logits are a 500 naming them', async () => {
    for (const stream of [false, true]) {
      const e = await apiError(client.chat.completions.create({ model: 'scripted', messages: [{ role: 'user', content: 'nan' }], stream }));
      assert.equal(e.status, 500);
      assert.equal(e.code, 'invalid_logits');
      assert.match(e.message, /invalid logits/i);
      const r = await client.chat.completions.create({ model: 'scripted', messages });
      assert.equal(r.choices[0].message.content, 'ok');
    }
  });
});
