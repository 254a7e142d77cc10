import {
  detectCapabilities,
  missingColumns,
  optionalTables,
  releaseBehaviour,
  requiredColumns,
  shapeMismatches,
  type AirflowSchema,
  type Capabilities,
  type SchemaCheck,
  type SchemaShape,
} from '../airflow/schema.js'
import {
  assumedPlacement,
  lineOf,
  olderRevisionVersion,
  placementsOf,
  releases,
  releasedLines,
  releasePlacements,
  supportedVersionsText,
  versionOfRevision,
  type Placement,
} from '../airflow/revisions.js'
import {
  AirflowConfigError,
  clearStateOnSuccessOption,
  multiTeamOption,
  readAirflowSetting,
  readWorkerStateBackend,
  type AirflowOption,
  type AirflowSetting,
} from '../airflow/config.js'
import {
  newerReleaseOf,
  newerReleaseOfLine,
  newerReleaseReason,
  newerReleases,
  type NewerReleaseMigration,
} from '../airflow/newerReleases.js'
import {unplacedRevisions} from '../airflow/unplacedRevisions.js'
import type {Database} from '../engine/engine.js'
import {doctorAction, unsupportedSchemaError, usageError} from '../errors.js'
import type {AirflowDatabase} from './airflowDatabase.js'
import type {AirflowStore} from './airflowStore.js'
import {catalogFor, storeFor} from './openStore.js'

export interface SchemaCheckOptions {
  /**
   * A release line X.Y: place a head airlock does not know as the newest release of that line,
   * when the tables match it. Ignored for a head airlock knows.
   */
  assumeVersion?: string | undefined
}

/**
 * What the database is: the alembic head placed on Airflow's revision graph (revisions.ts), and
 * the tables checked against what that place promises (schema.ts). Nothing is taken on the
 * head's word: a head whose tables lack a column its migrations add, or have one they do not,
 * is refused naming the column.
 */
export async function checkAirflowSchema(db: Database, options: SchemaCheckOptions = {}): Promise<SchemaCheck> {
  const catalog = catalogFor(db)
  const read = readHead(await catalog.readAlembicHeads(db.executor))
  if ('refused' in read) return read.refused
  const {alembicHead, newer} = read

  const shape = await catalog.readSchemaShape(db.executor, [...Object.keys(requiredColumns), ...optionalTables])
  const marked = markedAsNewer(read, shape)
  if (marked) return marked
  const orNewer = (reason: string) =>
    newer === undefined
      ? reason
      : `${reason}. ${alembicHead} is also a migration of Airflow ${newer.release.version} (released ${newer.release.date}); ` +
        `if this is an upgrade to it that stopped part-way, this airlock does not support ${newer.release.version} yet`
  const missing = missingColumns(shape)
  if (missing.length > 0) {
    return {
      supported: false,
      alembicHead,
      reason: orNewer(`the schema lacks what airlock reads and writes: ${missing.join(', ')}`),
      missing,
    }
  }

  const keys = await catalog.readPrimaryKeys(db.executor, ['asset_dag_run_queue'])
  const mismatchesAt = (placement: Placement) => shapeMismatches(shape, keys, placement.applied, versionOfRevision)
  const placed = placeOnGraph(alembicHead, options.assumeVersion, mismatchesAt)
  if ('reason' in placed) {
    return {supported: false, alembicHead, reason: orNewer(placed.reason), missing: placed.missing}
  }

  const {placement} = placed
  const detected = detectCapabilities(shape)
  // Airflow's own settings decide these, read only where the release has them.
  const settings = {
    multiTeam: detected.multiTeam ? airflowSetting(multiTeamOption) : null,
    clearStateOnSuccess: detected.taskStateTable ? airflowSetting(clearStateOnSuccessOption) : null,
    workerStateBackend: detected.taskStateTable ? airflowConfig(() => readWorkerStateBackend() ?? null) : null,
  }
  const capabilities: Capabilities = {
    ...detected,
    ...releaseBehaviour(placement.version),
    teamFilter: settings.multiTeam?.value ?? false,
    clearTaskStateOnSuccess: settings.clearStateOnSuccess?.value ?? false,
  }
  return {
    supported: true,
    schema: {
      alembicHead,
      airflowVersion: placement.release,
      behaviourVersion: placement.version,
      placement: placement.kind,
      capabilities,
      settings,
    },
  }
}

type Refusal = Extract<SchemaCheck, {supported: false}>

/** The one alembic head, whether it is on airlock's graph, and the newer release it belongs to, if any. */
interface Head {
  alembicHead: string
  newer: NewerReleaseMigration | undefined
  onGraph: boolean
}

/**
 * The alembic head, or what it alone refuses before any table is read: no head, several, or one
 * airlock knows it cannot read.
 */
function readHead(heads: string[] | undefined): Head | {refused: Refusal} {
  const refused = (reason: string, alembicHead?: string, missing: string[] = []) => ({
    refused: {supported: false as const, alembicHead, reason, missing},
  })
  if (heads === undefined) {
    return refused('this is not an Airflow metadata database (no alembic_version table)', undefined, [
      'table alembic_version',
    ])
  }
  if (heads.length === 0)
    return refused('alembic_version is empty: the database was never stamped (`airflow db migrate` did not finish)')
  if (heads.length !== 1) {
    return refused(
      `alembic_version holds ${heads.length} heads (expected exactly one); a migration may be half-applied`,
      heads.join(','),
    )
  }

  const alembicHead = heads[0]!
  const onGraph = placementsOf(alembicHead).length > 0
  // A newer release's migration that airlock's graph does not hold: its tables are not airlock's
  // to read, so nothing is (ee86eed19e24 is on both; the tables decide it: markedAsNewer).
  const newer = newerReleaseOf(alembicHead)
  if (newer !== undefined && !onGraph)
    return refused(newerReleaseReason(alembicHead, newer, supportedVersionsText), alembicHead)

  const older = olderRevisionVersion(alembicHead)
  if (older !== undefined) {
    return refused(
      older.startsWith('3.')
        ? `alembic head ${alembicHead} is a migration of Airflow 3.0.0 before its last: the upgrade to Airflow 3 did not finish (run \`airflow db migrate\`)`
        : `alembic head ${alembicHead} is Airflow ${older}: airlock supports Airflow 3.0.0 and later`,
      alembicHead,
    )
  }

  return {alembicHead, newer, onGraph}
}

/**
 * A newer release's marker column in the tables: refused as that release's, for a head in its
 * chain that is also on airlock's graph (ee86eed19e24), or a head airlock does not know at all.
 */
function markedAsNewer({alembicHead, newer, onGraph}: Head, shape: SchemaShape): Refusal | undefined {
  // A head on both airlock's graph and a newer release's chain (ee86eed19e24): the release's
  // marker column says the tables are the release's; without it a mismatch may still be a stopped
  // upgrade to the release, and the refusal says so rather than claiming it.
  const marked = newerReleases.find((release) => shape.get(release.marker.table)?.has(release.marker.column))
  if (marked !== undefined && (newer !== undefined || !onGraph)) {
    const {table, column, why} = marked.marker
    const has = `its tables have ${table}.${column}: ${why}`
    return {
      supported: false,
      alembicHead,
      reason:
        newer === undefined
          ? `alembic head ${alembicHead} is not a migration airlock knows, and ${has}: a database of Airflow ` +
            `${lineOf(marked.version)}, which this airlock does not support yet (it supports ${supportedVersionsText})`
          : `${newerReleaseReason(alembicHead, newer, supportedVersionsText)} (${has})`,
      missing: [],
    }
  }
  return undefined
}

/** An Airflow setting, or exit 2 naming the value Airflow itself would refuse. */
function airflowSetting(option: AirflowOption): AirflowSetting {
  return airflowConfig(() => readAirflowSetting(option))
}

/** Reads Airflow's configuration; an unreadable airflow.cfg or a refused value is exit 2. */
function airflowConfig<T>(read: () => T): T {
  try {
    return read()
  } catch (error) {
    if (error instanceof AirflowConfigError) throw usageError(`Airflow's configuration: ${error.message}.`)
    throw error
  }
}

type Placed = {placement: Placement} | {reason: string; missing: string[]}

const placementRank: Record<Placement['kind'], number> = {release: 0, development: 1, partly_migrated: 2, assumed: 3}

function placeOnGraph(
  head: string,
  assumeVersion: string | undefined,
  mismatchesAt: (placement: Placement) => string[],
): Placed {
  const candidates = placementsOf(head).map((placement) => ({placement, mismatches: mismatchesAt(placement)}))
  // A backported migration can sit on a release branch and on main: the tables say which, and on a
  // tie a release wins, then a whole build, then an upgrade that stopped (likeliest first).
  const matching = candidates
    .filter((candidate) => candidate.mismatches.length === 0)
    .sort((a, b) => placementRank[a.placement.kind] - placementRank[b.placement.kind])[0]
  if (matching) return {placement: matching.placement}
  if (candidates.length > 0) {
    const closest = candidates.sort((a, b) => a.mismatches.length - b.mismatches.length)[0]!
    return {
      reason: `alembic head ${head} is Airflow ${closest.placement.release}, but the tables do not match it: ${closest.mismatches.join('; ')}`,
      missing: closest.mismatches,
    }
  }

  // Refused by name even under --assume-version: a migration no release airlock supports is known
  // to carry, whose tables may look like an older release's in every column airlock checks.
  const unplaced = unplacedRevisions[head]
  if (unplaced !== undefined) {
    const shipped = newerReleases.find((release) => release.version === unplaced.version)
    const where = shipped
      ? `Airflow ${shipped.version} (released ${shipped.date}) may carry it below the part of its migration reference ` +
        `that could be read, and airlock does not support ${shipped.version} yet`
      : `Where it sits among the migrations after ${newestRevision()}, the last one airlock places, is not established`
    return {
      reason:
        `alembic head ${head} is an Airflow ${unplaced.version} migration that airlock cannot place: it ${unplaced.changes}. ` +
        `${where}, so airlock cannot tell what the tables hold (it supports ${supportedVersionsText})`,
      missing: [],
    }
  }

  if (assumeVersion !== undefined) {
    const line = lineOf(assumeVersion)
    const assumed = assumedPlacement(line, head)
    if (!assumed) {
      const newerLine = newerReleaseOfLine(line)
      const unsupported = newerLine
        ? ` (Airflow ${newerLine.version}, released ${newerLine.date}, is not supported yet)`
        : ''
      return {
        reason: `--assume-version (or AIRLOCK_ASSUME_VERSION) ${assumeVersion} names no released Airflow line airlock knows (${releasedLines.join(', ')})${unsupported}; it is only for a patch release newer than airlock of one of those`,
        missing: [],
      }
    }

    const mismatches = mismatchesAt(assumed)
    if (mismatches.length > 0) {
      return {
        reason: `alembic head ${head} is unknown, and its tables are not Airflow ${line}'s as --assume-version ${assumeVersion} says: ${mismatches.join('; ')}`,
        missing: mismatches,
      }
    }

    return {placement: assumed}
  }

  const nearest = nearestRelease(mismatchesAt)
  const unknown = `alembic head ${head} is not a migration of any Airflow release airlock knows (supported: ${supportedVersionsText})`
  const nearestLine = lineOf(nearest.placement.version)
  if (nearest.differences.length === 0 && releasedLines.includes(nearestLine)) {
    return {
      reason:
        `${unknown}; its tables match Airflow ${nearest.placement.release} in every column airlock depends on. If \`airflow version\` ` +
        `shows a newer patch of ${nearestLine}, rerun with --assume-version ${nearestLine}; otherwise upgrade airlock`,
      missing: [],
    }
  }

  return {
    reason: `${unknown}, and its tables match no release airlock knows; the closest, Airflow ${nearest.placement.release}, differs in: ${nearest.differences.join('; ')}`,
    missing: nearest.differences,
  }
}

/** The head of the newest release on airlock's graph (main's, when it is unreleased). */
const newestRevision = () => releases.at(-1)!.head

/** The newest release whose tables match, else the one with the fewest differences. */
function nearestRelease(mismatchesAt: (placement: Placement) => string[]): {
  placement: Placement
  differences: string[]
} {
  const scored = releasePlacements().map((placement) => ({placement, differences: mismatchesAt(placement)}))
  const fewest = Math.min(...scored.map((s) => s.differences.length))
  return scored.find((s) => s.differences.length === fewest)!
}

/** For writers and audits: the schema and its store, or exit 8 naming what is wrong. */
export async function requireAirflow(
  db: Database,
  options: SchemaCheckOptions = {},
): Promise<AirflowDatabase<AirflowStore>> {
  const check = await checkAirflowSchema(db, options)
  if (check.supported) return {db, schema: check.schema, store: storeFor(db, check.schema.capabilities)}
  throw unsupportedSchemaError(
    `Unsupported database: ${check.reason}.`,
    check.alembicHead === undefined
      ? ['Point airlock at the Airflow metadata database.', doctorAction('shows which one it uses.')]
      : [doctorAction('shows the alembic head, the release it places and every column that differs.')],
  )
}

/** What the operator must hear on every run about where the database was placed, if anything. */
export function placementWarning(schema: AirflowSchema): string | undefined {
  if (schema.placement === 'assumed') {
    return `alembic head ${schema.alembicHead} is unknown to airlock; working as Airflow ${schema.airflowVersion} (--assume-version)`
  }
  if (schema.placement === 'partly_migrated') {
    return `Airflow ${schema.airflowVersion}: an upgrade stopped at ${schema.alembicHead}; finish \`airflow db migrate\``
  }
  if (schema.placement === 'development') {
    return `Airflow ${schema.airflowVersion} is not a release airlock knows (a development build): airlock follows its migrations up to ${schema.alembicHead}, checked against the tables`
  }
  return undefined
}
