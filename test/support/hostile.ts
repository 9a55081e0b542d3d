/**
 * Values a callback may fail, die or throw with that break naive error rendering: null-prototype objects, bigints,
 * symbols, throwing getters, Proxies whose every trap throws (and revoked ones), cycles, huge strings, lone
 * surrogates, deep nesting, objects whose `toString` / `toJSON` / `Symbol.toPrimitive` throw.
 *
 * The arbitrary yields a printable *recipe* (`{ kind, ... }`) and `build` makes the value: fast-check prints a failing
 * counterexample, and printing the hostile value itself could throw.
 */
import { FastCheck as fc } from "effect"

/** A recipe for a hostile value (plain data, printable). */
export type Recipe =
  | { readonly kind: "anything"; readonly value: unknown }
  | { readonly kind: "nullProto"; readonly entries: ReadonlyArray<readonly [string, Recipe]> }
  | { readonly kind: "bigint"; readonly value: bigint }
  | { readonly kind: "symbol"; readonly description: string }
  | { readonly kind: "throwingGetter"; readonly key: string; readonly onError: boolean }
  | { readonly kind: "trapProxy"; readonly target: "object" | "array" | "function" | "error" }
  | { readonly kind: "revokedProxy"; readonly target: "object" | "array" }
  | { readonly kind: "cycle"; readonly viaArray: boolean; readonly message: boolean }
  | { readonly kind: "hugeString"; readonly size: number; readonly asMessage: boolean; readonly surrogate: boolean }
  | { readonly kind: "deep"; readonly depth: number }
  | { readonly kind: "throwingConversions" }
  | { readonly kind: "messageOfType"; readonly message: Recipe }
  | { readonly kind: "errorWithCause"; readonly cause: Recipe }
  | { readonly kind: "toolErrorMarker"; readonly throwingMessage: boolean }

const boom = () => {
  throw new Error("hostile")
}

const trapHandler: ProxyHandler<object> = new Proxy({}, { get: () => boom })

/** Makes the value a recipe describes. */
export const build = (recipe: Recipe): unknown => {
  switch (recipe.kind) {
    case "anything":
      return recipe.value
    case "nullProto":
      return Object.assign(
        Object.create(null),
        Object.fromEntries(recipe.entries.map(([key, value]) => [key, build(value)]))
      )
    case "bigint":
      return recipe.value
    case "symbol":
      return Symbol(recipe.description)
    case "throwingGetter": {
      const target = recipe.onError ? new Error("visible") : {}
      Object.defineProperty(target, recipe.key, { get: boom, enumerable: true, configurable: true })
      return target
    }
    case "trapProxy": {
      const target = recipe.target === "array" ?
        [] :
        recipe.target === "function" ?
        function f() {} :
        recipe.target === "error" ?
        new Error("x") :
        {}
      return new Proxy(target, trapHandler)
    }
    case "revokedProxy": {
      const { proxy, revoke } = Proxy.revocable(recipe.target === "array" ? [] : {}, {})
      revoke()
      return proxy
    }
    case "cycle": {
      const node: Record<string, unknown> = {}
      node.self = recipe.viaArray ? [1, node, [node]] : node
      if (recipe.message) node.message = node
      return node
    }
    case "hugeString": {
      const text = (recipe.surrogate ? "\uD800" : "") + "x".repeat(recipe.size) + (recipe.surrogate ? "\uDFFF" : "")
      return recipe.asMessage ? new Error(text) : text
    }
    case "deep": {
      let value: unknown = "bottom"
      for (let i = 0; i < recipe.depth; i++) value = i % 2 === 0 ? [value] : { inner: value }
      return value
    }
    case "throwingConversions":
      return { toString: boom, toJSON: boom, valueOf: boom, [Symbol.toPrimitive]: boom, [Symbol.iterator]: boom }
    case "messageOfType":
      return { message: build(recipe.message) }
    case "errorWithCause":
      return new Error("", { cause: build(recipe.cause) })
    case "toolErrorMarker":
      return recipe.throwingMessage ?
        {
          isToolError: true,
          get message(): string {
            throw new Error("hostile")
          }
        } :
        { isToolError: true, message: 42n }
  }
}

const anything = fc.anything({
  withBigInt: true,
  withBoxedValues: true,
  withDate: true,
  withMap: true,
  withNullPrototype: true,
  withObjectString: true,
  withSet: true,
  withSparseArray: true,
  withTypedArray: true,
  withUnicodeString: true
})

const keys = fc.constantFrom("message", "_tag", "name", "stack", "cause", "label", "toJSON", "isToolError", "x")

/** Hostile recipes, plus `fc.anything()` with every option on. */
export const recipe: fc.Arbitrary<Recipe> = fc.letrec<{ recipe: Recipe }>((tie) => ({
  recipe: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    anything.map((value): Recipe => ({ kind: "anything", value })),
    fc.array(fc.tuple(fc.string(), tie("recipe")), { maxLength: 4 }).map((entries): Recipe => ({
      kind: "nullProto",
      entries
    })),
    fc.bigInt().map((value): Recipe => ({ kind: "bigint", value })),
    fc.string({ unit: "binary" }).map((description): Recipe => ({ kind: "symbol", description })),
    fc.record({ key: keys, onError: fc.boolean() }).map((r): Recipe => ({ kind: "throwingGetter", ...r })),
    fc.constantFrom<"object" | "array" | "function" | "error">("object", "array", "function", "error").map((
      target
    ): Recipe => ({ kind: "trapProxy", target })),
    fc.constantFrom<"object" | "array">("object", "array").map((target): Recipe => ({ kind: "revokedProxy", target })),
    fc.record({ viaArray: fc.boolean(), message: fc.boolean() }).map((r): Recipe => ({ kind: "cycle", ...r })),
    fc.record({
      size: fc.constantFrom(10_000, 1_000_000, 4_000_000),
      asMessage: fc.boolean(),
      surrogate: fc.boolean()
    }).map((r): Recipe => ({ kind: "hugeString", ...r })),
    fc.constantFrom(100, 10_000).map((depth): Recipe => ({ kind: "deep", depth })),
    fc.constant<Recipe>({ kind: "throwingConversions" }),
    tie("recipe").map((message): Recipe => ({ kind: "messageOfType", message })),
    tie("recipe").map((cause): Recipe => ({ kind: "errorWithCause", cause })),
    fc.boolean().map((throwingMessage): Recipe => ({ kind: "toolErrorMarker", throwingMessage }))
  )
})).recipe
