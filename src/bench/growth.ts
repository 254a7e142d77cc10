import {usageError} from '../errors.js'
import {escapeXml} from './chart.js'
import type {ScaleReport} from './scale.js'

/**
 * `bench --scale --sizes`: the same reading commands over worlds of growing size, lined up by
 * command. A command whose cost grows with the world only as its rows do keeps a flat time per
 * row, and a command that streams keeps a flat peak RSS; either line rising is the finding.
 */
export interface GrowthRow {
  key: string
  /** One per world, in the order of `worlds`: microseconds per row read, and peak RSS. */
  points: Array<{microsPerRow: number; peakRssMb: number} | null>
}

export interface Growth {
  worlds: Array<{events: number; taskInstances: number}>
  rows: GrowthRow[]
}

export function growthOf(reports: readonly ScaleReport[]): Growth {
  const keys = [...new Set(reports.flatMap((report) => report.commands.flatMap((c) => (c.key ? [c.key] : []))))]
  return {
    worlds: reports.map((report) => ({events: report.world.events, taskInstances: report.world.taskInstances})),
    rows: keys.map((key) => ({
      key,
      points: reports.map((report) => {
        const command = report.commands.find((c) => c.key === key)
        return command ? {microsPerRow: (command.seconds * 1e6) / command.rows, peakRssMb: command.peakRssMb} : null
      }),
    })),
  }
}

const count = (n: number) =>
  n >= 1e6 ? `${+(n / 1e6).toFixed(1)}M` : n >= 1e3 ? `${+(n / 1e3).toFixed(0)}k` : String(Math.round(n))

/** The growth table as markdown: µs per row and peak RSS of each command at each world size. */
export function growthMarkdown(growth: Growth): string[] {
  const header = growth.worlds.map((w) => `${count(w.events)} events`)
  const cell = (point: GrowthRow['points'][number]) =>
    point ? `${point.microsPerRow.toFixed(1)} µs/row, ${point.peakRssMb.toFixed(0)} MB` : '-'
  return [
    '### Growth: time per row and peak RSS at each world size',
    '',
    `| command | ${header.join(' | ')} |`,
    `| --- | ${header.map(() => '---').join(' | ')} |`,
    ...growth.rows.map((row) => `| ${row.key} | ${row.points.map(cell).join(' | ')} |`),
  ]
}

const palette = ['#2471a3', '#c0392b', '#27ae60', '#8e44ad', '#d35400', '#7f8c8d']

/**
 * Microseconds per row against world size (log-scale x axis), one line per command, as a
 * self-contained SVG: flat lines are the claim.
 */
export function growthChart(growth: Growth, caption: string): string {
  const width = 860
  const height = 420
  const margin = {left: 70, right: 330, top: 40, bottom: 60}
  const plotW = width - margin.left - margin.right
  const plotH = height - margin.top - margin.bottom
  // A log scale on both axes: commands a hundred times apart in time per row are all readable,
  // and flat stays flat.
  // Below 0.1 µs a row is drawn at 0.1 (no command reads a row that fast); no point at all: 1 to 10.
  const floorValue = 0.1
  const values = growth.rows.flatMap((row) =>
    row.points.flatMap((p) => (p ? [Math.max(floorValue, p.microsPerRow)] : [])),
  )
  const bottom = values.length > 0 ? 10 ** Math.floor(Math.log10(Math.min(...values))) : 1
  const top = Math.max(bottom * 10, values.length > 0 ? 10 ** Math.ceil(Math.log10(Math.max(...values))) : 10)
  const events = growth.worlds.map((w) => Math.log10(w.events))
  const [low, high] = [Math.min(...events), Math.max(...events)]
  const x = (i: number) => margin.left + (high === low ? plotW / 2 : ((events[i]! - low) / (high - low)) * plotW)
  const span = Math.log10(top / bottom) || 1
  const y = (v: number) => margin.top + plotH - (Math.log10(v / bottom) / span) * plotH
  const parts: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="12">`,
    `<rect width="100%" height="100%" fill="white"/>`,
    `<text x="${margin.left}" y="22" font-size="14" font-weight="bold">time per row read (µs, log scale) as the world grows</text>`,
  ]
  for (let v = bottom; v <= top * 1.0001; v *= 10) {
    parts.push(`<line x1="${margin.left}" x2="${margin.left + plotW}" y1="${y(v)}" y2="${y(v)}" stroke="#ddd"/>`)
    parts.push(`<text x="${margin.left - 8}" y="${y(v) + 4}" text-anchor="end">${+v.toPrecision(3)}</text>`)
  }
  growth.worlds.forEach((w, i) =>
    parts.push(`<text x="${x(i)}" y="${margin.top + plotH + 20}" text-anchor="middle">${count(w.events)}</text>`),
  )
  parts.push(
    `<text x="${margin.left + plotW / 2}" y="${height - 22}" text-anchor="middle">asset events in the world (log scale)</text>`,
  )
  growth.rows.forEach((row, k) => {
    const color = palette[k % palette.length]!
    const points = row.points.flatMap((p, i) => (p ? [[x(i), y(Math.max(floorValue, p.microsPerRow))] as const] : []))
    parts.push(
      `<polyline fill="none" stroke="${color}" stroke-width="2.5" points="${points.map(([px, py]) => `${px},${py}`).join(' ')}"/>`,
    )
    for (const [px, py] of points) parts.push(`<circle cx="${px}" cy="${py}" r="3.5" fill="${color}"/>`)
    const ly = margin.top + 20 + k * 22
    parts.push(
      `<line x1="${width - margin.right + 15}" x2="${width - margin.right + 40}" y1="${ly}" y2="${ly}" stroke="${color}" stroke-width="2.5"/>`,
    )
    parts.push(`<text x="${width - margin.right + 46}" y="${ly + 4}">${escapeXml(row.key)}</text>`)
  })
  parts.push(`<text x="${margin.left}" y="${height - 6}" fill="#555" font-size="11">${escapeXml(caption)}</text>`)
  parts.push('</svg>')
  return parts.join('\n') + '\n'
}

/**
 * --sizes: world sizes in asset events (`100k`, `1M`, plain numbers), each a whole number of task
 * instances at --scale-events per task instance, within what --scale-tis allows.
 */
export function parseEventSizes(value: string, eventsPerTi: number): number[] {
  return value.split(',').map((part) => {
    const match = /^(\d+(?:\.\d+)?)([kKmM]?)$/.exec(part.trim())
    if (!match)
      throw usageError(`--sizes takes asset event counts such as 100k,1M,10M (got "${part.trim()}" in "${value}").`)
    const events = Number(match[1]) * ({k: 1e3, m: 1e6}[match[2]!.toLowerCase()] ?? 1)
    const taskInstances = Math.round(events / eventsPerTi)
    if (taskInstances < 200 || taskInstances > 2_000_000)
      throw usageError(
        `--sizes ${part.trim()}: ${taskInstances} task instances at ${eventsPerTi} events each; a world holds 200 to 2,000,000.`,
      )
    return taskInstances
  })
}
