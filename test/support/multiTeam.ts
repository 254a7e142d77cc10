import type {Knex} from 'knex'

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
    if (team !== null)
      await knex('dag_bundle_team').insert({dag_bundle_name: bundle, team_name: team}).onConflict().ignore()
    await knex('dag').where({dag_id: dagId}).update({bundle_name: bundle})
  }
}
