/**
 * The rollup fingerprint of a partitioned timetable, as 3.3's scheduler computes it to decide
 * whether a pending partition run was queued under the mapper definition the DAG has now
 * (`compute_rollup_fingerprint`, airflow/timetables/base.py, 3.3.0–3.3.2): for every asset of the
 * condition `"{name}|{uri}"`, for every name reference `"{name}|"` and every uri reference
 * `"|{uri}"`, the encoded partition mapper `get_partition_mapper` resolves for it
 * (`PartitionedAssetTimetable`, airflow/timetables/simple.py). The encodings are the ones the DAG
 * processor wrote into the serialized timetable (`encode_partition_mapper`), which is what the
 * scheduler re-encodes after it deserializes them. An alias names no asset and is left out.
 *
 * undefined: the timetable is not a `PartitionedAssetTimetable` airlock can read, so there is no
 * fingerprint to compare with.
 */
export function rollupFingerprint(timetable: unknown): Record<string, unknown> | undefined {
  const mappers = partitionMappers(timetable)
  if (!mappers) return undefined
  const {resolve} = mappers
  const fields = ((timetable as Encoded).__var ?? {}) as Record<string, unknown>

  const entries = new Map<string, unknown>()
  const condition = leaves(fields.asset_condition)
  for (const leaf of condition.filter((l) => l.kind === 'asset'))
    entries.set(`${leaf.name}|${leaf.uri}`, resolve(leaf.name, leaf.uri))
  for (const leaf of condition) {
    if (leaf.kind === 'name') entries.set(`${leaf.name}|`, resolve(leaf.name, ''))
    else if (leaf.kind === 'uri') entries.set(`|${leaf.uri}`, resolve('', leaf.uri))
  }
  return Object.fromEntries(entries)
}

/**
 * A `PartitionedAssetTimetable`'s partition mappers as `get_partition_mapper` resolves them
 * (airflow/timetables/simple.py): each configured asset-like maps its assets' names and uris, its
 * references' name or uri, a later entry winning; a name is looked up by name only (a miss falls
 * back to the default, never to the uri); only a uri reference, whose name is empty, is looked up
 * by uri. undefined: not a timetable airlock can read.
 */
export function partitionMappers(
  timetable: unknown,
): {resolve: (name: string, uri: string) => unknown; byName: Record<string, unknown>; fallback: unknown} | undefined {
  const t = timetable as Encoded | null | undefined
  if (t?.__type !== 'airflow.timetables.simple.PartitionedAssetTimetable') return undefined
  const fields = (t.__var ?? {}) as Record<string, unknown>
  const fallback = fields.default_partition_mapper
  if (fallback === undefined) return undefined
  const byName = new Map<string, unknown>()
  const byUri = new Map<string, unknown>()
  const config = Array.isArray(fields.partition_mapper_config) ? fields.partition_mapper_config : []
  for (const pair of config) {
    if (!Array.isArray(pair) || pair.length !== 2) return undefined
    const [assetLike, mapper] = pair as [unknown, unknown]
    for (const leaf of leaves(assetLike)) {
      if (leaf.kind === 'asset') {
        byName.set(leaf.name, mapper)
        byUri.set(leaf.uri, mapper)
      } else if (leaf.kind === 'name') byName.set(leaf.name, mapper)
      else byUri.set(leaf.uri, mapper)
    }
  }
  const resolve = (name: string, uri: string) =>
    name ? (byName.get(name) ?? fallback) : uri ? (byUri.get(uri) ?? fallback) : fallback
  return {resolve, byName: Object.fromEntries(byName), fallback}
}

/** Whether two fingerprints are the same JSON value (a jsonb comparison: key order is not part of it). */
export function sameFingerprint(a: unknown, b: unknown): boolean {
  return canonical(a) === canonical(b)
}

interface Encoded {
  __type?: string
  __var?: unknown
}

type Leaf =
  | {kind: 'asset'; name: string; uri: string}
  | {kind: 'name'; name: string; uri?: never}
  | {kind: 'uri'; uri: string; name?: never}

/** The assets and references of an encoded asset-like, in order (iter_assets, iter_asset_refs). */
function leaves(encoded: unknown): Leaf[] {
  const n = (encoded ?? {}) as Encoded & Record<string, unknown>
  const fields = (n.__var ?? n) as Record<string, unknown>
  const text = (value: unknown) => (typeof value === 'string' ? value : '')
  switch (n.__type) {
    case 'asset':
      return [{kind: 'asset', name: text(fields.name), uri: text(fields.uri)}]
    case 'asset_ref':
      return fields.name !== undefined
        ? [{kind: 'name', name: text(fields.name)}]
        : [{kind: 'uri', uri: text(fields.uri)}]
    case 'asset_all':
    case 'asset_any':
      return ((fields.objects as unknown[] | undefined) ?? []).flatMap(leaves)
    default:
      return []
  }
}

const canonical = (value: unknown): string =>
  value !== null && typeof value === 'object' && !Array.isArray(value)
    ? `{${Object.keys(value)
        .sort()
        .map((k) => `${JSON.stringify(k)}:${canonical((value as Record<string, unknown>)[k])}`)
        .join(',')}}`
    : Array.isArray(value)
      ? `[${value.map(canonical).join(',')}]`
      : JSON.stringify(value)
