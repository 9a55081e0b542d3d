/**
 * The documents' relative links lead somewhere: every `[text](path)` in the README, the CHANGELOG and docs/ that is
 * not a URL names a file of this repository, and its `#anchor`, when it has one, names a heading of that file.
 */
import { assert, describe, it } from "@effect/vitest"
import { existsSync, readdirSync, readFileSync } from "node:fs"
import { dirname, join, relative, resolve } from "node:path"
import { fileURLToPath } from "node:url"

const root = resolve(dirname(fileURLToPath(import.meta.url)), "../..")
const documents = ["README.md", "CHANGELOG.md", ...readdirSync(join(root, "docs")).map((f) => `docs/${f}`)]
  .filter((f) => f.endsWith(".md"))

/** GitHub's heading anchors: lower case, punctuation dropped, spaces as hyphens. */
const anchors = (markdown: string): Set<string> =>
  new Set(
    markdown.split("\n").filter((line) => /^#{1,6} /.test(line)).map((line) =>
      line.replace(/^#+ /, "").trim().toLowerCase().replace(/[^\p{L}\p{N} _-]/gu, "").replace(/ /g, "-")
    )
  )

/** The links of a document outside code blocks and code spans. */
const links = (markdown: string): Array<string> =>
  markdown.replace(/```[\s\S]*?```/g, "").replace(/`[^`\n]*`/g, "").match(/\]\(([^)\s]+)\)/g)?.map((m) =>
    m.slice(2, -1)
  ) ?? []

describe("the documents' links", () => {
  it("every relative link names a file of the repository, and a heading of it when it has an anchor", () => {
    const broken: Array<string> = []
    let checked = 0
    for (const document of documents) {
      const text = readFileSync(join(root, document), "utf8")
      for (const link of links(text)) {
        if (/^[a-z]+:/i.test(link)) continue
        checked++
        const [path = "", anchor] = link.split("#")
        const target = path === "" ? join(root, document) : resolve(dirname(join(root, document)), path)
        if (!existsSync(target)) {
          broken.push(`${document}: ${link} (no file ${relative(root, target)})`)
        } else if (
          anchor !== undefined && target.endsWith(".md") && !anchors(readFileSync(target, "utf8")).has(anchor)
        ) {
          broken.push(`${document}: ${link} (no heading #${anchor} in ${relative(root, target)})`)
        }
      }
    }
    assert.isAbove(checked, 10, "the documents link to each other")
    assert.deepStrictEqual(broken, [])
  })
})
