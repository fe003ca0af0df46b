// Drives a running `lazyslot serve` with the official `openai` npm client (run by server_test's NodeClient
// test). Env: LAZYSLOT_URL (http://127.0.0.1:PORT), LAZYSLOT_API_KEY. Exits non-zero on the first failure.
import assert from 'node:assert/strict';
import OpenAI from 'openai';

const baseURL = `${process.env.LAZYSLOT_URL}/v1`;
const apiKey = process.env.LAZYSLOT_API_KEY;
const client = new OpenAI({ baseURL, apiKey, maxRetries: 0, timeout: 120_000 });
const messages = [
  { role: 'system', content: 'You are terse.' },
  { role: 'user', content: 'Say hello.' },
];

const checks = [];
function check(name, fn) { checks.push({ name, fn }); }

check('models.list', async () => {
  const page = await client.models.list();
  assert.equal(page.data.length, 1);
  assert.equal(page.data[0].object, 'model');
  assert.ok(page.data[0].id.length > 0);
});

check('chat.completions.create (plain)', async () => {
  const r = await client.chat.completions.create({ model: 'any', messages, max_tokens: 8, temperature: 0 });
  assert.equal(r.object, 'chat.completion');
  assert.equal(r.choices.length, 1);
  assert.equal(r.choices[0].message.role, 'assistant');
  assert.equal(typeof r.choices[0].message.content, 'string');
  assert.ok(['stop', 'length'].includes(r.choices[0].finish_reason));
  assert.ok(r.usage.prompt_tokens > 0);
  assert.ok(r.usage.completion_tokens > 0 && r.usage.completion_tokens <= 8);
  assert.equal(r.usage.total_tokens, r.usage.prompt_tokens + r.usage.completion_tokens);
});

check('chat.completions.create (stream, include_usage) equals plain', async () => {
  const params = { model: 'any', messages, max_tokens: 8, temperature: 0 };
  const plain = await client.chat.completions.create(params);
  const stream = await client.chat.completions.create({ ...params, stream: true,
                                                        stream_options: { include_usage: true } });
  let text = '', role = null, finish = null, usage = null, chunks = 0;
  for await (const chunk of stream) {
    chunks++;
    assert.equal(chunk.object, 'chat.completion.chunk');
    if (chunk.usage) usage = chunk.usage;
    for (const c of chunk.choices) {
      if (c.delta.role) role = c.delta.role;
      if (c.delta.content) text += c.delta.content;
      if (c.finish_reason) finish = c.finish_reason;
    }
  }
  assert.ok(chunks >= 2);
  assert.equal(role, 'assistant');
  assert.equal(text, plain.choices[0].message.content);
  assert.equal(finish, plain.choices[0].finish_reason);
  for (const k of ['prompt_tokens', 'completion_tokens', 'total_tokens']) assert.equal(usage[k], plain.usage[k]);
});

check('chat stream via the helper (stream.finalChatCompletion)', async () => {
  const runner = client.chat.completions.stream({ model: 'any', messages, max_tokens: 6, temperature: 0 });
  const final = await runner.finalChatCompletion();
  assert.equal(final.choices[0].message.role, 'assistant');
  assert.equal(typeof final.choices[0].message.content, 'string');
});

check('completions.create (plain and stream agree)', async () => {
  const params = { model: 'any', prompt: 'Hello world', max_tokens: 10, temperature: 0 };
  const plain = await client.completions.create(params);
  assert.equal(plain.object, 'text_completion');
  assert.equal(plain.usage.completion_tokens, 10);
  assert.equal(plain.choices[0].finish_reason, 'length');
  const stream = await client.completions.create({ ...params, stream: true });
  let text = '';
  for await (const chunk of stream) for (const c of chunk.choices) text += c.text;
  assert.equal(text, plain.choices[0].text);
});

check('embeddings.create (single, float)', async () => {
  const r = await client.embeddings.create({ model: 'any', input: 'hello', encoding_format: 'float' });
  assert.equal(r.data.length, 1);
  const v = r.data[0].embedding;
  assert.ok(Array.isArray(v) && v.length > 0);
  const norm = Math.sqrt(v.reduce((s, x) => s + x * x, 0));
  assert.ok(Math.abs(norm - 1) < 1e-4, `norm ${norm}`);
});

check('embeddings.create (batch; client default base64 decodes to the float result)', async () => {
  const inputs = ['hello', 'a longer sentence about cats', 'hello'];
  const b64 = await client.embeddings.create({ model: 'any', input: inputs });  // the client asks for base64
  const flt = await client.embeddings.create({ model: 'any', input: inputs, encoding_format: 'float' });
  assert.equal(b64.data.length, 3);
  for (let i = 0; i < 3; i++) {
    assert.equal(b64.data[i].index, i);
    assert.equal(b64.data[i].embedding.length, flt.data[i].embedding.length);
    for (let k = 0; k < flt.data[i].embedding.length; k++) {
      assert.ok(Math.abs(b64.data[i].embedding[k] - flt.data[i].embedding[k]) < 1e-6);
    }
  }
  assert.deepEqual(flt.data[0].embedding, flt.data[2].embedding);
  assert.ok(flt.usage.prompt_tokens > 0);
});

check('embeddings.create with dimensions (Matryoshka: the first N, renormalised)', async () => {
  const full = await client.embeddings.create({ model: 'any', input: 'hello there', encoding_format: 'float' });
  const v = full.data[0].embedding;
  const n = Math.floor(v.length / 2);
  const head = v.slice(0, n);
  const norm = Math.sqrt(head.reduce((s, x) => s + x * x, 0));
  for (const encoding_format of ['float', undefined]) {  // undefined: the client asks for base64
    const r = await client.embeddings.create({ model: 'any', input: ['hello there'], dimensions: n,
                                               ...(encoding_format ? { encoding_format } : {}) });
    const w = r.data[0].embedding;
    assert.equal(w.length, n);
    const wnorm = Math.sqrt(w.reduce((s, x) => s + x * x, 0));
    assert.ok(Math.abs(wnorm - 1) < 1e-4, `norm ${wnorm}`);
    for (let k = 0; k < n; k++) assert.ok(Math.abs(w[k] - head[k] / norm) < 1e-5, `component ${k}`);
  }
  await assert.rejects(
    client.embeddings.create({ model: 'any', input: 'x', dimensions: v.length + 1 }),
    (e) => e instanceof OpenAI.BadRequestError && e.status === 400 && /dimensions/.test(e.message));
});

async function tokenize(content) {
  const r = await fetch(`${process.env.LAZYSLOT_URL}/tokenize`, {
    method: 'POST', headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${apiKey}` },
    body: JSON.stringify({ content }) });
  assert.equal(r.status, 200);
  return (await r.json()).tokens;
}

check('logit_bias: -100 bans the greedy token, +100 forces another', async () => {
  const params = { model: 'any', prompt: 'Once upon a time', max_tokens: 1, temperature: 0 };
  const plain = await client.completions.create(params);
  const [greedy] = await tokenize(plain.choices[0].text);
  const banned = await client.completions.create({ ...params, logit_bias: { [greedy]: -100 } });
  assert.notEqual(banned.choices[0].text, plain.choices[0].text);
  const [forced] = await tokenize(' dragon');
  const three = await client.completions.create({ ...params, max_tokens: 3, logit_bias: { [forced]: 100 } });
  assert.deepEqual(await tokenize(three.choices[0].text), [forced, forced, forced]);
  // Chat takes the same field.
  const chat = await client.chat.completions.create({ model: 'any', messages, max_tokens: 2, temperature: 0,
                                                      logit_bias: { [forced]: 100 } });
  assert.deepEqual(await tokenize(chat.choices[0].message.content), [forced, forced]);
});

check('bad request -> BadRequestError 400 naming the field', async () => {
  await assert.rejects(
    client.chat.completions.create({ model: 'any', messages, temperature: -3 }),
    (e) => e instanceof OpenAI.BadRequestError && e.status === 400 && /temperature/.test(e.message));
});

check('wrong API key -> AuthenticationError 401', async () => {
  const bad = new OpenAI({ baseURL, apiKey: 'wrong-key', maxRetries: 0 });
  await assert.rejects(bad.completions.create({ model: 'any', prompt: 'x', max_tokens: 1 }),
                      (e) => e instanceof OpenAI.AuthenticationError && e.status === 401);
  // Listing models is public, as in llama-server.
  assert.equal((await bad.models.list()).data.length, 1);
});

let failed = 0;
for (const { name, fn } of checks) {
  try {
    await fn();
    console.log(`ok   ${name}`);
  } catch (e) {
    failed++;
    console.log(`FAIL ${name}: ${e && e.stack ? e.stack : e}`);
  }
}
console.log(`${checks.length - failed}/${checks.length} passed`);
process.exit(failed ? 1 : 0);
