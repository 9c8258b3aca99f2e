/**
 * A stand-in for the `eventsource` package's EventSource, which the views open their
 * streams with (mocked for every test in src/setupTests.ts). Tests drive it by hand:
 * `emit` delivers a named SSE event, `fail` fires `error` the way a dropped connection
 * (`closed: false`) or a refused one (`closed: true`) does.
 */
export class MockEventSource extends EventTarget {
  static readonly CONNECTING = 0;
  static readonly OPEN = 1;
  static readonly CLOSED = 2;

  /** Every instance created since the last `reset`, oldest first. */
  static instances: MockEventSource[] = [];

  static reset(): void {
    MockEventSource.instances = [];
  }

  static latest(): MockEventSource {
    const source = MockEventSource.instances.at(-1);
    if (!source) throw new Error('no EventSource was created');
    return source;
  }

  readonly url: string;
  readyState: number = MockEventSource.CONNECTING;
  closed = false;

  constructor(url: string | URL) {
    super();
    this.url = String(url);
    MockEventSource.instances.push(this);
  }

  emit(type: string, data: unknown): void {
    this.readyState = MockEventSource.OPEN;
    const text = typeof data === 'string' ? data : JSON.stringify(data);
    this.dispatchEvent(new MessageEvent(type, { data: text }));
  }

  fail({ closed }: { closed: boolean }): void {
    this.readyState = closed ? MockEventSource.CLOSED : MockEventSource.CONNECTING;
    this.dispatchEvent(new Event('error'));
  }

  close(): void {
    this.closed = true;
    this.readyState = MockEventSource.CLOSED;
  }
}
