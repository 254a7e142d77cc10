interface Screen {
  isTTY?: boolean
  columns?: number
}

/**
 * The width human tables fit: COLUMNS when it is set to a width (as `ls` and `git` honour it, so
 * `COLUMNS=80 airlock … | cat` is 80 wide), else the terminal's when stdout or stderr is one,
 * else none: piped output keeps every value whole.
 */
export function tableWidth(env: NodeJS.ProcessEnv, stdout: Screen, stderr: Screen): number | undefined {
  const set = env.COLUMNS?.trim()
  if (set && /^\d{1,5}$/.test(set) && Number(set) > 0) return Number(set)
  const columns = stdout.isTTY ? stdout.columns : stderr.isTTY ? stderr.columns : undefined
  return columns && columns > 0 ? columns : undefined
}
