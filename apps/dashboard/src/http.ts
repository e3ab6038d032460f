import type { FastifyReply, FastifyRequest } from 'fastify';
import type { z } from 'zod';

/** Who made a request: the token's id (never the token), and how it was presented. */
export interface Caller {
  tokenId: string;
  via: 'bearer' | 'session';
  /** The session's CSRF token (session callers only). */
  csrf?: string;
  /** The session's id (session callers only). */
  sessionId?: string;
  /** Signed in with a read-only token (TRAWL_API_READ_TOKENS): GET and HEAD only. */
  readOnly?: boolean;
}

declare module 'fastify' {
  interface FastifyRequest {
    caller?: Caller;
  }
}

/** An error the API answers with its status and a problem body. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details?: string[],
    /** Response headers the error's answer carries (Retry-After on a 429). */
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
    this.name = 'ApiError';
  }

  /** What Fastify and its plugins read as the status. */
  get statusCode(): number {
    return this.status;
  }
}

export function problemBody(request: FastifyRequest, code: string, message: string, details?: string[]) {
  return { error: { code, message, ...(details && details.length > 0 ? { details } : {}) }, request_id: String(request.id) };
}

export function sendProblem(request: FastifyRequest, reply: FastifyReply, status: number, code: string, message: string, details?: string[]) {
  return reply.code(status).type('application/json; charset=utf-8').send(problemBody(request, code, message, details));
}

/** zod issues as "field: problem" lines. */
export function issueLines(error: z.ZodError, prefix = ''): string[] {
  return error.issues.map((issue) => {
    const path = [prefix, ...issue.path.map(String)].filter(Boolean).join('.');
    return path ? `${path}: ${issue.message}` : issue.message;
  });
}

/** Is this a browser asking for a page (not a script asking for JSON)? */
export const wantsHtml = (request: FastifyRequest): boolean => (request.headers.accept ?? '').includes('text/html');

export const escapeHtml = (value: unknown): string =>
  String(value).replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] as string);
