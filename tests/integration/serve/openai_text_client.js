// Drives jal-serve with text through the official OpenAI Node.js client (npm `openai`), as
// jal_serve_text_test.cpp's OpenAiNodeClientWithText runs it:
//   NODE_PATH=<openai cache>/node_modules node openai_text_client.js URL MODEL PROMPT TEXT QUESTION
// TEXT: jal-run's greedy continuation of PROMPT (8 tokens). Exits 0 when every check passes.
'use strict';
const OpenAI = require('openai');
const assert = require('assert');

const [url, model, prompt, expected, question] = process.argv.slice(2);
const client = new OpenAI({ baseURL: url + '/v1', apiKey: 'unused', maxRetries: 0 });
const request = { model, prompt, max_tokens: 8, temperature: 0, ignore_eos: true };

async function completion() {
  const r = await client.completions.create(request);
  assert.strictEqual(r.choices[0].text, expected);
  const stream = await client.completions.create({ ...request, stream: true });
  let text = '';
  for await (const chunk of stream) text += chunk.choices[0].text;
  assert.strictEqual(text, expected);
}

// A chat reply is a message of the assistant with string content; streamed, the deltas
// (content and reasoning) add up to the same message.
async function chat() {
  const messages = [{ role: 'system', content: 'Answer briefly.' }, { role: 'user', content: question }];
  const r = await client.chat.completions.create({ model, messages, max_tokens: 8, temperature: 0 });
  assert.strictEqual(r.object, 'chat.completion');
  const m = r.choices[0].message;
  assert.strictEqual(m.role, 'assistant');
  assert.strictEqual(typeof m.content, 'string');
  assert.ok(['length', 'stop'].includes(r.choices[0].finish_reason));
  const stream = await client.chat.completions.create(
    { model, messages, max_tokens: 8, temperature: 0, stream: true });
  let content = '', reasoning = '';
  for await (const chunk of stream) {
    if (!chunk.choices.length) continue;
    content += chunk.choices[0].delta.content || '';
    reasoning += chunk.choices[0].delta.reasoning_content || '';
  }
  assert.strictEqual(content, m.content);
  assert.strictEqual(reasoning, m.reasoning_content || '');
}

async function main() {
  await completion();
  await chat();
  console.log('openai text client: all checks passed');
}

main().catch((e) => {
  console.error('openai text client:', e);
  process.exit(1);
});
