// `ds4 serve` on the tiny random-weight test model, driven by the official openai client: models, chat with
// and without streaming, same-seed determinism, streamed text equal to whole text, logprobs, stop strings,
// usage counts, and the legacy completions endpoint.
'use strict';
const { describe, it, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { makeTestModel, startServe, promptTokens, collectChat } = require('./support.cjs');

describe('ds4 serve with the openai client', () => {
  let srv;
  let client;
  let modelDir;
  const messages = [{ role: 'system', content: 'You are terse.' }, { role: 'user', content: 'Hello there, who are you?' }];

  before(async () => {
    modelDir = makeTestModel();
    srv = await startServe(modelDir, ['--name', 'tiny-test', '--parallel', '2']);
    client = srv.client();
  });
  after(async () => {
    assert.equal(await srv.stop(), 0, 'clean exit on SIGTERM');
  });

  it('lists the served model', async () => {
    const list = await client.models.list();
    assert.deepEqual(list.data.map((m) => m.id), ['tiny-test']);
    const m = await client.models.retrieve('tiny-test');
    assert.equal(m.object, 'model');
  });

  it('answers a chat without streaming, with usage', async () => {
    const r = await client.chat.completions.create({ model: 'tiny-test', messages, max_tokens: 12, seed: 7 });
    assert.equal(r.object, 'chat.completion');
    assert.equal(r.choices.length, 1);
    assert.equal(r.choices[0].message.role, 'assistant');
    assert.equal(typeof r.choices[0].message.content, 'string');
    assert.ok(['stop', 'length'].includes(r.choices[0].finish_reason));
    assert.equal(r.usage.prompt_tokens, promptTokens(modelDir, messages));
    assert.ok(r.usage.completion_tokens >= 1 && r.usage.completion_tokens <= 12);
    assert.equal(r.usage.total_tokens, r.usage.prompt_tokens + r.usage.completion_tokens);
    assert.equal(r.seed, 7);
  });

  it('streams a chat, with usage in the last chunk', async () => {
    const stream = await client.chat.completions.create({
      model: 'tiny-test', messages, max_tokens: 12, seed: 7, stream: true, stream_options: { include_usage: true },
    });
    const s = await collectChat(stream);
    assert.ok(s.chunks >= 3);
    assert.ok(['stop', 'length'].includes(s.finish));
    assert.equal(s.usage.prompt_tokens, promptTokens(modelDir, messages));
    assert.ok(s.usage.completion_tokens >= 1 && s.usage.completion_tokens <= 12);
  });

  it('gives the same output for the same seed, streamed or not', async () => {
    const req = { model: 'tiny-test', messages, max_tokens: 20, temperature: 1.0, top_p: 0.95, seed: 1234 };
    const a = await client.chat.completions.create(req);
    const b = await client.chat.completions.create(req);
    assert.equal(a.choices[0].message.content, b.choices[0].message.content);
    assert.deepEqual(a.usage, b.usage);
    const s = await collectChat(await client.chat.completions.create({ ...req, stream: true, stream_options: { include_usage: true } }));
    assert.equal(s.content + s.reasoning, (a.choices[0].message.content || '') + (a.choices[0].message.reasoning_content || ''));
    assert.equal(s.finish, a.choices[0].finish_reason);
    assert.deepEqual(s.usage, a.usage);
    // The reported seed reproduces a request that gave none.
    const c = await client.chat.completions.create({ ...req, seed: undefined });
    const d = await client.chat.completions.create({ ...req, seed: c.seed });
    assert.equal(d.choices[0].message.content, c.choices[0].message.content);
  });

  it('returns logprobs that agree with the usage and with each other', async () => {
    const r = await client.chat.completions.create({
      model: 'tiny-test', messages, max_tokens: 10, seed: 3, logprobs: true, top_logprobs: 4,
    });
    const entries = r.choices[0].logprobs.content;
    assert.equal(entries.length, r.usage.completion_tokens);
    for (const e of entries) {
      assert.ok(e.logprob <= 0);
      assert.equal(e.top_logprobs.length, 4);
      for (let i = 1; i < 4; i++) assert.ok(e.top_logprobs[i - 1].logprob >= e.top_logprobs[i].logprob);
      const sum = e.top_logprobs.reduce((acc, t) => acc + Math.exp(t.logprob), 0);
      assert.ok(sum <= 1 + 1e-9);
      const same = e.top_logprobs.find((t) => t.token === e.token);
      if (same) assert.ok(Math.abs(same.logprob - e.logprob) < 1e-9);
      assert.deepEqual(e.bytes, [...Buffer.from(e.token, 'utf8')]);
    }
    const s = await collectChat(await client.chat.completions.create({
      model: 'tiny-test', messages, max_tokens: 10, seed: 3, logprobs: true, top_logprobs: 4, stream: true,
    }));
    assert.deepEqual(s.logprobs, entries);
  });

  it('stops at a stop string where the text has it', async () => {
    const req = { model: 'tiny-test', messages, max_tokens: 24, temperature: 0 };
    const full = (await client.chat.completions.create(req)).choices[0].message.content;
    const chars = Array.from(full);  // code points, so no surrogate pair is cut
    assert.ok(chars.length >= 4, `greedy output too short to pick a stop string from: ${JSON.stringify(full)}`);
    // A stop string at a known place: the text's third and fourth characters.
    const stop = chars.slice(2, 4).join('');
    const want = full.slice(0, full.indexOf(stop));
    const r = await client.chat.completions.create({ ...req, stop: [stop] });
    assert.equal(r.choices[0].message.content, want);
    assert.equal(r.choices[0].finish_reason, 'stop');
    const s = await collectChat(await client.chat.completions.create({ ...req, stop, stream: true }));
    assert.equal(s.content, want);
  });

  it('ends with length at max_tokens and counts exactly that many tokens', async () => {
    const r = await client.chat.completions.create({ model: 'tiny-test', messages, max_completion_tokens: 1, seed: 1 });
    assert.equal(r.usage.completion_tokens, 1);
    // One token cannot both be the eos and leave the finish at length; either is consistent with one token.
    assert.ok(['stop', 'length'].includes(r.choices[0].finish_reason));
  });

  it('serves the legacy completions endpoint', async () => {
    const r = await client.completions.create({ model: 'tiny-test', prompt: [5, 9, 11, 200, 17], max_tokens: 6, temperature: 0 });
    assert.equal(r.object, 'text_completion');
    assert.equal(r.usage.prompt_tokens, 5);
    assert.ok(r.usage.completion_tokens <= 6);
    const stream = await client.completions.create({ model: 'tiny-test', prompt: [5, 9, 11, 200, 17], max_tokens: 6, temperature: 0, stream: true });
    let text = '';
    for await (const c of stream) text += c.choices[0]?.text || '';
    assert.equal(text, r.choices[0].text);
  });
});
