import { describe, expect, it } from 'vitest';
import { LazyRenderer } from './lazy.js';
import { FakeRenderer } from './testing/fake-renderer.js';

const fetch = async () => ({ status: 200, headers: {}, body: Buffer.from('') });

describe('LazyRenderer', () => {
  it('builds nothing until the first render, once, and closes only what it built', async () => {
    let builds = 0;
    let closes = 0;
    const lazy = new LazyRenderer(async () => {
      builds++;
      const inner = new FakeRenderer(() => '<html></html>');
      return { render: (url, options) => inner.render(url, options), close: async () => void closes++ };
    });
    expect(lazy.built).toBe(false);
    const unused = new LazyRenderer(async () => {
      builds++;
      return new FakeRenderer(() => '<html></html>');
    });
    await unused.close();
    expect(builds).toBe(0);

    await Promise.all([lazy.render('http://a.test/', { fetch }), lazy.render('http://a.test/2', { fetch })]);
    expect(builds).toBe(1);
    await lazy.close();
    expect(closes).toBe(1);
    const after = await lazy.render('http://a.test/', { fetch });
    expect(after.ok).toBe(false);
    expect(after.ok ? null : after.error.code).toBe('ERR_RENDER_CLOSED');
  });

  it('a failed build fails its render without rejecting, and the next render builds again', async () => {
    let builds = 0;
    const lazy = new LazyRenderer(async () => {
      builds++;
      if (builds === 1) throw new Error('no chromium here');
      return new FakeRenderer(() => '<html></html>');
    });
    const first = await lazy.render('http://a.test/', { fetch });
    expect(first.ok ? null : first.error.code).toBe('ERR_RENDER_BROWSER');
    await lazy.render('http://a.test/', { fetch });
    expect(builds).toBe(2);
    await lazy.close();
  });
});
