/** Order statistics for benchmark samples (nearest-rank percentiles). */
export function percentile(samples: readonly number[], p: number): number {
  if (samples.length === 0) return Number.NaN
  const sorted = [...samples].sort((a, b) => a - b)
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))
  return sorted[rank]!
}

export interface Distribution {
  p50: number
  p95: number
  p99: number
  n: number
}

export const distribution = (samples: readonly number[]): Distribution => ({
  p50: percentile(samples, 50),
  p95: percentile(samples, 95),
  p99: percentile(samples, 99),
  n: samples.length,
})
