import {usageError} from '../errors.js'

/**
 * The placeholders an --output name may carry, so a cron job keeps one command line and still
 * writes a new file each run (airlock never overwrites one). Times are UTC, in ISO 8601's basic
 * form: no colons, which some filesystems and tools refuse in a file name, and names sort by time.
 */
const placeholders: Record<string, (now: Date) => string> = {
  timestamp: (now) =>
    now
      .toISOString()
      .replace(/[-:]/g, '')
      .replace(/\.\d+Z$/, 'Z'),
  date: (now) => now.toISOString().slice(0, 10),
  pid: () => String(process.pid),
}

export const outputPlaceholders = Object.keys(placeholders).map((name) => `{${name}}`)

/** `name` with its placeholders filled in for `now`; an unknown placeholder is refused (exit 2). */
export function expandOutputName(name: string, flag: string, now = new Date()): string {
  return name.replace(/\{([^{}]*)\}/g, (whole, key: string) => {
    const fill = Object.hasOwn(placeholders, key) ? placeholders[key] : undefined
    if (!fill)
      throw usageError(
        `${flag} ${name}: ${whole} is not a placeholder airlock knows; it knows ${outputPlaceholders.join(', ')}.`,
        [`e.g. ${flag} 'replay-{timestamp}.ndjson' (UTC: replay-20261204T031507Z.ndjson).`],
      )
    return fill(now)
  })
}
