import type {LockHoldRow} from './lockHold.js'

/**
 * Lock hold p50 against outlet count for both orderings and the floor, log-scale y axis, as a
 * self-contained SVG (no fonts or scripts to fetch), for the README.
 */
export function lockHoldChart(rows: readonly LockHoldRow[], caption: string): string {
  const width = 720
  const height = 420
  const margin = {left: 70, right: 170, top: 40, bottom: 60}
  const plotW = width - margin.left - margin.right
  const plotH = height - margin.top - margin.bottom
  const series = [
    {key: 'lock_first', label: 'lock first (old order)', color: '#c0392b'},
    {key: 'register_first', label: 'register first (airlock)', color: '#2471a3'},
    {key: 'floor', label: 'raw floor', color: '#7f8c8d'},
  ] as const
  const values = rows.flatMap((row) => series.map((s) => row.lockHold[s.key].p50)).filter((v) => v > 0)
  const low = Math.floor(Math.log10(Math.min(...values)))
  const high = Math.ceil(Math.log10(Math.max(...values)))
  const y = (v: number) => margin.top + plotH - ((Math.log10(Math.max(v, 10 ** low)) - low) / (high - low || 1)) * plotH
  const x = (i: number) => margin.left + (rows.length === 1 ? plotW / 2 : (i / (rows.length - 1)) * plotW)
  const parts: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="12">`,
    `<rect width="100%" height="100%" fill="white"/>`,
    `<text x="${margin.left}" y="22" font-size="14" font-weight="bold">task_instance row lock held during one completion (p50, ms, log scale)</text>`,
  ]
  for (let exp = low; exp <= high; exp++) {
    const v = 10 ** exp
    parts.push(`<line x1="${margin.left}" x2="${margin.left + plotW}" y1="${y(v)}" y2="${y(v)}" stroke="#ddd"/>`)
    parts.push(`<text x="${margin.left - 8}" y="${y(v) + 4}" text-anchor="end">${v >= 1 ? v : v.toFixed(-exp)}</text>`)
  }

  rows.forEach((row, i) =>
    parts.push(`<text x="${x(i)}" y="${margin.top + plotH + 20}" text-anchor="middle">${row.outlets}</text>`),
  )
  parts.push(
    `<text x="${margin.left + plotW / 2}" y="${height - 22}" text-anchor="middle">outlet assets per task</text>`,
  )
  series.forEach((s, k) => {
    const points = rows.map((row, i) => `${x(i)},${y(row.lockHold[s.key].p50)}`).join(' ')
    parts.push(`<polyline fill="none" stroke="${s.color}" stroke-width="2.5" points="${points}"/>`)
    rows.forEach((row, i) =>
      parts.push(`<circle cx="${x(i)}" cy="${y(row.lockHold[s.key].p50)}" r="3.5" fill="${s.color}"/>`),
    )
    const ly = margin.top + 20 + k * 22
    parts.push(
      `<line x1="${width - margin.right + 15}" x2="${width - margin.right + 40}" y1="${ly}" y2="${ly}" stroke="${s.color}" stroke-width="2.5"/>`,
    )
    parts.push(`<text x="${width - margin.right + 46}" y="${ly + 4}">${s.label}</text>`)
  })
  parts.push(`<text x="${margin.left}" y="${height - 6}" fill="#555" font-size="11">${escapeXml(caption)}</text>`)
  parts.push('</svg>')
  return parts.join('\n') + '\n'
}

export const escapeXml = (text: string) =>
  text.replace(/[<>&"]/g, (c) => ({'<': '&lt;', '>': '&gt;', '&': '&amp;', '"': '&quot;'})[c]!)
