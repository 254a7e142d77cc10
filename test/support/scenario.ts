/*
 * What writer and CLI tests share to state an Airflow world and read it back, in four parts:
 *   - scenario/builder.ts: scenario(knex)…build(), a world stated by the test itself, as plain rows
 *     (its options and the World it returns are in scenario/world.ts);
 *   - scenario/rows.ts: the row readers (ti, tiById, eventsOf, countRows, writeFootprint);
 *   - scenario/airflowActions.ts: what Airflow does to those rows (a retry, a rerun, a worker's
 *     success log row, a new DAG version), written as Airflow writes it;
 *   - scenario/seededWorld.ts: the sandbox's seeded demo world (seed, resetWorld), for older tests.
 * Tests import them from here.
 */
export {
  addDagVersion,
  failForRetryAsAirflowDoes,
  logWorkerSuccess,
  rerunAsAirflowDoes,
  retryAsAirflowDoes,
} from './scenario/airflowActions.js'
export {scenario, ScenarioBuilder} from './scenario/builder.js'
export {countRows, eventsOf, ti, tiById, writeFootprint, type TiRow} from './scenario/rows.js'
export {resetWorld, seed} from './scenario/seededWorld.js'
export type {
  AssetRow,
  ConsumerOptions,
  ProducerOptions,
  RunRow,
  ScheduleReference,
  TiState,
  World,
} from './scenario/world.js'
