// Drives a running `lazyslot serve` through Anthropic's Messages API with the official `@anthropic-ai/sdk` npm
// client: plain and streamed messages (event order, deltas reassembling into finalMessage), max_tokens, tool
// use (the input validated with ajv against input_schema, streamed and whole), a tool_result round trip,
// count_tokens against usage, and 400s in Anthropic's error shape. The model's weights may be random, so
// answers are checked for shape and invariants, never for text.
// Env: LAZYSLOT_URL (http://127.0.0.1:PORT), LAZYSLOT_API_KEY (optional), ROUNDS (tries per randomised
// check, default 3). Exits non-zero when a check fails.
import assert from 'node:assert/strict';
import Anthropic from '@anthropic-ai/sdk';
import Ajv from 'ajv';

const apiKey = process.env.LAZYSLOT_API_KEY || 'no-key';
const client = new Anthropic({ baseURL: process.env.LAZYSLOT_URL, apiKey, maxRetries: 0, timeout: 300_000 });
const ROUNDS = Number(process.env.ROUNDS || 3);
const ajv = new Ajv({ allErrors: true, strict: false });

// thinking disabled: Qwen3-style templates then close the think block in the prompt, so answers are text.
const base = { model: 'any', system: 'You are terse.', thinking: { type: 'disabled' },
               messages: [{ role: 'user', content: 'Say hello.' }] };
const tools = [
  { name: 'get_weather', description: 'Current weather in a city.',
    input_schema: { type: 'object', properties: {
      city: { type: 'string', description: 'City name' },
      unit: { type: 'string', enum: ['celsius', 'fahrenheit'] } },
      required: ['city'], additionalProperties: false } },
  { name: 'add', description: 'Adds two integers.',
    input_schema: { type: 'object', properties: { a: { type: 'integer' }, b: { type: 'integer' } },
      required: ['a', 'b'], additionalProperties: false } },
];
const validators = Object.fromEntries(tools.map(t => [t.name, ajv.compile(t.input_schema)]));
const weatherQuestion = [{ role: 'user', content: 'What is the weather in Paris?' }];

function totalInput(usage) {
  return usage.input_tokens + (usage.cache_read_input_tokens ?? 0) + (usage.cache_creation_input_tokens ?? 0);
}

function checkUsage(usage, maxOutput) {
  for (const k of ['input_tokens', 'output_tokens']) assert.ok(Number.isInteger(usage[k]) && usage[k] >= 0, k);
  assert.ok(totalInput(usage) > 0, `no input tokens: ${JSON.stringify(usage)}`);
  assert.ok(usage.output_tokens > 0 && usage.output_tokens <= maxOutput, JSON.stringify(usage));
}

function checkMessage(m, maxOutput) {
  assert.equal(m.type, 'message');
  assert.equal(m.role, 'assistant');
  assert.ok(typeof m.id === 'string' && m.id.startsWith('msg_'), `id ${m.id}`);
  assert.equal(typeof m.model, 'string');
  assert.ok(Array.isArray(m.content));
  assert.ok(['end_turn', 'max_tokens', 'stop_sequence', 'tool_use'].includes(m.stop_reason), m.stop_reason);
  if (m.stop_reason === 'stop_sequence') assert.equal(typeof m.stop_sequence, 'string');
  else assert.equal(m.stop_sequence, null);
  checkUsage(m.usage, maxOutput);
}

const copy = (v) => JSON.parse(JSON.stringify(v));

function textOf(m) { return m.content.filter(b => b.type === 'text').map(b => b.text).join(''); }

function checkToolUse(block, allowed) {
  assert.equal(block.type, 'tool_use');
  assert.ok(typeof block.id === 'string' && block.id.length > 0, 'tool_use id');
  assert.ok(allowed.includes(block.name), `unexpected tool ${block.name}`);
  assert.ok(block.input !== null && typeof block.input === 'object' && !Array.isArray(block.input));
  const v = validators[block.name];
  assert.ok(v(block.input), `input ${JSON.stringify(block.input)} does not validate: ${ajv.errorsText(v.errors)}`);
}

// The events of one streamed message, in the order Anthropic documents: message_start, then per block
// content_block_start, its deltas and content_block_stop (indices 0, 1, ... one block at a time), then
// message_delta and message_stop. Returns {start, blocks: [{start, deltas}], delta}.
function checkEventOrder(events) {
  const types = events.map(e => e.type);
  assert.equal(types[0], 'message_start', types.join(' '));
  assert.deepEqual(types.slice(-2), ['message_delta', 'message_stop'], types.join(' '));
  const start = events[0].message;
  assert.deepEqual(start.content, []);
  assert.equal(start.stop_reason, null);
  const blocks = [];
  let open = null;
  for (const e of events.slice(1, -2)) {
    if (e.type === 'content_block_start') {
      assert.equal(open, null, 'a block started before the previous one stopped');
      assert.equal(e.index, blocks.length, 'block indices count up from 0');
      open = { start: e.content_block, deltas: [] };
      blocks.push(open);
    } else if (e.type === 'content_block_delta') {
      assert.ok(open, 'delta outside a block');
      assert.equal(e.index, blocks.length - 1);
      open.deltas.push(e.delta);
    } else if (e.type === 'content_block_stop') {
      assert.ok(open, 'stop outside a block');
      assert.equal(e.index, blocks.length - 1);
      open = null;
    } else {
      assert.fail(`unexpected event ${e.type} between message_start and message_delta`);
    }
  }
  assert.equal(open, null, 'a block was never stopped');
  return { start, blocks, delta: events[events.length - 2] };
}

const checks = [];
function check(name, fn) { checks.push({ name, fn }); }

check('messages.create (plain)', async () => {
  const r = await client.messages.create({ ...base, max_tokens: 8, temperature: 0 });
  checkMessage(r, 8);
  assert.ok(r.content.length >= 1, JSON.stringify(r));
  assert.equal(r.content[0].type, 'text');
  assert.equal(typeof r.content[0].text, 'string');
  assert.ok(['end_turn', 'max_tokens'].includes(r.stop_reason), r.stop_reason);
});

check('messages.stream: event order, deltas equal finalMessage and the plain answer', async () => {
  const params = { ...base, max_tokens: 12, temperature: 0 };
  const plain = await client.messages.create(params);
  const stream = client.messages.stream(params);
  const events = [];
  for await (const e of stream) events.push(copy(e));  // the SDK mutates message_start.message later
  const final = await stream.finalMessage();
  const { start, blocks, delta } = checkEventOrder(events);
  assert.ok(start.id.startsWith('msg_'));
  assert.ok(blocks.length >= 1, 'no content block');
  let text = '';
  for (const b of blocks) {
    assert.equal(b.start.type, 'text');
    assert.equal(b.start.text, '');
    for (const d of b.deltas) {
      assert.equal(d.type, 'text_delta');
      text += d.text;
    }
  }
  checkMessage(final, 12);
  assert.equal(text, textOf(final));
  assert.equal(delta.usage.output_tokens, final.usage.output_tokens);
  assert.equal(final.stop_reason, delta.delta.stop_reason);
  // Greedy: the stream and the plain request give the same answer.
  assert.equal(textOf(final), textOf(plain));
  assert.equal(final.stop_reason, plain.stop_reason);
  assert.equal(final.usage.output_tokens, plain.usage.output_tokens);
  assert.equal(totalInput(final.usage), totalInput(plain.usage));
});

check('max_tokens 3 -> stop_reason max_tokens, 3 output tokens (plain and streamed)', async () => {
  const r = await client.messages.create({ ...base, max_tokens: 3, temperature: 0 });
  assert.equal(r.stop_reason, 'max_tokens', JSON.stringify(r));
  assert.equal(r.usage.output_tokens, 3);
  const s = await client.messages.create({ ...base, max_tokens: 3, temperature: 0, stream: true });
  const events = [];
  for await (const e of s) events.push(copy(e));
  const { delta } = checkEventOrder(events);
  assert.equal(delta.delta.stop_reason, 'max_tokens');
  assert.equal(delta.usage.output_tokens, 3);
});

check('tool_choice {type: "tool"}: a valid tool_use every time', async () => {
  for (let i = 0; i < ROUNDS; i++) {
    const r = await client.messages.create({ model: 'any', messages: weatherQuestion, tools, max_tokens: 128,
      tool_choice: { type: 'tool', name: 'get_weather' }, temperature: 1.0 });
    checkMessage(r, 128);
    assert.equal(r.stop_reason, 'tool_use', JSON.stringify(r));
    const uses = r.content.filter(b => b.type === 'tool_use');
    assert.ok(uses.length >= 1, JSON.stringify(r.content));
    for (const u of uses) checkToolUse(u, ['get_weather']);
  }
});

check('tool_choice {type: "any"}, one call only: a valid tool_use of either tool', async () => {
  for (let i = 0; i < ROUNDS; i++) {
    const r = await client.messages.create({ model: 'any', messages: weatherQuestion, tools, max_tokens: 128,
      tool_choice: { type: 'any', disable_parallel_tool_use: true }, temperature: 1.0 });
    assert.equal(r.stop_reason, 'tool_use', JSON.stringify(r));
    const uses = r.content.filter(b => b.type === 'tool_use');
    assert.equal(uses.length, 1, JSON.stringify(r.content));
    checkToolUse(uses[0], ['get_weather', 'add']);
  }
});

check('streamed tool_use: partial_json reassembles into the final input', async () => {
  const stream = client.messages.stream({ model: 'any', messages: weatherQuestion, tools, max_tokens: 128,
    tool_choice: { type: 'tool', name: 'get_weather' }, temperature: 0.7 });
  const events = [];
  for await (const e of stream) events.push(copy(e));  // the SDK mutates message_start.message later
  const final = await stream.finalMessage();
  const { blocks, delta } = checkEventOrder(events);
  assert.equal(delta.delta.stop_reason, 'tool_use');
  const uses = blocks.filter(b => b.start.type === 'tool_use');
  assert.ok(uses.length >= 1, JSON.stringify(blocks));
  const finalUses = final.content.filter(b => b.type === 'tool_use');
  assert.equal(finalUses.length, uses.length);
  uses.forEach((b, i) => {
    assert.deepEqual(b.start.input, {}, 'a tool_use block starts with input {}');
    assert.equal(b.start.id, finalUses[i].id);
    let json = '';
    for (const d of b.deltas) {
      assert.equal(d.type, 'input_json_delta');
      json += d.partial_json;
    }
    const input = JSON.parse(json);
    assert.deepEqual(input, finalUses[i].input);
    checkToolUse({ ...finalUses[i], input }, ['get_weather']);
  });
});

check('tool_result round trip', async () => {
  const first = await client.messages.create({ model: 'any', messages: weatherQuestion, tools, max_tokens: 128,
    tool_choice: { type: 'tool', name: 'get_weather' }, temperature: 0.7 });
  assert.equal(first.stop_reason, 'tool_use');
  const uses = first.content.filter(b => b.type === 'tool_use');
  const results = uses.map((u, i) => (i === 0
    ? { type: 'tool_result', tool_use_id: u.id, content: JSON.stringify({ temperature: 21, unit: 'celsius' }) }
    : { type: 'tool_result', tool_use_id: u.id, is_error: true, content: [{ type: 'text', text: 'unavailable' }] }));
  const history = [...weatherQuestion, { role: 'assistant', content: first.content },
                   { role: 'user', content: [...results, { type: 'text', text: 'Thanks. Summarise.' }] }];
  const second = await client.messages.create({ model: 'any', messages: history, tools, max_tokens: 16,
                                                temperature: 0, tool_choice: { type: 'none' } });
  checkMessage(second, 16);
  assert.ok(['end_turn', 'max_tokens'].includes(second.stop_reason), second.stop_reason);
  assert.equal(second.content.filter(b => b.type === 'tool_use').length, 0);
  assert.ok(totalInput(second.usage) > totalInput(first.usage));
});

check('count_tokens equals the input tokens of the same request', async () => {
  for (const extra of [{}, { tools }]) {
    const params = { ...base, ...extra };
    const counted = await client.messages.countTokens(params);
    assert.ok(Number.isInteger(counted.input_tokens) && counted.input_tokens > 0, JSON.stringify(counted));
    const r = await client.messages.create({ ...params, max_tokens: 2, temperature: 0 });
    assert.equal(counted.input_tokens, totalInput(r.usage), JSON.stringify(r.usage));
  }
  const plain = await client.messages.countTokens(base);
  const withTools = await client.messages.countTokens({ ...base, tools });
  assert.ok(withTools.input_tokens > plain.input_tokens, 'tools are part of the prompt');
});

// A 400 in Anthropic's shape, as the SDK surfaces it; the server keeps serving afterwards.
async function expect400(promise, needle) {
  let err = null;
  try {
    await promise;
  } catch (e) { err = e; }
  assert.ok(err, 'expected a 400');
  assert.ok(err instanceof Anthropic.BadRequestError, `not a BadRequestError: ${err}`);
  assert.equal(err.status, 400);
  assert.equal(err.error?.type, 'error', JSON.stringify(err.error));
  assert.equal(err.error?.error?.type, 'invalid_request_error', JSON.stringify(err.error));
  assert.equal(err.type, 'invalid_request_error');
  assert.ok(err.error.error.message.includes(needle), `"${err.error.error.message}" does not name "${needle}"`);
  const ok = await client.messages.create({ ...base, max_tokens: 2, temperature: 0 });
  assert.equal(ok.type, 'message');
}

check('400s name the field, in Anthropic error shape', async () => {
  await expect400(client.messages.create({ ...base, max_tokens: 4, bogus_field: 1 }), 'bogus_field');
  await expect400(client.messages.create({ ...base }), 'max_tokens');  // base has no max_tokens
  await expect400(client.messages.create({ ...base, max_tokens: 4, messages: [{ role: 'user', content: [
    { type: 'text', text: 'What is this?' },
    { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo=' } }] }] }),
                  'messages[0].content[1].type');
  await expect400(client.messages.create({ model: 'any', messages: weatherQuestion, tools, max_tokens: 4,
                                           tool_choice: { type: 'tool', name: 'nope' } }), 'tool_choice.name');
  await expect400(client.messages.countTokens({ ...base, bogus_field: 1 }), 'bogus_field');
});

if (process.env.LAZYSLOT_API_KEY) {
  check('a wrong API key -> AuthenticationError in Anthropic error shape', async () => {
    const bad = new Anthropic({ baseURL: process.env.LAZYSLOT_URL, apiKey: 'wrong-key', maxRetries: 0 });
    await assert.rejects(bad.messages.create({ ...base, max_tokens: 2 }), (e) =>
      e instanceof Anthropic.AuthenticationError && e.status === 401 && e.error?.type === 'error' &&
      e.error?.error?.type === 'authentication_error');
  });
}

let failed = 0;
for (const { name, fn } of checks) {
  try {
    await fn();
    console.log(`ok   ${name}`);
  } catch (e) {
    failed++;
    console.log(`FAIL ${name}: ${e && e.stack || e}`);
  }
}
console.log(`${checks.length - failed}/${checks.length} anthropic checks passed`);
process.exit(failed ? 1 : 0);
