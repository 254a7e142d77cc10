/**
 * A consumer DAG's asset condition as the scheduler evaluates it: the encoded
 * `dag.timetable.__var.asset_condition` of its latest serialized DAG (`encode_asset_condition`,
 * airflow-core/src/airflow/serialization/serialized_objects.py) evaluated by `AssetEvaluator`
 * (airflow-core/src/airflow/assets/evaluation.py) against the statuses `dags_needing_dagruns`
 * builds from the DAG's queue rows (airflow-core/src/airflow/models/dag.py): an asset is true when
 * a queue row names its (name, uri); `asset_ref` resolves by name or uri to an ACTIVE asset
 * (`resolve_ref_to_asset`); an alias is true when any asset linked to it is queued
 * (`expand_alias_to_assets`); `asset_all` / `asset_any` take all / any of their objects.
 * Anything else (no condition, an unknown type) is false: the scheduler would not create a run.
 */

/** A consumer's queue rows, as the evaluation needs them. */
export interface QueuedAssets {
  /** The queued assets, each by (name, uri) and whether it is active (what an `asset_ref` resolves to). */
  assets: ReadonlyArray<{name: string; uri: string; active: boolean}>
  /** The aliases linked (asset_alias_asset) to any queued asset. */
  aliases: readonly string[]
}

/** What the condition's leaves are, and which of them the queue satisfies. */
export interface ConditionResult {
  met: boolean
  /** Every leaf of the condition, as the operator knows it (asset name, ref, alias). */
  leaves: string[]
  /** The leaves the queue satisfies. */
  satisfied: string[]
  /** When not met: the leaves still missing (for an `any`, every one of its missing leaves). */
  waitingFor: string[]
}

interface Encoded {
  __type?: string
  __var?: Record<string, unknown>
  [field: string]: unknown
}

export function evaluateCondition(encoded: unknown, {assets: queued, aliases}: QueuedAssets): ConditionResult {
  const leaves: string[] = []
  const satisfied: string[] = []
  const missing: string[] = []
  const visit = (node: unknown): boolean => {
    const n = (node ?? {}) as Encoded
    const fields = n.__var ?? n
    // Names and uris are strings in every encoding; anything else names nothing.
    const text = (value: unknown) => (typeof value === 'string' ? value : '')
    const leaf = (label: string, value: boolean) => {
      leaves.push(label)
      ;(value ? satisfied : missing).push(label)
      return value
    }
    switch (n.__type) {
      case 'asset':
        return leaf(
          text(fields.name),
          queued.some((q) => q.name === fields.name && q.uri === fields.uri),
        )
      case 'asset_ref':
        return fields.name !== undefined
          ? leaf(
              `Asset.ref(name=${text(fields.name)})`,
              queued.some((q) => q.active && q.name === fields.name),
            )
          : leaf(
              `Asset.ref(uri=${text(fields.uri)})`,
              queued.some((q) => q.active && q.uri === fields.uri),
            )
      case 'asset_alias':
        return leaf(`alias ${text(fields.name)}`, aliases.includes(text(fields.name)))
      case 'asset_all':
      case 'asset_any': {
        // Every child is visited (no short cut), so every leaf is counted.
        const results = ((fields.objects as unknown[] | undefined) ?? []).map(visit)
        return n.__type === 'asset_all' ? results.every(Boolean) : results.some(Boolean)
      }
      default:
        return false
    }
  }
  const met = encoded !== undefined && encoded !== null && visit(encoded)
  return {met, leaves, satisfied, waitingFor: met ? [] : missing}
}

/**
 * What of the queue can matter to an encoded condition: the names and uris its assets and refs
 * mention (the queue rows evaluateCondition may match), and whether it has an alias leaf (only
 * then does it read the aliases linked to the queued assets).
 */
export function conditionAssets(encoded: unknown): {names: string[]; uris: string[]; aliases: boolean} {
  const names = new Set<string>()
  const uris = new Set<string>()
  let aliases = false
  const visit = (node: unknown) => {
    const n = (node ?? {}) as Encoded
    const fields = n.__var ?? n
    if (n.__type === 'asset' || n.__type === 'asset_ref') {
      if (typeof fields.name === 'string') names.add(fields.name)
      if (typeof fields.uri === 'string') uris.add(fields.uri)
    }
    if (n.__type === 'asset_alias') aliases = true
    if (n.__type === 'asset_all' || n.__type === 'asset_any') {
      for (const child of (fields.objects as unknown[] | undefined) ?? []) visit(child)
    }
  }
  visit(encoded)
  return {names: [...names], uris: [...uris], aliases}
}
