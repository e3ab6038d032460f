/**
 * File extensions a link can be judged by before it is fetched. A crawl that keeps only HTML
 * drops a PDF at its response headers anyway; recognising it by its path saves the request, and
 * with it a turn at the host's politeness delay. The list follows the field's habit (Scrapy's
 * link extractors ignore much the same set): files that are never an HTML page.
 */
export const DEFAULT_SKIP_EXTENSIONS: readonly string[] = Object.freeze([
  // Images and vector graphics.
  'avif', 'bmp', 'gif', 'heic', 'heif', 'ico', 'jpeg', 'jpg', 'png', 'psd', 'svg', 'svgz', 'tif', 'tiff', 'webp',
  'ai', 'cdr', 'drw', 'dxf', 'eps', 'mng', 'pct', 'ps', 'psp', 'pst',
  // Audio.
  'aac', 'aif', 'aiff', 'au', 'flac', 'm4a', 'mid', 'midi', 'mp3', 'oga', 'ogg', 'opus', 'ra', 'wav', 'wma',
  // Video and animation.
  '3gp', 'asf', 'asx', 'avi', 'flv', 'm4v', 'mkv', 'mov', 'mp4', 'mpeg', 'mpg', 'ogv', 'qt', 'rm', 'swf', 'webm', 'wmv',
  // Archives and compressed files.
  '7z', '7zip', 'bz2', 'gz', 'rar', 'tar', 'tgz', 'xz', 'zip', 'zst',
  // Office documents, PDF, e-books.
  'doc', 'docx', 'epub', 'odg', 'odp', 'ods', 'odt', 'pdf', 'pps', 'ppt', 'pptx', 'rtf', 'xls', 'xlsx',
  // Executables, installers, disk images.
  'apk', 'bin', 'deb', 'dmg', 'exe', 'iso', 'jar', 'msi', 'rpm',
  // Fonts.
  'eot', 'otf', 'ttf', 'woff', 'woff2',
  // Style sheets, scripts and feeds: never a page to parse for links.
  'css', 'js', 'rss',
]);

/**
 * The set `ignoredExtension` looks in: each entry trimmed, lowercased, without a leading dot
 * (`".PDF"` → `pdf`); empty entries dropped.
 */
export function extensionSet(extensions: readonly string[]): Set<string> {
  const out = new Set<string>();
  for (const raw of extensions) {
    const ext = raw.trim().toLowerCase().replace(/^\.+/, '');
    if (ext !== '') out.add(ext);
  }
  return out;
}

/**
 * The extension in `extensions` the URL's file name ends with, or null. Only the path's last
 * segment counts (not the query, not a directory: `/a.pdf/` has none), compared without case
 * and after percent-decoding; `;params` are ignored; a name starting with a dot (`/.zip`) has no
 * extension. Multi-part entries match too (`tar.gz`), the longest first. Pure.
 */
export function ignoredExtension(url: string, extensions: ReadonlySet<string>): string | null {
  if (extensions.size === 0) return null;
  let path: string;
  try {
    path = new URL(url).pathname;
  } catch {
    return null;
  }
  return ignoredPathExtension(path, extensions);
}

/** `ignoredExtension` for a URL already parsed: its path (`normalizeLink(…).path`). */
export function ignoredPathExtension(path: string, extensions: ReadonlySet<string>): string | null {
  if (extensions.size === 0) return null;
  let name = path.slice(path.lastIndexOf('/') + 1);
  const params = name.indexOf(';');
  if (params >= 0) name = name.slice(0, params);
  try {
    name = decodeURIComponent(name);
  } catch {
    // A stray '%' is no reason to give up: compare the raw name.
  }
  name = name.toLowerCase();
  // Every dot after the first character starts a candidate, the leftmost (longest) first.
  for (let dot = name.indexOf('.', 1); dot >= 0; dot = name.indexOf('.', dot + 1)) {
    const candidate = name.slice(dot + 1);
    if (candidate !== '' && extensions.has(candidate)) return candidate;
  }
  return null;
}
