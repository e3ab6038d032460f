import { bindScripts, loadScripts, type RedisClient, type ScriptCaller } from '@trawl/redis';
import { fetchQueueName, fetchQueuePrefix } from './job.js';

const SCRIPTS = loadScripts(import.meta.url, '../lua', ['addJobs-2', 'takeJobs-3', 'finishJob-2', 'returnJobs-3', 'forgetHeld-3']);
type ScriptName = 'addJobs' | 'takeJobs' | 'finishJob' | 'returnJobs' | 'forgetHeld';

/** A dispatched job on a ready list: its id (the lease id) and its payload as JSON. */
export interface ReadyJob {
  id: string;
  payload: string;
}

/** The token a ready-list job runs under at the gate: its consumer's name and its id (it runs once from the list). */
export const readyJobToken = (consumer: string, id: string): string => `${consumer}:${id}`;

/**
 * The keys of a partition's ready list, beside its BullMQ queue and under the same hash tag:
 * the list of ids in dispatch order, the payloads by id (every job not yet over, waiting or
 * taken), each consumer's held list (the ids it has taken and not finished), and the registry
 * of those held lists' names (`<member>|<consumer>`).
 */
export function readyKeys(namespace: string, partition: number): { ready: string; jobs: string; registry: string; heldPrefix: string } {
  const base = `${fetchQueuePrefix(namespace, partition)}:${fetchQueueName(partition)}-ready`;
  return { ready: base, jobs: `${base}:jobs`, registry: `${base}:held`, heldPrefix: `${base}:held:` };
}

/**
 * The dispatched fetch jobs' way to the workers: a Redis list per partition that a consumer
 * takes from in batches (one blocking move, then up to its free slots in one script), where a
 * BullMQ job would cost each page its own add, pick-up and completion scripts. Only the jobs
 * that leave the straight path — retried, dead-lettered, deferred far ahead — become BullMQ
 * jobs (see FetchWorker). A taken job sits on its consumer's held list until it is over, so a consumer
 * that stops gives back what it never started, and the jobs of a worker process that died are
 * found under its member id (`heldFetchJobs`) and dropped once their leases are freed.
 */
export class ReadyJobs {
  private readonly scripts: Record<ScriptName, ScriptCaller>;

  constructor(
    private readonly redis: RedisClient,
    private readonly namespace: string,
  ) {
    this.scripts = bindScripts<ScriptName>(redis, SCRIPTS);
  }

  keys(partition: number): ReturnType<typeof readyKeys> {
    return readyKeys(this.namespace, partition);
  }

  /** Adds jobs at the end of the partition's ready list, each id once. Returns how many were new. */
  async add(partition: number, jobs: readonly ReadyJob[]): Promise<number> {
    if (jobs.length === 0) return 0;
    const keys = this.keys(partition);
    return Number(await this.scripts.addJobs([keys.ready, keys.jobs], jobs.flatMap((job) => [job.id, job.payload])));
  }

  /** Jobs on the ready list, not yet taken. */
  waiting(partition: number): Promise<number> {
    return this.redis.llen(this.keys(partition).ready);
  }

  /**
   * The partition's jobs as BullMQ would count them: waiting until taken, then active; once
   * over, completed (every one that ended here: BullMQ counts only the finished jobs it keeps).
   */
  async counts(partition: number): Promise<{ waiting: number; active: number; completed: number }> {
    const keys = this.keys(partition);
    const [waiting, unfinished, completed] = await Promise.all([this.redis.llen(keys.ready), this.redis.hlen(keys.jobs), this.redis.hget(`${keys.jobs}:count`, 'completed')]);
    return { waiting, active: Math.max(0, unfinished - waiting), completed: Number(completed ?? 0) };
  }

  /** Whether each job is on the ready list or held by a consumer (not over), in one round trip. */
  async exist(partition: number, ids: readonly string[]): Promise<boolean[]> {
    if (ids.length === 0) return [];
    const { jobs } = this.keys(partition);
    const pipeline = this.redis.pipeline();
    for (const id of ids) pipeline.hexists(jobs, id);
    return ((await pipeline.exec()) ?? []).map(([error, found]) => {
      if (error) throw error;
      return found === 1;
    });
  }

  /** Records a consumer's held list (`<member>|<consumer>`), so the member's jobs can be found. */
  async register(partition: number, held: string): Promise<void> {
    await this.redis.sadd(this.keys(partition).registry, held);
  }

  /**
   * Moves up to `more` jobs from the ready list onto the held list, after `first` (an id a
   * blocking move put there already, or null), and returns them with their payloads.
   */
  async take(partition: number, held: string, first: string | null, more: number): Promise<ReadyJob[]> {
    const keys = this.keys(partition);
    const reply = (await this.scripts.takeJobs([keys.ready, keys.heldPrefix + held, keys.jobs], [first ?? '', Math.max(0, more)])) as string[];
    const jobs: ReadyJob[] = [];
    for (let i = 0; i + 1 < reply.length; i += 2) jobs.push({ id: reply[i] as string, payload: reply[i + 1] as string });
    return jobs;
  }

  /** The job is over: off the held list, its payload gone; counted as completed if it `ended` here. */
  async finish(partition: number, held: string, id: string, ended: boolean): Promise<void> {
    const keys = this.keys(partition);
    await this.scripts.finishJob([keys.heldPrefix + held, keys.jobs], [id, ended ? '1' : '']);
  }

  /** Puts the held jobs not `running` back at the head of the ready list. Returns how many. */
  async giveBack(partition: number, held: string, running: readonly string[]): Promise<number> {
    const keys = this.keys(partition);
    return Number(await this.scripts.returnJobs([keys.ready, keys.heldPrefix + held, keys.registry], [held, ...running]));
  }

  /** The jobs every held list of `member` holds, with their payloads and the tokens they run under. */
  async heldBy(partition: number, member: string): Promise<(ReadyJob & { token: string })[]> {
    const keys = this.keys(partition);
    const names = (await this.redis.smembers(keys.registry)).filter((name) => name.startsWith(`${member}|`));
    const held = (await Promise.all(names.map(async (name) => (await this.redis.lrange(keys.heldPrefix + name, 0, -1)).map((id) => ({ id, token: readyJobToken(name, id) }))))).flat();
    if (held.length === 0) return [];
    const payloads = await this.redis.hmget(keys.jobs, ...held.map((job) => job.id));
    return held.flatMap((job, i) => {
      const payload = payloads[i];
      return typeof payload === 'string' ? [{ ...job, payload }] : [];
    });
  }

  /** Drops every job `member`'s held lists hold (their leases freed already). Returns how many. */
  async forget(partition: number, member: string): Promise<number> {
    const keys = this.keys(partition);
    return Number(await this.scripts.forgetHeld([keys.registry, keys.jobs, keys.heldPrefix], [member]));
  }
}
