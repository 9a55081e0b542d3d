/**
 * The inbox's page: plain files in `src/inbox/page/` (HTML, ES2022 modules, CSS, an icon), served as they are. No
 * build step and no library: what the browser runs is what the repository holds, and the Content-Security-Policy
 * (`script-src 'self'`, no inline script) allows exactly these files. The package ships `src/`, and this module sits
 * three levels below the package root both as `src/inbox/internal/page.ts` (run with tsx) and as
 * `dist/inbox/internal/page.js` (the build), so one relative path finds the files from either.
 */
import * as Effect from "effect/Effect"
import { createHash } from "node:crypto"
import * as fs from "node:fs/promises"

/** One file of the page: its bytes, content type and a strong ETag. */
export interface Asset {
  readonly body: Uint8Array
  readonly contentType: string
  readonly etag: string
}

/** The page's files by the path they are served at. */
export type Assets = ReadonlyMap<string, Asset>

const files = [
  ["/", "index.html", "text/html; charset=utf-8"],
  ["/inbox.js", "inbox.js", "text/javascript; charset=utf-8"],
  // The modules inbox.js imports.
  ["/common.js", "common.js", "text/javascript; charset=utf-8"],
  ["/format.js", "format.js", "text/javascript; charset=utf-8"],
  ["/filters.js", "filters.js", "text/javascript; charset=utf-8"],
  ["/editor.js", "editor.js", "text/javascript; charset=utf-8"],
  ["/inbox.css", "inbox.css", "text/css; charset=utf-8"],
  ["/favicon.svg", "favicon.svg", "image/svg+xml"]
] as const

/** The directory the files are read from. */
export const directory = new URL("../../../src/inbox/page/", import.meta.url)

/** Reads the page's files once (the server keeps them in memory). */
export const load: Effect.Effect<Assets, Error> = Effect.tryPromise({
  try: async () => {
    const assets = new Map<string, Asset>()
    for (const [route, name, contentType] of files) {
      const body = new Uint8Array(await fs.readFile(new URL(name, directory)))
      assets.set(route, {
        body,
        contentType,
        etag: `"${createHash("sha256").update(body).digest("base64url").slice(0, 27)}"`
      })
    }
    return assets
  },
  catch: (cause) =>
    new Error(
      `effect-resolve inbox: the page's files could not be read from ${directory.pathname} (${
        cause instanceof Error ? cause.message : String(cause)
      }); the package's src/inbox/page/ must be installed with it.`
    )
})
