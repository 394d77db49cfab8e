// Drives jal-serve with the official OpenAI Node.js client (npm package `openai`), as
// jal_serve_test.cpp's OpenAiClient test runs it:
//   NODE_PATH=<openai cache>/node_modules node openai_client.js URL MODEL EXPECTED_IDS
// EXPECTED_IDS: the greedy continuation of the prompt [1, 2, 3], comma-separated (from
// jal-run). Exits 0 when every check passes; otherwise prints what failed and exits 1.
'use strict';
const OpenAI = require('openai');
const assert = require('assert');

const [url, model, expectedText] = process.argv.slice(2);
const expected = expectedText.split(',').map(Number);
const client = new OpenAI({ baseURL: url + '/v1', apiKey: 'unused', maxRetries: 0 });
const request = { model, prompt: [1, 2, 3], max_tokens: expected.length, temperature: 0 };

async function whole() {
  const r = await client.completions.create(request);
  assert.strictEqual(r.object, 'text_completion');
  assert.strictEqual(r.choices.length, 1);
  assert.deepStrictEqual(r.choices[0].token_ids, expected);
  assert.strictEqual(r.choices[0].finish_reason, 'length');
  assert.deepStrictEqual(r.usage, {
    prompt_tokens: 3, completion_tokens: expected.length, total_tokens: 3 + expected.length });
}

// One streamed reply: its ids, in order, one finish reason at the end, then the usage.
async function streamed() {
  const stream = await client.completions.create(
    { ...request, stream: true, stream_options: { include_usage: true } });
  const ids = [];
  let finish = null, usage = null;
  for await (const chunk of stream) {
    if (chunk.usage) {
      usage = chunk.usage;
      assert.strictEqual(chunk.choices.length, 0);
      continue;
    }
    assert.strictEqual(finish, null, 'only the usage may follow the chunk with the finish reason');
    ids.push(...chunk.choices[0].token_ids);
    finish = chunk.choices[0].finish_reason;
  }
  assert.deepStrictEqual(ids, expected);
  assert.strictEqual(finish, 'length');
  assert.strictEqual(usage.completion_tokens, expected.length);
}

async function main() {
  await whole();
  await streamed();
  const models = await client.models.list();
  assert.deepStrictEqual(models.data.map((m) => m.id), [model]);
  // Eight streams at once: the engine decodes them together.
  await Promise.all(Array.from({ length: 8 }, streamed));
  // An error reply reaches the client as an APIError with the server's message.
  await assert.rejects(client.completions.create({ ...request, max_tokens: 0 }),
    (e) => e.status === 400 && /max_tokens/.test(e.message));
  console.log('openai client: all checks passed');
}

main().catch((e) => {
  console.error('openai client:', e);
  process.exit(1);
});
