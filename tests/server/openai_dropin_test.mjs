// Drop-in checks for llama-server and OpenAI clients (run by server_test's ServerNodeClient.DropIn): the
// `openai` npm client for logprobs (plain and streamed), n choices, logit_bias, penalties, seeds under load
// and the reasoning split; plain fetch for llama-server's native /completion fields. The model's weights are
// random, so checks compare answers with each other (greedy runs are deterministic), never with fixed text.
// Env: LAZYSLOT_URL, LAZYSLOT_API_KEY. The server runs with -np 3.
import assert from 'node:assert/strict';
import OpenAI from 'openai';

const URL = process.env.LAZYSLOT_URL;
const KEY = process.env.LAZYSLOT_API_KEY;
const client = new OpenAI({ baseURL: `${URL}/v1`, apiKey: KEY, maxRetries: 0, timeout: 300_000 });
const messages = [{ role: 'user', content: 'Write a story about a cat.' }];

async function post(path, body) {
  const r = await fetch(`${URL}${path}`, { method: 'POST', body: JSON.stringify(body),
    headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${KEY}` } });
  const text = await r.text();
  return { status: r.status, text, json: () => JSON.parse(text) };
}

// SSE data payloads of a streamed native response.
async function postStream(path, body) {
  const r = await post(path, { ...body, stream: true });
  assert.equal(r.status, 200, r.text);
  return r.text.split('\n').filter(l => l.startsWith('data: ')).map(l => JSON.parse(l.slice(6)));
}

const checks = [];
function check(name, fn) { checks.push({ name, fn }); }

function checkEntry(e, nTop) {
  assert.equal(typeof e.token, 'string');
  assert.ok(e.logprob <= 0, `logprob ${e.logprob}`);
  assert.ok(Array.isArray(e.bytes) && e.bytes.length > 0);
  assert.equal(e.top_logprobs.length, nTop);
  for (let i = 1; i < e.top_logprobs.length; i++) {
    assert.ok(e.top_logprobs[i - 1].logprob >= e.top_logprobs[i].logprob, 'top_logprobs sorted');
  }
  if (nTop > 0) assert.ok(e.logprob <= e.top_logprobs[0].logprob + 1e-6);
}

check('chat logprobs: one entry per token, greedy picks the top one, streamed equals plain', async () => {
  const req = { model: 'any', messages, max_tokens: 12, temperature: 0, logprobs: true, top_logprobs: 3 };
  const r = await client.chat.completions.create(req);
  const content = r.choices[0].logprobs.content;
  assert.equal(content.length, r.usage.completion_tokens);
  for (const e of content) {
    checkEntry(e, 3);
    assert.equal(e.token, e.top_logprobs[0].token, 'greedy draws the most probable token');
    assert.ok(Math.abs(e.logprob - e.top_logprobs[0].logprob) < 1e-6);
  }
  const stream = await client.chat.completions.create({ ...req, stream: true });
  const streamed = [];
  for await (const chunk of stream) {
    const lp = chunk.choices[0]?.logprobs;
    if (lp && lp.content) streamed.push(...lp.content);
  }
  assert.deepEqual(streamed.map(e => e.token), content.map(e => e.token));
  streamed.forEach((e, i) => assert.ok(Math.abs(e.logprob - content[i].logprob) < 1e-4));
  const none = await client.chat.completions.create({ model: 'any', messages, max_tokens: 2 });
  assert.equal(none.choices[0].logprobs, null, 'no logprobs unless asked');
});

check('completions logprobs: OpenAI legacy shape', async () => {
  const r = await client.completions.create({ model: 'any', prompt: 'Once upon a time', max_tokens: 8,
                                              temperature: 0, logprobs: 2 });
  const lp = r.choices[0].logprobs;
  assert.equal(lp.tokens.length, r.usage.completion_tokens);
  assert.equal(lp.token_logprobs.length, lp.tokens.length);
  assert.equal(lp.top_logprobs.length, lp.tokens.length);
  for (let i = 0; i < lp.tokens.length; i++) {
    assert.ok(Object.keys(lp.top_logprobs[i]).length <= 2);
    assert.ok(lp.token_logprobs[i] <= 0);
    if (i > 0) assert.equal(lp.text_offset[i], lp.text_offset[i - 1] + Buffer.byteLength(lp.tokens[i - 1]));
  }
});

check('n = 3: three choices, the prompt counted once, sampled apart', async () => {
  const r = await client.chat.completions.create({ model: 'any', messages, max_tokens: 16, n: 3,
                                                   temperature: 1.0, seed: 7 });
  assert.deepEqual(r.choices.map(c => c.index), [0, 1, 2]);
  const one = await client.chat.completions.create({ model: 'any', messages, max_tokens: 16, seed: 7,
                                                     temperature: 1.0 });
  assert.equal(r.usage.prompt_tokens, one.usage.prompt_tokens);
  const texts = new Set(r.choices.map(c => c.message.content));
  assert.ok(texts.size > 1, `choices should differ: ${[...texts]}`);
  assert.equal(r.choices[0].message.content, one.choices[0].message.content, 'choice 0 uses the seed itself');
  const stream = await client.chat.completions.create({ model: 'any', messages, max_tokens: 8, n: 3,
                                                        stream: true, seed: 7 });
  const text = ['', '', ''];
  const finished = new Set();
  for await (const chunk of stream) {
    for (const c of chunk.choices) {
      text[c.index] += c.delta.content || '';
      if (c.finish_reason) finished.add(c.index);
    }
  }
  assert.equal(finished.size, 3);
  assert.equal(text[0], (await client.chat.completions.create({ model: 'any', messages, max_tokens: 8,
                                                                 seed: 7, n: 3 })).choices[0].message.content);
});

check('logit_bias: -100 bans the greedy token, +100 forces a token', async () => {
  const base = { model: 'any', prompt: 'Once upon a time', max_tokens: 4, temperature: 0, logprobs: 0 };
  const r = await client.completions.create(base);
  const first = (await post('/tokenize', { content: r.choices[0].logprobs.tokens[0] })).json().tokens[0];
  const banned = await client.completions.create({ ...base, logit_bias: { [first]: -100 } });
  assert.notEqual(banned.choices[0].logprobs.tokens[0], r.choices[0].logprobs.tokens[0]);
  const forced = await post('/completion', { prompt: 'Once upon a time', n_predict: 4, temperature: 0,
                                             logit_bias: [[1000, 100]], return_tokens: true });
  assert.deepEqual(forced.json().tokens, [1000, 1000, 1000, 1000]);
});

check('penalties change a greedy answer', async () => {
  const base = { model: 'any', messages, max_tokens: 32, temperature: 0 };
  const plain = (await client.chat.completions.create(base)).choices[0].message.content;
  const penalised = (await client.chat.completions.create({ ...base, presence_penalty: 2, frequency_penalty: 2 }))
                        .choices[0].message.content;
  assert.notEqual(penalised, plain);
  const again = (await client.chat.completions.create(base)).choices[0].message.content;
  assert.equal(again, plain, 'greedy is deterministic');
});

check('the same seed gives the same text while other slots are busy', async () => {
  const req = { model: 'any', messages, max_tokens: 24, temperature: 1.0, seed: 1234 };
  const alone = (await client.chat.completions.create(req)).choices[0].message.content;
  const busy = [1, 2].map(i => client.chat.completions.create({ model: 'any', max_tokens: 64, temperature: 1.0,
    messages: [{ role: 'user', content: `Another request ${i}` }] }));
  const loaded = (await client.chat.completions.create(req)).choices[0].message.content;
  await Promise.all(busy);
  assert.equal(loaded, alone);
});

check('reasoning: <think> goes to reasoning_content, plain and streamed; reasoning_format none keeps it', async () => {
  const grammar = 'root ::= "<think>\\nplan it\\n</think>\\n\\nthe answer"';
  const r = await client.chat.completions.create({ model: 'any', messages, max_tokens: 64, grammar });
  assert.equal(r.choices[0].message.reasoning_content, 'plan it');
  assert.equal(r.choices[0].message.content, 'the answer');
  const stream = await client.chat.completions.create({ model: 'any', messages, max_tokens: 64, grammar,
                                                        stream: true });
  let reasoning = '', content = '';
  for await (const chunk of stream) {
    const d = chunk.choices[0]?.delta || {};
    reasoning += d.reasoning_content || '';
    content += d.content || '';
  }
  assert.equal(reasoning, 'plan it');
  assert.equal(content, 'the answer');
  const kept = await client.chat.completions.create({ model: 'any', messages, max_tokens: 64, grammar,
                                                      reasoning_format: 'none' });
  assert.ok(kept.choices[0].message.content.startsWith('<think>'));
  assert.equal(kept.choices[0].message.reasoning_content, undefined);
});

check('continue_final_message and add_generation_prompt render as asked', async () => {
  const conv = [{ role: 'user', content: 'Hi' }];
  const open = (await post('/apply-template', { messages: conv })).json().prompt;
  const closed = (await post('/apply-template', { messages: conv, add_generation_prompt: false })).json().prompt;
  assert.ok(open.startsWith(closed) && open.length > closed.length, `${open} vs ${closed}`);
  const cont = (await post('/apply-template', { messages: [...conv, { role: 'assistant', content: 'Once' }] }))
                   .json().prompt;
  assert.ok(cont.startsWith(open) && cont.endsWith('Once'), cont);
  const bad = await post('/v1/chat/completions', { messages: conv, continue_final_message: true });
  assert.equal(bad.status, 400);
  assert.match(bad.json().error.message, /^continue_final_message:/);
});

check('native /completion: tokens, probabilities, stop words, response_fields, slots', async () => {
  const r = (await post('/completion', { prompt: 'Once upon a time', n_predict: 6, temperature: 0,
                                         n_probs: 2, return_tokens: true, id_slot: 1 })).json();
  assert.equal(r.tokens.length, 6);
  assert.equal(r.id_slot, 1);
  assert.equal(r.completion_probabilities.length, 6);
  r.completion_probabilities.forEach((e, i) => { assert.equal(e.id, r.tokens[i]); checkEntry(e, 2); });
  assert.equal(r.stop_type, 'limit');
  assert.equal(r.truncated, false);
  assert.equal(r.timings.prompt_n + r.timings.cache_n, r.tokens_evaluated);
  const post2 = (await post('/completion', { prompt: 'Once upon a time', n_predict: 3, temperature: 0.7,
                                             n_probs: 3, post_sampling_probs: true })).json();
  for (const e of post2.completion_probabilities) {
    assert.ok(e.prob > 0 && e.prob <= 1);
    const sum = e.top_probs.reduce((a, p) => a + p.prob, 0);
    assert.ok(sum <= 1 + 1e-5, `post-sampling probabilities sum to ${sum}`);
  }
  // The generated text's second token as a stop word: stop_type "word", stopping_word set, text before it.
  const words = (await post('/completion', { prompt: 'Once upon a time', n_predict: 6, temperature: 0,
                                             return_tokens: true })).json();
  const piece = (await post('/detokenize', { tokens: [words.tokens[2]] })).json().content;
  const stopped = (await post('/completion', { prompt: 'Once upon a time', n_predict: 6, temperature: 0,
                                               stop: [piece] })).json();
  assert.equal(stopped.stop_type, 'word');
  assert.equal(stopped.stopping_word, piece);
  assert.ok(words.content.startsWith(stopped.content));
  const fields = (await post('/completion', { prompt: 'x', n_predict: 1,
                                              response_fields: ['content', 'generation_settings/n_predict'] })).json();
  assert.deepEqual(Object.keys(fields).sort(), ['content', 'generation_settings/n_predict']);
  assert.equal(fields['generation_settings/n_predict'], 1);
  const alias = (await post('/completions', { prompt: 'x', n_predict: 1 })).json();
  assert.ok('content' in alias && !('choices' in alias), '/completions is the native route');
  const mixed = await post('/completion', { prompt: ['Once', 1000, ' upon'], n_predict: 1 });
  assert.equal(mixed.status, 200, mixed.text);
  const obj = await post('/completion', { prompt: { prompt_string: 'Once' }, n_predict: 1 });
  assert.equal(obj.status, 200, obj.text);
  const refused = await post('/completion', { prompt: 'x', n_indent: 4 });
  assert.equal(refused.status, 400);
  assert.match(refused.json().error.message, /^n_indent:/);
});

check('native streams: progress, timings per token, final generation_settings', async () => {
  const events = await postStream('/completion', { prompt: 'Once upon a time there was', n_predict: 4,
                                                   return_progress: true, timings_per_token: true,
                                                   cache_prompt: false });
  const progress = events.filter(e => e.prompt_progress);
  assert.ok(progress.length >= 1);
  const last = progress[progress.length - 1].prompt_progress;
  assert.equal(last.processed, last.total);
  const tokens = events.filter(e => !e.stop && !e.prompt_progress);
  assert.ok(tokens.every(e => e.timings && e.timings.predicted_n >= 1));
  const fin = events[events.length - 1];
  assert.equal(fin.stop, true);
  assert.equal(fin.generation_settings.n_predict, 4);
});

check('infill on a model with FIM tokens', async () => {
  const r = await post('/infill', { input_prefix: 'def add(a, b):\n    ', input_suffix: '\n', n_predict: 4,
                                    input_extra: [{ filename: 'util.py', text: 'import os\n' }], n_probs: 2 });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.json().tokens_predicted, 4);
  assert.equal(r.json().completion_probabilities.length, 4, 'infill reads n_probs like /completion');
  const g = await post('/infill', { input_prefix: 'x = ', input_suffix: '\n', n_predict: 8, grammar: 'root ::= "42"' });
  assert.equal(g.json().content, '42', 'infill honours a grammar');
  const bad = await post('/infill', { input_prefix: 'x' });
  assert.equal(bad.status, 400);
  assert.match(bad.json().error.message, /^input_suffix:/);
});

let failed = 0;
for (const { name, fn } of checks) {
  try {
    await fn();
    console.log(`ok   ${name}`);
  } catch (e) {
    failed++;
    console.log(`FAIL ${name}\n${e.stack || e}`);
  }
}
console.log(`${checks.length - failed}/${checks.length} drop-in checks passed`);
process.exit(failed ? 1 : 0);
