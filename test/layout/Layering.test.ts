/**
 * The lint rule that keeps src/ layered (eslint.config.mjs): each folder imports only from the folders below it.
 * `npm test` lints the tree; this test proves the rule catches an import that runs up a layer, and lets the
 * allowed direction through.
 */
import { assert, describe, it } from "@effect/vitest"
import { ESLint } from "eslint"
import * as path from "node:path"

const root = path.resolve(import.meta.dirname, "../..")
const eslint = new ESLint({ cwd: root })

const layeringErrors = async (file: string, code: string) => {
  const [result] = await eslint.lintText(code, { filePath: path.join(root, file) })
  return result!.messages.filter((m) => m.ruleId === "no-restricted-imports").map((m) => m.message)
}

describe("layering", () => {
  it("refuses an import that runs up a layer, naming what the folder may import", async () => {
    const errors = await layeringErrors(
      "src/services/Example.ts",
      "import { TurnDriver } from \"../agent/TurnDriver.js\"\nexport const x = TurnDriver\n"
    )
    assert.lengthOf(errors, 1)
    assert.include(errors[0]!, "src/services may import only from internal, domain")
  })

  it("refuses it from a nested folder too, and between sibling layers", async () => {
    assert.lengthOf(
      await layeringErrors(
        "src/services/internal/Example.ts",
        "import { ResolveTool } from \"../../tools/Resolve.js\"\nexport const x = ResolveTool\n"
      ),
      1
    )
    assert.lengthOf(
      await layeringErrors(
        "src/producers/Example.ts",
        "import { renderResolve } from \"../render/Renderer.js\"\nexport const x = renderResolve\n"
      ),
      1
    )
  })

  it("lets an import from a lower layer through", async () => {
    assert.deepStrictEqual(
      await layeringErrors(
        "src/agent/Example.ts",
        "import { ResolveTool } from \"../tools/Resolve.js\"\nexport const x = ResolveTool\n"
      ),
      []
    )
  })
})
