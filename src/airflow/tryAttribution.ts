/**
 * On what evidence an asset event was given to a try of its task instance, strongest first
 * (docs/audit-events.md, "Which try an event belongs to"; the SQL is store/postgres/attribution.ts):
 * - `named`: an airlock audit row of that try names the event;
 * - `window`: stamped between that try's start and its last write;
 * - `only_try`: the key has no other try it could belong to;
 * - `gap`: stamped between one try's last write and the next try's start: unattributed;
 * - `conflict`: audit rows of two tries name it: unattributed;
 * - `unknown_try`: an airlock row names it without a try (a copy of an unattributed event):
 *   unattributed.
 * The codes are what the SQL returns.
 */
export const attributionBasis = {named: 1, window: 2, only_try: 3, gap: 4, conflict: 5, unknown_try: 6} as const
export type AttributionBasis = keyof typeof attributionBasis

export function basisOfCode(code: number | null): AttributionBasis | null {
  const found = Object.entries(attributionBasis).find(([, value]) => value === code)
  return found ? (found[0] as AttributionBasis) : null
}
