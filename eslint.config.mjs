// ESLint 9 flat config: typescript-eslint for correctness, @effect/eslint-plugin's dprint rule for
// formatting in Effect's house style (it runs offline, unlike the standalone dprint CLI).
import effect from "@effect/eslint-plugin"
import tseslint from "typescript-eslint"

// The layers of src/, lowest first; a folder imports only from the folders below it (README: Architecture).
// The entry points (src/*.ts) sit on top and may import anything.
const below = {
  internal: [],
  domain: ["internal"],
  services: ["internal", "domain"],
  stores: ["internal", "domain", "services"],
  layers: ["internal", "domain", "services"],
  tools: ["internal", "domain", "services", "layers"],
  producers: ["internal", "domain", "services", "layers", "tools"],
  render: ["internal", "domain"],
  agent: ["internal", "domain", "services", "layers", "tools"],
  inbox: ["internal", "domain", "services", "stores", "layers", "tools", "producers", "render", "agent"],
  // Sessions on @effect/cluster: the entity runs the agent loop of src/agent on the session services.
  cluster: ["internal", "domain", "services", "layers", "tools", "agent"],
  // The MCP server: the producers, the resolve tool and the inbox, served to any MCP client.
  mcp: ["internal", "domain", "services", "stores", "layers", "tools", "producers", "render", "agent", "inbox"]
}
const layering = Object.entries(below).map(([folder, allowed]) => {
  const forbidden = Object.keys(below).filter((other) => other !== folder && !allowed.includes(other))
  return {
    files: [`src/${folder}/**/*.ts`],
    rules: {
      "no-restricted-imports": ["error", {
        patterns: [{
          regex: `^(\\.\\./)+(${forbidden.join("|")})/`,
          message: `src/${folder} may import only from ${allowed.length === 0 ? "itself" : allowed.join(", ")} ` +
            `(the layers below it): see the README's Architecture section.`
        }]
      }]
    }
  }
})

export default tseslint.config(
  { ignores: ["dist/**", "node_modules/**", "*.config.*"] },
  ...tseslint.configs.recommended,
  ...effect.configs.dprint,
  {
    rules: {
      "@typescript-eslint/no-explicit-any": "off",
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_" }],
      "@typescript-eslint/no-empty-object-type": "off",
      "@typescript-eslint/no-namespace": "off",
      "@effect/dprint": ["error", {
        config: {
          indentWidth: 2,
          lineWidth: 120,
          semiColons: "asi",
          quoteStyle: "alwaysDouble",
          trailingCommas: "never",
          operatorPosition: "maintain",
          "arrowFunction.useParentheses": "force"
        }
      }]
    }
  },
  // The `require` conditions of the entries (src/entry/*.cts) are CommonJS: require() is what they are for.
  { files: ["src/entry/*.cts"], rules: { "@typescript-eslint/no-require-imports": "off" } },
  ...layering
)
