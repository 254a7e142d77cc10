/**
 * A command's `--help` description written as wrapped prose in the source. oclif wraps the text
 * to the terminal itself, so the source's own line breaks would break its lines twice: a single
 * line break inside a paragraph becomes a space. Blank lines (paragraphs) and lines that start
 * with spaces (lists and tables laid out by hand) are kept as they are.
 */
export function prose(text: string): string {
  const lines = text.split('\n')
  const out: string[] = []
  for (const line of lines) {
    const previous = out.at(-1)
    const joinable =
      previous !== undefined && previous !== '' && line !== '' && !/^\s/.test(line) && !/^\s/.test(previous)
    if (joinable) out[out.length - 1] = `${previous} ${line}`
    else out.push(line)
  }

  return out.join('\n')
}
