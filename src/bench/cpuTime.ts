import {readdir, readFile} from 'node:fs/promises'

/**
 * Where a batch's CPU went, per completed item: this process (the client, airlock or the raw
 * floor, which run in the benchmark's own process one at a time) and PostgreSQL. On a machine
 * whose cores the client and the server share, the client's CPU is taken from the server's.
 * The server's figure is that server's own processes (its postmaster and children), read from
 * /proc when it runs on this machine.
 */
export interface CpuPerItem {
  clientMs: number
  /** Every PostgreSQL process on this machine; null when the server is elsewhere or /proc cannot tell. */
  serverMs: number | null
}

/** Ticks per second of /proc's utime and stime: USER_HZ, 100 on every Linux architecture Node runs on. */
const ticksPerSecond = 100

/** A process's fields after its command name (pid (comm) state ppid …), or undefined when it is gone. */
async function statFields(pid: number): Promise<string[] | undefined> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => undefined)
  // The command name may hold spaces and parentheses: fields are counted after the last ')'.
  const close = stat?.lastIndexOf(')') ?? -1
  return close < 0 ? undefined : stat!.slice(close + 2).split(' ')
}

/**
 * The postmaster of the server a connection talks to, when that server runs on this machine: the
 * parent of the connection's backend. Null where /proc cannot tell (not Linux, another host).
 */
export async function postmasterOf(backendPid: number): Promise<number | null> {
  const fields = await statFields(backendPid)
  // ppid: field 4 of proc(5), 1 after the state.
  return fields ? Number(fields[1]) : null
}

/**
 * CPU time of one PostgreSQL server so far, in ms: its postmaster's and every child's user and
 * system time, and what the postmaster has reaped of children that ended (cutime, cstime), so
 * connections closed during a batch still count. Another cluster on the machine is not counted.
 * Null when the postmaster cannot be read.
 */
export async function postgresCpuMs(postmaster: number): Promise<number | null> {
  const own = await statFields(postmaster)
  if (!own) return null
  let pids: string[]
  try {
    pids = (await readdir('/proc')).filter((name) => /^\d+$/.test(name))
  } catch {
    return null
  }
  // utime, stime, cutime, cstime: fields 14 to 17 of proc(5), 11 to 14 after the state.
  const ticks = (fields: string[]) => [11, 12, 13, 14].reduce((sum, index) => sum + Number(fields[index] ?? 0), 0)
  let total = ticks(own)
  for (const pid of pids) {
    const fields = await statFields(Number(pid))
    if (fields && Number(fields[1]) === postmaster) total += ticks(fields)
  }
  return (total * 1000) / ticksPerSecond
}

/**
 * Runs `work` and says how much CPU the client and the server spent on each of the items it
 * reports done; the server's only when its postmaster is on this machine (postmasterOf).
 */
export async function withCpuPerItem<T extends {done: number}>(
  postmaster: number | null,
  work: () => Promise<T>,
): Promise<T & {cpu: CpuPerItem}> {
  const serverBefore = postmaster === null ? null : await postgresCpuMs(postmaster)
  const clientBefore = process.cpuUsage()
  const result = await work()
  const client = process.cpuUsage(clientBefore)
  const serverAfter = postmaster === null || serverBefore === null ? null : await postgresCpuMs(postmaster)
  const per = (ms: number) => ms / Math.max(1, result.done)
  return {
    ...result,
    cpu: {
      clientMs: per((client.user + client.system) / 1000),
      // Never below zero: a child that ended and is not reaped yet counts before and not after.
      serverMs: serverBefore === null || serverAfter === null ? null : per(Math.max(0, serverAfter - serverBefore)),
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
