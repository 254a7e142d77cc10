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
  /**
   * When not met: the fewest missing leaves that would make it true. An AND needs every part it
   * misses, an OR only its cheapest side (the first, when two cost the same), so an alternative
   * is never listed as something the DAG waits for.
   */
  waitingFor: string[]
}

/**
 * A condition as a tree of labelled leaves, parsed once from its encoding: what the preview folds
 * over a batch and what `explain` prints.
 */
export type ConditionTree =
  | {kind: 'asset'; label: string; name: string; uri: string}
  | {kind: 'ref'; label: string; name?: string; uri?: string}
  | {kind: 'alias'; label: string; name: string}
  | {kind: 'all' | 'any'; children: ConditionTree[]}
  /** A node of a type this release of airlock does not know: never true, as for the scheduler's evaluator. */
  | {kind: 'unknown'; type: string}

export type ConditionLeaf = Extract<ConditionTree, {label: string}>

interface Encoded {
  __type?: string
  __var?: Record<string, unknown>
  [field: string]: unknown
}

/** Trees by the encoded condition they were parsed from: the store hands every item the same object per DAG hash. */
const parsed = new WeakMap<object, ConditionTree>()

/** The tree of an encoded condition (fields flat, or under `__var`); undefined without one. */
export function parseCondition(encoded: unknown): ConditionTree | undefined {
  if (encoded === undefined || encoded === null) return undefined
  if (typeof encoded === 'object') {
    const known = parsed.get(encoded)
    if (known) return known
    const tree = parseTree(encoded)
    parsed.set(encoded, tree)
    return tree
  }
  return parseTree(encoded)
}

function parseTree(encoded: unknown): ConditionTree {
  const parse = (node: unknown): ConditionTree => {
    const n = (node ?? {}) as Encoded
    const fields = n.__var ?? n
    // Names and uris are strings in every encoding; anything else names nothing.
    const text = (value: unknown) => (typeof value === 'string' ? value : '')
    switch (n.__type) {
      case 'asset':
        return {kind: 'asset', label: text(fields.name), name: text(fields.name), uri: text(fields.uri)}
      case 'asset_ref':
        return fields.name !== undefined
          ? {kind: 'ref', label: `Asset.ref(name=${text(fields.name)})`, name: text(fields.name)}
          : {kind: 'ref', label: `Asset.ref(uri=${text(fields.uri)})`, uri: text(fields.uri)}
      case 'asset_alias':
        return {kind: 'alias', label: `alias ${text(fields.name)}`, name: text(fields.name)}
      case 'asset_all':
      case 'asset_any':
        return {
          kind: n.__type === 'asset_all' ? 'all' : 'any',
          children: ((fields.objects as unknown[] | undefined) ?? []).map(parse),
        }
      default:
        return {kind: 'unknown', type: text(n.__type)}
    }
  }
  return parse(encoded)
}

/**
 * Whether the queue satisfies a leaf, as `AssetEvaluator` decides it: the predicate over an index
 * of the queue built once (a consumer of thousands of assets holds thousands of queue rows, and
 * every leaf is looked up in them).
 */
export function queuedLeaf({assets: queued, aliases}: QueuedAssets): (leaf: ConditionLeaf) => boolean {
  const keys = new Set(queued.map((q) => JSON.stringify([q.name, q.uri])))
  const activeNames = new Set(queued.filter((q) => q.active).map((q) => q.name))
  const activeUris = new Set(queued.filter((q) => q.active).map((q) => q.uri))
  const aliasNames = new Set(aliases)
  return (leaf) => {
    switch (leaf.kind) {
      case 'asset':
        return keys.has(JSON.stringify([leaf.name, leaf.uri]))
      case 'ref':
        return leaf.name !== undefined ? activeNames.has(leaf.name) : activeUris.has(leaf.uri!)
      case 'alias':
        return aliasNames.has(leaf.name)
    }
  }
}

/** Every leaf of a tree, in the condition's order. */
export function leavesOf(tree: ConditionTree | undefined): ConditionLeaf[] {
  if (!tree || tree.kind === 'unknown') return []
  return 'children' in tree ? tree.children.flatMap(leavesOf) : [tree]
}

/**
 * `AssetEvaluator.run` over a tree whose leaves `isMet` decides: every leaf is visited (no short
 * cut), so every leaf is counted. No tree is never met: the scheduler would not create a run.
 */
export function evaluateTree(
  tree: ConditionTree | undefined,
  isMet: (leaf: ConditionLeaf) => boolean,
): ConditionResult {
  const leaves = leavesOf(tree)
  const satisfied = leaves.filter(isMet).map((leaf) => leaf.label)
  const met = tree !== undefined && metOf(tree, isMet)
  return {
    met,
    leaves: leaves.map((leaf) => leaf.label),
    satisfied,
    waitingFor: met || !tree ? [] : (missingOf(tree, isMet) ?? []),
  }
}

function metOf(tree: ConditionTree, isMet: (leaf: ConditionLeaf) => boolean): boolean {
  switch (tree.kind) {
    case 'all':
      return tree.children.every((child) => metOf(child, isMet))
    case 'any':
      return tree.children.some((child) => metOf(child, isMet))
    case 'unknown':
      return false
    default:
      return isMet(tree)
  }
}

/** The fewest leaves that would make a node true; undefined when nothing can (an unknown node, an empty OR). */
function missingOf(tree: ConditionTree, isMet: (leaf: ConditionLeaf) => boolean): string[] | undefined {
  if (metOf(tree, isMet)) return []
  switch (tree.kind) {
    case 'all': {
      const parts = tree.children.map((child) => missingOf(child, isMet))
      if (parts.some((part) => part === undefined)) return undefined
      return [...new Set(parts.flatMap((part) => part!))]
    }
    case 'any': {
      let best: string[] | undefined
      for (const child of tree.children) {
        const part = missingOf(child, isMet)
        if (part !== undefined && (best === undefined || part.length < best.length)) best = part
      }
      return best
    }
    case 'unknown':
      return undefined
    default:
      return [tree.label]
  }
}

/** An encoded condition against a consumer's queue rows (parseCondition, then evaluateTree). */
export function evaluateCondition(encoded: unknown, queued: QueuedAssets): ConditionResult {
  return evaluateTree(parseCondition(encoded), queuedLeaf(queued))
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
