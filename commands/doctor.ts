import {AirlockCommand, type CommandOutcome} from '../src/cli/baseCommand.js'
import {connectionFlags} from '../src/cli/connectionFlags.js'
import {renderDoctor} from '../src/cli/renderDoctor.js'
import {runDoctor, type DoctorReport} from '../src/doctor/runDoctor.js'
import {prose} from '../src/cli/prose.js'

export default class Doctor extends AirlockCommand<DoctorReport> {
  static override summary = 'Check the connection, the Airflow schema, privileges and lock-related settings.'
  static override description =
    prose(`Connects (showing which setting supplied the URL, never the password), reads the server version,
the Airflow release the alembic head places on Airflow's migration graph (checked against the
tables: a column the release lacks or adds is named), the capabilities (partition columns,
DAG-run queue shape, multi-team columns), whether the server accepts writes (a hot standby,
default_transaction_read_only), checks the privileges airlock's writers need,
and gives advice on lock_timeout, statement_timeout, idle_in_transaction_session_timeout,
deadlock_timeout and log_lock_waits. Writes nothing.

Exit 0 when airlock supports the database, 7 when it cannot connect or log in, 8 when the database
is not an Airflow 3 schema airlock supports (the report says what is missing; for a patch
release newer than airlock, --assume-version X.Y), 9 when airlock can read but not write: the
server accepts no writes (a standby, or default_transaction_read_only on: the verdict says which),
or the user lacks privileges a writer needs (the verdict says which commands still work).`)

  static override examples = [
    '<%= config.bin %> doctor --embedded',
    '<%= config.bin %> doctor --database-url postgresql://airflow@db:5432/airflow',
    {
      description: "With Airflow's own setting exported (AIRFLOW__DATABASE__SQL_ALCHEMY_CONN)",
      command: '<%= config.bin %> doctor --json',
    },
    '<%= config.bin %> doctor --profile prod --assume-version 3.3',
  ]

  static override flags = {...connectionFlags}

  protected async execute(): Promise<CommandOutcome<DoctorReport>> {
    const {flags} = await this.parse(Doctor)
    const {db, target, source} = await this.openDatabase(flags, {
      verb: 'doctor',
      idleInTransactionTimeoutMs: null,
      limitsAfterConnect: true,
    })
    const {report, exit} = await runDoctor(db, {target, source}, {assumeVersion: flags['assume-version']})
    for (const setting of report.settings)
      if (setting.level === 'warning' && setting.advice) this.recordWarning(`${setting.name}: ${setting.advice}`)
    return {result: report, exit}
  }

  protected render(report: DoctorReport): string {
    return renderDoctor(report, this.terminalWidth)
  }
}
