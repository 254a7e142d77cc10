import {readdir, readFile} from 'node:fs/promises'

/**
 * Where a batch's CPU went, per completed item: this process (the client, airlock or the raw
 * floor, which run in the benchmark's own process one at a time) and PostgreSQL. On a machine
 * whose cores the client and the server share, the client's CPU is taken from the server's.
 * The server's figure counts every PostgreSQL process on the machine (another cluster's too), so
 * it is meant for a machine where the benchmark's server is the only busy one.
 */
export interface CpuPerItem {
  clientMs: number
  /** Every PostgreSQL process on this machine; null when the server is elsewhere or /proc cannot tell. */
  serverMs: number | null
}

/** Ticks per second of /proc's utime and stime: USER_HZ, 100 on every Linux architecture Node runs on. */
const ticksPerSecond = 100

/**
 * CPU time of every PostgreSQL process on this machine so far, in ms: each process's user and
 * system time, and what each has reaped of its children (a backend that ended is added to the
 * postmaster's cutime and cstime, so connections closed during a batch still count). Null off
 * Linux.
 */
export async function postgresCpuMs(): Promise<number | null> {
  let pids: string[]
  try {
    pids = (await readdir('/proc')).filter((name) => /^\d+$/.test(name))
  } catch {
    return null
  }
  let ticks = 0
  for (const pid of pids) {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '')
    // pid (comm) state ppid …: the command name may hold spaces, so fields are counted after ')'.
    const close = stat.lastIndexOf(')')
    if (close < 0 || stat.slice(stat.indexOf('(') + 1, close) !== 'postgres') continue
    const fields = stat.slice(close + 2).split(' ')
    // utime, stime, cutime, cstime: fields 14 to 17 of proc(5), 11 to 14 after the state.
    for (const index of [11, 12, 13, 14]) ticks += Number(fields[index] ?? 0)
  }
  return (ticks * 1000) / ticksPerSecond
}

/** Runs `work` and says how much CPU the client and the server spent on each of the items it reports done. */
export async function withCpuPerItem<T extends {done: number}>(
  serverIsLocal: boolean,
  work: () => Promise<T>,
): Promise<T & {cpu: CpuPerItem}> {
  const serverBefore = serverIsLocal ? await postgresCpuMs() : null
  const clientBefore = process.cpuUsage()
  const result = await work()
  const client = process.cpuUsage(clientBefore)
  const serverAfter = serverBefore === null ? null : await postgresCpuMs()
  const per = (ms: number) => ms / Math.max(1, result.done)
  return {
    ...result,
    cpu: {
      clientMs: per((client.user + client.system) / 1000),
      serverMs: serverBefore === null || serverAfter === null ? null : per(serverAfter - serverBefore),
    },
  }
}

/** Whether a connection URL's server is this machine (a loopback address, localhost, or a Unix socket). */
export function isLocalServer(url: string): boolean {
  let host: string
  try {
    const {hostname, searchParams} = new URL(url)
    host = (searchParams.get('host') ?? decodeURIComponent(hostname)).replace(/^\[|\]$/g, '')
  } catch {
    return false
  }
  // No host at all is libpq's default, the local socket.
  return host === '' || host.startsWith('/') || host === 'localhost' || host === '::1' || host.startsWith('127.')
}
