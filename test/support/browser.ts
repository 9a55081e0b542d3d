/**
 * A real browser for the inbox's page tests: Debian's `chromium` driven by `playwright-core` (which downloads no
 * browser). `.ci/run` installs chromium when it is missing and sets `EFFECT_RESOLVE_REQUIRE_BROWSER=1`, so CI never
 * passes by skipping; on a developer machine without it, the browser tests skip with the reason.
 * `EFFECT_RESOLVE_CHROMIUM` picks another executable.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { type Browser, chromium } from "playwright-core"

export const executablePath = process.env.EFFECT_RESOLVE_CHROMIUM ?? "/usr/bin/chromium"

/** `EFFECT_RESOLVE_REQUIRE_BROWSER=1`: a missing browser is a failure, not a skip. */
export const requireBrowser = (): boolean => process.env.EFFECT_RESOLVE_REQUIRE_BROWSER === "1"

/** Why the browser tests cannot run here, or `undefined` when they can (throws when they must). */
export const browserSkipReason = (): string | undefined => {
  if (fs.existsSync(executablePath)) return undefined
  const reason = `no browser at ${executablePath} (install Debian's chromium, or set EFFECT_RESOLVE_CHROMIUM)`
  if (requireBrowser()) throw new Error(`EFFECT_RESOLVE_REQUIRE_BROWSER=1 but ${reason}`)
  console.warn(`Browser tests SKIPPED: ${reason}. CI runs .ci/run, which requires them.`)
  return reason
}

const isRoot = () => typeof process.getuid === "function" && process.getuid() === 0

/** Launches chromium headless, with nothing that reaches the network by itself. */
export const launch = (): Promise<Browser> =>
  chromium.launch({
    executablePath,
    args: [
      ...(isRoot() ? ["--no-sandbox"] : []),
      "--disable-gpu",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
      "--no-first-run"
    ]
  })

/** Where screenshots go (ignored by git; CI keeps it as an artifact). */
export const artifacts = path.resolve(import.meta.dirname, "../../test-artifacts")

export const screenshotPath = (name: string): string => {
  fs.mkdirSync(artifacts, { recursive: true })
  return path.join(artifacts, name)
}
