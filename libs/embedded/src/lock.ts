import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { linkSync, readFileSync, renameSync, unlinkSync, writeFileSync } from 'node:fs';
import { ErrorCode, TrawlError } from '@trawl/core';
import { processRuns } from './proc.js';

/** What a data directory's lock file says: who holds it, and since when. */
interface Holder {
  /** The trawl process, and any server child it started on the directory. */
  pids: number[];
  host: string;
  since: string;
  /** Tells this holder's file from an earlier one of the same process. */
  token: string;
}

/** A held lock on a data directory; `release` gives it up (only if it is still ours). */
export interface DataDirLock {
  path: string;
  /** Records a server child working on the directory: the lock is live while it runs too. */
  addPid(pid: number): void;
  release(): void;
}

function read(path: string): Holder | null {
  try {
    const parsed = JSON.parse(readFileSync(path, 'utf8')) as Partial<Holder>;
    if (!Array.isArray(parsed.pids) || !parsed.pids.every((p) => Number.isInteger(p) && p > 0)) return null;
    return { pids: parsed.pids, host: String(parsed.host ?? ''), since: String(parsed.since ?? ''), token: String(parsed.token ?? '') };
  } catch {
    return null;
  }
}

/**
 * A holder is live while any of its processes runs. Embedded servers serve one machine: the host
 * name is kept for the message only (a container's changes with every restart).
 */
const live = (holder: Holder): boolean => holder.pids.some(processRuns);

/** Writes `holder` to a private temp file and links it into place: the lock appears whole or not at all. */
function publish(path: string, holder: Holder, replace: boolean): boolean {
  const temp = `${path}.${process.pid}.${randomBytes(4).toString('hex')}`;
  writeFileSync(temp, `${JSON.stringify(holder)}\n`);
  try {
    if (replace) renameSync(temp, path);
    else linkSync(temp, path);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw error;
  } finally {
    if (!replace) unlinkSync(temp);
  }
}

/**
 * Takes `<dir>.lock` for this process, so two trawl runs never share one embedded server's data
 * directory (two redis-servers appending to one AOF, or two PGlites on one data directory,
 * corrupt it). A second run gets a clear error naming the holder: its data directory is the
 * crawl's resumable state, so quietly moving it elsewhere would split the crawl. A lock left by
 * a process that no longer runs (killed with SIGKILL, a power cut) is taken over.
 */
export function lockDataDir(dir: string, what: string): DataDirLock {
  const path = `${dir}.lock`;
  const mine: Holder = { pids: [process.pid], host: hostname(), since: new Date().toISOString(), token: randomBytes(8).toString('hex') };
  for (let attempt = 0; attempt < 5; attempt += 1) {
    if (publish(path, mine, false)) {
      return {
        path,
        addPid(pid) {
          mine.pids.push(pid);
          if (read(path)?.token === mine.token) publish(path, mine, true);
        },
        release() {
          if (read(path)?.token !== mine.token) return;
          try {
            unlinkSync(path);
          } catch {
            // already gone
          }
        },
      };
    }
    const holder = read(path);
    if (holder && live(holder)) {
      throw new TrawlError(
        ErrorCode.EmbeddedStart,
        `${what} data directory ${dir} is in use by trawl process ${holder.pids[0]} on ${holder.host} (since ${holder.since}): ` +
          `two runs never share one data directory. Wait for that run to end or stop it; run this one from another directory; ` +
          `or set REDIS_URL and DATABASE_URL to servers both runs can share. (Lock file: ${path})`,
        { action: 'fatal', details: { lock: path, holder: holder.pids } },
      );
    }
    // Stale (its processes are gone) or unreadable: move it aside, and make sure what was moved
    // is what was judged stale; a racing process may have put a live lock there meanwhile.
    const aside = `${path}.stale.${process.pid}.${randomBytes(4).toString('hex')}`;
    try {
      renameSync(path, aside);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') continue;
      throw error;
    }
    const moved = read(aside);
    if (moved && live(moved)) {
      try {
        linkSync(aside, path);
      } catch {
        // someone holds it again: the next round reports them
      }
    }
    unlinkSync(aside);
  }
  throw new TrawlError(ErrorCode.EmbeddedStart, `could not take the lock ${path} (it keeps changing hands)`, { action: 'fatal' });
}
