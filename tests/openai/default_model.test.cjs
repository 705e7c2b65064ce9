// `ds4 serve` with no --model serves the shipped model (models/tiny-flash-next, trained, with a real
// tokenizer and chat template): the openai client gets text back, streamed and whole alike, and MTP
// speculative decoding (--speculative) answers with exactly the same text.
'use strict';
const { describe, it, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { DS4, startServer, collectChat } = require('./support.cjs');

describe('the default model', () => {
  let plain;
  let spec;
  before(async () => {
    plain = await startServer(DS4, ['serve', '--port', '0']);
    spec = await startServer(DS4, ['serve', '--port', '0', '--speculative']);
  });
  after(async () => {
    await plain.stop();
    await spec.stop();
  });

  it('chats, streamed or not, the same with and without speculative decoding', async () => {
    const client = plain.client();
    const models = await client.models.list();
    assert.deepEqual(models.data.map((m) => m.id), ['tiny-flash-next']);
    const messages = [{ role: 'user', content: 'Hello!' }];
    for (const sampling of [{ temperature: 0 }, { temperature: 0.7, seed: 99 }]) {
      const req = { model: 'tiny-flash-next', messages, max_tokens: 40, ...sampling };
      const a = await client.chat.completions.create(req);
      const text = a.choices[0].message.content;
      assert.equal(typeof text, 'string');
      assert.ok(text.length > 0);
      const s = await collectChat(await client.chat.completions.create({ ...req, stream: true }));
      assert.equal(s.content, text);
      const b = await spec.client().chat.completions.create(req);
      assert.equal(b.choices[0].message.content, text);
      assert.deepEqual(b.usage, a.usage);
    }
  });
});
