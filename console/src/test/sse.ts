/** One event of a server-sent event stream: its name and its data as sent. */
export interface SseEvent {
  event: string;
  data: string;
}

/**
 * Splits the raw text of a server-sent event stream into its events, the way a browser
 * does: blank lines end an event, `data:` lines join with newlines, comments are dropped,
 * and an event without a name is a `message`.
 */
export function parseSse(text: string): SseEvent[] {
  const events: SseEvent[] = [];
  for (const block of text.replace(/\r\n?/g, '\n').split('\n\n')) {
    let event = 'message';
    const data: string[] = [];
    for (const line of block.split('\n')) {
      if (line === '' || line.startsWith(':')) continue;
      const colon = line.indexOf(':');
      const field = colon < 0 ? line : line.slice(0, colon);
      const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
      if (field === 'event') event = value;
      else if (field === 'data') data.push(value);
    }
    if (data.length > 0) events.push({ event, data: data.join('\n') });
  }
  return events;
}
