import type {ServerSetting} from '../store/families/catalog.js'

/**
 * Advice on the settings that decided the incident behind airlock: sessions idle in a
 * transaction held task_instance row locks for minutes while completions queued behind them.
 */
export const lockSettingNames = [
  'lock_timeout',
  'statement_timeout',
  'idle_in_transaction_session_timeout',
  'transaction_timeout',
  'deadlock_timeout',
  'log_lock_waits',
] as const

export interface SettingReport {
  name: string
  /** What every other session (Airflow's) gets: the server's value for this role and database. */
  value: string
  source: string
  /** airlock's own session value where it differs (its read limits), labelled so; never the server's. */
  airlockSession: string | null
  level: 'ok' | 'advice' | 'warning'
  advice: string | null
}

export function displayValue(setting: Pick<ServerSetting, 'setting' | 'unit'>): string {
  if (setting.setting === '0' && setting.unit) return '0 (disabled)'
  return setting.unit && setting.unit !== '' ? `${setting.setting}${setting.unit}` : setting.setting
}

export function adviseOn(setting: ServerSetting): SettingReport {
  const base = {
    name: setting.name,
    value: displayValue(setting),
    source: setting.source,
    airlockSession:
      setting.sessionSetting === null ? null : displayValue({setting: setting.sessionSetting, unit: setting.unit}),
  }
  const off = setting.setting === '0'
  switch (setting.name) {
    case 'idle_in_transaction_session_timeout': {
      return off
        ? {
            ...base,
            level: 'warning',
            advice:
              "A session left idle in a transaction keeps its task_instance row locks forever; set it (for example 5min) for Airflow's role. airlock sets its own per session.",
          }
        : {...base, level: 'ok', advice: null}
    }

    case 'lock_timeout': {
      return off
        ? {
            ...base,
            level: 'advice',
            advice:
              'Sessions wait forever for row locks. airlock sets its own per transaction (--lock-timeout); ad-hoc psql sessions do not.',
          }
        : {...base, level: 'ok', advice: null}
    }

    case 'statement_timeout': {
      return off
        ? {
            ...base,
            level: 'advice',
            advice: 'No server-wide limit. airlock sets its own per transaction (--statement-timeout).',
          }
        : {...base, level: 'ok', advice: null}
    }

    case 'transaction_timeout': {
      return off
        ? {
            ...base,
            level: 'advice',
            advice: 'PostgreSQL 17+ can end any transaction that runs too long; consider it for interactive roles.',
          }
        : {...base, level: 'ok', advice: null}
    }

    case 'log_lock_waits': {
      return setting.setting === 'off'
        ? {
            ...base,
            level: 'advice',
            advice:
              'Turn on so lock waits longer than deadlock_timeout reach the server log (evidence for the next incident).',
          }
        : {...base, level: 'ok', advice: null}
    }

    case 'deadlock_timeout': {
      return Number(setting.setting) > 5000
        ? {...base, level: 'advice', advice: 'Deadlocks are detected late; the default 1s is usually right.'}
        : {...base, level: 'ok', advice: null}
    }

    default: {
      return {...base, level: 'ok', advice: null}
    }
  }
}
