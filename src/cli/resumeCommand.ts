/**
 * The command line that takes up a batch the server cut short: the same command, since every
 * writer rechecks under its lock (what committed reads already_success, or is no longer
 * selected) and a replay's --checkpoint resumes after the last item it recorded. Printed with
 * the operator's own words, quoted for a POSIX shell, secrets scrubbed.
 */
export function resumeCommand(bin: string, commandId: string, argv: readonly string[]): string {
  return [bin, ...commandId.split(':'), ...argv].map(shellWord).join(' ')
}

/** What a resumed run cannot repeat verbatim: an --output file this run created (a second run refuses to overwrite it). */
export function resumeCaveats(argv: readonly string[]): string[] {
  const output = outputValue(argv)
  return output !== undefined && !output.includes('{timestamp}')
    ? [`give --output a new name: ${output} holds this run's items, and airlock never overwrites a file`]
    : []
}

function outputValue(argv: readonly string[]): string | undefined {
  for (const [index, word] of argv.entries()) {
    if (word === '--output' || word === '-o') return argv[index + 1]
    if (word.startsWith('--output=')) return word.slice('--output='.length)
    if (word.startsWith('-o') && word.length > 2) return word.slice(2)
  }

  return undefined
}

const plainWord = /^[\w@%+=:,./-]+$/

const shellWord = (word: string): string => (plainWord.test(word) ? word : `'${word.replaceAll("'", `'\\''`)}'`)
