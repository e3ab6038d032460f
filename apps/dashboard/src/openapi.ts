import { z } from 'zod';
import type { ApiRoute } from './routes.js';
import { problemSchema } from './schemas.js';

type Json = Record<string, unknown>;

/**
 * JSON Schema 2020-12 for one zod schema, its shared definitions hoisted into the document's
 * components (a `$ref` in an OpenAPI document resolves from the document's root).
 */
function schemaOf(schema: z.ZodType, io: 'input' | 'output', components: Record<string, Json>): Json {
  const json = z.toJSONSchema(schema, { io, unrepresentable: 'any' }) as Json;
  delete json.$schema;
  const defs = (json.$defs ?? {}) as Record<string, Json>;
  delete json.$defs;
  const rewrite = (value: Json): Json => JSON.parse(JSON.stringify(value).replace(/"#\/\$defs\/([^"]+)"/g, '"#/components/schemas/$1"')) as Json;
  for (const [name, def] of Object.entries(defs)) components[name] = rewrite(def);
  return rewrite(json);
}

const toOpenApiPath = (path: string): string => path.replace(/:([A-Za-z_]+)/g, '{$1}');

/** The OpenAPI 3.1 document of the REST API, generated from the same zod schemas the routes validate with. */
export function openApiDocument(routes: readonly ApiRoute[], options: { version: string }): Json {
  const components: Record<string, Json> = {};
  const paths: Record<string, Record<string, Json>> = {};
  const problem = { description: 'Error', content: { 'application/json': { schema: schemaOf(problemSchema, 'output', components) } } };
  for (const route of routes) {
    const parameters: Json[] = [];
    for (const [where, schema] of [['path', route.params], ['query', route.query]] as const) {
      if (!schema) continue;
      const json = schemaOf(schema, 'input', components) as { properties?: Record<string, Json>; required?: string[] };
      for (const [name, property] of Object.entries(json.properties ?? {})) {
        const { description, ...rest } = property;
        parameters.push({ name, in: where, required: where === 'path' || (json.required ?? []).includes(name), schema: rest, ...(description ? { description } : {}) });
      }
    }
    for (const header of route.headers ?? []) {
      parameters.push({ name: header.name, in: 'header', required: false, schema: schemaOf(header.schema, 'input', components), description: header.schema.description });
    }
    const responses: Json = {};
    for (const [status, response] of Object.entries(route.responses)) {
      responses[status] = response.schema
        ? { description: response.description, content: { 'application/json': { schema: schemaOf(response.schema, 'output', components) } } }
        : { description: response.description };
    }
    for (const status of ['400', '401', '403', '413', '429']) if (!responses[status]) responses[status] = problem;
    const operation: Json = {
      operationId: route.operationId,
      summary: route.summary,
      description: route.description,
      tags: [route.tag],
      parameters,
      responses,
      security: [{ bearer: [] }, { session: [] }],
    };
    if (route.body) operation.requestBody = { required: !route.bodyOptional, content: { 'application/json': { schema: schemaOf(route.body, 'input', components) } } };
    (paths[toOpenApiPath(route.path)] ??= {})[route.method.toLowerCase()] = operation;
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'trawl REST API',
      version: options.version,
      description:
        'Operate a trawl crawl: add seeds, inspect hosts, refresh URLs, pause and resume, read statistics and freshness. Every route needs `Authorization: Bearer <token>` (one of TRAWL_API_TOKENS) or a signed-in browser session; browser writes also need the session\'s CSRF token in `X-CSRF-Token`.',
    },
    servers: [{ url: '/' }],
    paths,
    components: {
      schemas: components,
      securitySchemes: {
        bearer: { type: 'http', scheme: 'bearer', description: 'One of TRAWL_API_TOKENS' },
        session: { type: 'apiKey', in: 'cookie', name: 'trawl_session', description: 'Set by signing in at /signin' },
      },
    },
  };
}
