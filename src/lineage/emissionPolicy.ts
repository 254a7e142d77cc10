import {usageError} from '../errors.js'

/**
 * `[openlineage] emission_policy` as apache-airflow-providers-openlineage reads and resolves it
 * for task events (option added in 2.19.0; conf.py `emission_policy`, utils/emission_policy.py
 * `_parse_rule`, `_classify_task_rules`, `_walk_tiers`, `_resolve_emit_with_source`,
 * `_synthesize_legacy_task_rules`, `_compute_locked_fields`, `_extend_policy_with_task_authoring`,
 * `resolve_task_emission_policy`; read in the 2.19.0 and 2.20.3 wheels, the same code). Of the
 * controls, two change what airlock's COMPLETE would carry: `emit` (no event at all) and
 * `extract_operator_metadata` (the listener skips the extractor manager, so no outputs). The
 * others (`include_source_code`, `hook_lineage`, `include_full_task_info`) shape parts of the
 * worker's event airlock never sends.
 */

export interface EmissionRule {
  scope: {dag_id?: unknown; task_id?: unknown; operator?: unknown}
  controls: Record<string, boolean>
  matchMode: 'exact' | 'regex'
  locked: boolean
  /** Where the rule came from, for the reason an item gives. */
  origin: string
}

/** What the provider decides for one task's events, and the rule (or flag) that decided `emit`. */
export interface TaskEmission {
  emit: boolean
  extractOperatorMetadata: boolean
  /** Why no event, when `emit` is false. */
  why?: string
}

/** The task as the policy sees it: its ids, operator class, selective-enable param and authoring flags. */
export interface PolicyTask {
  dagId: string
  taskId: string
  /** Null when no serialized DAG names it: operator-scoped rules cannot match then. */
  operatorClass: string | null
  /** `_selective_enable_ol` (utils/selective_enable.py `is_task_lineage_enabled`: `is True`). */
  selectiveEnable: boolean | null
  /** The task's `_openlineage_emission_policy` param (`extend_global_openlineage_emission_policy`). */
  authoring: Record<string, unknown> | null
}

export interface PolicySettings {
  disabledOperators: string[]
  selectiveEnable: boolean
  /**
   * The option's valid rules in order; null when the option is not a JSON array (the provider's
   * resolver then raises inside its `try` and returns the built-in defaults for every task,
   * the legacy options included).
   */
  emissionPolicy: EmissionRule[] | null
}

const topLevelKeys = new Set(['scope', 'match_mode', 'controls', 'locked'])
const scopeKeys = new Set(['dag_id', 'task_id', 'operator'])
const controlKeys = new Set([
  'emit',
  'emit_task_events',
  'emit_dag_events',
  'extract_operator_metadata',
  'include_source_code',
  'hook_lineage',
  'include_full_task_info',
])

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value)

/**
 * The option read as `conf.getjson("openlineage", "emission_policy", fallback=[])`: unset or empty
 * is no rule; not JSON, or JSON that is not an array, is null (defaults for every task, as the
 * provider degrades). Each rule is validated as `_parse_rule` validates it; one it would skip
 * (with a warning in its log) is skipped here and named in `warnings`.
 */
export function parseEmissionPolicy(raw: {value: string; source: string} | undefined): {
  rules: EmissionRule[] | null
  warnings: string[]
} {
  if (raw === undefined || raw.value === '') return {rules: [], warnings: []}
  const where = `[openlineage] emission_policy (${raw.source})`
  let parsed: unknown
  try {
    parsed = JSON.parse(raw.value)
  } catch {
    return {rules: null, warnings: [defaultsWarning(where, 'is not JSON')]}
  }
  if (!Array.isArray(parsed)) return {rules: null, warnings: [defaultsWarning(where, 'is not a JSON array')]}
  const rules: EmissionRule[] = []
  const warnings: string[] = []
  for (const [index, entry] of parsed.entries()) {
    const origin = `${where} rule ${index + 1}`
    const checked = parseRule(entry, origin)
    if (checked === 'defaults')
      return {
        rules: null,
        warnings: [defaultsWarning(where, `rule ${index + 1} has a regex scope value that is not a string`)],
      }
    if ('skipped' in checked)
      warnings.push(`${origin} is ignored, as Airflow's provider ignores it: ${checked.skipped}`)
    else rules.push(checked)
  }
  return {rules, warnings}
}

const defaultsWarning = (where: string, what: string) =>
  `${where} ${what}; Airflow's provider then emits every task event with its default controls ` +
  '(disabled_for_operators and selective_enable ignored too), and so does airlock'

/** `_parse_rule`: the rule, why the provider skips it, or 'defaults' where its parse raises (the whole policy falls back). */
function parseRule(rule: unknown, origin: string): EmissionRule | {skipped: string} | 'defaults' {
  const skip = (why: string) => ({skipped: why})
  if (!isObject(rule)) return skip('not an object')
  const unknownTop = Object.keys(rule).filter((key) => !topLevelKeys.has(key))
  if (unknownTop.length > 0) return skip(`unknown top-level key(s) ${unknownTop.sort().join(', ')}`)
  if (!('scope' in rule)) return skip("no 'scope' (use {} for global)")
  const scope = rule.scope
  if (!isObject(scope)) return skip("'scope' is not an object")
  const unknownScope = Object.keys(scope).filter((key) => !scopeKeys.has(key))
  if (unknownScope.length > 0) return skip(`unknown scope key(s) ${unknownScope.sort().join(', ')}`)
  const [hasDag, hasTask, hasOp] = ['dag_id', 'task_id', 'operator'].map((key) => key in scope)
  if (hasTask && !hasDag) return skip("scope has 'task_id' without 'dag_id'")
  if (hasOp && (hasDag || hasTask)) return skip("scope combines 'operator' with 'dag_id'/'task_id'")
  if (!('controls' in rule)) return skip("no 'controls'")
  const controls = rule.controls
  if (!isObject(controls)) return skip("'controls' is not an object")
  if (Object.keys(controls).length === 0) return skip("'controls' is empty")
  const unknownControls = Object.keys(controls).filter((key) => !controlKeys.has(key))
  if (unknownControls.length > 0) return skip(`unknown control(s) ${unknownControls.sort().join(', ')}`)
  for (const [key, value] of Object.entries(controls))
    if (typeof value !== 'boolean') return skip(`control '${key}' is not true or false`)
  if (hasOp && 'emit_dag_events' in controls) return skip("scope 'operator' with control 'emit_dag_events'")
  if (hasTask && 'emit_dag_events' in controls) return skip("scope 'task_id' with control 'emit_dag_events'")
  const matchMode = 'match_mode' in rule ? rule.match_mode : 'exact'
  if (matchMode !== 'exact' && matchMode !== 'regex') return skip("'match_mode' is neither 'exact' nor 'regex'")
  if (matchMode === 'regex') {
    for (const key of ['dag_id', 'task_id', 'operator'] as const) {
      if (!(key in scope)) continue
      const pattern = scope[key]
      // re.compile of a non-string raises TypeError, which `_parse_rule` does not catch.
      if (typeof pattern !== 'string') return 'defaults'
      compilePattern(pattern, `${origin}: scope.${key}`)
    }
  }
  if ('locked' in rule && typeof rule.locked !== 'boolean') return skip("'locked' is not true or false")
  return {
    scope,
    controls: controls as Record<string, boolean>,
    matchMode,
    locked: rule.locked === true,
    origin,
  }
}

/**
 * Python's `re.fullmatch(pattern, value)` as a JavaScript RegExp: named groups `(?P<n>…)` and
 * back-references `(?P=n)`, `\A`, `\Z` and leading inline flags (i, m, s) translated. A pattern
 * JavaScript cannot compile is refused (exit 2): airlock cannot evaluate it as Python would, and
 * a guess could send an event the provider would not, or drop one it would send.
 */
function compilePattern(pattern: string, where: string): RegExp {
  let body = pattern
  let flags = ''
  const inline = /^\(\?([aiLmsux]+)\)/.exec(body)
  if (inline) {
    flags = [...new Set(inline[1]!.split('').filter((flag) => 'ims'.includes(flag)))].join('')
    body = body.slice(inline[0].length)
  }
  body = body
    .replaceAll('(?P<', '(?<')
    .replace(/\(\?P=(\w+)\)/g, '\\k<$1>')
    .replaceAll('\\A', '^')
    .replaceAll('\\Z', '$')
  try {
    return new RegExp(`^(?:${body})$`, flags)
  } catch (error) {
    throw usageError(
      `${where}: the pattern ${JSON.stringify(pattern)} cannot be evaluated as Python's re.fullmatch would (${(error as Error).message}).`,
      ['Write it in the syntax Python and JavaScript share, or use match_mode "exact".'],
    )
  }
}

const compiled = new Map<string, RegExp>()

function matches(pattern: unknown, value: string, mode: EmissionRule['matchMode']): boolean {
  if (mode !== 'regex') return pattern === value
  const text = pattern as string
  let regex = compiled.get(text)
  if (!regex) compiled.set(text, (regex = compilePattern(text, '[openlineage] emission_policy')))
  return regex.test(value)
}

/**
 * `resolve_task_emission_policy` for one task: the legacy options' rules first
 * (`_synthesize_legacy_task_rules`: an `operator` rule `{emit: false}` per
 * `disabled_for_operators` class; with `selective_enable` a global `{emit: false}` and, for a task
 * whose `_selective_enable_ol` is true, a dag+task rule `{emit: true}`), then the option's rules;
 * the most specific tier with a value wins (dag+task, dag, operator, global), the last rule within
 * a tier; `emit_task_events` before `emit` within a rule; then the task's authoring flags, unless a
 * matching `locked` rule carries that control.
 */
export function resolveTaskEmission(task: PolicyTask, settings: PolicySettings): TaskEmission {
  if (settings.emissionPolicy === null) return {emit: true, extractOperatorMetadata: true}
  const legacy: EmissionRule[] = []
  const rule = (scope: EmissionRule['scope'], controls: Record<string, boolean>, origin: string): EmissionRule => ({
    scope,
    controls,
    matchMode: 'exact',
    locked: false,
    origin,
  })
  for (const operator of new Set(settings.disabledOperators))
    legacy.push(rule({operator}, {emit: false}, `its operator ${operator} is in [openlineage] disabled_for_operators`))
  if (settings.selectiveEnable) {
    legacy.push(
      rule(
        {},
        {emit: false},
        'lineage is not enabled for the task or its DAG while [openlineage] selective_enable is on',
      ),
    )
    if (task.selectiveEnable === true)
      legacy.push(rule({dag_id: task.dagId, task_id: task.taskId}, {emit: true}, 'enable_lineage'))
  }
  const tiers: EmissionRule[][] = [[], [], [], []]
  for (const candidate of [...legacy, ...settings.emissionPolicy]) {
    const {scope, matchMode} = candidate
    if ('dag_id' in scope && 'task_id' in scope) {
      if (matches(scope.dag_id, task.dagId, matchMode) && matches(scope.task_id, task.taskId, matchMode))
        tiers[0]!.push(candidate)
    } else if ('dag_id' in scope) {
      if (matches(scope.dag_id, task.dagId, matchMode)) tiers[1]!.push(candidate)
    } else if ('operator' in scope) {
      // Without a serialized DAG the operator's class is unknown: such a rule cannot be matched.
      if (task.operatorClass !== null && matches(scope.operator, task.operatorClass, matchMode))
        tiers[2]!.push(candidate)
    } else tiers[3]!.push(candidate)
  }
  const walk = (value: (controls: Record<string, boolean>) => boolean | undefined) => {
    for (const tier of tiers) {
      let found: {value: boolean; rule: EmissionRule} | undefined
      for (const candidate of tier) {
        const v = value(candidate.controls)
        if (v !== undefined) found = {value: v, rule: candidate}
      }
      if (found) return found
    }
    return undefined
  }
  const emitFound = walk((c) => ('emit_task_events' in c ? c.emit_task_events : c.emit))
  const extractFound = walk((c) => c.extract_operator_metadata)
  let emit = emitFound?.value ?? true
  let why = emitFound && !emitFound.value ? describeRule(emitFound.rule) : undefined
  let extractOperatorMetadata = extractFound?.value ?? true
  const matched = tiers.flat().filter((candidate) => candidate.locked)
  const emitLocked = matched.some((c) => 'emit_task_events' in c.controls || 'emit' in c.controls)
  const extractLocked = matched.some((c) => 'extract_operator_metadata' in c.controls)
  const flags = task.authoring ?? {}
  const authored = 'emit_task_events' in flags ? flags.emit_task_events : flags.emit
  if (authored !== undefined && authored !== null && !emitLocked) {
    emit = pythonTruthy(authored)
    why = emit
      ? undefined
      : "the task's _openlineage_emission_policy param (extend_global_openlineage_emission_policy) sets emit false"
  }
  if ('extract_operator_metadata' in flags && !extractLocked)
    extractOperatorMetadata = pythonTruthy(flags.extract_operator_metadata)
  return {emit, extractOperatorMetadata, ...(why ? {why} : {})}
}

function describeRule(rule: EmissionRule): string {
  if (!rule.origin.includes('emission_policy')) return rule.origin
  return `${rule.origin} (${JSON.stringify({scope: rule.scope, controls: rule.controls})}) turns its events off`
}

const pythonTruthy = (value: unknown) => !(value === false || value === 0 || value === '' || value === null)
