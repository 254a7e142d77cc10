import os from 'node:os'

/**
 * Who and where, for the extra of every `log` row airlock writes: Airflow's own rows carry
 * {"host_name": …}; airlock adds the OS user and its command so the audit log says who did it.
 */
export function auditIdentity(): {host_name: string; os_user: string} {
  let user: string
  try {
    user = os.userInfo().username
  } catch {
    user = process.env.USER ?? 'unknown'
  }

  return {host_name: os.hostname(), os_user: user}
}
