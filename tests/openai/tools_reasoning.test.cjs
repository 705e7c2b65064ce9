// Tool calls and reasoning through the official openai client, against the real HTTP server over a scripted
// model (ds4_scripted_server): tool definitions, a tool-call round trip whole and streamed (including the
// SDK's own stream accumulator), a forced tool choice, malformed calls, and reasoning_content.
'use strict';
const { describe, it, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { makeTestModel, startScripted, promptTokens, collectChat } = require('./support.cjs');

const CALL = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}}\n</tool_call>';
const REPLIES = [
  { trigger: '', text: 'Hello!' },
  { trigger: 'the weather', text: CALL },
  { trigger: '<tool_response>', text: 'It is 21 degrees and sunny in Paris.' },
  { trigger: 'think first', text: '<think>\nThe user wants a number.\n</think>\n\n42' },
  { trigger: 'garbled', text: 'Trying.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": Paris}}\n</tool_call>' },
  { trigger: 'forced', text: '{"city": "Oslo"}}\n</tool_call>' },
  { trigger: 'both', text: '<think>Need weather.</think>\n' + CALL },
];
const TOOLS = [{
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'Current weather for a city',
    parameters: { type: 'object', properties: { city: { type: 'string' }, unit: { type: 'string' } }, required: ['city'] },
  },
}];

describe('tool calls and reasoning with the openai client', () => {
  let srv;
  let client;
  let modelDir;
  before(async () => {
    modelDir = makeTestModel();
    srv = await startScripted(modelDir, REPLIES);
    client = srv.client();
  });
  after(async () => { await srv.stop(); });

  it('returns a tool call and takes its result back', async () => {
    const messages = [{ role: 'user', content: 'What is the weather in Paris?' }];
    const r = await client.chat.completions.create({ model: 'scripted', messages, tools: TOOLS, tool_choice: 'auto' });
    const choice = r.choices[0];
    assert.equal(choice.finish_reason, 'tool_calls');
    assert.equal(choice.message.content, null);
    assert.equal(choice.message.tool_calls.length, 1);
    const call = choice.message.tool_calls[0];
    assert.match(call.id, /^call_/);
    assert.equal(call.type, 'function');
    assert.equal(call.function.name, 'get_weather');
    assert.deepEqual(JSON.parse(call.function.arguments), { city: 'Paris', unit: 'celsius' });
    assert.equal(r.usage.prompt_tokens, promptTokens(modelDir, messages, TOOLS));

    const followUp = [...messages, choice.message, { role: 'tool', tool_call_id: call.id, content: '{"temp": 21}' }];
    const r2 = await client.chat.completions.create({ model: 'scripted', messages: followUp, tools: TOOLS });
    assert.equal(r2.choices[0].message.content, 'It is 21 degrees and sunny in Paris.');
    assert.equal(r2.choices[0].finish_reason, 'stop');
    assert.equal(r2.usage.prompt_tokens, promptTokens(modelDir, JSON.parse(JSON.stringify(followUp)), TOOLS));
  });

  it('streams tool calls as deltas', async () => {
    const messages = [{ role: 'user', content: 'what is the weather like?' }];
    const s = await collectChat(await client.chat.completions.create({ model: 'scripted', messages, tools: TOOLS, stream: true }));
    assert.equal(s.finish, 'tool_calls');
    assert.equal(s.content, '');
    assert.equal(s.toolCalls.length, 1);
    assert.match(s.toolCalls[0].id, /^call_/);
    assert.equal(s.toolCalls[0].name, 'get_weather');
    assert.deepEqual(JSON.parse(s.toolCalls[0].arguments), { city: 'Paris', unit: 'celsius' });
    // The SDK's own accumulator agrees.
    const runner = client.beta.chat.completions.stream({ model: 'scripted', messages, tools: TOOLS });
    const final = await runner.finalChatCompletion();
    assert.equal(final.choices[0].finish_reason, 'tool_calls');
    assert.equal(final.choices[0].message.tool_calls[0].function.name, 'get_weather');
    assert.deepEqual(JSON.parse(final.choices[0].message.tool_calls[0].function.arguments), { city: 'Paris', unit: 'celsius' });
  });

  it('forces a named tool', async () => {
    const r = await client.chat.completions.create({
      model: 'scripted', messages: [{ role: 'user', content: 'forced call' }], tools: TOOLS,
      tool_choice: { type: 'function', function: { name: 'get_weather' } },
    });
    assert.equal(r.choices[0].finish_reason, 'tool_calls');
    assert.deepEqual(JSON.parse(r.choices[0].message.tool_calls[0].function.arguments), { city: 'Oslo' });
  });

  it('keeps a malformed call as plain content', async () => {
    const r = await client.chat.completions.create({ model: 'scripted', messages: [{ role: 'user', content: 'garbled' }], tools: TOOLS });
    assert.equal(r.choices[0].finish_reason, 'stop');
    assert.equal(r.choices[0].message.tool_calls, undefined);
    assert.equal(r.choices[0].message.content, REPLIES[4].text);
  });

  it('puts the think block in reasoning_content, streamed too', async () => {
    const messages = [{ role: 'user', content: 'think first: what is six times seven?' }];
    const r = await client.chat.completions.create({ model: 'scripted', messages });
    assert.equal(r.choices[0].message.reasoning_content, 'The user wants a number.\n');
    assert.equal(r.choices[0].message.content, '42');
    const s = await collectChat(await client.chat.completions.create({ model: 'scripted', messages, stream: true }));
    assert.equal(s.reasoning, 'The user wants a number.\n');
    assert.equal(s.content, '42');
  });

  it('separates reasoning from a tool call', async () => {
    const r = await client.chat.completions.create({ model: 'scripted', messages: [{ role: 'user', content: 'both' }], tools: TOOLS });
    assert.equal(r.choices[0].message.reasoning_content, 'Need weather.');
    assert.equal(r.choices[0].message.tool_calls[0].function.name, 'get_weather');
    assert.equal(r.choices[0].finish_reason, 'tool_calls');
  });
});
