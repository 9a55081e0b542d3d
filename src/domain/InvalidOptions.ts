/**
 * Options objects checked at run time: a JavaScript caller (or one going through `as any`) gets a typed
 * `InvalidOptions` naming the bad key, what it allows and what it got, instead of a misspelt option silently
 * ignored or a negative bound silently used. One small helper, `checkOptions`, used by every public `layer`
 * that takes options (`ResolveConfig.layer`, `TurnDriver.layer`, `ResolveRuntime.layerDurable`, `Inbox.layer`,
 * `InboxServer.layer`).
 *
 * @example
 * ```ts
 * import { Effect, Layer } from "effect"
 * import { ResolveConfig } from "effect-resolve"
 *
 * // Fails with InvalidOptions: Invalid options for ResolveConfig.layer: "enforcment" is not an option (did you
 * // mean "enforcement"?); the options are discardWithoutPending, enforcement, ...
 * const program = Layer.launch(ResolveConfig.layer({ enforcment: "soft" } as any))
 * ```
 *
 * @since 0.4.0
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { show } from "../internal/untrusted.js"

/**
 * Options given to a constructor or layer are not what it takes: `key` is not one of its options, or its value is
 * not what the option allows. `of` names the constructor (`ResolveConfig.layer`). Nothing was built.
 *
 * @since 0.4.0
 * @category errors
 */
export class InvalidOptions extends Schema.TaggedError<InvalidOptions>("effect-resolve/InvalidOptions")(
  "InvalidOptions",
  {
    /** The constructor or layer given the options, such as `ResolveConfig.layer`. */
    of: Schema.String,
    /** The bad key (`options` when the options are not an object at all). */
    key: Schema.String,
    /** What is wrong with it, and what is allowed. */
    problem: Schema.String
  }
) {
  /**
   * @since 0.4.0
   */
  override get message(): string {
    return `Invalid options for ${this.of}: ${this.key === "options" ? "the options" : this.key} ${this.problem}.`
  }
}

/**
 * One option: the values it allows (a Schema, only ever asked `Schema.is`: no message of it prints the value),
 * how a message says so, and whether it must be given. An option given as `undefined` counts as not given.
 *
 * @since 0.4.0
 * @category models
 * @internal
 */
export interface OptionSpec {
  readonly schema: Schema.Schema<any, any, never>
  /** What the option must be, completing "must be ...": `"force" or "soft"`. */
  readonly expected: string
  readonly required?: boolean
}

/**
 * The options a constructor takes, by key.
 *
 * @since 0.4.0
 * @category models
 * @internal
 */
export type OptionsSpec = Readonly<Record<string, OptionSpec>>

/** The edit distance of two short strings (for "did you mean"). */
const distance = (a: string, b: string): number => {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j)
  for (let i = 1; i <= a.length; i++) {
    const current = [i]
    for (let j = 1; j <= b.length; j++) {
      current[j] = Math.min(
        previous[j]! + 1,
        current[j - 1]! + 1,
        previous[j - 1]! + (a[i - 1]!.toLowerCase() === b[j - 1]!.toLowerCase() ? 0 : 1)
      )
    }
    previous = current
  }
  return previous[b.length]!
}

const nearest = (key: string, known: ReadonlyArray<string>): Option.Option<string> => {
  if (key.length > 100) return Option.none()
  let best: string | undefined
  let bestDistance = Infinity
  for (const candidate of known) {
    const d = distance(key, candidate)
    if (d < bestDistance) {
      best = candidate
      bestDistance = d
    }
  }
  if (best !== undefined && bestDistance <= Math.max(2, Math.floor(key.length / 4))) return Option.some(best)
  // A shortened or lengthened name (`secure` for `secureCookie`).
  const lower = key.toLowerCase()
  return key.length >= 3 ?
    Option.fromNullable(known.find((candidate) => {
      const other = candidate.toLowerCase()
      return other.startsWith(lower) || lower.startsWith(other)
    })) :
    Option.none()
}

/**
 * Checks `input` against `spec`: an object whose own keys are all options of `spec`, each value what its option
 * allows, every required option given. Fails with `InvalidOptions` naming the first problem. `input` itself is
 * not changed or copied.
 *
 * @since 0.4.0
 * @category checking
 * @internal
 */
export const checkOptions = (
  of: string,
  spec: OptionsSpec,
  input: unknown
): Effect.Effect<void, InvalidOptions> => {
  const fail = (key: string, problem: string) => Effect.fail(new InvalidOptions({ of, key, problem }))
  if (input === undefined) input = {}
  if (input === null || typeof input !== "object" || Array.isArray(input)) {
    return fail("options", `must be an object; got ${show(input)}`)
  }
  const known = Object.keys(spec)
  for (const key of Reflect.ownKeys(input)) {
    const name = typeof key === "string" ? key : String(key)
    if (typeof key !== "string" || !Object.hasOwn(spec, key)) {
      const hint = Option.match(nearest(name, known), {
        onNone: () => "",
        onSome: (near) => ` (did you mean ${JSON.stringify(near)}?)`
      })
      return fail(
        JSON.stringify(name.length > 100 ? `${name.slice(0, 100)}…` : name),
        `is not an option${hint}; the options are ${known.join(", ")}`
      )
    }
  }
  for (const key of known) {
    const option = spec[key]!
    const value = (input as Record<string, unknown>)[key]
    if (value === undefined) {
      if (option.required === true) return fail(key, `is required: ${option.expected}`)
      continue
    }
    if (!Schema.is(option.schema, { onExcessProperty: "error" })(value)) {
      return fail(key, `must be ${option.expected}; got ${show(value)}`)
    }
  }
  return Effect.void
}

/**
 * What a `Duration.DurationInput` may be, at least `millis` long: a number of milliseconds (not negative), a
 * bigint of nanoseconds, a `Duration`, text such as `"5 seconds"`, or `[seconds, nanos]`.
 *
 * @since 0.4.0
 * @category option specs
 * @internal
 */
export const durationAtLeast = (millis: number): OptionSpec => ({
  schema: Schema.declare((u): u is Duration.DurationInput =>
    // A negative number decodes to zero: refused here rather than read as zero.
    !(typeof u === "number" && !(u >= 0)) &&
    Option.match(Duration.decodeUnknown(u), {
      onNone: () => false,
      onSome: (d) => !Duration.isFinite(d) || Duration.toMillis(d) >= millis
    })
  ),
  expected: `a duration${
    millis > 0 ? ` of at least ${millis} milliseconds` : ""
  }: milliseconds (a number), text such as "5 seconds", or a Duration`
})

/**
 * What a `Duration.DurationInput` may be (see `durationAtLeast`), 0 or more.
 *
 * @since 0.4.0
 * @category option specs
 * @internal
 */
export const duration: OptionSpec = durationAtLeast(0)

/**
 * A whole number at least `min`.
 *
 * @since 0.4.0
 * @category option specs
 * @internal
 */
export const wholeNumber = (min: number, max: number = Number.MAX_SAFE_INTEGER): OptionSpec => ({
  schema: Schema.Int.pipe(Schema.between(min, max)),
  expected: max === Number.MAX_SAFE_INTEGER ?
    `a whole number, ${min} or more` :
    `a whole number from ${min} to ${max}`
})

/**
 * One of these strings.
 *
 * @since 0.4.0
 * @category option specs
 * @internal
 */
export const oneOf = (...values: ReadonlyArray<string>): OptionSpec => ({
  schema: Schema.Literal(...(values as [string, ...Array<string>])),
  expected: values.length === 1 ?
    JSON.stringify(values[0]) :
    `${values.slice(0, -1).map((v) => JSON.stringify(v)).join(", ")} or ${JSON.stringify(values.at(-1))}`
})

/**
 * `true` or `false`.
 *
 * @since 0.4.0
 * @category option specs
 * @internal
 */
export const boolean: OptionSpec = { schema: Schema.Boolean, expected: "true or false" }

/**
 * A string, at least one character long.
 *
 * @since 0.4.0
 * @category option specs
 * @internal
 */
export const text: OptionSpec = { schema: Schema.String.pipe(Schema.minLength(1)), expected: "a non-empty string" }

/**
 * An array of anything (its items are the option's own business, such as kinds).
 *
 * @since 0.4.0
 * @category option specs
 * @internal
 */
export const array: OptionSpec = { schema: Schema.Array(Schema.Unknown), expected: "an array" }

/**
 * An array of action kinds (each made by `ActionKind.make`: a `name` and an `apply`).
 *
 * @since 0.4.0
 * @category option specs
 * @internal
 */
export const kinds: OptionSpec = {
  schema: Schema.declare((u): u is ReadonlyArray<unknown> =>
    Array.isArray(u) &&
    u.every((kind) =>
      kind !== null && typeof kind === "object" && typeof kind.name === "string" && typeof kind.apply === "function"
    )
  ),
  expected: "an array of action kinds (each made with ActionKind.make)"
}

/**
 * An array of action kinds or contracts (each made by `ActionKind.make`, `implement` or `contract`: a `name` and a
 * `payload` Schema).
 *
 * @since 0.4.0
 * @category option specs
 * @internal
 */
export const contracts: OptionSpec = {
  schema: Schema.declare((u): u is ReadonlyArray<unknown> =>
    Array.isArray(u) &&
    u.every((kind) =>
      kind !== null && typeof kind === "object" && typeof kind.name === "string" && Schema.isSchema(kind.payload)
    )
  ),
  expected: "an array of action kinds or contracts (each made with ActionKind.make, implement or contract)"
}
