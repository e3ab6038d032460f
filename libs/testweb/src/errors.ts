/**
 * The synthetic web's own failures. They are test-infrastructure errors (bad options, no free
 * port), not crawl errors, so they live here rather than in @trawl/core's ErrorCode.
 */
export const TestWebErrorCode = {
  /** The options cannot describe a web (negative counts, address outside 127.0.0.0/8, …). */
  Options: 'ERR_TESTWEB_OPTIONS',
  /** Could not listen on every host address (port taken, address not routed). */
  Bind: 'ERR_TESTWEB_BIND',
  /** A host index or page id outside the web. */
  Range: 'ERR_TESTWEB_RANGE',
} as const;
export type TestWebErrorCode = (typeof TestWebErrorCode)[keyof typeof TestWebErrorCode];

export class TestWebError extends Error {
  readonly code: TestWebErrorCode;

  constructor(code: TestWebErrorCode, message: string, cause?: unknown) {
    super(message, cause === undefined ? undefined : { cause });
    this.name = 'TestWebError';
    this.code = code;
  }
}
