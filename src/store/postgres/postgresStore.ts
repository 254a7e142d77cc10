import type {Capabilities} from '../../airflow/schema.js'
import type {AirflowStore} from '../airflowStore.js'
import {
  compareTaskInstanceLeft,
  deleteCreatedQueueRows,
  deleteEvents,
  findUndoOf,
  lockAndCompareClear,
  lockEventConsumers,
  readAuditRecords,
  readAuditRecordWindow,
  readConsumingRuns,
  readMovedSince,
  restoreClear,
  restoreEvents,
  restoreTaskInstance,
} from './undo.js'
import {insertLogRow, logRowExists} from './auditLog.js'
import {
  clearCatalog,
  clearTaskInstances,
  countRunDeadlines,
  readClearRun,
  readClearTargets,
  readHitlTaskInstances,
  readLatestSerializedDag,
  readVersionSerializedDag,
  readClearImage,
  recordClearImage,
  requeueDagRun,
} from './clear.js'
import {postgresCatalog} from './catalog.js'
import {downstreamReader, readDownstream} from './downstream.js'
import {explainStatements} from './explain.js'
import {readLineageFacts} from './lineage.js'
import {readAirlockCompletions} from './lineageRebuild.js'
import {countEventSources, readQueueOrphans, streamClassifiedEvents} from './eventAudit.js'
import {
  countEvents,
  findMatchingEvent,
  insertEventCopy,
  readEventTry,
  readEventLinePage,
  readEventsById,
  removeDuplicateEvents,
  resolveAssetsAndAliases,
} from './events.js'
import {
  ensureAliasAssets,
  findAssetsByNameOrUri,
  insertAliasEventLinks,
  insertAssetEvents,
  queueConsumers,
} from './registration.js'
import {
  countTaskInstances,
  hasEventsFromDag,
  readDagIds,
  readUnknownSelectors,
  readMissingOutlets,
  selectRunPage,
  selectTaskInstancePage,
  selectTaskInstanceIdsOfRuns,
  summarizeTaskInstances,
} from './selection.js'
import {
  clearTaskState,
  lockTaskInstance,
  markTaskInstanceSuccess,
  readArchivedTaskInstanceKey,
  readRowHolder,
  readTaskInstance,
} from './taskInstance.js'

/**
 * The PostgreSQL store for one capability set: every statement whose text depends on the Airflow
 * version is chosen here, once, and prepared statements get names that follow their text.
 */
export function postgresStore(capabilities: Capabilities): AirflowStore {
  // What --continue-run's clear reads from the catalog, once per store.
  const clearFacts = clearCatalog()
  // The downstream preview's SQL and its cache of conditions: a write's queue statement and the
  // plan's read share them.
  const downstream = downstreamReader(capabilities)
  const readDownstreamOnce = readDownstream(downstream, capabilities)
  return {
    capabilities,
    ...postgresCatalog,
    readTaskInstance: readTaskInstance(capabilities),
    readArchivedTaskInstanceKey: readArchivedTaskInstanceKey(),
    lockTaskInstance: lockTaskInstance(),
    readRowHolder: readRowHolder(),
    markTaskInstanceSuccess: markTaskInstanceSuccess(),
    clearTaskState: clearTaskState(capabilities),
    insertAssetEvents: insertAssetEvents(capabilities),
    findAssetsByNameOrUri: findAssetsByNameOrUri(),
    ensureAliasAssets: ensureAliasAssets(capabilities),
    insertAliasEventLinks: insertAliasEventLinks(),
    queueConsumers: queueConsumers(capabilities, downstream, readDownstreamOnce),
    planConsumers: queueConsumers(capabilities, downstream, readDownstreamOnce, 'plan'),
    readDownstream: readDownstreamOnce,
    readLineageFacts: readLineageFacts(),
    readAirlockCompletions: readAirlockCompletions(),
    insertLogRow: insertLogRow(),
    logRowExists: logRowExists(),
    readMissingOutlets: readMissingOutlets(),
    readLatestSerializedDag: readLatestSerializedDag(),
    readVersionSerializedDag: readVersionSerializedDag(),
    readClearRun: readClearRun(),
    readClearTargets: readClearTargets(),
    readHitlTaskInstances: readHitlTaskInstances(clearFacts),
    clearTaskInstances: clearTaskInstances(clearFacts),
    requeueDagRun: requeueDagRun(),
    readClearImage: readClearImage(clearFacts),
    recordClearImage: recordClearImage(),
    countRunDeadlines: countRunDeadlines(clearFacts),
    selectTaskInstancePage: selectTaskInstancePage(),
    countTaskInstances: countTaskInstances(),
    selectRunPage: selectRunPage(),
    selectTaskInstanceIdsOfRuns: selectTaskInstanceIdsOfRuns(),
    summarizeTaskInstances: summarizeTaskInstances(),
    readDagIds: readDagIds(),
    readUnknownSelectors: readUnknownSelectors(),
    hasEventsFromDag: hasEventsFromDag(),
    readEventLinePage: readEventLinePage(capabilities),
    readEventsById: readEventsById(capabilities),
    resolveAssetsAndAliases: resolveAssetsAndAliases(),
    findMatchingEvent: findMatchingEvent(capabilities),
    insertEventCopy: insertEventCopy(capabilities),
    readEventTry: readEventTry(),
    countEvents: countEvents(),
    removeDuplicateEvents: removeDuplicateEvents(capabilities),
    countEventSources: countEventSources(),
    streamClassifiedEvents: streamClassifiedEvents(capabilities),
    readQueueOrphans: readQueueOrphans(capabilities),
    readAuditRecords: readAuditRecords(),
    readAuditRecordWindow: readAuditRecordWindow(),
    findUndoOf: findUndoOf(),
    lockEventConsumers: lockEventConsumers(capabilities),
    readConsumingRuns: readConsumingRuns(capabilities),
    deleteEvents: deleteEvents(),
    deleteCreatedQueueRows: deleteCreatedQueueRows(),
    compareTaskInstanceLeft: compareTaskInstanceLeft(),
    restoreTaskInstance: restoreTaskInstance(),
    readMovedSince: readMovedSince(),
    restoreEvents: restoreEvents(),
    lockAndCompareClear: lockAndCompareClear(),
    restoreClear: restoreClear(),
    ...explainStatements(capabilities),
  }
}
