/**
 * An instant as airlock's prose prints it, to the second, UTC: "2026-12-05 03:12:07Z". JSON
 * fields keep ISO 8601 (`toISOString`); every sentence a person reads uses this one form.
 */
export function instant(when: Date | string): string {
  const iso = typeof when === 'string' ? new Date(when).toISOString() : when.toISOString()
  return `${iso.slice(0, 10)} ${iso.slice(11, 19)}Z`
}

/** How long ago, in the unit a person reads at a glance: "26 h ago", "3 min ago". */
export function ago(then: Date, now: Date): string {
  const seconds = Math.max(0, Math.round((now.getTime() - then.getTime()) / 1000))
  if (seconds < 120) return `${seconds} s ago`
  if (seconds < 7200) return `${Math.round(seconds / 60)} min ago`
  if (seconds < 172_800) return `${Math.round(seconds / 3600)} h ago`
  return `${Math.round(seconds / 86_400)} d ago`
}
