/**
 * Thrown inside a knex transaction handler to end it in ROLLBACK with an outcome: knex rolls back
 * once and rethrows it, and the caller turns it back into data.
 */
export class RollbackWith<O> {
  constructor(readonly outcome: O) {}
}
