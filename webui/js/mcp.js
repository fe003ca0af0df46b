// MCP servers (Model Context Protocol, Streamable HTTP transport) whose tools the page offers to the model,
// reached through this server's /cors-proxy (--ui-mcp-proxy), since they send no CORS headers. JSON-RPC 2.0
// over POST: initialize (its Mcp-Session-Id kept), notifications/initialized, tools/list, tools/call; an
// answer comes as JSON or as Server-Sent Events. Headers meant for the MCP server travel as
// x-llama-server-proxy-header-<name>, the only ones the proxy forwards.
import { send, readEvents, ApiError } from './api.js';

const PROXY_PREFIX = 'x-llama-server-proxy-header-';
const PROTOCOL = '2025-06-18';

export class McpServer {
  constructor(url) {
    this.url = url;
    this.session = '';
    this.nextId = 1;
    this.tools = [];  // MCP tool descriptions: {name, description, inputSchema}
  }

  async rpc(method, params, { notify = false } = {}) {
    const message = { jsonrpc: '2.0', method };
    if (params !== undefined) message.params = params;
    const id = notify ? undefined : this.nextId++;
    if (id !== undefined) message.id = id;
    const extraHeaders = {
      [`${PROXY_PREFIX}content-type`]: 'application/json',
      [`${PROXY_PREFIX}accept`]: 'application/json, text/event-stream',
      [`${PROXY_PREFIX}mcp-protocol-version`]: PROTOCOL,
    };
    if (this.session) extraHeaders[`${PROXY_PREFIX}mcp-session-id`] = this.session;
    const res = await send(`/cors-proxy?url=${encodeURIComponent(this.url)}`, { method: 'POST', body: message, extraHeaders });
    const session = res.headers.get('Mcp-Session-Id');
    if (session) this.session = session;
    if (notify) return null;
    let reply = null;
    if ((res.headers.get('Content-Type') || '').startsWith('text/event-stream')) {
      for await (const ev of readEvents(res)) {
        const m = JSON.parse(ev.data);
        if (m.id === id) reply = m;
      }
    } else {
      reply = JSON.parse(await res.text());
    }
    if (!reply) throw new ApiError(502, `${this.url}: no answer to ${method}`);
    if (reply.error) throw new ApiError(502, `${this.url}: ${method}: ${reply.error.message || JSON.stringify(reply.error)}`);
    return reply.result;
  }

  async connect() {
    await this.rpc('initialize', { protocolVersion: PROTOCOL, capabilities: {},
                                   clientInfo: { name: 'lazyslot-webui', version: '1' } });
    await this.rpc('notifications/initialized', undefined, { notify: true });
    const listed = await this.rpc('tools/list', {});
    this.tools = Array.isArray(listed?.tools) ? listed.tools : [];
    return this.tools;
  }

  // The tool's text content (its parts joined), or an Error with the server's words when isError is set.
  async call(name, args) {
    const result = await this.rpc('tools/call', { name, arguments: args });
    const text = (result?.content || []).map((c) => (c.type === 'text' ? c.text : JSON.stringify(c))).join('\n');
    if (result?.isError) throw new Error(text || 'the tool failed');
    return text;
  }
}

// An MCP tool as the OpenAI tool definition a chat request carries.
export function toolDefinition(tool) {
  return { type: 'function', function: { name: tool.name, description: tool.description || '',
                                         parameters: tool.inputSchema || { type: 'object', properties: {} } } };
}
