/**
 * The package's version, as `package.json` says (a test holds the two equal): what the MCP server reports as its
 * own version.
 *
 * @internal
 */
export const packageVersion = "0.3.0"
