/**
 * Scripted agent-session figures (1 000 previews under `"force"` and `"soft"`) through the turn driver.
 */
import type { Row } from "./harness.js"

/** The session rows; empty until the turn-driver figure is wired in. */
export const sessionFigures = async (_previews: number, _repeats: number): Promise<ReadonlyArray<Row>> => []
