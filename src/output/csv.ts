/** One CSV field (RFC 4180): quoted when it holds a quote, comma or newline; empty for null. */
export function csvCell(value: unknown): string {
  const text = value === null || value === undefined ? '' : typeof value === 'string' ? value : JSON.stringify(value)
  return /[",\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text
}
