/**
 * The code blocks of the README and of `docs/*.md` are the files under `examples/`, and the output blocks under them
 * are what those files print. A block is marked by a comment naming its file:
 *
 *     <!-- example: examples/quick-start.ts -->
 *     ```ts
 *     ...the file, verbatim...
 *     ```
 *     <!-- output -->            (optional)
 *     ```text
 *     ...what `node --import tsx examples/quick-start.ts` prints...
 *     ```
 *
 * `tsx scripts/readme-examples.ts` checks that every marked block equals its file and its recorded output (exit
 * 1 otherwise); `--write` rewrites each document from the files and fresh runs, and says which blocks changed (or
 * that the documents are up to date). The test suite runs the same check (test/examples/Examples.test.ts).
 */
import { execFile } from "node:child_process"
import { readdirSync, readFileSync, writeFileSync } from "node:fs"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import { promisify } from "node:util"

/** The repository root. */
export const root = join(dirname(fileURLToPath(import.meta.url)), "..")

/** One marked block of a document. */
export interface ExampleBlock {
  /** The file, relative to the repository root. */
  readonly file: string
  /** The code shown in the document. */
  readonly code: string
  /** The output shown in the document, when the block records one. */
  readonly output: string | undefined
}

const marker = /<!-- example: (\S+) -->\n```ts\n([\s\S]*?)```\n(?:<!-- output -->\n```text\n([\s\S]*?)```\n)?/g

/** Every marked block of a document's text, in order. */
export const blocks = (readme: string): ReadonlyArray<ExampleBlock> =>
  Array.from(readme.matchAll(marker), (m) => ({ file: m[1]!, code: m[2]!, output: m[3] }))

/** Runs an example as a user would (Node with tsx), from the repository root; resolves with what it printed. */
export const runExample = async (file: string): Promise<string> => {
  const { stdout } = await promisify(execFile)(process.execPath, ["--import", "tsx", file], {
    cwd: root,
    env: { ...process.env, NO_COLOR: "1" },
    timeout: 120_000,
    maxBuffer: 16 * 1024 * 1024
  })
  return stdout
}

/** The documents that show examples, relative to the repository root: the README, then `docs/*.md`. */
export const documents = (): ReadonlyArray<string> => [
  "README.md",
  ...readdirSync(join(root, "docs")).filter((name) => name.endsWith(".md")).sort().map((name) => `docs/${name}`)
]

const read = (document: string) => readFileSync(join(root, document), "utf8")

const writeOne = async (document: string): Promise<{ readonly count: number; readonly changed: number }> => {
  const text = read(document)
  let out = ""
  let last = 0
  const changed: Array<string> = []
  let count = 0
  for (const m of text.matchAll(marker)) {
    const file = m[1]!
    const code = readFileSync(join(root, file), "utf8")
    const output = m[3] === undefined ? undefined : await runExample(file)
    const what = [...(code === m[2] ? [] : ["code"]), ...(output === m[3] ? [] : ["output"])]
    if (what.length > 0) changed.push(`${file}: ${what.join(" and ")}`)
    count++
    out += text.slice(last, m.index) + `<!-- example: ${file} -->\n\`\`\`ts\n${code}\`\`\`\n` +
      (output === undefined ? "" : `<!-- output -->\n\`\`\`text\n${output}\`\`\`\n`)
    last = m.index! + m[0].length
  }
  if (changed.length === 0) return { count, changed: 0 }
  writeFileSync(join(root, document), out + text.slice(last))
  console.log(`${document}: rewrote ${changed.length} of ${count} example blocks:`)
  for (const line of changed) console.log(`  ${line}`)
  return { count, changed: changed.length }
}

const write = async () => {
  let count = 0
  let changed = 0
  for (const document of documents()) {
    const result = await writeOne(document)
    count += result.count
    changed += result.changed
  }
  if (changed === 0) console.log(`The documents are up to date (${count} example blocks).`)
}

const check = async () => {
  const problems: Array<string> = []
  for (const document of documents()) {
    for (const block of blocks(read(document))) {
      if (readFileSync(join(root, block.file), "utf8") !== block.code) {
        problems.push(`${document}, ${block.file}: code differs`)
      }
      if (block.output !== undefined && (await runExample(block.file)) !== block.output) {
        problems.push(`${document}, ${block.file}: output differs`)
      }
    }
  }
  for (const problem of problems) console.error(problem)
  if (problems.length === 0) console.log("The example blocks of the README and docs/ match their files and outputs.")
  if (problems.length > 0) {
    console.error("Run `npm run readme` to rewrite the example blocks from the files.")
    process.exitCode = 1
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  await (process.argv.includes("--write") ? write() : check())
}
