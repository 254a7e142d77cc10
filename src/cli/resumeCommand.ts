import path from 'node:path'

/** The command line that takes up a batch, and the --output file it writes instead of this run's. */
export interface ResumeLine {
  command: string
  /** This run's --output name (as given) and the one the line gives instead, when it had one. */
  output?: {was: string; now: string}
}

/**
 * The command line that takes up a batch a signal or the server cut short: the same command, since
 * every writer rechecks under its lock (what committed reads already_success, or is no longer
 * selected) and a replay's --checkpoint resumes after the last item it recorded. Printed with the
 * operator's own words, quoted for a POSIX shell (the caller scrubs its secrets), but for
 * --output: this run created that file and airlock never overwrites one, so the same line pasted
 * would stop at once (exit 2). It names a new file instead (`resumedOutputName`). `outputChar`:
 * the command's short form of --output, if it has one.
 */
export function resumeCommand(
  bin: string,
  commandId: string,
  argv: readonly string[],
  outputChar?: string,
): ResumeLine {
  let output: ResumeLine['output']
  const renamed = (was: string) => {
    const now = resumedOutputName(was)
    output = {was, now}
    return now
  }
  const words: string[] = []
  const short = outputChar === undefined ? undefined : `-${outputChar}`
  for (let i = 0; i < argv.length; i++) {
    const word = argv[i]!
    // After `--` every word is an argument, never a flag.
    if (word === '--') {
      words.push(...argv.slice(i))
      break
    }
    if ((word === '--output' || word === short) && i + 1 < argv.length) {
      words.push(word, renamed(argv[++i]!))
    } else if (word.startsWith('--output=')) {
      words.push(`--output=${renamed(word.slice('--output='.length))}`)
    } else if (short !== undefined && word.startsWith(short) && word.length > short.length) {
      // -oFILE and -o=FILE, as oclif reads them.
      const value = word.slice(short.length)
      const equals = value.startsWith('=')
      words.push(`${short}${equals ? '=' : ''}${renamed(equals ? value.slice(1) : value)}`)
    } else {
      words.push(word)
    }
  }
  return {command: [bin, ...commandId.split(':'), ...words].map(shellWord).join(' '), ...(output ? {output} : {})}
}

/**
 * The --output name of a run that takes up another: `{timestamp}` before the extension
 * (`items.ndjson` → `items-{timestamp}.ndjson`), filled in when that run starts, so the line
 * works however often it is pasted; a name that already has `{timestamp}` gets a new file from it
 * anyway. `{date}` and `{pid}` alone do not: the same day, a recycled pid name the same file.
 */
export function resumedOutputName(name: string): string {
  if (name.includes('{timestamp}')) return name
  const {dir, name: stem, ext} = path.posix.parse(name)
  const file = `${stem}-{timestamp}${ext}`
  return dir === '' ? file : dir.endsWith('/') ? `${dir}${file}` : `${dir}/${file}`
}

/**
 * The line that takes a stopped run up, alone on its line so it can be pasted whole, after what it
 * does not repeat verbatim (its new --output file, a scrubbed password).
 */
export function resumeLines(report: {resume?: string | undefined; resume_notes?: string[] | undefined}): string {
  const notes = report.resume_notes?.length ? `Note: the line below: ${report.resume_notes.join('; ')}.\n` : ''
  return `${notes}Resume with: ${report.resume}`
}

const plainWord = /^[\w@%+=:,./-]+$/

const shellWord = (word: string): string => (plainWord.test(word) ? word : `'${word.replaceAll("'", `'\\''`)}'`)
