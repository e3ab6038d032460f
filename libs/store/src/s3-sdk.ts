import type * as ClientS3 from '@aws-sdk/client-s3';
import type * as LibStorage from '@aws-sdk/lib-storage';

/** The parts of the AWS SDK the S3 stores use. */
export interface S3Sdk {
  client: typeof ClientS3;
  storage: typeof LibStorage;
}

let loading: Promise<S3Sdk> | null = null;

/**
 * The AWS SDK, loaded the first time an S3 store needs it. Loading it costs ~0.15 s of CPU in
 * each thread that imports it (the crawling thread and the process stage's), which a crawl that
 * keeps its bodies on local disk — the default — would pay at every start for nothing.
 */
export function s3Sdk(): Promise<S3Sdk> {
  loading ??= Promise.all([import('@aws-sdk/client-s3'), import('@aws-sdk/lib-storage')]).then(([client, storage]) => ({ client, storage }));
  return loading;
}
