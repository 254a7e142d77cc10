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
  /**
   * The queued assets, each by (name, uri) and whether it is active (what an `asset_ref` resolves
   * to); with its `asset.id` where the caller has it, which lets a tree remember the leaves an id
   * satisfies (an asset's id names one (name, uri) for good).
   */
  assets: ReadonlyArray<{name: string; uri: string; active: boolean; id?: number}>
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
 * Whether the queue satisfies a leaf, as `AssetEvaluator` decides it: an asset when a queued
 * asset has its (name, uri), a ref when an active queued asset has its name (or uri), an alias
 * when it is linked to a queued asset. A predicate over an index of the queue built once; the
 * ref and alias indexes only when a leaf of theirs asks.
 */
export function queuedLeaf({assets: queued, aliases}: QueuedAssets): (leaf: ConditionLeaf) => boolean {
  const keys = new Map<string, string | string[]>()
  for (const {name, uri} of queued) {
    const seen = keys.get(name)
    if (seen === undefined) keys.set(name, uri)
    else if (typeof seen === 'string') {
      if (seen !== uri) keys.set(name, [seen, uri])
    } else if (!seen.includes(uri)) seen.push(uri)
  }
  let active: {names: Set<string>; uris: Set<string>} | undefined
  const activeSets = () => {
    const on = queued.filter((q) => q.active)
    return (active ??= {names: new Set(on.map((q) => q.name)), uris: new Set(on.map((q) => q.uri))})
  }
  let aliasNames: Set<string> | undefined
  return (leaf) => {
    switch (leaf.kind) {
      case 'asset': {
        const uris = keys.get(leaf.name)
        return uris === undefined ? false : typeof uris === 'string' ? uris === leaf.uri : uris.includes(leaf.uri)
      }
      case 'ref':
        return leaf.name !== undefined ? activeSets().names.has(leaf.name) : activeSets().uris.has(leaf.uri!)
      case 'alias':
        return (aliasNames ??= new Set(aliases)).has(leaf.name)
    }
  }
}

/**
 * A tree's leaves numbered in the condition's order, and where each asset, ref and alias leaf
 * is found by the strings a queued asset carries: built once per tree (a tree is never changed
 * once parsed), so evaluating it against a queue walks the queue's rows, never builds an index
 * of them.
 */
interface TreeIndex {
  leaves: ConditionLeaf[]
  labels: string[]
  assetsByName: Map<string, number[]>
  refsByName: Map<string, number[]>
  refsByUri: Map<string, number[]>
  aliasesByName: Map<string, number[]>
  /** Per AND and OR node, each child's leaf position (-1 for a child that is a node): no lookup per leaf and evaluation. */
  slots: Map<ConditionTree, Int32Array>
  /** No label repeats: an AND's missing parts never share one. */
  distinct: boolean
  /** The asset leaves an asset id satisfies (-1 none), learnt as ids are first met: one integer lookup per queued row after. */
  assetLeavesById: Map<number, number | number[]>
}

const indexByTree = new WeakMap<ConditionTree, TreeIndex>()

function treeIndex(tree: ConditionTree): TreeIndex {
  const known = indexByTree.get(tree)
  if (known) return known
  const leaves = leavesOf(tree)
  const index: TreeIndex = {
    leaves,
    labels: leaves.map((leaf) => leaf.label),
    assetsByName: new Map(),
    refsByName: new Map(),
    refsByUri: new Map(),
    aliasesByName: new Map(),
    slots: new Map(),
    distinct: false,
    assetLeavesById: new Map(),
  }
  const add = (map: Map<string, number[]>, key: string, i: number) => {
    const at = map.get(key)
    if (at) at.push(i)
    else map.set(key, [i])
  }
  leaves.forEach((leaf, i) => {
    if (leaf.kind === 'asset') add(index.assetsByName, leaf.name, i)
    else if (leaf.kind === 'alias') add(index.aliasesByName, leaf.name, i)
    else if (leaf.name !== undefined) add(index.refsByName, leaf.name, i)
    else add(index.refsByUri, leaf.uri!, i)
  })
  // Leaves are numbered depth first, children in order: leavesOf's order.
  let next = 0
  const number = (node: ConditionTree): void => {
    if (node.kind === 'unknown') return
    if (!('children' in node)) {
      next++
      return
    }
    const slots = new Int32Array(node.children.length)
    node.children.forEach((child, k) => {
      slots[k] = 'label' in child ? next : -1
      number(child)
    })
    index.slots.set(node, slots)
  }
  number(tree)
  index.distinct = new Set(index.labels).size === leaves.length
  indexByTree.set(tree, index)
  return index
}

/** Every leaf of a tree, in the condition's order (one array per tree: callers do not change it). */
export function leavesOf(tree: ConditionTree | undefined): ConditionLeaf[] {
  if (!tree || tree.kind === 'unknown') return []
  if (!('children' in tree)) return [tree]
  const known = indexByTree.get(tree)?.leaves ?? leavesByTree.get(tree)
  if (known) return known
  const leaves = tree.children.flatMap(leavesOf)
  leavesByTree.set(tree, leaves)
  return leaves
}

const leavesByTree = new WeakMap<ConditionTree, ConditionLeaf[]>()

/**
 * `AssetEvaluator.run` over a tree whose leaves `isMet` decides: every leaf is visited (no short
 * cut), so every leaf is counted. No tree is never met: the scheduler would not create a run.
 * `isMet` is asked once per leaf.
 */
export function evaluateTree(
  tree: ConditionTree | undefined,
  isMet: (leaf: ConditionLeaf) => boolean,
): ConditionResult {
  if (!tree) return {met: false, leaves: [], satisfied: [], waitingFor: []}
  const index = treeIndex(tree)
  const marks = new Uint8Array(index.leaves.length)
  index.leaves.forEach((leaf, i) => {
    if (isMet(leaf)) marks[i] = 1
  })
  return evaluateMarks(tree, index, marks)
}

/**
 * evaluateTree(tree, queuedLeaf(queued)), in time linear in the queue's rows and the tree's
 * leaves: each queued asset marks the leaves it satisfies through the tree's own index (a
 * consumer of tens of thousands of assets is evaluated on every completion that reaches it).
 */
export function evaluateQueue(tree: ConditionTree | undefined, queued: QueuedAssets): ConditionResult {
  if (!tree) return evaluateTree(undefined, () => false)
  const index = treeIndex(tree)
  return evaluateMarks(tree, index, markQueue(index, queued))
}

/**
 * What the downstream preview says of a condition: how many leaves the queue satisfies and how
 * many it still misses, each with its first `cap` labels in the condition's order. The same
 * decision as evaluateQueue, without listing every leaf: a consumer of tens of thousands of assets
 * is previewed on every completion that reaches it, and an operator reads counts there, not lists.
 */
export interface ConditionPreview {
  met: boolean
  /** How many leaves the condition has. */
  leaves: number
  satisfied: string[]
  satisfiedCount: number
  /** The first `cap` of evaluateQueue's waitingFor (the fewest missing leaves). */
  waitingFor: string[]
  waitingForCount: number
  /** Which leaves, by position, the queue satisfies: what a batch of previews folds. */
  marks: Uint8Array
}

/** previewMarks over a consumer's queue rows: the leaves they satisfy marked through the tree's index. */
export function previewQueue(tree: ConditionTree | undefined, queued: QueuedAssets, cap: number): ConditionPreview {
  if (!tree) return previewMarks(undefined, new Uint8Array(0), cap)
  return previewMarks(tree, markQueue(treeIndex(tree), queued), cap)
}

/**
 * A condition's preview from which leaves are satisfied (`marks`, by position in leavesOf's order),
 * in time linear in the leaves and without a string per leaf: counts first, then labels until
 * `cap`. Equal to evaluateTree's lists cut at `cap`, and to their lengths (a tree that repeats a
 * label takes evaluateTree's own path, whose AND lists each label once).
 */
export function previewMarks(tree: ConditionTree | undefined, marks: Uint8Array, cap: number): ConditionPreview {
  if (!tree) return {met: false, leaves: 0, satisfied: [], satisfiedCount: 0, waitingFor: [], waitingForCount: 0, marks}
  const index = treeIndex(tree)
  const satisfied: string[] = []
  let satisfiedCount = 0
  for (let i = 0; i < marks.length; i++)
    if (marks[i]) {
      if (satisfied.length < cap) satisfied.push(index.labels[i]!)
      satisfiedCount++
    }
  const state = new NodeState(index, marks)
  const met = state.met(tree)
  let waitingFor: string[] = []
  let waitingForCount = 0
  if (!met && index.distinct) {
    waitingForCount = state.missingCount(tree) ?? 0
    if (waitingForCount > 0) state.missingFirst(tree, cap, waitingFor)
  } else if (!met) {
    const all = state.missing(tree) ?? []
    waitingForCount = all.length
    waitingFor = all.slice(0, cap)
  }
  return {met, leaves: index.leaves.length, satisfied, satisfiedCount, waitingFor, waitingForCount, marks}
}

/** Each queued asset marks the leaves it satisfies, through the tree's own index. */
function markQueue(index: TreeIndex, {assets: queued, aliases}: QueuedAssets): Uint8Array {
  const marks = new Uint8Array(index.leaves.length)
  const refs = index.refsByName.size > 0 || index.refsByUri.size > 0
  for (const {name, uri, active, id} of queued) {
    let at = id === undefined ? undefined : index.assetLeavesById.get(id)
    if (at === undefined) {
      at = assetLeaves(index, name, uri)
      if (id !== undefined) index.assetLeavesById.set(id, at)
    }
    if (typeof at === 'number') {
      if (at >= 0) marks[at] = 1
    } else for (const i of at) marks[i] = 1
    if (refs && active) {
      for (const i of index.refsByName.get(name) ?? []) marks[i] = 1
      for (const i of index.refsByUri.get(uri) ?? []) marks[i] = 1
    }
  }
  if (index.aliasesByName.size > 0)
    for (const alias of aliases) for (const i of index.aliasesByName.get(alias) ?? []) marks[i] = 1
  return marks
}

/** The positions of the asset leaves a (name, uri) satisfies: -1 for none, a number for one. */
function assetLeaves(index: TreeIndex, name: string, uri: string): number | number[] {
  const byName = index.assetsByName.get(name)
  if (!byName) return -1
  const at = byName.filter((i) => (index.leaves[i] as {uri: string}).uri === uri)
  return at.length === 0 ? -1 : at.length === 1 ? at[0]! : at
}

/**
 * The same marks carried from one tree to another by what each leaf is (an asset by name and
 * uri, a ref by name or uri, an alias by name; a label alone would take two assets of one name
 * for one): a DAG re-parsed in the middle of a batch, whose earlier items were previewed against
 * its previous condition.
 */
export function remark(from: ConditionTree | undefined, marks: Uint8Array, to: ConditionTree | undefined): Uint8Array {
  if (from === to) return marks
  const keyOf = (leaf: ConditionLeaf) =>
    leaf.kind === 'alias' ? `alias\u0000${leaf.name}` : `${leaf.kind}\u0000${leaf.name ?? ''}\u0000${leaf.uri ?? ''}`
  const satisfied = new Set<string>()
  const before = leavesOf(from)
  for (let i = 0; i < before.length; i++) if (marks[i]) satisfied.add(keyOf(before[i]!))
  const after = leavesOf(to)
  const moved = new Uint8Array(after.length)
  for (let i = 0; i < after.length; i++) if (satisfied.has(keyOf(after[i]!))) moved[i] = 1
  return moved
}

function evaluateMarks(tree: ConditionTree, index: TreeIndex, marks: Uint8Array): ConditionResult {
  const satisfied: string[] = []
  for (let i = 0; i < marks.length; i++) if (marks[i]) satisfied.push(index.labels[i]!)
  const state = new NodeState(index, marks)
  const met = state.met(tree)
  return {
    met,
    leaves: index.labels.slice(),
    satisfied,
    waitingFor: met ? [] : (state.missing(tree) ?? []),
  }
}

/** One evaluation: whether each node holds (once per node), and what it still misses. */
class NodeState {
  private readonly nodes = new Map<ConditionTree, boolean>()
  /** missingCount per node, once per evaluation. */
  private readonly counts = new Map<ConditionTree, number | undefined>()
  constructor(
    private readonly index: TreeIndex,
    private readonly marks: Uint8Array,
  ) {}

  met(tree: ConditionTree): boolean {
    if (tree.kind === 'unknown') return false
    // A lone leaf is the whole tree: position 0.
    if (!('children' in tree)) return this.marks[0] === 1
    const known = this.nodes.get(tree)
    if (known !== undefined) return known
    const met = tree.kind === 'all' ? this.every(tree) : this.some(tree)
    this.nodes.set(tree, met)
    return met
  }

  private childMet(slot: number, child: ConditionTree): boolean {
    return slot >= 0 ? this.marks[slot] === 1 : this.met(child)
  }

  private every(tree: Extract<ConditionTree, {children: unknown}>): boolean {
    const slots = this.index.slots.get(tree)!
    for (let k = 0; k < slots.length; k++) if (!this.childMet(slots[k]!, tree.children[k]!)) return false
    return true
  }

  private some(tree: Extract<ConditionTree, {children: unknown}>): boolean {
    const slots = this.index.slots.get(tree)!
    for (let k = 0; k < slots.length; k++) if (this.childMet(slots[k]!, tree.children[k]!)) return true
    return false
  }

  /**
   * The fewest leaves that would make a node true; undefined when nothing can (an unknown node,
   * an empty OR). An AND needs every part it misses (each label once, in the order first met), an
   * OR only its cheapest side (the first, when two cost the same).
   */
  missing(tree: ConditionTree): string[] | undefined {
    if (this.met(tree)) return []
    if (tree.kind === 'unknown') return undefined
    if (!('children' in tree)) return [tree.label]
    const slots = this.index.slots.get(tree)!
    if (tree.kind === 'all') {
      const missing: string[] = []
      for (let k = 0; k < slots.length; k++) {
        const slot = slots[k]!
        const child = tree.children[k]!
        if (slot >= 0) {
          if (this.marks[slot] !== 1) missing.push(this.index.labels[slot]!)
          continue
        }
        if (this.met(child)) continue
        const part = this.missing(child)
        if (part === undefined) return undefined
        for (const label of part) missing.push(label)
      }
      // No label repeats in the whole tree: an AND's parts never share one.
      return this.index.distinct ? missing : [...new Set(missing)]
    }
    let best: string[] | undefined
    for (let k = 0; k < slots.length; k++) {
      const slot = slots[k]!
      const part =
        slot >= 0 ? (this.marks[slot] === 1 ? [] : [this.index.labels[slot]!]) : this.missing(tree.children[k]!)
      if (part !== undefined && (best === undefined || part.length < best.length)) best = part
    }
    return best
  }

  /**
   * How many leaves missing() would list, for a tree whose labels are distinct (an AND's parts then
   * never share one): an AND the sum of its unmet parts, an OR its cheapest side; undefined where
   * missing() is (an unknown node, an empty OR, an AND with such a part).
   */
  missingCount(tree: ConditionTree): number | undefined {
    if (this.met(tree)) return 0
    if (tree.kind === 'unknown') return undefined
    if (!('children' in tree)) return 1
    if (this.counts.has(tree)) return this.counts.get(tree)
    const slots = this.index.slots.get(tree)!
    let count: number | undefined
    if (tree.kind === 'all') {
      count = 0
      for (let k = 0; k < slots.length; k++) {
        const part = this.childMissing(slots[k]!, tree.children[k]!)
        if (part === undefined) {
          count = undefined
          break
        }
        count += part
      }
    } else {
      for (let k = 0; k < slots.length; k++) {
        const part = this.childMissing(slots[k]!, tree.children[k]!)
        if (part !== undefined && (count === undefined || part < count)) count = part
      }
    }
    this.counts.set(tree, count)
    return count
  }

  /** missingCount of a child: a leaf by its slot, a node by its own count (as childMet). */
  private childMissing(slot: number, child: ConditionTree): number | undefined {
    return slot >= 0 ? (this.marks[slot] === 1 ? 0 : 1) : this.missingCount(child)
  }

  /** The first `cap` labels of missing(tree) into `out`, for a tree missingCount counts (defined, distinct labels). */
  missingFirst(tree: ConditionTree, cap: number, out: string[]): void {
    if (out.length >= cap || this.met(tree) || tree.kind === 'unknown') return
    if (!('children' in tree)) {
      out.push(tree.label)
      return
    }
    const slots = this.index.slots.get(tree)!
    if (tree.kind === 'all') {
      for (let k = 0; k < slots.length && out.length < cap; k++) {
        const slot = slots[k]!
        if (slot >= 0) {
          if (this.marks[slot] !== 1) out.push(this.index.labels[slot]!)
        } else this.missingFirst(tree.children[k]!, cap, out)
      }
      return
    }
    // The side missing() takes: the first of the cheapest.
    let best = -1
    let bestCount: number | undefined
    for (let k = 0; k < slots.length; k++) {
      const part = this.childMissing(slots[k]!, tree.children[k]!)
      if (part !== undefined && (bestCount === undefined || part < bestCount)) {
        best = k
        bestCount = part
      }
    }
    if (best < 0) return
    const slot = slots[best]!
    if (slot >= 0) out.push(this.index.labels[slot]!)
    else this.missingFirst(tree.children[best]!, cap, out)
  }
}

/** An encoded condition against a consumer's queue rows (parseCondition, then evaluateTree). */
export function evaluateCondition(encoded: unknown, queued: QueuedAssets): ConditionResult {
  return evaluateQueue(parseCondition(encoded), queued)
}
