import {renderKeyValues} from '../output/table.js'
import type {SandboxInfo} from '../sandbox/sandbox.js'

/** The sandbox facts an operator needs to connect by hand (never the password). */
export function describeSandbox(info: SandboxInfo): string {
  return renderKeyValues([
    ['status', info.running ? 'running' : 'stopped'],
    ['url', `postgresql://postgres:***@127.0.0.1:${info.port}/${info.database}`],
    ['airflow schema', info.airflowVersion],
    ['postgresql', info.postgresVersion],
    ['data', info.clusterDir],
    ['server log', info.logFile],
    ['state file', `${info.home}/sandbox.json`],
  ])
}
