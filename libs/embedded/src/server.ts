/** A server this process started; `stop` shuts it down and releases its data directory. */
export interface EmbeddedServer {
  url: string;
  /** The server's process, when it runs as a child (redis-server); PGlite runs in this process. */
  childPid?: number;
  stop(): Promise<void>;
}
