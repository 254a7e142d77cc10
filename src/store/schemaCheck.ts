import {
  detectCapabilities,
  multiTeamSetting,
  releaseBehaviour,
  expectedFor,
  missingColumns,
  optionalTables,
  requiredColumns,
  type AirflowSchema,
  type Capabilities,
  type SchemaCheck,
} from '../airflow/schema.js'
import {knownHeads, supportedVersionsText} from '../airflow/versions.js'
import type {Database} from '../engine/engine.js'
import {unsupportedSchemaError} from '../errors.js'
import type {AirflowStore} from './airflowStore.js'
import {catalogFor, storeFor} from './openStore.js'

/**
 * What the database is: the alembic head placed on a known Airflow release, and the capabilities
 * read from the catalog. The catalog wins over the version number: a head that claims 3.2
 * without partition columns is refused.
 */
export async function checkAirflowSchema(db: Database): Promise<SchemaCheck> {
  const catalog = catalogFor(db)
  const heads = await catalog.readAlembicHeads(db.executor)
  if (heads === undefined) {
    return {
      supported: false,
      alembicHead: undefined,
      reason: 'this is not an Airflow metadata database (no alembic_version table)',
      missing: ['table alembic_version'],
    }
  }

  if (heads.length !== 1) {
    return {
      supported: false,
      alembicHead: heads.join(','),
      reason: `alembic_version holds ${heads.length} heads (expected exactly one); a migration may be half-applied`,
      missing: [],
    }
  }

  const alembicHead = heads[0]!
  const shape = await catalog.readSchemaShape(db.executor, [...Object.keys(requiredColumns), ...optionalTables])
  const missing = missingColumns(shape)
  if (missing.length > 0) {
    return {supported: false, alembicHead, reason: `the schema lacks what airlock reads and writes: ${missing.join(', ')}`, missing}
  }

  const detected = detectCapabilities(shape)
  let airflowVersion = knownHeads[alembicHead]
  if (!airflowVersion && detected.multiTeam && detected.eventPartitionKey) airflowVersion = '3.3.x'
  if (!airflowVersion) {
    return {
      supported: false,
      alembicHead,
      reason: `alembic head ${alembicHead} is not an Airflow version airlock has been checked against (supported: ${supportedVersionsText})`,
      missing: [],
    }
  }

  const teamFilter = detected.multiTeam && (multiTeamSetting() ?? (await catalog.readTeamsAssigned(db.executor)))
  const capabilities: Capabilities = {...detected, ...releaseBehaviour(airflowVersion), teamFilter}
  const mismatches = Object.entries(expectedFor(airflowVersion))
    .filter(([key, value]) => capabilities[key as keyof Capabilities] !== value)
    .map(([key]) => key)
  if (mismatches.length > 0) {
    return {
      supported: false,
      alembicHead,
      reason: `alembic head ${alembicHead} says Airflow ${airflowVersion}, but the tables do not match it (${mismatches.join(', ')})`,
      missing: mismatches,
    }
  }

  return {supported: true, schema: {alembicHead, airflowVersion, capabilities}}
}

/** An Airflow database airlock can work on: its schema and the store built for it. */
export interface AirflowDatabase {
  db: Database
  schema: AirflowSchema
  store: AirflowStore
}

/** For writers and audits: the schema and its store, or exit 8 naming what is wrong. */
export async function requireAirflow(db: Database): Promise<AirflowDatabase> {
  const check = await checkAirflowSchema(db)
  if (check.supported) return {db, schema: check.schema, store: storeFor(db, check.schema.capabilities)}
  throw unsupportedSchemaError(`Unsupported database: ${check.reason}.`, [
    'Point airlock at the Airflow metadata database (airlock doctor shows which one it uses).',
    `Supported Airflow versions: ${supportedVersionsText}.`,
  ])
}
