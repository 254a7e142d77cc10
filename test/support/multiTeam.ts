import type {Knex} from 'knex'

/**
 * What Airflow 3.3.0's migrations add for multi-team asset filtering, laid over a 3.2 fixture
 * until the 3.3 fixture exists: `allow_producer_teams` json and `allow_global_producers` bool
 * (NOT NULL, default true) on dag_schedule_asset_reference (migration a7f3b2c1d4e5,
 * 0114_3_3_0_add_access_control_columns_to_dag_schedule_asset_reference.py),
 * `allow_consumer_teams` json and `allow_global_consumers` bool on task_outlet_asset_reference
 * (c9d4e5f6a7b8, 0119_3_3_0_add_allow_consumer_teams_to_task_outlet_asset_reference.py), and the
 * `team` / `dag_bundle_team` tables as airflow-core/src/airflow/models/team.py defines them (a
 * bundle belongs to at most one team).
 */
export async function addMultiTeamSchema(knex: Knex): Promise<void> {
  await knex.raw(`
    create table team (name varchar(50) not null, constraint team_pkey primary key (name));
    create table dag_bundle_team (
      dag_bundle_name varchar(250) not null references dag_bundle (name) on delete cascade,
      team_name varchar(50) not null constraint dag_bundle_team_team_name_fkey references team (name) on delete cascade,
      primary key (dag_bundle_name, team_name)
    );
    create unique index idx_dag_bundle_team_dag_bundle_name on dag_bundle_team (dag_bundle_name);
    create index idx_dag_bundle_team_team_name on dag_bundle_team (team_name);
    alter table dag_schedule_asset_reference add column allow_producer_teams json, add column allow_global_producers boolean not null default true;
    alter table task_outlet_asset_reference add column allow_consumer_teams json, add column allow_global_consumers boolean not null default true;
  `)
}

/** Moves each named DAG into a bundle of its team (`null`: a bundle without a team). */
export async function assignTeams(knex: Knex, teams: Record<string, string | null>): Promise<void> {
  const names = [...new Set(Object.values(teams).filter((t): t is string => t !== null))]
  if (names.length > 0)
    await knex('team')
      .insert(names.map((name) => ({name})))
      .onConflict()
      .ignore()
  for (const [dagId, team] of Object.entries(teams)) {
    const bundle = team === null ? 'teamless' : `bundle_of_${team}`
    await knex('dag_bundle').insert({name: bundle, active: true}).onConflict().ignore()
    if (team !== null) await knex('dag_bundle_team').insert({dag_bundle_name: bundle, team_name: team}).onConflict().ignore()
    await knex('dag').where({dag_id: dagId}).update({bundle_name: bundle})
  }
}
