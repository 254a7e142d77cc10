/**
 * Up to three names within a small edit distance of `wanted` (a typo), closest first: for the
 * "did you mean" of a mistyped DAG id or connection profile.
 */
export function closeMatches(wanted: string, candidates: readonly string[]): string[] {
  const limit = Math.max(2, Math.floor(wanted.length / 4))
  return candidates
    .map((candidate) => ({candidate, distance: editDistance(wanted.toLowerCase(), candidate.toLowerCase())}))
    .filter(({distance}) => distance <= limit)
    .sort((a, b) => a.distance - b.distance || a.candidate.localeCompare(b.candidate))
    .slice(0, 3)
    .map(({candidate}) => candidate)
}

function editDistance(a: string, b: string): number {
  let previous = Array.from({length: b.length + 1}, (_, j) => j)
  for (let i = 1; i <= a.length; i++) {
    const current = [i]
    for (let j = 1; j <= b.length; j++) {
      current[j] = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1))
    }

    previous = current
  }

  return previous[b.length]!
}
