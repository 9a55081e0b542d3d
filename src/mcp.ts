/**
 * The MCP server: staged, commit-exact edits and plan approval for every agent, not only Effect apps. Any MCP client
 * (Claude Code, Codex, Cursor, VS Code) previews edits, lists and reads the pending actions, and resolves them; a
 * person decides through the approval inbox or the client's own prompt (elicitation). Over stdio, or Streamable HTTP
 * on 127.0.0.1 with a bearer token. The command line: `npx effect-resolve mcp --root DIR` (docs/mcp.md). Needs
 * `@effect/ai`, `@effect/rpc`, `@effect/platform` and `@effect/platform-node`.
 *
 * @since 0.4.0
 */

/** @since 0.4.0 */
export * as ResolveMcp from "./mcp/ResolveMcp.js"
