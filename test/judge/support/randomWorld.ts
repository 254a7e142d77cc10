/**
 * Random worlds for the scheduler comparison: DAG files written out for Airflow's DAG processor,
 * and the task instances airlock completes in them. Deterministic for a seed, so a failure prints
 * the seed that reproduces it (AIRLOCK_JUDGE_SEED).
 */

/** mulberry32: a small seeded generator, enough to pick shapes. */
export function generator(seed: number): () => number {
  let state = seed >>> 0
  return () => {
    state = (state + 0x6d2b79f5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

export interface RandomWorld {
  seed: number
  /** The DAG file, Python. */
  dagFile: string
  /** Producer tasks (of DAG `p`) airlock completes, with an alias emission for `via_alias`. */
  complete: string[]
  aliasTarget: string | null
  /** Consumers that already have a running run and max_active_runs=1. */
  busy: string[]
  /** Consumers whose file is gone (`dag.is_stale`, as the DAG processor marks it). */
  stale: string[]
  /** Consumers whose file no longer parses (`dag.has_import_errors`, as the DAG processor marks it). */
  importErrors: string[]
  describe: string
}

type Node = {kind: 'asset'; name: string; ref: boolean} | {kind: 'alias'} | {kind: 'all' | 'any'; of: Node[]}

export function randomWorld(seed: number): RandomWorld {
  const random = generator(seed)
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!
  const assetCount = 2 + Math.floor(random() * 5) // 2–6
  const assets = Array.from({length: assetCount}, (_, i) => `a${i}`)

  const leaf = (): Node =>
    random() < 0.12 ? {kind: 'alias'} : {kind: 'asset', name: pick(assets), ref: random() < 0.25}
  const condition = (depth: number): Node => {
    if (depth === 0 || random() < 0.35) return leaf()
    const size = 2 + Math.floor(random() * 2)
    return {kind: random() < 0.5 ? 'all' : 'any', of: Array.from({length: size}, () => condition(depth - 1))}
  }
  const python = (node: Node): string => {
    if (node.kind === 'alias') return 'alias'
    if (node.kind === 'asset') return node.ref ? `Asset.ref(name="${node.name}")` : node.name
    return `(${node.of.map(python).join(node.kind === 'all' ? ' & ' : ' | ')})`
  }

  const consumers = Array.from({length: 2 + Math.floor(random() * 3)}, (_, i) => {
    const paused = random() < 0.15
    const busy = random() < 0.15
    const stale = random() < 0.12
    const importErrors = !stale && random() < 0.12
    return {id: `c${i}`, condition: python(condition(2)), paused, busy, stale, importErrors}
  })
  const declared = assets.map((name) => ({name, byRef: random() < 0.25}))
  const complete = declared.filter(() => random() < 0.7).map(({name}) => `t_${name}`)
  const aliasTarget = random() < 0.4 ? pick(assets) : null
  if (aliasTarget) complete.push('via_alias')

  const lines = [
    'from datetime import datetime',
    'from airflow.sdk import DAG, Asset, AssetAlias',
    'from airflow.providers.standard.operators.empty import EmptyOperator',
    'START = datetime(2026, 1, 1)',
    ...assets.map((name) => `${name} = Asset(name="${name}", uri="s3://judge/${name}")`),
    'alias = AssetAlias("alias")',
    'with DAG("p", schedule=None, start_date=START, catchup=False):',
    ...declared.map(
      ({name, byRef}) =>
        `    EmptyOperator(task_id="t_${name}", outlets=[${byRef ? `Asset.ref(name="${name}")` : name}])`,
    ),
    '    EmptyOperator(task_id="via_alias", outlets=[alias])',
    ...consumers.flatMap((c) => [
      `with DAG("${c.id}", schedule=${c.condition}, start_date=START, catchup=False` +
        `${c.paused ? ', is_paused_upon_creation=True' : ''}${c.busy ? ', max_active_runs=1' : ''}):`,
      '    EmptyOperator(task_id="work")',
    ]),
  ]
  return {
    seed,
    dagFile: lines.join('\n') + '\n',
    complete,
    aliasTarget,
    busy: consumers.filter((c) => c.busy).map((c) => c.id),
    stale: consumers.filter((c) => c.stale).map((c) => c.id),
    importErrors: consumers.filter((c) => c.importErrors).map((c) => c.id),
    describe: consumers
      .map(
        (c) =>
          `${c.id}: ${c.condition}${c.paused ? ' (paused)' : ''}${c.busy ? ' (busy)' : ''}` +
          `${c.stale ? ' (stale)' : ''}${c.importErrors ? ' (import errors)' : ''}`,
      )
      .concat(`complete: ${complete.join(', ') || 'nothing'}${aliasTarget ? ` (alias → ${aliasTarget})` : ''}`)
      .join('; '),
  }
}
