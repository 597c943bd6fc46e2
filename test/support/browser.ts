import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { chromium } from 'playwright-core';
import QRCode from 'qrcode';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { buildIfStale } from '../../web/build.ts';
import { t } from '../../web/src/i18n.ts';
import { Mailbox } from '../services/auth/support/mailbox.ts';
import { testEngines } from './engines.ts';
import type { TestEngine } from './engines.ts';
import { freePort } from './ports.ts';
import { startTestServer } from './server.ts';
import type { TestServer } from './server.ts';

/** Debian's Chromium (DESIGN §7); CHROMIUM_PATH points elsewhere. */
export const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

export const SCREENSHOT_DIR = path.resolve('web/test-output');

/**
 * Why the browser tests cannot run here, or undefined when they can. Without a browser they are
 * skipped with this message; under REQUIRE_BROWSER=1 (CI) the caller fails instead.
 */
export function browserUnavailable(): string | undefined {
  if (existsSync(CHROMIUM_PATH)) return undefined;
  const reason = `no Chromium at ${CHROMIUM_PATH} (apt-get install -y chromium, or set CHROMIUM_PATH)`;
  if (process.env.REQUIRE_BROWSER === '1') assert.fail(`REQUIRE_BROWSER=1 and ${reason}`);
  return reason;
}

/** Chromium; `extraArgs` add to the defaults (a fake camera's video file, say). */
export async function launchBrowser(extraArgs: string[] = []): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM_PATH,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      // WebGL for the map in software, as headless machines have no GPU.
      '--use-angle=swiftshader',
      '--enable-unsafe-swiftshader',
      // A fake camera, so the QR scanner's getUserMedia path runs.
      '--use-fake-ui-for-media-stream',
      '--use-fake-device-for-media-stream',
      ...extraArgs,
    ],
  });
}

export interface WebServer {
  server: TestServer;
  mailbox: Mailbox;
  /** http://127.0.0.1:<port> (or the `publicHost` asked for), which is also PUBLIC_URL. */
  url: string;
  /** The OsmAnd listener, for positions sent as a device would. */
  osmandPort: number;
  close(): Promise<void>;
}

/** How often a port taken between being found free and being listened on is tried again with another. */
const PORT_ATTEMPTS = 5;

/**
 * The all-in-one server on SQLite, listening on a real port with the built web app, a real SMTP
 * server and the OsmAnd port. Its web port must be known before it starts (it is PUBLIC_URL, in the
 * links of mails), so a port another test process takes in between is tried again with a fresh one;
 * device ports are bound on port 0 (`web.server.tracking.ingestion.listen`). Whatever fails half-way
 * is closed, so that a failed start never holds the test process open. It listens on 127.0.0.1;
 * `publicHost` names it in PUBLIC_URL (`localhost` reaches it too).
 */
export async function startWebServer(
  env: Record<string, string> = {},
  { publicHost = '127.0.0.1', ...options }: Parameters<typeof startTestServer>[2] & { publicHost?: string } = {},
): Promise<WebServer> {
  await buildIfStale();
  // SQLite: the first engine, always there (DESIGN §7: the browser tests run on it).
  const [engine] = testEngines();
  const mailbox = await Mailbox.start();
  for (let attempt = 1; ; attempt++) {
    const port = await freePort();
    const url = `http://${publicHost}:${port}`;
    let server: TestServer | undefined;
    try {
      server = await startTestServer(engine as TestEngine, {
        PORT: String(port),
        PUBLIC_URL: url,
        SMTP_URL: mailbox.url,
        RATE_LIMITS: 'off',
        MAP_STYLE_URL: '/map-styles/blank.json',
        ...env,
      }, options);
      await server.app.listen({ port, host: '127.0.0.1' });
      const osmandPort = await server.tracking!.ingestion.listen('osmand', 0);
      const started = server;
      return {
        server: started,
        mailbox,
        url,
        osmandPort,
        async close() {
          await started.dispose();
          await mailbox.close();
        },
      };
    } catch (error) {
      await server?.dispose();
      if ((error as { code?: string }).code !== 'EADDRINUSE' || attempt === PORT_ATTEMPTS) {
        await mailbox.close();
        throw error;
      }
    }
  }
}

/** One OsmAnd report (Traccar's HTTP query form), as a phone running Traccar Client sends it. */
export async function sendOsmAnd(web: WebServer, position: { id: string; lat: number; lon: number; time?: Date; speed?: number }): Promise<void> {
  const query = new URLSearchParams({
    id: position.id,
    lat: String(position.lat),
    lon: String(position.lon),
    timestamp: String(Math.floor((position.time ?? new Date()).getTime() / 1000)),
    speed: String(position.speed ?? 0),
  });
  const response = await fetch(`http://127.0.0.1:${web.osmandPort}/?${query}`, { method: 'POST' });
  assert.equal(response.status, 200, await response.text());
}

const axeSource = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

/** axe-core on the page as it is: no violation of any rule, WCAG A and AA included. */
export async function assertAccessible(page: Page, screen: string): Promise<void> {
  // Evaluated through the DevTools protocol: the page's CSP (script-src 'self') rightly refuses an injected <script>.
  await page.evaluate(axeSource);
  const violations = await page.evaluate(async () => {
    interface Violation {
      id: string;
      help: string;
      nodes: { target: string[] }[];
    }
    const scope = globalThis as unknown as { document: unknown; axe: { run(context: unknown, options: object): Promise<{ violations: Violation[] }> } };
    const results = await scope.axe.run(scope.document, { resultTypes: ['violations'] });
    return results.violations.map((violation) => `${violation.id}: ${violation.help} at ${violation.nodes.map((node) => node.target.join(' ')).join(', ')}`);
  });
  assert.deepEqual(violations, [], `${screen}: axe-core violations`);
}

/**
 * No text runs out of its box and the page does not scroll sideways: what a person would see as
 * words running out of their card or cut off. Boxes that scroll or clip on purpose, the map and
 * boxes hidden for the eye are left out.
 */
export async function assertNothingOverflows(page: Page, screen: string): Promise<void> {
  const overflowing = await page.evaluate(() => {
    const scope = globalThis as unknown as {
      document: { documentElement: { scrollWidth: number }; querySelectorAll(selector: string): ArrayLike<OverflowProbe> };
      innerWidth: number;
      getComputedStyle(element: OverflowProbe): { overflowX: string; display: string };
    };
    interface OverflowProbe {
      scrollWidth: number;
      clientWidth: number;
      clientHeight: number;
      tagName: string;
      id: string;
      className: unknown;
      closest(selector: string): unknown;
    }
    const found: string[] = [];
    if (scope.document.documentElement.scrollWidth > scope.innerWidth) found.push(`the page is ${scope.document.documentElement.scrollWidth} px wide`);
    for (const element of Array.from(scope.document.querySelectorAll('body *'))) {
      // A box of a pixel or less is hidden for the eye and kept for screen readers.
      if (element.closest('.maplibregl-map, svg, canvas') || element.clientWidth <= 1 || element.clientHeight <= 1) continue;
      const style = scope.getComputedStyle(element);
      if (style.overflowX !== 'visible' || style.display === 'inline') continue;
      if (element.scrollWidth > element.clientWidth + 1) {
        found.push(`${element.tagName.toLowerCase()}${element.id ? `#${element.id}` : ''}${typeof element.className === 'string' && element.className ? `.${element.className.split(' ').join('.')}` : ''} (${element.scrollWidth} > ${element.clientWidth})`);
      }
    }
    return found;
  });
  assert.deepEqual(overflowing, [], `${screen}: content overflowing its box`);
}

const VIEWPORTS = [
  { name: '1280', width: 1280, height: 800 },
  { name: '360', width: 360, height: 740 },
] as const;

/**
 * Screenshots of the screen at 1280 and 360 px wide, light and dark, under web/test-output/, each
 * checked by axe-core (contrast differs between themes, layout between widths).
 */
export async function captureScreen(page: Page, screen: string): Promise<void> {
  mkdirSync(SCREENSHOT_DIR, { recursive: true });
  const original = page.viewportSize();
  for (const viewport of VIEWPORTS) {
    await page.setViewportSize({ width: viewport.width, height: viewport.height });
    for (const colorScheme of ['light', 'dark'] as const) {
      await page.emulateMedia({ colorScheme, reducedMotion: 'reduce' });
      await page.waitForTimeout(150);
      await assertAccessible(page, `${screen} at ${viewport.name} px, ${colorScheme}`);
      await assertNothingOverflows(page, `${screen} at ${viewport.name} px, ${colorScheme}`);
      await page.screenshot({ path: path.join(SCREENSHOT_DIR, `${screen}-${viewport.name}-${colorScheme}.png`), fullPage: true });
    }
  }
  await page.emulateMedia({ colorScheme: 'light' });
  if (original) await page.setViewportSize(original);
}

/**
 * A camera that films `text` as a QR code: a Y4M video (grey frames, the code drawn in black on
 * white) for Chromium's --use-file-for-fake-video-capture, so the scanner's getUserMedia frames
 * carry a code as a phone's camera would.
 */
export function qrCodeVideo(text: string, file: string): string {
  const { modules } = QRCode.create(text, { errorCorrectionLevel: 'M' });
  const width = 320;
  const height = 240;
  const cell = 6;
  const quiet = 4;
  const size = (modules.size + quiet * 2) * cell;
  const left = Math.floor((width - size) / 2);
  const top = Math.floor((height - size) / 2);
  const luma = Buffer.alloc(width * height, 255);
  for (let row = 0; row < modules.size; row++) {
    for (let column = 0; column < modules.size; column++) {
      if (!modules.get(row, column)) continue;
      for (let y = 0; y < cell; y++) {
        const offset = (top + (row + quiet) * cell + y) * width + left + (column + quiet) * cell;
        luma.fill(0, offset, offset + cell);
      }
    }
  }
  const chroma = Buffer.alloc((width / 2) * (height / 2) * 2, 128);
  const frame = Buffer.concat([Buffer.from('FRAME\n'), luma, chroma]);
  writeFileSync(file, Buffer.concat([Buffer.from(`YUV4MPEG2 W${width} H${height} F10:1 Ip A1:1 C420jpeg\n`), ...Array.from({ length: 10 }, () => frame)]));
  return file;
}

/** Signs in through the sign-in screen, as a person would. */
export async function signInOnPage(page: Page, web: WebServer, email: string, password: string): Promise<void> {
  await page.goto(`${web.url}/login`);
  await page.getByLabel(t.fields.email).fill(email);
  await page.getByLabel(t.fields.password).fill(password);
  await page.getByRole('button', { name: t.signIn.submit }).click();
}

export async function newPage(browser: Browser): Promise<{ context: BrowserContext; page: Page }> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const page = await context.newPage();
  // CI runs four test files at once on two cores: a page may take long to answer there, never to fail.
  page.setDefaultTimeout(45_000);
  return { context, page };
}
