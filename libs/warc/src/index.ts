export {
  base32,
  type BodyForm,
  headerPairs,
  type HttpExchange,
  type HttpHeaders,
  payloadDigest,
  recordedResponseHeaders,
  statusLine,
  warcDate,
} from './records.js';
export {
  cdxjPath,
  DEFAULT_MAX_FILE_BYTES,
  type MetadataInput,
  type RevisitInput,
  WarcWriter,
  type WarcWriterOptions,
  type WrittenRecord,
} from './writer.js';
export { type BodySource, type ExportOptions, type ExportRow, type ExportSummary, exportWarc } from './export.js';
