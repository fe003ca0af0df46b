// Agents through the official `openai` npm client (run by server_test's ServerNodeClient.Agents tests): tool
// calls ("required", named, streamed, a two-turn round trip), structured output (json_schema checked with ajv,
// json_object) and the 400s for bad constraints, each followed by a request that must still succeed.
// Env: LAZYSLOT_URL, LAZYSLOT_API_KEY, ROUNDS (tries per randomised check, default 6). The model's weights
// may be random: every answer must be valid anyway, because sampling is constrained by the grammar.
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import Ajv from 'ajv';

const client = new OpenAI({ baseURL: `${process.env.LAZYSLOT_URL}/v1`, apiKey: process.env.LAZYSLOT_API_KEY,
                            maxRetries: 0, timeout: 300_000 });
const ROUNDS = Number(process.env.ROUNDS || 6);
const ajv = new Ajv({ allErrors: true, strict: false });

const tools = [
  { type: 'function', function: { name: 'get_weather', description: 'Current weather in a city.',
    parameters: { type: 'object', properties: {
      city: { type: 'string', description: 'City name' },
      unit: { type: 'string', enum: ['celsius', 'fahrenheit'] } },
      required: ['city'], additionalProperties: false } } },
  { type: 'function', function: { name: 'add', description: 'Adds two integers.',
    parameters: { type: 'object', properties: { a: { type: 'integer' }, b: { type: 'integer', minimum: -100, maximum: 100 } },
      required: ['a', 'b'], additionalProperties: false } } },
];
const validators = Object.fromEntries(tools.map(t => [t.function.name, ajv.compile(t.function.parameters)]));
const messages = [{ role: 'system', content: 'You are a helpful assistant.' },
                  { role: 'user', content: 'What is the weather in Paris?' }];

function checkCall(call, allowed) {
  assert.equal(call.type, 'function');
  assert.ok(typeof call.id === 'string' && call.id.length > 0, 'call id');
  assert.ok(allowed.includes(call.function.name), `unexpected tool ${call.function.name}`);
  const args = JSON.parse(call.function.arguments);
  const v = validators[call.function.name];
  assert.ok(v(args), `arguments ${call.function.arguments} do not validate: ${ajv.errorsText(v.errors)}`);
  return args;
}

const checks = [];
function check(name, fn) { checks.push({ name, fn }); }

check('tool_choice "required": a valid call every time', async () => {
  for (let i = 0; i < ROUNDS; i++) {
    const r = await client.chat.completions.create({ model: 'any', messages, tools, tool_choice: 'required',
                                                     max_tokens: 128, temperature: 1.0, seed: 100 + i });
    const c = r.choices[0];
    assert.equal(c.finish_reason, 'tool_calls', JSON.stringify(c));
    assert.ok(c.message.tool_calls.length >= 1);
    for (const call of c.message.tool_calls) checkCall(call, ['get_weather', 'add']);
  }
});

check('tool_choice "auto": text, or valid calls when the model opens one', async () => {
  for (let i = 0; i < ROUNDS; i++) {
    const r = await client.chat.completions.create({ model: 'any', messages, tools, max_tokens: 48,
                                                     temperature: 1.0, seed: 600 + i });
    const c = r.choices[0];
    if (c.message.tool_calls && c.message.tool_calls.length) {
      assert.equal(c.finish_reason, 'tool_calls');
      for (const call of c.message.tool_calls) checkCall(call, ['get_weather', 'add']);
    } else {
      assert.ok(['stop', 'length'].includes(c.finish_reason));
      assert.equal(typeof c.message.content, 'string');
    }
  }
});

check('named function: that function, valid, every time', async () => {
  for (let i = 0; i < ROUNDS; i++) {
    const r = await client.chat.completions.create({ model: 'any', messages, tools, max_tokens: 128,
      tool_choice: { type: 'function', function: { name: 'add' } }, temperature: 1.0, seed: 200 + i });
    const c = r.choices[0];
    assert.equal(c.finish_reason, 'tool_calls', JSON.stringify(c));
    for (const call of c.message.tool_calls) checkCall(call, ['add']);
  }
});

check('streamed tool calls: deltas reassemble into valid calls', async () => {
  for (let i = 0; i < ROUNDS; i++) {
    const stream = await client.chat.completions.create({ model: 'any', messages, tools, tool_choice: 'required',
      max_tokens: 128, temperature: 1.0, seed: 300 + i, stream: true });
    const calls = [];
    let finish = null;
    for await (const chunk of stream) {
      for (const ch of chunk.choices) {
        if (ch.finish_reason) finish = ch.finish_reason;
        for (const d of ch.delta.tool_calls || []) {
          if (!calls[d.index]) {  // the first delta of a call carries its id, type and name
            assert.ok(d.id && d.function && d.function.name, `first delta of call ${d.index}: ${JSON.stringify(d)}`);
            assert.equal(d.type, 'function');
            calls[d.index] = { id: d.id, type: 'function', function: { name: d.function.name, arguments: '' } };
          }
          if (d.function && d.function.arguments) calls[d.index].function.arguments += d.function.arguments;
        }
      }
    }
    assert.equal(finish, 'tool_calls');
    assert.ok(calls.length >= 1);
    for (const call of calls) checkCall(call, ['get_weather', 'add']);
  }
});

check('two-turn tool round trip', async () => {
  const first = await client.chat.completions.create({ model: 'any', messages, tools, max_tokens: 128,
    tool_choice: { type: 'function', function: { name: 'get_weather' } }, temperature: 0.7, seed: 7 });
  const msg = first.choices[0].message;
  assert.equal(msg.tool_calls.length >= 1, true);
  const history = [...messages, msg];
  for (const call of msg.tool_calls) {
    history.push({ role: 'tool', tool_call_id: call.id, content: JSON.stringify({ temperature: 21, unit: 'celsius' }) });
  }
  const second = await client.chat.completions.create({ model: 'any', messages: history, tools, max_tokens: 16,
                                                        temperature: 0, tool_choice: 'none' });
  assert.equal(second.choices[0].message.role, 'assistant');
  assert.equal(typeof second.choices[0].message.content, 'string');
  assert.ok(second.usage.prompt_tokens > first.usage.prompt_tokens);
});

const schema = { type: 'object', properties: {
  name: { type: 'string', maxLength: 40 },
  age: { type: 'integer', minimum: 0, maximum: 150 },
  mood: { enum: ['happy', 'sad', 'calm'] },
  tags: { type: 'array', items: { type: 'string' }, minItems: 1, maxItems: 3 } },
  required: ['name', 'age', 'mood', 'tags'], additionalProperties: false };
const validateSchema = ajv.compile(schema);

check('response_format json_schema validates every time', async () => {
  for (let i = 0; i < ROUNDS; i++) {
    const r = await client.chat.completions.create({ model: 'any', messages: [{ role: 'user', content: 'Describe a person.' }],
      response_format: { type: 'json_schema', json_schema: { name: 'person', schema, strict: true } },
      max_tokens: 160, temperature: 1.0, seed: 400 + i });
    const c = r.choices[0];
    assert.equal(c.finish_reason, 'stop', JSON.stringify(c));
    const value = JSON.parse(c.message.content);
    assert.ok(validateSchema(value), `${c.message.content}: ${ajv.errorsText(validateSchema.errors)}`);
  }
});

check('response_format json_object gives a JSON object', async () => {
  for (let i = 0; i < ROUNDS; i++) {
    const r = await client.chat.completions.create({ model: 'any', messages: [{ role: 'user', content: 'JSON please.' }],
      response_format: { type: 'json_object' }, max_tokens: 96, temperature: 1.0, seed: 500 + i });
    const value = JSON.parse(r.choices[0].message.content);
    assert.ok(value !== null && typeof value === 'object' && !Array.isArray(value), r.choices[0].message.content);
  }
});

async function expect400(params, needle) {
  let err = null;
  try {
    await client.chat.completions.create({ model: 'any', messages, max_tokens: 4, ...params });
  } catch (e) { err = e; }
  assert.ok(err, `expected a 400 for ${JSON.stringify(params).slice(0, 200)}`);
  assert.equal(err.status, 400, String(err));
  assert.ok(err.message.includes(needle), `"${err.message}" does not name "${needle}"`);
  // The server keeps serving.
  const ok = await client.chat.completions.create({ model: 'any', messages, max_tokens: 2, temperature: 0 });
  assert.equal(ok.choices.length, 1);
}

check('bad constraints are 400s naming the field', async () => {
  await expect400({ response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'object', properties: 3 } } } },
                  'response_format.json_schema.schema');
  await expect400({ response_format: { type: 'json_schema', json_schema: { name: 'x',
                    schema: { type: 'object', patternProperties: { '^a': { type: 'string' } } } } } }, 'patternProperties');
  await expect400({ grammar: 'root ::= "a" |\nfoo ::= [a-' }, 'line 2');
  await expect400({ tools, tool_choice: { type: 'function', function: { name: 'nope' } } }, 'nope');
  await expect400({ tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object', properties: { a: { type: 12 } } } } }],
                    tool_choice: 'required' }, 'tools[0]');
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
console.log(`${checks.length - failed}/${checks.length} agent checks passed`);
process.exit(failed ? 1 : 0);
