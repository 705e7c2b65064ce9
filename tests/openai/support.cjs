// Shared helpers for the openai-client tests: the pinned `openai` package (tools/fetch-openai-client.sh),
// the test model directory (tools/make_test_model.py), and server processes on free loopback ports.
'use strict';
const { execFileSync, spawn } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const ROOT = path.resolve(__dirname, '..', '..');
const DS4 = process.env.DS4_BINARY || path.join(ROOT, 'build', 'ds4');
const SCRIPTED = process.env.DS4_SCRIPTED_SERVER || path.join(ROOT, 'build', 'ds4_scripted_server');

const OPENAI_MODULE = path.join(
  execFileSync('bash', [path.join(ROOT, 'tools', 'fetch-openai-client.sh')], { encoding: 'utf8' }).trim(), 'openai');
const OpenAI = require(OPENAI_MODULE);

function tempDir(prefix) {
  return fs.mkdtempSync(path.join(os.tmpdir(), prefix));
}

// A model directory with the test tokenizer, chat template and the vl_bf16 fixture's weights.
function makeTestModel() {
  const dir = tempDir('ds4-openai-model-');
  execFileSync('python3', [path.join(ROOT, 'tools', 'make_test_model.py'), dir]);
  return dir;
}

// Starts a server process that prints "listening on http://127.0.0.1:PORT" and resolves once it does.
function startServer(binary, args) {
  return new Promise((resolve, reject) => {
    const proc = spawn(binary, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    const timer = setTimeout(() => {
      proc.kill('SIGKILL');
      reject(new Error(`server did not start in 120 s\n${out}\n${err}`));
    }, 120000);
    proc.stderr.on('data', (d) => { err += d; });
    proc.stdout.on('data', (d) => {
      out += d;
      const m = out.match(/listening on http:\/\/127\.0\.0\.1:(\d+)/);
      if (m) {
        clearTimeout(timer);
        const base = `http://127.0.0.1:${m[1]}`;
        resolve({
          proc,
          base,
          stderr: () => err,
          client: (opts = {}) => new OpenAI({ baseURL: `${base}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 120000, ...opts }),
          stop: () => stopProcess(proc),
        });
      }
    });
    proc.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`server exited with ${code} before listening\n${out}\n${err}`));
    });
  });
}

// SIGTERM, then SIGKILL if it has not exited within 20 s; resolves with the exit code.
function stopProcess(proc) {
  return new Promise((resolve) => {
    if (proc.exitCode !== null) return resolve(proc.exitCode);
    const kill = setTimeout(() => proc.kill('SIGKILL'), 20000);
    proc.once('exit', (code) => { clearTimeout(kill); resolve(code); });
    proc.kill('SIGTERM');
  });
}

function startServe(modelDir, extra = []) {
  return startServer(DS4, ['serve', '--model', modelDir, '--host', '127.0.0.1', '--port', '0', ...extra]);
}

// ds4_scripted_server with the given replies ([{trigger, text, repeat, nan_at}]).
function startScripted(modelDir, replies, extra = []) {
  const script = path.join(tempDir('ds4-script-'), 'script.json');
  fs.writeFileSync(script, JSON.stringify(replies));
  return startServer(SCRIPTED, ['--model', modelDir, '--script', script, '--port', '0', ...extra]);
}

// The value of an unlabelled (or exactly labelled) sample of the Prometheus text at /metrics.
async function metric(base, name) {
  const text = await (await fetch(`${base}/metrics`)).text();
  for (const line of text.split('\n')) {
    if (line.startsWith(name + ' ')) return Number(line.slice(name.length + 1));
  }
  return undefined;
}

// Polls until `cond()` holds (at most `tries` times, 20 ms apart).
async function eventually(cond, tries = 500) {
  for (let i = 0; i < tries; i++) {
    if (await cond()) return true;
    await new Promise((r) => setTimeout(r, 20));
  }
  return false;
}

// The prompt tokens of a chat request as `ds4 render` and `ds4 tokenize` make them.
function promptTokens(modelDir, messages, tools) {
  const req = path.join(tempDir('ds4-render-'), 'request.json');
  const body = { messages, add_generation_prompt: true };
  if (tools) body.tools = tools;
  fs.writeFileSync(req, JSON.stringify(body));
  const prompt = execFileSync(DS4, ['render', '--model', modelDir, '--request', req], { encoding: 'utf8' });
  const ids = execFileSync(DS4, ['tokenize', '--model', modelDir, '--jsonl'], { input: JSON.stringify(prompt) + '\n', encoding: 'utf8' });
  return JSON.parse(ids.trim().split('\n')[0]).length;
}

// Reads a streamed chat completion into {content, reasoning, toolCalls, finish, usage, logprobs, chunks}.
async function collectChat(stream) {
  const r = { content: '', reasoning: '', toolCalls: [], finish: null, usage: null, logprobs: [], chunks: 0 };
  for await (const chunk of stream) {
    r.chunks++;
    if (chunk.usage) r.usage = chunk.usage;
    const choice = chunk.choices[0];
    if (!choice) continue;
    const d = choice.delta || {};
    if (d.content) r.content += d.content;
    if (d.reasoning_content) r.reasoning += d.reasoning_content;
    for (const tc of d.tool_calls || []) {
      const slot = (r.toolCalls[tc.index] ||= { id: '', name: '', arguments: '' });
      if (tc.id) slot.id = tc.id;
      if (tc.function?.name) slot.name += tc.function.name;
      if (tc.function?.arguments) slot.arguments += tc.function.arguments;
    }
    if (choice.logprobs?.content) r.logprobs.push(...choice.logprobs.content);
    if (choice.finish_reason) r.finish = choice.finish_reason;
  }
  return r;
}

// The APIError a call rejects with (fails when it resolves).
async function apiError(promise) {
  try {
    await promise;
  } catch (e) {
    if (e instanceof OpenAI.APIError) return e;
    throw e;
  }
  throw new Error('expected the request to fail');
}

module.exports = {
  OpenAI, OPENAI_MODULE, ROOT, DS4, makeTestModel, startServer, startServe, startScripted, stopProcess, metric, eventually, promptTokens,
  collectChat, apiError, tempDir,
};
