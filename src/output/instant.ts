/**
 * An instant as airlock's prose prints it, to the second, UTC: "2026-12-05 03:12:07Z". JSON
 * fields keep ISO 8601 (`toISOString`); every sentence a person reads uses this one form.
 */
export function instant(when: Date | string): string {
  const iso = typeof when === 'string' ? new Date(when).toISOString() : when.toISOString()
  return `${iso.slice(0, 10)} ${iso.slice(11, 19)}Z`
}
