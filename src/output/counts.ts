/** "1 run", "3 runs", "2,093 task instances". */
export const plural = (n: number, noun: string) => `${n.toLocaleString('en-US')} ${noun}${n === 1 ? '' : 's'}`

/** "12 none, 2 success": counts by name, the largest first. */
export const describeCounts = (counts: Record<string, number>) =>
  Object.entries(counts)
    .sort(([, a], [, b]) => b - a)
    .map(([name, n]) => `${n.toLocaleString('en-US')} ${name}`)
    .join(', ')
