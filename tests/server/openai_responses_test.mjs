// OpenAI's Responses API (POST /v1/responses, stateless) through the official `openai` npm client: plain and
// streamed creates (event order, sequence numbers, deltas that rebuild the final response, the SDK's own
// stream accumulator), max_output_tokens -> incomplete, a named function tool (arguments checked with ajv)
// and its function_call_output round trip, text.format json_schema, and the 400s (previous_response_id, an
// unknown field, a built-in tool) as the SDK's BadRequestError, each followed by a request that still works.
// Env: LAZYSLOT_URL, LAZYSLOT_API_KEY, ROUNDS (tries per randomised check, default 3). The model's weights
// may be random: checks are about shapes and invariants, never about the text.
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import Ajv from 'ajv';

const client = new OpenAI({ baseURL: `${process.env.LAZYSLOT_URL}/v1`, apiKey: process.env.LAZYSLOT_API_KEY,
                            maxRetries: 0, timeout: 300_000 });
const ROUNDS = Number(process.env.ROUNDS || 3);
const ajv = new Ajv({ allErrors: true, strict: false });

const weatherParams = { type: 'object', properties: {
  city: { type: 'string', description: 'City name' },
  unit: { type: 'string', enum: ['celsius', 'fahrenheit'] } },
  required: ['city'], additionalProperties: false };
const tools = [{ type: 'function', name: 'get_weather', description: 'Current weather in a city.',
                 parameters: weatherParams, strict: true }];
const validateWeather = ajv.compile(weatherParams);
const base = { model: 'any', instructions: 'You are terse.', input: 'Say hello.', temperature: 0.8 };

// The text of a response's message items, as the SDK's output_text is built.
function messageText(response) {
  return response.output.filter(o => o.type === 'message')
    .flatMap(o => o.content).filter(c => c.type === 'output_text').map(c => c.text).join('');
}

function checkResponse(r, maxOutput) {
  assert.equal(r.object, 'response');
  assert.ok(typeof r.id === 'string' && r.id.startsWith('resp_'), r.id);
  assert.ok(Number.isInteger(r.created_at) && r.created_at > 0);
  assert.ok(['completed', 'incomplete'].includes(r.status), r.status);
  if (r.status === 'incomplete') {
    assert.equal(r.incomplete_details.reason, 'max_output_tokens');
    assert.equal(r.usage.output_tokens, maxOutput);
  } else {
    assert.equal(r.incomplete_details, null);
  }
  assert.equal(r.error, null);
  assert.ok(Array.isArray(r.output) && r.output.length >= 1, JSON.stringify(r.output));
  const ids = new Set();
  for (const item of r.output) {
    assert.ok(typeof item.id === 'string' && item.id.length > 0);
    assert.ok(!ids.has(item.id), `duplicate item id ${item.id}`);
    ids.add(item.id);
    assert.ok(['message', 'reasoning', 'function_call'].includes(item.type), item.type);
    assert.ok(['completed', 'incomplete'].includes(item.status), item.status);
    if (item.type === 'message') {
      assert.equal(item.role, 'assistant');
      for (const c of item.content) {
        assert.equal(c.type, 'output_text');
        assert.equal(typeof c.text, 'string');
        assert.ok(Array.isArray(c.annotations));
      }
    }
  }
  assert.equal(r.output_text, messageText(r));
  assert.ok(r.usage.input_tokens > 0);
  assert.ok(r.usage.output_tokens > 0 && r.usage.output_tokens <= maxOutput, JSON.stringify(r.usage));
  assert.equal(r.usage.total_tokens, r.usage.input_tokens + r.usage.output_tokens);
  assert.ok(Number.isInteger(r.usage.input_tokens_details.cached_tokens));
  assert.ok(Number.isInteger(r.usage.output_tokens_details.reasoning_tokens));
}

// Checks the raw event stream; returns {events, final, text (the output_text deltas joined)}.
async function collectStream(params) {
  const stream = await client.responses.create({ ...params, stream: true });
  const events = [];
  for await (const e of stream) events.push(e);
  assert.ok(events.length >= 4, `only ${events.length} events`);
  assert.equal(events[0].type, 'response.created');
  assert.equal(events[0].response.status, 'in_progress');
  assert.equal(events[1].type, 'response.in_progress');
  const last = events[events.length - 1];
  assert.ok(['response.completed', 'response.incomplete'].includes(last.type), last.type);
  for (let i = 1; i < events.length; i++) {
    assert.ok(events[i].sequence_number > events[i - 1].sequence_number,
              `sequence_number ${events[i].sequence_number} after ${events[i - 1].sequence_number}`);
  }
  // Items open and close in order; every delta belongs to the open item; .done repeats the joined deltas.
  const open = new Map();  // output_index -> {id, type, text}
  let next = 0;
  let text = '';
  for (const e of events.slice(2, -1)) {
    switch (e.type) {
      case 'response.output_item.added':
        assert.equal(e.output_index, next++, 'output_index counts up');
        assert.equal(e.item.status, 'in_progress');
        open.set(e.output_index, { id: e.item.id, type: e.item.type, text: '' });
        break;
      case 'response.output_text.delta':
      case 'response.reasoning_text.delta':
      case 'response.function_call_arguments.delta': {
        const it = open.get(e.output_index);
        assert.ok(it, `${e.type} for output_index ${e.output_index}, which is not open`);
        assert.equal(e.item_id, it.id);
        it.text += e.delta;
        if (e.type === 'response.output_text.delta') text += e.delta;
        break;
      }
      case 'response.output_text.done':
      case 'response.reasoning_text.done':
        assert.equal(e.text, open.get(e.output_index).text);
        break;
      case 'response.function_call_arguments.done':
        assert.equal(e.arguments, open.get(e.output_index).text);
        break;
      case 'response.output_item.done': {
        const it = open.get(e.output_index);
        assert.ok(it, `output_item.done for ${e.output_index}, which is not open`);
        assert.equal(e.item.id, it.id);
        open.delete(e.output_index);
        break;
      }
      case 'response.content_part.added':
      case 'response.content_part.done':
        assert.equal(e.content_index, 0);
        assert.equal(e.item_id, open.get(e.output_index).id);
        break;
      default:
        assert.fail(`unexpected event ${e.type}`);
    }
  }
  assert.equal(open.size, 0, 'every item closed before the end');
  const final = last.response;
  assert.equal(final.output.length, next);
  assert.equal(messageText(final), text, 'the output_text deltas rebuild the final text');
  assert.equal(final.id, events[0].response.id);
  return { events, final, text };
}

const checks = [];
function check(name, fn) { checks.push({ name, fn }); }

check('responses.create (plain)', async () => {
  for (let i = 0; i < ROUNDS; i++) {
    const r = await client.responses.create({ ...base, max_output_tokens: 24, seed: 10 + i });
    checkResponse(r, 24);
    assert.equal(r.instructions, 'You are terse.');
    assert.equal(r.max_output_tokens, 24);
    const messages = r.output.filter(o => o.type === 'message');
    assert.equal(messages.length, 1);
    assert.equal(r.output_text, messages[0].content[0].text);
  }
});

check('responses.create (stream): event order, sequence numbers, deltas = final text', async () => {
  for (let i = 0; i < ROUNDS; i++) {
    const { final } = await collectStream({ ...base, max_output_tokens: 24, seed: 20 + i });
    checkResponse({ ...final, output_text: messageText(final) }, 24);
  }
});

check('responses.stream (the SDK accumulator) agrees with the events', async () => {
  const stream = client.responses.stream({ ...base, max_output_tokens: 16, seed: 30 });
  let deltas = '';
  stream.on('response.output_text.delta', e => { deltas += e.delta; });
  const final = await stream.finalResponse();
  assert.equal(final.output_text, deltas);
  checkResponse(final, 16);
});

check('max_output_tokens 3 -> incomplete', async () => {
  const r = await client.responses.create({ ...base, max_output_tokens: 3 });
  assert.equal(r.status, 'incomplete');
  assert.equal(r.incomplete_details.reason, 'max_output_tokens');
  assert.equal(r.usage.output_tokens, 3);
  const { events, final } = await collectStream({ ...base, max_output_tokens: 3 });
  assert.equal(events[events.length - 1].type, 'response.incomplete');
  assert.equal(final.status, 'incomplete');
  assert.equal(final.incomplete_details.reason, 'max_output_tokens');
});

function checkCall(item) {
  assert.equal(item.type, 'function_call');
  assert.equal(item.name, 'get_weather');
  assert.ok(typeof item.call_id === 'string' && item.call_id.length > 0);
  const args = JSON.parse(item.arguments);
  assert.ok(validateWeather(args), `${item.arguments}: ${ajv.errorsText(validateWeather.errors)}`);
}

const named = { tools, tool_choice: { type: 'function', name: 'get_weather' }, input: 'Weather in Paris?',
                max_output_tokens: 128, temperature: 1.0 };

check('named function tool: a function_call item whose arguments validate', async () => {
  for (let i = 0; i < ROUNDS; i++) {
    const r = await client.responses.create({ ...base, ...named, seed: 40 + i });
    assert.equal(r.status, 'completed', JSON.stringify(r.output));
    const calls = r.output.filter(o => o.type === 'function_call');
    assert.ok(calls.length >= 1, JSON.stringify(r.output));
    calls.forEach(checkCall);
    assert.deepEqual(r.tool_choice, named.tool_choice);
    assert.equal(r.tools[0].name, 'get_weather');
  }
});

check('named function tool, streamed: arguments deltas rebuild a valid call', async () => {
  const { events, final } = await collectStream({ ...base, ...named, seed: 50 });
  assert.ok(events.some(e => e.type === 'response.function_call_arguments.done'));
  const calls = final.output.filter(o => o.type === 'function_call');
  assert.ok(calls.length >= 1);
  calls.forEach(checkCall);
});

check('function_call_output round trip', async () => {
  const first = await client.responses.create({ ...base, ...named, seed: 60 });
  const calls = first.output.filter(o => o.type === 'function_call');
  assert.ok(calls.length >= 1);
  const input = [{ role: 'user', content: 'Weather in Paris?' }, ...first.output,
                 ...calls.map(c => ({ type: 'function_call_output', call_id: c.call_id,
                                      output: JSON.stringify({ temperature: 21, unit: 'celsius' }) }))];
  const second = await client.responses.create({ model: 'any', instructions: base.instructions, input, tools,
                                                 tool_choice: 'none', max_output_tokens: 8, temperature: 0 });
  checkResponse(second, 8);
  assert.equal(second.output.filter(o => o.type === 'function_call').length, 0);
  assert.ok(second.usage.input_tokens > first.usage.input_tokens);
});

const schema = { type: 'object', properties: {
  name: { type: 'string', maxLength: 40 },
  age: { type: 'integer', minimum: 0, maximum: 150 },
  mood: { enum: ['happy', 'sad', 'calm'] } },
  required: ['name', 'age', 'mood'], additionalProperties: false };
const validatePerson = ajv.compile(schema);

check('text.format json_schema: output_text parses and validates', async () => {
  for (let i = 0; i < ROUNDS; i++) {
    const r = await client.responses.create({ model: 'any', input: 'Describe a person.',
      max_output_tokens: 160, temperature: 1.0, seed: 70 + i,
      text: { format: { type: 'json_schema', name: 'person', schema, strict: true } } });
    assert.equal(r.status, 'completed', JSON.stringify(r.output));
    checkResponse(r, 160);
    const value = JSON.parse(r.output_text);
    assert.ok(validatePerson(value), `${r.output_text}: ${ajv.errorsText(validatePerson.errors)}`);
    assert.equal(r.text.format.type, 'json_schema');
  }
});

async function expect400(params, needle) {
  let err = null;
  try {
    await client.responses.create({ ...base, max_output_tokens: 4, ...params });
  } catch (e) { err = e; }
  assert.ok(err, `expected a 400 for ${JSON.stringify(params).slice(0, 200)}`);
  assert.ok(err instanceof OpenAI.BadRequestError, `${err}`);
  assert.equal(err.status, 400);
  assert.ok(err.message.includes(needle), `"${err.message}" does not name "${needle}"`);
  const ok = await client.responses.create({ ...base, max_output_tokens: 2, temperature: 0 });
  assert.equal(ok.object, 'response');
}

check('400s name their field', async () => {
  await expect400({ previous_response_id: 'resp_123' }, 'previous_response_id');
  await expect400({ bogus_field: 1 }, 'bogus_field');
  await expect400({ tools: [{ type: 'web_search' }] }, 'tools[0].type');
  await expect400({ input: [{ type: 'function_call_output', call_id: 'nope', output: 'x' }] },
                  'input[0].call_id');
  const badSchema = { type: 'object', properties: 3 };
  await expect400({ text: { format: { type: 'json_schema', name: 'x', schema: badSchema } } },
                  'text.format.schema');
});

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
console.log(`${checks.length - failed}/${checks.length} responses checks passed`);
process.exit(failed ? 1 : 0);
